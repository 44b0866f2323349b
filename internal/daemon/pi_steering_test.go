package daemon_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// TestPiSteering is CHATS.md's pi steering paragraph against the real pi,
// in each API style:
//   - C-TURN-80, 81, 84: a steering message sent while a tool runs is
//     answered to its sender as it came, lands in the turn before the
//     model's next call (the next request carries it after the tool's
//     result), and is taken out with the host's chat/pendingMessageRemoved
//     once pi's queue no longer holds it, before the turn ends.
//   - C-TURN-82, 83: one sent while pi is still starting (before it has
//     the turn's prompt) is declined and handed again on the turn's next
//     action: the turn's first model call lacks it, a later one has it.
//   - C-TURN-86: one pi still holds when its turn ends (pi killed while
//     it waited in pi's queue: the turn ends with chat/error naming the
//     exit) goes back to the host and steers the next turn, which a
//     fresh pi runs; the model is told it once.
func TestPiSteering(t *testing.T) {
	t.Parallel()
	for _, model := range []string{piOpenAI, piAnthropic} {
		t.Run(model, func(t *testing.T) {
			pe := newPiEnv(t, model)
			a := pe.client("a")
			def := pe.session(a, "ahp-session:/9100de00-0000-4000-8000-000000000002")

			// C-TURN-82, 83: sent before pi has the prompt (pi is starting).
			a.Dispatch(def, turnStarted("t1", "first tool [bash:sleep 1; echo slept]"))
			awaitAccepted(t, a, a.Dispatch(def, clPending(ahp.PendingSteering, "s1", "STEER while starting")))
			removed := hostRemoval(t, a, def, "s1")
			end := awaitEnd(t, a, def, "t1")
			if end.Type() != "chat/turnComplete" {
				t.Fatalf("t1 ended with %s: %s", end.Type(), end.Action)
			}
			if removed.ServerSeq > end.ServerSeq {
				t.Error("s1 was taken out after its turn ended")
			}
			calls := pe.modelCalls()
			if len(calls) < 2 || strings.Contains(strings.Join(historyOf(calls[0]), "\n"), "STEER while starting") {
				t.Fatalf("the turn's first model call carried the steering message (or there was one call): %d calls", len(calls))
			}
			if !strings.Contains(strings.Join(historyOf(calls[len(calls)-1]), "\n"), "STEER while starting") {
				t.Errorf("no later model call carried s1:\n%s", strings.Join(historyOf(calls[len(calls)-1]), "\n"))
			}

			// C-TURN-80, 81, 84: sent while the tool runs.
			before := len(pe.modelCalls())
			a.Dispatch(def, turnStarted("t2", "slow tool [bash:sleep 2; echo slept]"))
			clAwaitAction(t, a, def, "t2", "chat/toolCallReady")
			seq := a.Dispatch(def, clPending(ahp.PendingSteering, "s2", "STEER during tool"))
			echo := awaitAccepted(t, a, seq)
			if !strings.Contains(string(echo.Raw), "STEER during tool") {
				t.Errorf("C-TURN-81: the echo does not say the message as it came: %s", echo.Raw)
			}
			removed = hostRemoval(t, a, def, "s2")
			end = awaitEnd(t, a, def, "t2")
			if end.Type() != "chat/turnComplete" {
				t.Fatalf("t2 ended with %s: %s", end.Type(), end.Action)
			}
			if removed.ServerSeq > end.ServerSeq {
				t.Error("s2 was taken out after its turn ended")
			}
			calls = pe.modelCalls()[before:]
			if len(calls) != 2 {
				t.Fatalf("t2 made %d model calls, want the tool call's and the one after it", len(calls))
			}
			h := historyOf(calls[1])
			if i := indexContaining(h, "STEER during tool"); i < 0 || i < indexContaining(h, "slept") {
				t.Errorf("C-TURN-80: the call after the tool does not carry the steering message after its result:\n%s", strings.Join(h, "\n"))
			}
			if st := chatOf(t, a, def); st.SteeringMessage != nil {
				t.Errorf("a steering message is still pending: %+v", st.SteeringMessage)
			}

			// C-TURN-86, and pi killed mid-turn: s3 waits in pi's queue
			// while a tool runs; pi dies. The turn ends with chat/error
			// naming it, s3 goes back to the host (not taken out), and
			// steers the next turn, in a fresh pi; the model is told s3
			// once.
			pids := pe.piPIDs()
			if len(pids) != 1 {
				t.Fatalf("pi processes %v, want one", pids)
			}
			a.Dispatch(def, turnStarted("t3", "long tool [bash:sleep 5; echo slept]"))
			clAwaitAction(t, a, def, "t3", "chat/toolCallReady")
			awaitAccepted(t, a, a.Dispatch(def, clPending(ahp.PendingSteering, "s3", "STEER before the crash")))
			// Deliberately a stretch for s3 to reach pi's queue: nothing
			// outside pi shows it there (if it has not, s3 still goes back
			// to the host and the checks below hold).
			time.Sleep(500 * time.Millisecond)
			if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			end = awaitEnd(t, a, def, "t3")
			if end.Type() != "chat/error" || !strings.Contains(string(end.Action), "pi exited") {
				t.Fatalf("t3 ended with %s: %s", end.Type(), end.Action)
			}
			// On a loaded machine pi may have taken s3 out of its queue
			// before the kill (it steers before it runs the tool call):
			// then the host took it out as pi's queue let it go (C-TURN-84)
			// and it is pi's, not the host's, to send again.
			takenByPi := false
			for _, env := range chatEnvelopes(a, def) {
				if env.Type() == "chat/pendingMessageRemoved" && field(env, "id") == "s3" {
					takenByPi = true
					if env.ServerSeq > end.ServerSeq {
						t.Fatalf("s3 was taken out after t3 ended: %s", env.Raw)
					}
				}
			}
			// A failed turn starts nothing (C-TURN-33); s3, when the host
			// still holds it, steers the next turn (C-TURN-43), which a
			// fresh pi runs.
			a.Dispatch(def, turnStarted("t4", "after the crash [bash:sleep 1; echo again]"))
			if !takenByPi {
				hostRemoval(t, a, def, "s3")
			}
			if end := awaitEnd(t, a, def, "t4"); end.Type() != "chat/turnComplete" {
				t.Fatalf("t4 ended with %s: %s", end.Type(), end.Action)
			}
			h = pe.history()
			n := strings.Count(strings.Join(h, "\n"), "STEER before the crash")
			if n != 1 && !(takenByPi && n == 0) {
				t.Errorf("the model was told s3 %d times (taken by pi before the kill: %v):\n%s", n, takenByPi, strings.Join(h, "\n"))
			}
			if after := pe.piPIDs(); len(after) != 1 || after[0] == pids[0] {
				t.Errorf("pi processes %v after the crash (%v before)", after, pids)
			}
		})
	}
}

func indexContaining(lines []string, s string) int {
	for i, l := range lines {
		if strings.Contains(l, s) {
			return i
		}
	}
	return -1
}

var _ ahptest.Envelope
