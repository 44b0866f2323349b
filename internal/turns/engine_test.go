package turns

import (
	"fmt"
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
)

// TestRouteOf: C-TURN-31, C-TURN-48: a message starting with the
// terminalCommandPrefix and saying something after it is a ! command for
// the host's shell; a lone "!" goes to the agent.
func TestRouteOf(t *testing.T) {
	for _, tt := range []struct {
		text string
		want Route
	}{
		{"!echo hi", RouteLocal},
		{"!false", RouteLocal},
		{"! ls", RouteLocal},
		{"!", RouteAgent},
		{"!   ", RouteAgent},
		{"echo !hi", RouteAgent},
		{" !echo", RouteAgent},
		{"", RouteAgent},
	} {
		if got := RouteOf(tt.text); got != tt.want {
			t.Errorf("RouteOf(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

// TestWithSender: C-TURN-07: the sender rides in the message's _meta, the
// rest of which is kept; the message given is not changed.
func TestWithSender(t *testing.T) {
	m := ahp.Message{Text: "hi", Meta: map[string]any{"other": 1, SenderMetaKey: "root:forged"}}
	got := WithSender(m, "user:alice")
	if got.Meta[SenderMetaKey] != "user:alice" || got.Meta["other"] != 1 {
		t.Fatalf("meta = %+v", got.Meta)
	}
	if m.Meta[SenderMetaKey] != "root:forged" {
		t.Fatal("the message given was changed")
	}
	if got := WithSender(ahp.Message{Text: "x"}, ""); got.Meta != nil {
		t.Fatalf("no sender, meta %+v", got.Meta)
	}
}

// TestSameMessage: C-TURN-50, C-TURN-51 compare the whole message.
func TestSameMessage(t *testing.T) {
	a := ahp.Message{Text: "go", Origin: ahp.MessageOrigin{Kind: "user"}}
	b := a
	if !SameMessage(a, b) {
		t.Fatal("equal messages differ")
	}
	b.Text = "stop"
	if SameMessage(a, b) {
		t.Fatal("different texts are the same message")
	}
	c := a
	c.Meta = map[string]any{"k": "v"}
	if SameMessage(a, c) {
		t.Fatal("different _meta are the same message")
	}
}

// TestWaitingIsBounded: a client cannot make a chat hold more than
// MaxWaiting queued messages or turns sent behind the running one; the one
// past it is refused and nothing already waiting is lost.
func TestWaitingIsBounded(t *testing.T) {
	h := newHarness(t, capsFull, ahp.ChatState{})
	start("t0", "running")(h)
	for i := range MaxWaiting {
		queue(fmt.Sprintf("q%d", i), "m")(h)
		start(fmt.Sprintf("b%d", i), "m")(h)
	}
	mark(h)
	queue("one-too-many", "m")(h)
	start("b-too-many", "m")(h)
	queue("q0", "changed, not new")(h)
	want := []string{
		"refuse pendingMessageSet queued one-too-many by c1: " + ReasonTooMuchWaits,
		"refuse turnStarted b-too-many by c1: " + ReasonTooMuchWaits,
		"tell pendingMessageSet queued q0",
	}
	if !subsequence(h.log, want) {
		t.Fatalf("log %v", h.log)
	}
	if n := len(h.e.State().QueuedMessages); n != MaxWaiting {
		t.Fatalf("%d queued", n)
	}
	if _, behind := h.e.Waiting(); len(behind) != MaxWaiting {
		t.Fatalf("%d behind", len(behind))
	}
}

// TestUsageInfoCarriesCost: a backend's cost travels in the usage's
// _meta under ahp.MetaCost; usage without one has no _meta.
func TestUsageInfoCarriesCost(t *testing.T) {
	got := UsageInfo(agent.Usage{InputTokens: 10, OutputTokens: 4, CacheRead: 2, Model: "m", Cost: &agent.Cost{Amount: 0.25, Currency: "USD"}})
	if got.InputTokens != 10 || got.OutputTokens != 4 || got.CacheReadTokens == nil || *got.CacheReadTokens != 2 || got.Model != "m" {
		t.Errorf("usage %+v", got)
	}
	c, _ := got.Meta[ahp.MetaCost].(map[string]any)
	if c["amount"] != 0.25 || c["currency"] != "USD" {
		t.Errorf("cost in _meta = %v", got.Meta)
	}
	if plain := UsageInfo(agent.Usage{InputTokens: 1}); plain.Meta != nil || plain.CacheReadTokens != nil {
		t.Errorf("usage without cost or cache reads: %+v", plain)
	}
}
