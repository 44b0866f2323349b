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

// TestTrimKeepsTheRules: an engine whose state keeps only its newest turns
// (the chat's window, Trim) counts the older ones: a repeated start of one
// is told again, unreduced, and runs nothing; a new turn is not the chat's
// first; Reload brings back older turns for a rewind; a clear forgets them.
func TestTrimKeepsTheRules(t *testing.T) {
	h := newHarness(t, capsFull, ahp.ChatState{})
	for i := range 5 {
		id := fmt.Sprintf("t%d", i)
		start(id, "hi")(h)
		done(id)(h)
	}
	if got := h.e.Window().Trim(10); len(got) != 4 || got[0] != "t0" || got[3] != "t3" {
		t.Fatalf("Trim dropped %v, want t0..t3: the newest stays", got)
	}
	st := h.e.State()
	if h.e.Window().Older() != 4 || len(st.Turns) != 1 || st.Turns[0].ID != "t4" {
		t.Fatalf("older %d, turns %+v", h.e.Window().Older(), st.Turns)
	}
	if h.e.Turn("t1").Sender != "" || h.e.Turn("t4").Sender != alice {
		t.Fatal("what the engine knew of the dropped turns is kept, or of the kept one lost")
	}
	h.older["t1"] = true
	h.log = nil
	start("t1", "hi again")(h)
	if st.ActiveTurn != nil || len(st.Turns) != 1 || h.e.Running() {
		t.Fatalf("a repeated start of an older turn changed the state: active %+v, turns %d", st.ActiveTurn, len(st.Turns))
	}
	if len(h.log) != 1 || h.log[0] != "tell turnStarted t1 by c1" {
		t.Fatalf("a repeated start of an older turn: %q", h.log)
	}
	h.admitted = nil
	start("t5", "next")(h)
	if len(h.admitted) != 1 || h.admitted[0].First {
		t.Fatalf("admitted %+v: a chat with older turns has had its first", h.admitted)
	}
	done("t5")(h)
	h.e.Window().Reload(1, []ahp.Turn{{ID: "t1", State: ahp.TurnComplete}}, map[string]TurnInfo{"t1": {Sender: "user:bob"}})
	if h.e.Window().Older() != 1 || len(st.Turns) != 1 || h.e.Turn("t1").Sender != "user:bob" || h.e.Turn("t5").Sender != "" {
		t.Fatalf("reload: older %d, turns %+v", h.e.Window().Older(), st.Turns)
	}
	h.e.Apply(ahp.ChatTruncated{}, nil)
	if h.e.Window().Older() != 0 || len(st.Turns) != 0 {
		t.Fatalf("a clear left older %d, turns %d", h.e.Window().Older(), len(st.Turns))
	}
}
