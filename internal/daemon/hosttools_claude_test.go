package daemon_test

import (
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// TestClaudeRenamesChatWithHostTool: the real claude CLI, offered the
// host's tools over MCP, calls rename_chat when the model asks it to, and
// every client sees the chat's new title (C-COMP-30); get_session_context
// reads another chat's transcript through its #chat: pointer.
func TestClaudeRenamesChatWithHostTool(t *testing.T) {
	t.Parallel()
	ce := newClaudeEnv(t, "turn")
	a := ce.client("a")
	b := ce.client("b")
	sess := "ahp-session:/7001700a-0000-4000-8000-000000000001"
	def, _ := ce.session(a, sess)
	a.Subscribe(def)
	b.Subscribe(sess)

	end := sendTurn(t, a, def, "t1", `please rename this chat [[call mcp__ahp__rename_chat {"title":"Named By The Agent"}]]`)
	if end.Type() != "chat/turnComplete" {
		t.Fatalf("turn ended %s: %s", end.Type(), end.Raw)
	}
	b.AwaitEnvelope("the rename reaches another client", func(e ahptest.Envelope) bool {
		var ch ahp.PartialChatSummary
		_ = e.Field("changes", &ch)
		return e.Type() == "session/chatUpdated" && ch.Title != nil && *ch.Title == "Named By The Agent"
	})
	st := chatOf(t, a, def)
	calls := clToolCalls(st.Turns[0])
	if st.Title != "Named By The Agent" || len(calls) != 1 || !strings.Contains(calls[0].ToolName, "rename_chat") {
		t.Fatalf("title %q, tool calls %s", st.Title, clJSON(t, calls))
	}

	// A second chat reads the first through get_session_context.
	other := "ahp-chat:/7001700a-0000-4000-8000-0000000000c2"
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": other})
	a.Subscribe(other)
	end = sendTurn(t, a, other, "t2", `[[call mcp__ahp__get_session_context {"chat":"`+def+`"}]]`)
	if end.Type() != "chat/turnComplete" {
		t.Fatalf("context turn ended %s: %s", end.Type(), end.Raw)
	}
	// The call's result went back to the model: a request of the second
	// chat carries the first chat's words.
	read := false
	for _, r := range ce.fake.Requests(t) {
		body := string(r.Body)
		if strings.Contains(body, "get_session_context") && strings.Contains(body, "tool_result") && strings.Contains(body, "please rename this chat") {
			read = true
		}
	}
	if !read {
		t.Fatal("the model never read the other chat's transcript through get_session_context")
	}
}
