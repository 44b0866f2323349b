package daemon_test

import (
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/canvas/showpage"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// TestClaudeShowPageCanvas (issue 16's acceptance): the real claude CLI,
// offered the host's tools over MCP, calls show_page when the model asks
// it to; the canvas it opens is listed in the chat, subscribable at
// 1.0.0, never sent to a 0.9.0 connection, and answers -32008 once its
// chat is closed. The call is shown as the tool call it is.
// C-CHAT-15, C-CANV-01, C-CANV-04, C-CANV-05, C-CANV-06, C-CANV-09,
// C-CANV-10, C-CANV-12.
func TestClaudeShowPageCanvas(t *testing.T) {
	t.Parallel()
	ce := newClaudeEnv(t, "turn")
	a := ce.client("a")
	old := dialOld(t, ce.d.URL(), ce.cfg.ConnectionToken, "old")
	sess := "ahp-session:/7001700a-0000-4000-8000-00000000ca01"
	ce.session(a, sess)
	page := "ahp-chat:/7001700a-0000-4000-8000-0000000000ca"
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": page})
	a.Subscribe(page)
	old.Subscribe(page)
	dev := devServer(t)

	end := sendTurn(t, a, page, "t1", `show me the app [[call mcp__ahp__show_page {"url":"`+dev+`","title":"The App"}]]`)
	if end.Type() != "chat/turnComplete" {
		t.Fatalf("turn ended %s: %s", end.Type(), end.Raw)
	}
	listed := a.AwaitEnvelope("the canvas listed", func(e ahptest.Envelope) bool {
		return e.Channel == page && e.Type() == ahp.ActionChatCanvasesChanged
	})
	var cs []ahp.CanvasReference
	if err := listed.Field("canvases", &cs); err != nil || len(cs) != 1 {
		t.Fatalf("canvases %s", listed.Raw)
	}
	uri := cs[0].Resource
	st := chatOf(t, a, page)
	if len(st.Canvases) != 1 || st.Canvases[0].Resource != uri {
		t.Fatalf("chat lists %v", refs(st.Canvases))
	}
	calls := clToolCalls(st.Turns[0])
	if len(calls) != 1 || !strings.Contains(calls[0].ToolName, "show_page") {
		t.Fatalf("tool calls %s", clJSON(t, calls))
	}

	raw, _ := a.Subscribe(uri)
	state := canvasState(t, raw)
	if state.URL != dev || state.Title != "The App" || state.Status != "Serving (HTTP 200)" || state.ExtensionID != showpage.ExtensionID {
		t.Fatalf("canvas %+v", state)
	}

	// The 0.9.0 connection watched the chat all along: no canvas action,
	// no canvases key, no canvas channel.
	for _, e := range old.Envelopes() {
		if e.Type() == ahp.ActionChatCanvasesChanged || strings.HasPrefix(e.Type(), "canvas/") {
			t.Fatalf("a 0.9.0 connection was sent %s", e.Raw)
		}
	}
	if st, _ := old.Subscribe(page); hasKey(st, "canvases") {
		t.Fatalf("a 0.9.0 snapshot lists canvases: %s", st)
	}
	if _, rerr := old.Call("subscribe", map[string]any{"channel": uri}); rerr == nil {
		t.Fatal("a 0.9.0 connection subscribed to a canvas")
	}

	// The chat closes: its canvas goes with it.
	a.MustCall("disposeChat", map[string]any{"channel": page})
	expectGone(t, a, uri)
}
