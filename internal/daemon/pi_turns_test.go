package daemon_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
)

// saidToModel reports whether any model call so far carried text.
func (pe *piEnv) saidToModel(text string) bool {
	pe.t.Helper()
	for _, r := range pe.modelCalls() {
		if strings.Contains(strings.Join(historyOf(r), "\n"), text) {
			return true
		}
	}
	return false
}

// TestPiOneTurnAtATime: pi runs one turn at a time (C-TURN-103). A turn
// sent while another runs goes to pi once the one in front of it ended
// (C-TURN-104): its model call carries the first turn's whole answer. A
// stop runs none of the turns sent behind the stopped one (C-TURN-105),
// which the host ends in the client's state (C-TURN-106): pi never hears
// of it.
func TestPiOneTurnAtATime(t *testing.T) {
	t.Parallel()
	pe := newPiEnv(t, piOpenAI)
	a := pe.client("a")
	def := pe.session(a, "ahp-session:/9100de00-0000-4000-8000-000000000003")

	a.Dispatch(def, turnStarted("t1", "talk slowly [slow]"))
	clAwaitAction(t, a, def, "t1", "chat/delta")
	a.Dispatch(def, turnStarted("t2", "the one behind"))
	e1, e2 := awaitEnd(t, a, def, "t1"), awaitEnd(t, a, def, "t2")
	if e1.Type() != "chat/turnComplete" || e2.Type() != "chat/turnComplete" || e2.ServerSeq < e1.ServerSeq {
		t.Fatalf("t1 ended %s (%d), t2 %s (%d)", e1.Type(), e1.ServerSeq, e2.Type(), e2.ServerSeq)
	}
	var behind []string
	for _, r := range pe.modelCalls() {
		if h := historyOf(r); strings.Contains(strings.Join(h, "\n"), "the one behind") {
			behind = h
			break
		}
	}
	if len(behind) < 3 || !strings.Contains(behind[1], strings.TrimSpace(strings.Repeat("slow ", 40))) {
		t.Fatalf("C-TURN-104: the first call of t2 did not follow t1's whole answer:\n%s", strings.Join(behind, "\n"))
	}

	a.Dispatch(def, turnStarted("t3", "talk slowly again [slow]"))
	clAwaitAction(t, a, def, "t3", "chat/delta")
	a.Dispatch(def, turnStarted("t4", "never to be said"))
	a.AwaitEcho(a.Dispatch(def, map[string]any{"type": "chat/turnCancelled", "turnId": "t3"}))
	if end := awaitEnd(t, a, def, "t3"); end.Type() != "chat/turnCancelled" {
		t.Fatalf("t3 ended with %s", end.Type())
	}
	if end := awaitEnd(t, a, def, "t4"); end.Type() != "chat/turnCancelled" {
		t.Fatalf("C-TURN-106: t4 ended with %s", end.Type())
	}
	if end := sendTurn(t, a, def, "t5", "after all that"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t5 ended with %s: %s", end.Type(), end.Action)
	}
	if pe.saidToModel("never to be said") {
		t.Error("C-TURN-105: the turn sent behind the stopped one reached pi")
	}
}

// TestPiStopWhilePreparing: a turn stopped while pi is still starting
// (before the prompt is sent) ends cancelled and unsent: the model never
// hears it (C-TURN-107, 108); the next turn runs.
func TestPiStopWhilePreparing(t *testing.T) {
	t.Parallel()
	pe := newPiEnv(t, piAnthropic)
	a := pe.client("a")
	def := pe.session(a, "ahp-session:/9100de00-0000-4000-8000-000000000004")
	a.Dispatch(def, turnStarted("t1", "stopped before it is said"))
	a.AwaitEcho(a.Dispatch(def, map[string]any{"type": "chat/turnCancelled", "turnId": "t1"}))
	if end := awaitEnd(t, a, def, "t1"); end.Type() != "chat/turnCancelled" {
		t.Fatalf("t1 ended with %s", end.Type())
	}
	if end := sendTurn(t, a, def, "t2", "said after the stop"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t2 ended with %s: %s", end.Type(), end.Action)
	}
	if pe.saidToModel("stopped before it is said") {
		t.Error("C-TURN-108: the turn stopped while pi prepared reached the model")
	}
	if !pe.saidToModel("said after the stop") {
		t.Error("t2 did not reach the model")
	}
}

// TestPiHostContext: what the host has to say on a turn (a side chat's
// first prompt is told what its source turn said) goes into pi's prompt
// ahead of what was said (C-TURN-111), and only there: the chat shows what
// was said, and the next prompt carries no host words.
func TestPiHostContext(t *testing.T) {
	t.Parallel()
	pe := newPiEnv(t, piOpenAI)
	a := pe.client("a")
	const sess = "ahp-session:/9100de00-0000-4000-8000-000000000005"
	def := pe.session(a, sess)
	tag := uuid.NewString()[:8]
	if end := sendTurn(t, a, def, "t1", "the question "+tag); end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended with %s: %s", end.Type(), end.Action)
	}
	side := "ahp-chat:/" + uuid.NewString()
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": side,
		"source": map[string]any{"kind": "sideChat", "chat": def, "turnId": "t1"}})
	a.Subscribe(side)
	if end := sendTurn(t, a, side, "s1", "about it "+tag); end.Type() != "chat/turnComplete" {
		t.Fatalf("s1 ended with %s: %s", end.Type(), end.Action)
	}
	if end := sendTurn(t, a, side, "s2", "and more "+tag); end.Type() != "chat/turnComplete" {
		t.Fatalf("s2 ended with %s: %s", end.Type(), end.Action)
	}
	h := pe.history() // s2's call: the side chat's whole conversation
	if len(h) < 3 {
		t.Fatalf("the side chat's history: %q", h)
	}
	first := h[0]
	ctx, said := strings.Index(first, "the question "+tag), strings.Index(first, "about it "+tag)
	if !strings.HasPrefix(first, "user:<host-context>") || ctx < 0 || said < 0 || ctx > said {
		t.Errorf("C-TURN-111: the side chat's first prompt says %q", first)
	}
	if last := h[len(h)-1]; last != "user:and more "+tag {
		t.Errorf("the second prompt says %q", last)
	}
	// (The fake's answer echoes the prompt; what was said is the message.)
	for _, tr := range chatOf(t, a, side).Turns {
		if strings.Contains(tr.Message.Text, "the question "+tag) || strings.Contains(tr.Message.Text, "host-context") {
			t.Errorf("the host's words reached the side chat's visible history: %q", tr.Message.Text)
		}
	}
}
