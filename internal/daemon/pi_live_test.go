package daemon_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// TestPiLiveTurns drives one pi chat through the daemon's websocket with
// the real pi, once for each API style the fake serves (OpenAI chat
// completions and Anthropic messages): text streams with usage; reasoning
// streams as a reasoning part; a tool call runs and completes with its
// input and result; a model error ends the turn with chat/error carrying
// pi's text; a stop mid-stream ends the turn cancelled (an abort) and the
// same pi process answers the next turn. The steps run in order on one
// chat.
func TestPiLiveTurns(t *testing.T) {
	t.Parallel()
	for _, model := range []string{piOpenAI, piAnthropic} {
		t.Run(model, func(t *testing.T) {
			pe := newPiEnv(t, model)
			a := pe.client("a")
			def := pe.session(a, "ahp-session:/9100de00-0000-4000-8000-000000000001")

			// Text streams, with usage.
			if end := sendTurn(t, a, def, "t1", "hello pi"); end.Type() != "chat/turnComplete" {
				t.Fatalf("t1 ended with %s: %s", end.Type(), end.Action)
			}
			deltas := 0
			for _, env := range clTurnEnvs(a, def, "t1") {
				if env.Type() == "chat/delta" {
					deltas++
				}
			}
			cs := chatOf(t, a, def)
			if got := clMarkdown(cs.Turns[0]); got != "fake reply: hello pi" || deltas < 1 {
				t.Errorf("t1 answered %q in %d deltas", got, deltas)
			}
			if u := cs.Turns[0].Usage; u == nil || u.InputTokens == 0 || u.OutputTokens == 0 || u.Model != model {
				t.Errorf("t1 usage %+v", u)
			}

			// Reasoning streams.
			if end := sendTurn(t, a, def, "t2", "think first [think]"); end.Type() != "chat/turnComplete" {
				t.Fatalf("t2 ended with %s: %s", end.Type(), end.Action)
			}
			cs = chatOf(t, a, def)
			if got := reasoningOf(cs.Turns[1]); !strings.Contains(got, "Thinking about: think first [think]") {
				t.Errorf("t2 reasoned %q", got)
			}
			if got := clMarkdown(cs.Turns[1]); got != "fake reply: think first [think]" {
				t.Errorf("t2 answered %q", got)
			}

			// A tool call runs and completes.
			if end := sendTurn(t, a, def, "t3", "use a tool [tool]"); end.Type() != "chat/turnComplete" {
				t.Fatalf("t3 ended with %s: %s", end.Type(), end.Action)
			}
			calls := clToolCalls(chatOf(t, a, def).Turns[2])
			if len(calls) != 1 || calls[0].Status != ahp.ToolCompleted || calls[0].Success == nil || !*calls[0].Success ||
				calls[0].ToolName != "bash" || !strings.Contains(clJSON(t, calls[0]), "echo fake-tool-ran") ||
				!strings.Contains(clJSON(t, calls[0]), "fake-tool-ran\\n") {
				t.Errorf("t3 tool calls %s", clJSON(t, calls))
			}
			if got := clMarkdown(chatOf(t, a, def).Turns[2]); got != "tool done" {
				t.Errorf("t3 answered %q", got)
			}

			// A model error is the turn's chat/error, with pi's text.
			end := sendTurn(t, a, def, "t4", "fail now [error]")
			if end.Type() != "chat/error" {
				t.Fatalf("t4 ended with %s: %s", end.Type(), end.Action)
			}
			if !strings.Contains(string(end.Action), "500") && !strings.Contains(string(end.Action), "fake server error") {
				t.Errorf("t4's error says %s", end.Action)
			}

			// A stop mid-stream, and the same process answers the next turn.
			before := pe.piPIDs()
			a.Dispatch(def, turnStarted("t5", "talk slowly [slow]"))
			clAwaitAction(t, a, def, "t5", "chat/delta")
			a.AwaitEcho(a.Dispatch(def, map[string]any{"type": "chat/turnCancelled", "turnId": "t5"}))
			if end := awaitEnd(t, a, def, "t5"); end.Type() != "chat/turnCancelled" {
				t.Fatalf("t5 ended with %s", end.Type())
			}
			n := len(clTurnEnvs(a, def, "t5"))
			if end := sendTurn(t, a, def, "t6", "after the stop"); end.Type() != "chat/turnComplete" {
				t.Fatalf("t6 ended with %s: %s", end.Type(), end.Action)
			}
			if got := clMarkdown(chatOf(t, a, def).Turns[5]); got != "fake reply: after the stop" {
				t.Errorf("t6 answered %q", got)
			}
			if after := pe.piPIDs(); len(before) != 1 || !slices.Equal(before, after) {
				t.Errorf("pi processes %v before the stop, %v after the next turn", before, after)
			}
			// C-TURN-17: nothing of t5 reached a client after its end.
			if got := len(clTurnEnvs(a, def, "t5")); got != n {
				t.Errorf("%d envelopes of t5 after its end", got-n)
			}
			// pi saw the whole conversation on the next call.
			h := strings.Join(pe.history(), "\n")
			for _, want := range []string{"user:hello pi", "user:use a tool [tool]", "user:after the stop"} {
				if !strings.Contains(h, want) {
					t.Errorf("the last model call lacks %q:\n%s", want, h)
				}
			}
		})
	}
}

var _ = ahptest.Envelope{}
