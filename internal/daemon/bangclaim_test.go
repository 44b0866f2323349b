package daemon_test

import (
	"testing"
)

// TestBangTerminalClaimNamesItsChat: the terminal a ! command runs in is
// claimed by its session, its chat, its turn and its tool call (AHP's
// TerminalSessionClaim), so a window draws it under the chat that ran it.
func TestBangTerminalClaimNamesItsChat(t *testing.T) {
	t.Parallel()
	v := newVSCodeEnv(t)
	sess, def, _ := v.workspaceSession("bang-claim")
	v.c.Dispatch(sess, turnStarted("turn-bang-claim", "!echo CLAIMED"))
	done := toolComplete(t, v.c, def, "turn-bang-claim")
	awaitEnd(t, v.c, def, "turn-bang-claim")
	term := terminalOfContent(done.Result.Content)
	if term == "" {
		t.Fatalf("the result names no terminal: %+v", done.Result)
	}
	c := terminalState(t, v.c, term).Claim
	if c.Kind != "session" || c.Session != sess || c.Chat != def || c.TurnID != "turn-bang-claim" || c.ToolCallID == "" {
		t.Fatalf("the command's terminal is claimed %+v, want session %s chat %s turn turn-bang-claim and its call", c, sess, def)
	}
}
