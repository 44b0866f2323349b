package daemon_test

import (
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// TestRewindAtCommandTurn: a truncation at a ! command's turn keeps that
// turn and rewinds the backend at the turn before it (C-COMP-20, 21); the
// command turns it drops go with it (C-COMP-24); with no turn before it the
// chat starts over and keeps the command turns up to the one named
// (C-COMP-22, 23).
func TestRewindAtCommandTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	sess, def := e.createSession(a, "ahp-session:/c3d3c3d3-0000-4000-8000-000000000001")
	a.Subscribe(def)
	conv := strings.TrimPrefix(sess, "ahp-session:/")
	sendTurn(t, a, def, "c0", "!echo first")
	sendTurn(t, a, def, "t1", "one")
	sendTurn(t, a, def, "c1", "!echo between")
	sendTurn(t, a, def, "t2", "two")
	sendTurn(t, a, def, "c2", "!echo after")

	truncate := func(turnID string) {
		t.Helper()
		act := map[string]any{"type": "chat/truncated"}
		if turnID != "" {
			act["turnId"] = turnID
		}
		if env := a.AwaitEcho(a.Dispatch(def, act)); env.RejectionReason != "" {
			t.Fatalf("truncate %q refused: %s", turnID, env.RejectionReason)
		}
	}
	truncate("c1")
	if got := strings.Join(texts(chatOf(t, a, def).Turns), "|"); got != "!echo first|one|!echo between" {
		t.Fatalf("after truncating at c1: %q", got)
	}
	sendTurn(t, a, def, "t3", "three")
	if got := strings.Join(e.script.History(conv), "|"); got != "one|three" {
		t.Fatalf("backend after a rewind at a command turn: %q, want it cut at the turn before", got)
	}

	truncate("c0")
	if got := strings.Join(texts(chatOf(t, a, def).Turns), "|"); got != "!echo first" {
		t.Fatalf("after truncating at c0: %q", got)
	}
	if h := e.script.History(conv); h != nil {
		t.Fatalf("no turn before c0: the backend should start over, still holds %v", h)
	}
	sendTurn(t, a, def, "t4", "four")
	cs := chatOf(t, a, def)
	if got := strings.Join(texts(cs.Turns), "|"); got != "!echo first|four" {
		t.Fatalf("after starting over: %q", got)
	}
}

// TestForkAtCommandTurn: a fork at a ! command's turn forks the backend at
// the turn before it and keeps the command turns it copied (C-FROM-10, 11);
// the backend resumes the fork from its own point for that turn
// (C-FROM-07).
func TestForkAtCommandTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	sess, def := e.createSession(a, "ahp-session:/f0c0f0c0-0000-4000-8000-000000000001")
	a.Subscribe(def)
	sendTurn(t, a, def, "t1", "one")
	sendTurn(t, a, def, "c1", "!echo cmd")
	sendTurn(t, a, def, "t2", "two")
	fork := "ahp-chat:/f0c0f0c0-0000-4000-8000-0000000000ff"
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": fork, "source": map[string]any{"kind": "fork", "chat": def, "turnId": "c1"}})
	a.Subscribe(fork)
	if got := strings.Join(texts(chatOf(t, a, fork).Turns), "|"); got != "one|!echo cmd" {
		t.Fatalf("fork turns: %q", got)
	}
	sendTurn(t, a, fork, "f1", "fork continues")
	if got := strings.Join(e.script.History(e.conversationOf(fork)), "|"); got != "one|fork continues" {
		t.Fatalf("forked backend history = %q", got)
	}
}

// TestFetchTurnsWithoutView: with no subscribe that named a view, there are
// no older turns to load: fetchTurns answers {} and the page is empty
// (C-CMD-12, reading 16).
func TestFetchTurnsWithoutView(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	_, def := e.createSession(a, "ahp-session:/fe0fe0fe-0000-4000-8000-000000000001")
	a.Subscribe(def)
	sendTurn(t, a, def, "t1", "one")
	if res := a.MustCall("fetchTurns", map[string]any{"channel": def}); string(res) != "{}" {
		t.Fatalf("fetchTurns = %s", res)
	}
	env := a.AwaitAction(def, "chat/turnsLoaded")
	var turns []ahp.Turn
	_ = env.Field("turns", &turns)
	var cursor *string
	_ = env.Field("turnsNextCursor", &cursor)
	if len(turns) != 0 || cursor != nil {
		t.Fatalf("turnsLoaded without a view: %s", env.Action)
	}
	if cs := chatOf(t, a, def); len(cs.Turns) != 1 {
		t.Fatalf("the page changed the chat: %d turns", len(cs.Turns))
	}
}
