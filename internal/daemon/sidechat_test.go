package daemon_test

import (
	"strings"
	"testing"
)

// TestSideChatFromTheRunningTurn (issue 31; AHP: SideChatSource.turnId is
// resolved against the source chat's activeTurn as well as its turns): a
// side chat opened on the turn still running is made, and its first prompt
// is told what was said and what the agent answered so far; a turn id the
// chat holds neither way is refused.
func TestSideChatFromTheRunningTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	sess, def := e.createSession(a, "ahp-session:/51de0000-0000-4000-8000-000000000001")
	a.Subscribe(def)
	a.Dispatch(def, turnStarted("run", "[hold] tell me slowly")) // runs until stopped
	awaitPart(t, a, def, "run")

	const side = "ahp-chat:/51de0000-0000-4000-8000-0000000000c1"
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": side,
		"source": map[string]any{"kind": "sideChat", "chat": def, "turnId": "run"}})
	if _, err := a.Call("createChat", map[string]any{"channel": sess, "chat": "ahp-chat:/51de0000-0000-4000-8000-0000000000c2",
		"source": map[string]any{"kind": "sideChat", "chat": def, "turnId": "nope"}}); err == nil || !strings.Contains(err.Message, "nope") {
		t.Fatalf("a side chat on a turn nobody ran: %v", err)
	}
	a.Subscribe(side)
	sendTurn(t, a, side, "s1", "what is it saying?")
	var answer string
	for _, p := range chatOf(t, a, side).Turns[0].ResponseParts {
		answer += p.Content
	}
	// The script agent says how much the host told it (C-FROM-13).
	if !strings.HasPrefix(answer, "(context: ") {
		t.Fatalf("the side chat's first prompt was not told of the running turn: %q", answer)
	}
	stopTurn(a, def, "run")
	awaitEnd(t, a, def, "run")
}
