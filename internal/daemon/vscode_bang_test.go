package daemon_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// A ! command's turn is one terminal tool call (VS Code's host): these
// helpers read it back from a turn.

// commandCall is the tool call of a ! command's turn, nil when it has none.
func commandCall(tr ahp.Turn) *ahp.ToolCallState {
	for _, p := range tr.ResponseParts {
		if p.Kind == ahp.PartToolCall && p.ToolCall != nil && p.ToolCall.ToolName == "run_in_terminal" {
			return p.ToolCall
		}
	}
	return nil
}

// commandOutput is the output a ! command's tool call carries.
func commandOutput(tr ahp.Turn) string {
	tc := commandCall(tr)
	if tc == nil {
		return ""
	}
	return textOfContent(tc.Content)
}

func textOfContent(content []ahp.ToolResultContent) string {
	var b strings.Builder
	for _, c := range content {
		if c.Type == ahp.ContentText {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func terminalOfContent(content []ahp.ToolResultContent) string {
	for _, c := range content {
		if c.Type == ahp.ContentTerminal {
			return c.Resource
		}
	}
	return ""
}

// toolComplete is the chat/toolCallComplete of turn id on chat.
func toolComplete(t *testing.T, c *ahptest.Client, chat, id string) ahp.ChatToolCallComplete {
	t.Helper()
	env := c.AwaitEnvelope("toolCallComplete of "+id, func(e ahptest.Envelope) bool {
		return e.Channel == chat && e.Type() == "chat/toolCallComplete" && turnID(e) == id
	})
	var a ahp.ChatToolCallComplete
	if err := json.Unmarshal(env.Action, &a); err != nil {
		t.Fatal(err)
	}
	return a
}

func readyConfirmation(t *testing.T, c *ahptest.Client, chat, id string) string {
	t.Helper()
	env := c.AwaitEnvelope("toolCallReady of "+id, func(e ahptest.Envelope) bool {
		return e.Channel == chat && e.Type() == "chat/toolCallReady" && turnID(e) == id
	})
	var confirmed string
	_ = env.Field("confirmed", &confirmed)
	return confirmed
}

// TestVSCodeBangCommands ports the ! command cases of hostFeaturesSuite
// and multiChatSuite: a ! turn is a terminal tool call that needs no
// confirmation, names the terminal it ran in and completes with the
// command's exit status; a failing command fails the call and the turn
// still completes. (The CHATS.md rules of ! turns keep their own tests:
// C-TURN-27, C-TURN-31 TestTurnsQueue; C-TURN-48 TestTurnsSteering;
// C-FROM-10/11 TestForkAtCommandTurn; C-COMP-20..23 TestRewindAtCommandTurn;
// C-COMP-27 TestTitles.)
func TestVSCodeBangCommands(t *testing.T) {
	t.Parallel()
	v := newVSCodeEnv(t)
	conformanceCase(t, "a bang command runs locally and exposes terminal output", func(t *testing.T) {
		sess, def, _ := v.workspaceSession("bang-success")
		v.c.Dispatch(sess, turnStarted("turn-bang-success", "!echo BANG_OUTPUT_42"))
		done := toolComplete(t, v.c, def, "turn-bang-success")
		if end := awaitEnd(t, v.c, def, "turn-bang-success"); end.Type() != "chat/turnComplete" {
			t.Fatalf("the turn ended %s", end.Raw)
		}
		term := terminalOfContent(done.Result.Content)
		if term == "" {
			t.Fatalf("the result names no terminal: %+v", done.Result)
		}
		st := terminalState(t, v.c, term)
		if !done.Result.Success || readyConfirmation(t, v.c, def, "turn-bang-success") != ahp.ConfirmedNotNeeded ||
			!strings.Contains(textOfContent(done.Result.Content), "BANG_OUTPUT_42") || !strings.Contains(terminalText(st), "BANG_OUTPUT_42") {
			t.Fatalf("result %+v, terminal %q", done.Result, terminalText(st))
		}
	})
	conformanceCase(t, "a failing bang command reports its exit code", func(t *testing.T) {
		sess, def, _ := v.workspaceSession("bang-failure")
		v.c.Dispatch(sess, turnStarted("turn-bang-failure", `!node -e "process.exit(7)"`))
		done := toolComplete(t, v.c, def, "turn-bang-failure")
		if end := awaitEnd(t, v.c, def, "turn-bang-failure"); end.Type() != "chat/turnComplete" {
			t.Fatalf("the turn ended %s", end.Raw)
		}
		if done.Result.Success || readyConfirmation(t, v.c, def, "turn-bang-failure") != ahp.ConfirmedNotNeeded ||
			done.Result.PastTenseMessage == nil || !regexp.MustCompile(`(^|\D)7(\D|$)`).MatchString(done.Result.PastTenseMessage.Value) {
			t.Fatalf("result %+v", done.Result)
		}
	})
	conformanceCase(t, "failing peer bang command records a failed terminal tool call", func(t *testing.T) {
		sess, _, _ := v.workspaceSession("local-bang-failure")
		peer := v.peer(sess, "peer", nil)
		v.driveTurn(peer, "peer-bang-failure", `!node -e "process.exit(7)"`)
		var failed bool
		for _, tr := range chatOf(t, v.c, peer).Turns {
			if tc := commandCall(tr); tc != nil && tc.Status == ahp.ToolCompleted && tc.Success != nil && !*tc.Success {
				failed = true
			}
		}
		if !failed {
			t.Fatal("no completed, failed tool call in the peer's turns")
		}
	})
}
