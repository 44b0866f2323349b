package daemon_test

import (
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// clientRun answers a client-run call as its client does: the run's result
// (chat/toolCallComplete), then the confirmation of that result.
func clientRun(t *testing.T, c *ahptest.Client, chat, turnID, call, output string, approved bool) {
	t.Helper()
	awaitAccepted(t, c, c.Dispatch(chat, map[string]any{"type": "chat/toolCallComplete", "turnId": turnID, "toolCallId": call,
		"result": map[string]any{"success": true, "content": []any{map[string]any{"type": "text", "text": output}}}, "requiresResultConfirmation": true}))
	awaitAccepted(t, c, c.Dispatch(chat, map[string]any{"type": "chat/toolCallResultConfirmed", "turnId": turnID, "toolCallId": call, "approved": approved}))
}

// TestClientRunTool: a tool call the backend leaves to a client names that
// client as its contributor; the client's run of it, and the confirmation
// of its result, are handed to the backend, which goes on with them.
func TestClientRunTool(t *testing.T) {
	t.Parallel()
	e := newTurnsEnv(t)
	c := e.dial(t, "runner")
	_, chat := e.newSession(t, c, provScript)
	c.Subscribe(chat)
	startTurn(c, chat, "t1", "use my tool [clienttool:runner]")
	const call = "t1-client-1"
	start := c.AwaitEnvelope("the client's call", func(env ahptest.Envelope) bool {
		return env.Channel == chat && env.Type() == "chat/toolCallStart" && field(env, "toolCallId") == call
	})
	var contributor ahp.ToolCallContributor
	if err := start.Field("contributor", &contributor); err != nil || contributor.Kind != ahp.ContributorClient || contributor.ClientID != "runner" {
		t.Fatalf("contributor %+v (%v): %s", contributor, err, start.Raw)
	}
	clientRun(t, c, chat, "t1", call, "forty-two", true)
	if end := awaitEnd(t, c, chat, "t1"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended %s", end.Raw)
	}
	if got := clMarkdown(chatOf(t, c, chat).Turns[0]); !strings.Contains(got, "client said: forty-two (approved)") {
		t.Fatalf("the backend was not handed the client's run: %q", got)
	}
}

// TestClientRunToolWithoutGrant: a client without chat:tool cannot hand a
// run of a tool; the backend keeps waiting and takes the one that may.
func TestClientRunToolWithoutGrant(t *testing.T) {
	t.Parallel()
	e := newTurnsEnv(t, func(c *daemon.Config) {
		c.Tokens = []daemon.TokenConfig{{Token: "reader-token", Principal: "user:reader", Grants: []string{"chat:turns", "session:state"}}}
	})
	c := e.dial(t, "runner")
	_, chat := e.newSession(t, c, provScript)
	c.Subscribe(chat)
	startTurn(c, chat, "t1", "use my tool [clienttool:runner]")
	const call = "t1-client-1"
	c.AwaitEnvelope("the client's call", func(env ahptest.Envelope) bool {
		return env.Channel == chat && env.Type() == "chat/toolCallReady" && field(env, "toolCallId") == call
	})
	reader := ahptest.Dial(t, e.d.URL(), "reader-token")
	reader.Initialize("reader", ahp.RootURI)
	reader.Subscribe(chat)
	env := reader.AwaitEcho(reader.Dispatch(chat, map[string]any{"type": "chat/toolCallComplete", "turnId": "t1", "toolCallId": call,
		"result": map[string]any{"success": true, "content": []any{map[string]any{"type": "text", "text": "forged"}}}}))
	if env.RejectionReason == "" {
		t.Fatal("a client without chat:tool handed a tool's result")
	}
	clientRun(t, c, chat, "t1", call, "genuine", true)
	awaitEnd(t, c, chat, "t1")
	if got := clMarkdown(chatOf(t, c, chat).Turns[0]); !strings.Contains(got, "client said: genuine") {
		t.Fatalf("answer %q", got)
	}
}

// TestWorkerClientRunTool: a client's run of a tool the worker called, with
// the confirmation of its result, dispatched in the worker chat, is handed
// to the backend that runs the worker (C-SUB-14).
func TestWorkerClientRunTool(t *testing.T) {
	t.Parallel()
	e := newTurnsEnv(t)
	c := e.dial(t, "watcher")
	sess, root := e.newSession(t, c, provScript)
	c.Subscribe(root)
	startTurn(c, root, "t1", "[worker:clienttool:watcher] go")
	w := awaitWorkerAdded(t, c, sess, "t1-task-1").Resource
	const call = "t1-task-1-client-1"
	st, _ := c.Subscribe(w)
	wt := chatState(t, st).ActiveTurn
	if wt == nil {
		t.Fatal("the worker chat has no running turn")
	}
	ready := false
	for _, p := range wt.ResponseParts {
		if p.ToolCall != nil && p.ToolCall.ToolCallID == call && p.ToolCall.Status == ahp.ToolRunning {
			ready = true
		}
	}
	if !ready {
		// Not in the snapshot yet: it comes as an action.
		c.AwaitEnvelope("the worker's client call", func(env ahptest.Envelope) bool {
			return env.Channel == w && env.Type() == "chat/toolCallReady" && field(env, "toolCallId") == call
		})
	}
	clientRun(t, c, w, wt.ID, call, "from the client", false)
	if end := awaitEnd(t, c, root, "t1"); end.Type() != "chat/turnComplete" {
		t.Fatalf("root turn ended %s", end.Raw)
	}
	ws := workerTurn(t, c, w)
	if got := clMarkdown(ws.Turns[0]); !strings.Contains(got, "client said: from the client (denied)") {
		t.Fatalf("the worker's backend was not handed the run: %q", got)
	}
}

// refusedWith dispatches action on chat and fails unless it is refused
// with a reason holding want.
func refusedWith(t *testing.T, c *ahptest.Client, chat string, action map[string]any, want string) {
	t.Helper()
	env := c.AwaitEcho(c.Dispatch(chat, action))
	if !strings.Contains(env.RejectionReason, want) {
		t.Fatalf("%s: echo %s, want a refusal with %q", action["type"], env.Raw, want)
	}
}

// TestClientToolCallsTrustOnlyTheirClient (issue 31; AHP: the server
// rejects chat/toolCallComplete from a client that is not the call's
// contributor, and a confirmation of a call that does not wait for one):
// another client's result for a client-run call is refused and the agent
// takes the owner's; a confirmation of the running call, a second result
// while the first waits for confirmation, a result confirmation of a call
// that has none waiting, and an answer to an input request nobody made are
// each refused.
func TestClientToolCallsTrustOnlyTheirClient(t *testing.T) {
	t.Parallel()
	e := newTurnsEnv(t)
	owner := e.dial(t, "runner")
	other := e.dial(t, "intruder")
	_, chat := e.newSession(t, owner, provScript)
	owner.Subscribe(chat)
	other.Subscribe(chat)
	startTurn(owner, chat, "t1", "use my tool [clienttool:runner]")
	const call = "t1-client-1"
	owner.AwaitEnvelope("the client's call ready", func(env ahptest.Envelope) bool {
		return env.Channel == chat && env.Type() == "chat/toolCallReady" && field(env, "toolCallId") == call
	})
	result := func(text string) map[string]any {
		return map[string]any{"type": "chat/toolCallComplete", "turnId": "t1", "toolCallId": call,
			"result": map[string]any{"success": true, "content": []any{map[string]any{"type": "text", "text": text}}}, "requiresResultConfirmation": true}
	}
	refusedWith(t, other, chat, result("forged"), "Only the client that runs this tool call")
	refusedWith(t, other, chat, map[string]any{"type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": call,
		"approved": true, "confirmed": "user-action"}, "waits for that confirmation")
	refusedWith(t, owner, chat, map[string]any{"type": "chat/toolCallResultConfirmed", "turnId": "t1", "toolCallId": call,
		"approved": true}, "does not wait for confirmation")
	refusedWith(t, owner, chat, map[string]any{"type": "chat/toolCallComplete", "turnId": "t1", "toolCallId": "no-such-call",
		"result": map[string]any{"success": true}}, "No tool call of the running turn has that id")
	refusedWith(t, owner, chat, map[string]any{"type": "chat/inputCompleted", "requestId": "nobody-asked", "response": "accept"},
		"No input request")

	awaitAccepted(t, owner, owner.Dispatch(chat, result("genuine")))
	refusedWith(t, owner, chat, result("again"), "not running")
	awaitAccepted(t, owner, owner.Dispatch(chat, map[string]any{"type": "chat/toolCallResultConfirmed", "turnId": "t1", "toolCallId": call, "approved": true}))
	if end := awaitEnd(t, owner, chat, "t1"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended %s", end.Raw)
	}
	if got := clMarkdown(chatOf(t, owner, chat).Turns[0]); !strings.Contains(got, "client said: genuine (approved)") {
		t.Fatalf("the backend took %q, want the owner's result", got)
	}
}
