package daemon_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/script"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/google/uuid"
)

// steersOf is every Steer call the provider's script got for steering id.
func (e *turnsEnv) steersOf(provider, id string) []script.SteerRecord {
	var out []script.SteerRecord
	for _, s := range e.scripts[provider].Steers() {
		if s.Steering.ID == id {
			out = append(out, s)
		}
	}
	return out
}

// awaitSteers waits until the backend was handed steering id n times.
func (e *turnsEnv) awaitSteers(t testing.TB, provider, id string, n int) []script.SteerRecord {
	t.Helper()
	deadline := time.Now().Add(ahptest.Timeout)
	for {
		s := e.steersOf(provider, id)
		if len(s) >= n || time.Now().After(deadline) {
			return s
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// noTurnFor fails when a turn started for pending message id.
func noTurnFor(t testing.TB, w *watcher, id string) {
	t.Helper()
	for _, env := range chatEnvelopes(w.Client, w.chat) {
		if env.Type() == "chat/turnStarted" && field(env, "queuedMessageId") == id {
			t.Fatalf("a turn started for %s: %v", id, sequence(chatEnvelopes(w.Client, w.chat)))
		}
	}
}

// rightBehind reports whether next is the envelope right after first among
// those c received on chat.
func rightBehind(c *ahptest.Client, chat string, first, next ahptest.Envelope) bool {
	envs := chatEnvelopes(c, chat)
	i := indexOf(envs, func(e ahptest.Envelope) bool { return e.ServerSeq == first.ServerSeq })
	return i >= 0 && i+1 < len(envs) && envs[i+1].ServerSeq == next.ServerSeq
}

// hostRemoval waits for the host's own chat/pendingMessageRemoved of id.
func hostRemoval(t testing.TB, c *ahptest.Client, chat, id string) ahptest.Envelope {
	t.Helper()
	env := awaitRemoval(t, c, chat, id)
	if env.Origin != nil {
		t.Fatalf("removal of %s came from client %s, want the host's own", id, env.Origin.ClientID)
	}
	return env
}

// TestTurnsSteering is the paragraph "Steering goes to the backend while a
// turn runs": C-TURN-40 to C-TURN-54, each on every steering backend
// (OneTurnAtATime or not, withdraw or not); C-TURN-49 on the one that takes
// no steering. The script stands in for a backend's own part of it where it
// behaves as that backend does: C-TURN-82, 83, 89 ([prep] declines until its
// prompt is out), C-TURN-84, 90 (consumed, then taken out), C-TURN-85
// ([refuse]), C-TURN-86, 91, 98 ([deaf] and [late] hand it back).
func TestTurnsSteering(t *testing.T) {
	e := newTurnsEnv(t)
	for _, prov := range []string{provScript, provNoWithdraw, provConcurrent} {
		t.Run(prov, func(t *testing.T) {
			t.Parallel()

			// C-TURN-41, C-TURN-22, C-TURN-84, C-TURN-90: handed to the running
			// turn, which takes it in; the host then takes it out.
			t.Run("handed to the running turn", func(t *testing.T) {
				t.Parallel()
				chatURI, a, b := e.twoWatchers(t, prov)
				tag := uuid.NewString()[:8]
				sid := "s-" + tag
				startTurn(a.Client, chatURI, "t1", "[confirm] first")
				awaitWaiting(t, b.Client, chatURI, "t1")
				awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingSteering, sid, "left "+tag))
				// The echo is said before the actor hands the message on.
				if s := e.awaitSteers(t, prov, sid, 1); len(s) != 1 || s[0].Result != agent.SteerTaken || s[0].Steering.TurnID != "t1" {
					t.Fatalf("steer calls = %+v, want one taken for t1", s)
				}
				awaitAccepted(t, a.Client, confirmTool(a.Client, chatURI, "t1"))
				hostRemoval(t, a.Client, chatURI, sid)
				awaitEnd(t, a.Client, chatURI, "t1")
				settle(t, a, b)
				st := sameState(t, a, b)
				if !strings.Contains(answerOf(turnOf(t, st, "t1")), "[steered: left "+tag+"]") {
					t.Fatalf("t1 was not steered: %q", answerOf(turnOf(t, st, "t1")))
				}
				noTurnFor(t, a, sid)
			})

			// C-TURN-43, C-TURN-86, C-TURN-98: handed back after the turn it
			// was meant for ended, it steers the turn running then. t2 waits
			// behind t1 and starts when t1 ends; the [late] turn hands the
			// message back once t2 is sent.
			t.Run("handed back, steers the turn running then", func(t *testing.T) {
				t.Parallel()
				chatURI, a, b := e.twoWatchers(t, prov)
				tag := uuid.NewString()[:8]
				sid := "s-" + tag
				startTurn(a.Client, chatURI, "t1", "[late][confirm] first")
				awaitWaiting(t, b.Client, chatURI, "t1")
				awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingSteering, sid, "right "+tag))
				startTurn(b.Client, chatURI, "t2", "[slow] second")
				awaitAccepted(t, a.Client, confirmTool(a.Client, chatURI, "t1"))
				awaitTyped(t, a.Client, chatURI, "chat/turnComplete", "t1")
				hostRemoval(t, a.Client, chatURI, sid)
				awaitEnd(t, a.Client, chatURI, "t2")
				settle(t, a, b)
				st := sameState(t, a, b)
				if got := answerOf(turnOf(t, st, "t2")); !strings.Contains(got, "[steered: right "+tag+"]") {
					t.Fatalf("t2 was not steered: %q", got)
				}
				if got := answerOf(turnOf(t, st, "t1")); strings.Contains(got, "[steered") {
					t.Fatalf("t1 read it: %q", got)
				}
				noTurnFor(t, a, sid)
			})

			// C-TURN-40, C-TURN-44, C-TURN-45, C-TURN-46, C-TURN-86, C-TURN-91:
			// handed back while nothing runs, it runs next, as a turn of its
			// own named by its queuedMessageId, ahead of every queued
			// message; nothing starts while the backend still holds it.
			for _, marker := range []string{"[deaf]", "[late]"} {
				t.Run("handed back "+marker+", runs next", func(t *testing.T) {
					t.Parallel()
					chatURI, a, b := e.twoWatchers(t, prov)
					tag := uuid.NewString()[:8]
					sid := "s-" + tag
					startTurn(a.Client, chatURI, "t1", marker+"[confirm] first")
					awaitWaiting(t, b.Client, chatURI, "t1")
					awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingSteering, sid, "steer "+tag))
					awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingQueued, "q1", "queued"))
					awaitAccepted(t, a.Client, confirmTool(a.Client, chatURI, "t1"))
					done := awaitTyped(t, a.Client, chatURI, "chat/turnComplete", "t1")
					s := awaitStartOf(t, a.Client, chatURI, sid)
					envs := chatEnvelopes(a.Client, chatURI)
					if next := nextStart(envs, done.ServerSeq); next.ServerSeq != s.ServerSeq {
						t.Fatalf("%s started before the steering message: %v", next.Raw, sequence(envs))
					}
					var m ahp.Message
					if err := s.Field("message", &m); err != nil || m.Text != "steer "+tag {
						t.Fatalf("the steering turn says %+v", m)
					}
					q := awaitStartOf(t, a.Client, chatURI, "q1")
					awaitEnd(t, a.Client, chatURI, turnID(q))
					settle(t, a, b)
					st := sameState(t, a, b)
					if len(st.Turns) != 3 || st.Turns[1].ID != turnID(s) {
						t.Fatalf("turns %d; the second is %s, want the steering turn", len(st.Turns), st.Turns[1].ID)
					}
				})
			}

			// C-TURN-45, C-TURN-46: a steering message waiting while nothing
			// runs (after a failure) runs as a turn of its own ahead of the
			// queue, once a client acts.
			t.Run("waiting after a failure, runs ahead of the queue", func(t *testing.T) {
				t.Parallel()
				chatURI, a, b := e.twoWatchers(t, prov)
				tag := uuid.NewString()[:8]
				sid := "s-" + tag
				startTurn(a.Client, chatURI, "t1", "[deaf][confirm][error] first")
				awaitWaiting(t, b.Client, chatURI, "t1")
				awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingQueued, "q1", "queued one"))
				awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingSteering, sid, "steer "+tag))
				awaitAccepted(t, a.Client, confirmTool(a.Client, chatURI, "t1"))
				awaitTyped(t, a.Client, chatURI, "chat/error", "t1")
				kick := awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingQueued, "q2", "queued two"))
				s := awaitStartOf(t, a.Client, chatURI, sid)
				if next := nextStart(chatEnvelopes(a.Client, chatURI), kick.ServerSeq); next.ServerSeq != s.ServerSeq {
					t.Fatalf("%s started first, want the steering message", next.Raw)
				}
				settle(t, a, b)
				st := sameState(t, a, b)
				if len(st.Turns) != 4 {
					t.Fatalf("%d turns, want 4", len(st.Turns))
				}
			})

			// C-TURN-47, C-TURN-41: one waiting behind a failure a client can
			// resume starts no turn; it goes into the next turn at its start.
			t.Run("behind a resumable failure, goes into the next turn", func(t *testing.T) {
				t.Parallel()
				chatURI, a, b := e.twoWatchers(t, prov)
				tag := uuid.NewString()[:8]
				sid := "s-" + tag
				startTurn(a.Client, chatURI, "t1", "[slow][error:resumable] first")
				awaitTyped(t, b.Client, chatURI, "chat/error", "t1")
				awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingSteering, sid, "steer "+tag))
				// Nothing started: the resume is accepted.
				awaitAccepted(t, a.Client, resumeTurn(a.Client, chatURI, "t1"))
				hostRemoval(t, a.Client, chatURI, sid)
				awaitTyped(t, a.Client, chatURI, "chat/turnComplete", "t1")
				settle(t, a, b)
				st := sameState(t, a, b)
				if got := answerOf(turnOf(t, st, "t1")); !strings.Contains(got, "[steered: steer "+tag+"]") {
					t.Fatalf("the resumed turn was not steered: %q", got)
				}
				noTurnFor(t, a, sid)
			})

			// C-TURN-48: a ! command as a steering message is never handed to
			// the backend; it runs as a command, a turn of its own.
			t.Run("a command runs as a command", func(t *testing.T) {
				t.Parallel()
				chatURI, a, b := e.twoWatchers(t, prov)
				tag := uuid.NewString()[:8]
				sid := "s-" + tag
				startTurn(a.Client, chatURI, "t1", "[confirm] first")
				awaitWaiting(t, b.Client, chatURI, "t1")
				awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingSteering, sid, "!echo steered-"+tag))
				awaitAccepted(t, a.Client, confirmTool(a.Client, chatURI, "t1"))
				s := awaitStartOf(t, a.Client, chatURI, sid)
				end := awaitEnd(t, a.Client, chatURI, turnID(s))
				if end.Type() != "chat/turnComplete" {
					t.Fatalf("the command ended %s", end.Raw)
				}
				settle(t, a, b)
				st := sameState(t, a, b)
				if got := commandOutput(turnOf(t, st, turnID(s))); !strings.Contains(got, "steered-"+tag) {
					t.Fatalf("the command's turn holds %q", got)
				}
				if len(e.steersOf(prov, sid)) != 0 {
					t.Fatal("a ! command was handed to the backend as steering")
				}
				for _, text := range e.sentTexts(prov) {
					if strings.Contains(text, "steered-"+tag) {
						t.Fatal("a ! command was sent to the backend")
					}
				}
			})

			// C-TURN-50, C-TURN-51.
			t.Run("the same message again, another under its id", func(t *testing.T) {
				t.Parallel()
				chatURI, a, b := e.twoWatchers(t, prov)
				tag := uuid.NewString()[:8]
				sid := "s-" + tag
				startTurn(a.Client, chatURI, "t1", "[confirm] first")
				awaitWaiting(t, b.Client, chatURI, "t1")
				awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingSteering, sid, "go "+tag))
				awaitAccepted(t, a.Client, setPending(a.Client, chatURI, ahp.PendingSteering, sid, "go "+tag))
				if n := len(e.steersOf(prov, sid)); n != 1 {
					t.Fatalf("handed %d times, want once", n)
				}
				awaitRefused(t, a.Client, setPending(a.Client, chatURI, ahp.PendingSteering, sid, "changed "+tag), chat.ReasonSteeringBusy)
				awaitRefused(t, a.Client, setPending(a.Client, chatURI, ahp.PendingSteering, "other-"+tag, "another "+tag), chat.ReasonSteeringBusy)
				awaitAccepted(t, a.Client, confirmTool(a.Client, chatURI, "t1"))
				awaitEnd(t, a.Client, chatURI, "t1")
				settle(t, a, b)
				st := sameState(t, a, b)
				got := answerOf(turnOf(t, st, "t1"))
				if strings.Count(got, "[steered:") != 1 || !strings.Contains(got, "[steered: go "+tag+"]") {
					t.Fatalf("t1 answered %q", got)
				}
			})

			// C-TURN-52, C-TURN-53, C-TURN-54.
			t.Run("a stop takes steering out and starts nothing", func(t *testing.T) {
				t.Parallel()
				chatURI, a, b := e.twoWatchers(t, prov)
				tag := uuid.NewString()[:8]
				sid := "s-" + tag
				startTurn(a.Client, chatURI, "t1", "[hold] first")
				awaitStreaming(t, b.Client, chatURI, "t1")
				awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingSteering, sid, "steer "+tag))
				awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingQueued, "q1", "queued"))
				stop := awaitAccepted(t, a.Client, stopTurn(a.Client, chatURI, "t1"))
				end := sendTurn(t, a.Client, chatURI, "t2", "the client's own")
				caughtUp(t, chatURI, end.ServerSeq, a, b)
				for _, w := range []*watcher{a, b} {
					envs := chatEnvelopes(w.Client, chatURI)
					i := indexOf(envs, func(e ahptest.Envelope) bool { return e.ServerSeq == stop.ServerSeq })
					if i < 0 || i+1 >= len(envs) || envs[i+1].Type() != "chat/pendingMessageRemoved" || field(envs[i+1], "id") != sid || envs[i+1].Origin != nil {
						t.Fatalf("client %s: the host's removal is not right behind the stop: %v", w.ID, sequence(envs))
					}
					if next := nextStart(envs, stop.ServerSeq); turnID(next) != "t2" {
						t.Fatalf("client %s: the stop started %s", w.ID, next.Raw)
					}
				}
				settle(t, a, b)
				sameState(t, a, b)
				noTurnFor(t, a, sid)
			})

			// C-TURN-85: one the backend would not take is taken out at once.
			t.Run("refused by the backend", func(t *testing.T) {
				t.Parallel()
				chatURI, a, b := e.twoWatchers(t, prov)
				sid := "s-" + uuid.NewString()[:8]
				startTurn(a.Client, chatURI, "t1", "[confirm] first")
				awaitWaiting(t, b.Client, chatURI, "t1")
				set := awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingSteering, sid, "[refuse] no"))
				if rm := hostRemoval(t, b.Client, chatURI, sid); !rightBehind(b.Client, chatURI, set, rm) {
					t.Fatalf("not taken out at once: %v", sequence(chatEnvelopes(b.Client, chatURI)))
				}
				awaitAccepted(t, a.Client, confirmTool(a.Client, chatURI, "t1"))
				awaitEnd(t, a.Client, chatURI, "t1")
				settle(t, a, b)
				sameState(t, a, b)
				noTurnFor(t, a, sid)
			})
		})
	}

	// C-TURN-42, C-TURN-82, C-TURN-83, C-TURN-89: a turn still preparing its
	// prompt declines steering; the host hands it again on the turn's
	// actions until it is taken. A stop takes out one that was never taken
	// too (C-TURN-52).
	for _, prov := range []string{provSlow, provSlowConcurrent} {
		t.Run(prov+"/declined while preparing", func(t *testing.T) {
			t.Parallel()
			chatURI, a, b := e.twoWatchers(t, prov)
			tag := uuid.NewString()[:8]
			sid := "s-" + tag
			startTurn(a.Client, chatURI, "t1", "[prep][confirm] first")
			awaitTyped(t, a.Client, chatURI, "chat/turnStarted", "t1")
			awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingSteering, sid, "steer "+tag))
			awaitWaiting(t, a.Client, chatURI, "t1")
			awaitAccepted(t, a.Client, confirmTool(a.Client, chatURI, "t1"))
			hostRemoval(t, a.Client, chatURI, sid)
			awaitEnd(t, a.Client, chatURI, "t1")
			settle(t, a, b)
			st := sameState(t, a, b)
			steers := e.steersOf(prov, sid)
			if len(steers) < 2 || steers[0].Result != agent.SteerNotYet || steers[len(steers)-1].Result != agent.SteerTaken {
				t.Fatalf("steer calls %+v, want not-yet first and taken last", steers)
			}
			if got := answerOf(turnOf(t, st, "t1")); !strings.Contains(got, "[steered: steer "+tag+"]") {
				t.Fatalf("t1 was not steered: %q", got)
			}

			sid2 := "s2-" + tag
			startTurn(a.Client, chatURI, "t2", "[prep] second")
			awaitTyped(t, a.Client, chatURI, "chat/turnStarted", "t2")
			awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingSteering, sid2, "never taken"))
			stop := awaitAccepted(t, a.Client, stopTurn(a.Client, chatURI, "t2"))
			if rm := hostRemoval(t, a.Client, chatURI, sid2); !rightBehind(a.Client, chatURI, stop, rm) {
				t.Fatalf("the removal is not right behind the stop: %v", sequence(chatEnvelopes(a.Client, chatURI)))
			}
			settle(t, a, b)
			sameState(t, a, b)
		})
	}

	// C-TURN-49: a backend that takes no steering refuses it, a turn
	// running or not, in VS Code's words.
	t.Run(provNoSteer+"/refused", func(t *testing.T) {
		t.Parallel()
		chatURI, a, b := e.twoWatchers(t, provNoSteer)
		awaitRefused(t, a.Client, setPending(a.Client, chatURI, ahp.PendingSteering, "s1", "idle"), chat.ReasonNoSteering)
		startTurn(a.Client, chatURI, "t1", "[confirm] first")
		awaitWaiting(t, b.Client, chatURI, "t1")
		awaitRefused(t, b.Client, setPending(b.Client, chatURI, ahp.PendingSteering, "s2", "running"), chat.ReasonNoSteering)
		awaitAccepted(t, a.Client, confirmTool(a.Client, chatURI, "t1"))
		awaitEnd(t, a.Client, chatURI, "t1")
		settle(t, a, b)
		st := sameState(t, a, b)
		if st.SteeringMessage != nil || len(st.Turns) != 1 {
			t.Fatalf("steering %+v, %d turns", st.SteeringMessage, len(st.Turns))
		}
	})
}

// TestTurnsTakeBack is the paragraph "A client takes a pending message back
// with chat/pendingMessageRemoved": C-TURN-55 to C-TURN-59, on a backend
// that can withdraw a steering message (one at a time or not) and one that
// cannot.
func TestTurnsTakeBack(t *testing.T) {
	e := newTurnsEnv(t)
	for _, prov := range []string{provScript, provConcurrent, provNoWithdraw} {
		withdraws := prov != provNoWithdraw
		t.Run(prov, func(t *testing.T) {
			t.Parallel()

			// C-TURN-55, C-TURN-56.
			t.Run("said as sent", func(t *testing.T) {
				t.Parallel()
				chatURI, a, b := e.twoWatchers(t, prov)
				startTurn(a.Client, chatURI, "t1", "[confirm] first")
				awaitWaiting(t, b.Client, chatURI, "t1")
				awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingQueued, "q1", "one"))
				echo := awaitAccepted(t, a.Client, removePending(a.Client, chatURI, ahp.PendingQueued, "q1"))
				if echo.Type() != "chat/pendingMessageRemoved" || field(echo, "id") != "q1" || field(echo, "kind") != ahp.PendingQueued {
					t.Fatalf("removal said as %s", echo.Raw)
				}
				before := sameState(t, a, b)
				awaitAccepted(t, a.Client, removePending(a.Client, chatURI, ahp.PendingQueued, "never-was"))
				awaitAccepted(t, b.Client, removePending(b.Client, chatURI, ahp.PendingSteering, "never-was"))
				after := sameState(t, a, b)
				if comparable(t, before) != comparable(t, after) {
					t.Fatalf("removing what the chat does not hold changed it")
				}
				awaitAccepted(t, a.Client, confirmTool(a.Client, chatURI, "t1"))
				awaitEnd(t, a.Client, chatURI, "t1")
				settle(t, a, b)
				if st := sameState(t, a, b); len(st.Turns) != 1 {
					t.Fatalf("%d turns: the removed message ran", len(st.Turns))
				}
			})

			// C-TURN-57, C-TURN-59: withdrawn from a backend that can; from
			// one that cannot, the removal is refused and the backend keeps
			// the message.
			t.Run("a handed steering message", func(t *testing.T) {
				t.Parallel()
				chatURI, a, b := e.twoWatchers(t, prov)
				tag := uuid.NewString()[:8]
				sid := "s-" + tag
				startTurn(a.Client, chatURI, "t1", "[confirm] first")
				awaitWaiting(t, b.Client, chatURI, "t1")
				awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingSteering, sid, "steer "+tag))
				seq := removePending(a.Client, chatURI, ahp.PendingSteering, sid)
				if withdraws {
					awaitAccepted(t, a.Client, seq)
				} else {
					awaitRefused(t, a.Client, seq, chat.ReasonSteeringBusy)
					if st := sameState(t, a, b); st.SteeringMessage == nil || st.SteeringMessage.ID != sid {
						t.Fatalf("the refused removal changed the steering message: %+v", st.SteeringMessage)
					}
				}
				awaitAccepted(t, a.Client, confirmTool(a.Client, chatURI, "t1"))
				awaitEnd(t, a.Client, chatURI, "t1")
				settle(t, a, b)
				st := sameState(t, a, b)
				steered := strings.Contains(answerOf(turnOf(t, st, "t1")), "[steered: steer "+tag+"]")
				if steered == withdraws {
					t.Fatalf("withdraw=%v but t1 steered=%v: %q", withdraws, steered, answerOf(turnOf(t, st, "t1")))
				}
				noTurnFor(t, a, sid)
			})

			// C-TURN-58: one the model has read stays in its turn.
			t.Run("a steering message the model read", func(t *testing.T) {
				t.Parallel()
				chatURI, a, b := e.twoWatchers(t, prov)
				tag := uuid.NewString()[:8]
				sid := "s-" + tag
				startTurn(a.Client, chatURI, "t1", "[slow] first")
				awaitStreaming(t, b.Client, chatURI, "t1")
				awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingSteering, sid, "steer "+tag))
				hostRemoval(t, a.Client, chatURI, sid)
				awaitAccepted(t, a.Client, removePending(a.Client, chatURI, ahp.PendingSteering, sid))
				awaitEnd(t, a.Client, chatURI, "t1")
				settle(t, a, b)
				st := sameState(t, a, b)
				if got := answerOf(turnOf(t, st, "t1")); !strings.Contains(got, "[steered: steer "+tag+"]") {
					t.Fatalf("the read message left its turn: %q", got)
				}
			})
		})
	}
}
