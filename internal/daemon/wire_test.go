package daemon_test

import (
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// TestTwoClientsSeeTheSameTurn: two clients on one daemon see the same
// envelopes, in strictly increasing serverSeq, ending with one
// chat/turnComplete (C-TURN-01, C-TURN-10, C-TURN-11, C-TURN-122). A chat
// is driven over the protocol on its own channel: subscribe answers its
// ChatState and every action after reaches the subscriber (C-CMD-02..04);
// what was said is a turn whose answer arrives as parts (C-CHAT-06, 07,
// 10, 11).
func TestTwoClientsSeeTheSameTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	b := e.client("b")
	sess, chat := e.createSession(a, "ahp-session:/2b4c6f0e-1111-4a4a-9c9c-000000000001")
	b.Subscribe(sess)
	a.Subscribe(chat)
	b.Subscribe(chat)

	end := sendTurn(t, a, chat, "t1", "hello there")
	if end.Type() != "chat/turnComplete" {
		t.Fatalf("turn ended with %s, want chat/turnComplete", end.Type())
	}
	var dur int64 = -1
	if err := end.Field("duration", &dur); err != nil || dur < 0 {
		t.Fatalf("turnComplete without duration: %s", end.Action) // C-TURN-14
	}
	awaitEnd(t, b, chat, "t1")

	onChat := func(c *ahptest.Client) []ahptest.Envelope {
		var out []ahptest.Envelope
		for _, e := range c.Envelopes() {
			if e.Channel == chat {
				out = append(out, e)
			}
		}
		return out
	}
	ea, eb := onChat(a), onChat(b)
	if len(ea) == 0 || len(ea) != len(eb) {
		t.Fatalf("client a saw %d chat envelopes, b saw %d", len(ea), len(eb))
	}
	for i := range ea {
		if string(ea[i].Raw) != string(eb[i].Raw) {
			t.Fatalf("envelope %d differs:\na: %s\nb: %s", i, ea[i].Raw, eb[i].Raw)
		}
	}
	for _, c := range []*ahptest.Client{a, b} {
		all := c.Envelopes()
		for i := 1; i < len(all); i++ {
			if all[i].ServerSeq <= all[i-1].ServerSeq {
				t.Fatalf("client %s: serverSeq %d after %d", c.ID, all[i].ServerSeq, all[i-1].ServerSeq)
			}
		}
	}
	// C-TURN-01: the client's turnStarted comes back to the sender too, with origin.
	if ea[0].Type() != "chat/turnStarted" || ea[0].Origin == nil || ea[0].Origin.ClientID != "a" {
		t.Fatalf("first chat envelope = %s (origin %+v), want a's chat/turnStarted", ea[0].Type(), ea[0].Origin)
	}
	ends := 0
	for _, e := range ea {
		switch e.Type() {
		case "chat/turnComplete", "chat/error", "chat/turnCancelled":
			ends++
		}
	}
	if ends != 1 {
		t.Fatalf("%d ending actions, want exactly 1", ends)
	}
	// Both clients' fresh snapshots agree with what they built.
	st, _ := b.Subscribe(chat)
	cs := chatState(t, st)
	if len(cs.Turns) != 1 || cs.ActiveTurn != nil || cs.Turns[0].State != ahp.TurnComplete {
		t.Fatalf("chat after the turn: %s", st)
	}
	var text string
	for _, p := range cs.Turns[0].ResponseParts {
		if p.Kind == ahp.PartMarkdown {
			text += p.Content
		}
	}
	if text == "" {
		t.Fatalf("turn has no markdown answer: %s", st)
	}
}
