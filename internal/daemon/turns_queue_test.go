package daemon_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/google/uuid"
)

// nextStart is the first chat/turnStarted after the envelope with serverSeq
// after, or a zero envelope.
func nextStart(envs []ahptest.Envelope, after int64) ahptest.Envelope {
	for _, e := range envs {
		if e.ServerSeq > after && e.Type() == "chat/turnStarted" {
			return e
		}
	}
	return ahptest.Envelope{}
}

// TestTurnsQueue is the paragraph "The host starts the head of the queue as
// a turn of its own when a turn completes": C-TURN-26 to C-TURN-39 (C-TURN-40
// is in TestTurnsSteering, with the steering it is about). The hold on a
// resumable failure (C-TURN-38, 39) runs on a backend that resumes and on
// one that does not.
func TestTurnsQueue(t *testing.T) {
	e := newTurnsEnv(t)
	for _, prov := range []string{provScript, provConcurrent} {
		t.Run(prov, func(t *testing.T) {
			t.Parallel()

			// C-TURN-26, C-TURN-28, C-TURN-29, C-TURN-30.
			t.Run("a completed turn starts the head", func(t *testing.T) {
				t.Parallel()
				chatURI, a, b := e.twoWatchers(t, prov)
				tag := uuid.NewString()[:8]
				startTurn(a.Client, chatURI, "t1", "[confirm] first")
				awaitWaiting(t, b.Client, chatURI, "t1")
				awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingQueued, "q1", "one "+tag))
				awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingQueued, "q2", "two "+tag))
				held := sameState(t, a, b).QueuedMessages[0].Message
				awaitAccepted(t, a.Client, confirmTool(a.Client, chatURI, "t1"))
				done := awaitTyped(t, a.Client, chatURI, "chat/turnComplete", "t1")
				q1 := awaitStartOf(t, a.Client, chatURI, "q1")
				if next := nextStart(chatEnvelopes(a.Client, chatURI), done.ServerSeq); next.ServerSeq != q1.ServerSeq {
					t.Fatalf("after t1 completed, %s started, want q1", next.Raw)
				}
				// C-TURN-28: the message as the chat holds it (the sender
				// added to its _meta), its id as queuedMessageId.
				var m ahp.Message
				if err := q1.Field("message", &m); err != nil || m.Text != held.Text || m.Meta[chat.SenderMetaKey] == nil {
					t.Fatalf("q1's turn says %+v, the chat held %+v", m, held)
				}
				// C-TURN-29: admitted as a client's start: active, then ended once.
				awaitEnd(t, b.Client, chatURI, turnID(q1))
				q2 := awaitStartOf(t, b.Client, chatURI, "q2")
				awaitEnd(t, b.Client, chatURI, turnID(q2))
				st := sameState(t, a, b)
				if len(st.Turns) != 3 || st.QueuedMessages != nil {
					t.Fatalf("turns %d, queued %+v", len(st.Turns), st.QueuedMessages)
				}
				for _, tr := range st.Turns {
					if tr.State != ahp.TurnComplete {
						t.Fatalf("turn %s ended %s", tr.ID, tr.State)
					}
				}
				// C-TURN-30: sent to the backend.
				sent := e.sentTexts(prov)
				if !slices.Contains(sent, "one "+tag) || !slices.Contains(sent, "two "+tag) {
					t.Fatal("a turn from the queue never reached the backend")
				}
			})

			// C-TURN-27, C-TURN-31: a ! command from the queue runs here, and
			// the queue goes on when it ends, however it went.
			t.Run("a command from the queue", func(t *testing.T) {
				t.Parallel()
				chatURI, a, b := e.twoWatchers(t, prov)
				tag := uuid.NewString()[:8]
				startTurn(a.Client, chatURI, "t1", "[confirm] first")
				awaitWaiting(t, b.Client, chatURI, "t1")
				awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingQueued, "q1", "!echo queued-"+tag))
				awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingQueued, "q2", "!false"))
				awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingQueued, "q3", "after the commands "+tag))
				awaitAccepted(t, a.Client, confirmTool(a.Client, chatURI, "t1"))
				q3 := awaitStartOf(t, b.Client, chatURI, "q3")
				awaitEnd(t, b.Client, chatURI, turnID(q3))
				st := sameState(t, a, b)
				if len(st.Turns) != 4 {
					t.Fatalf("%d turns, want 4", len(st.Turns))
				}
				if tr := st.Turns[1]; tr.State != ahp.TurnComplete || !strings.Contains(commandOutput(tr), "queued-"+tag) {
					t.Fatalf("the queued command's turn: %s %q", tr.State, commandOutput(tr))
				}
				// !false fails its tool call and completes its turn.
				if tc := commandCall(st.Turns[2]); st.Turns[2].State != ahp.TurnComplete || tc == nil || tc.Success == nil || *tc.Success || st.Turns[3].State != ahp.TurnComplete {
					t.Fatalf("!false ended %s, the next turn %s", st.Turns[2].State, st.Turns[3].State)
				}
				for _, text := range e.sentTexts(prov) {
					if strings.Contains(text, "queued-"+tag) {
						t.Fatal("a ! command reached the backend")
					}
				}
			})

			// C-TURN-32, C-TURN-37: a stopped turn starts nothing; a turn the
			// client starts that completes starts the head.
			t.Run("a stop starts nothing", func(t *testing.T) {
				t.Parallel()
				chatURI, a, b := e.twoWatchers(t, prov)
				startTurn(a.Client, chatURI, "t1", "[hold] first")
				awaitStreaming(t, b.Client, chatURI, "t1")
				awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingQueued, "q1", "waits"))
				stop := awaitAccepted(t, a.Client, stopTurn(a.Client, chatURI, "t1"))
				sendTurn(t, a.Client, chatURI, "t2", "the client's own")
				q1 := awaitStartOf(t, b.Client, chatURI, "q1")
				awaitEnd(t, b.Client, chatURI, turnID(q1))
				envs := chatEnvelopes(b.Client, chatURI)
				if next := nextStart(envs, stop.ServerSeq); turnID(next) != "t2" {
					t.Fatalf("after the stop %s started, want the client's t2: %v", next.Raw, sequence(envs))
				}
				t2End := indexOf(envs, isType("chat/turnComplete", "t2"))
				if i := indexOf(envs, func(e ahptest.Envelope) bool { return e.ServerSeq == q1.ServerSeq }); i < t2End {
					t.Fatalf("q1 started before t2 completed: %v", sequence(envs))
				}
				sameState(t, a, b)
			})

			// C-TURN-33, C-TURN-37: a failed turn starts nothing.
			t.Run("a failure starts nothing", func(t *testing.T) {
				t.Parallel()
				chatURI, a, b := e.twoWatchers(t, prov)
				startTurn(a.Client, chatURI, "t1", "[confirm][error] first")
				awaitWaiting(t, b.Client, chatURI, "t1")
				awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingQueued, "q1", "waits"))
				awaitAccepted(t, a.Client, confirmTool(a.Client, chatURI, "t1"))
				failed := awaitTyped(t, b.Client, chatURI, "chat/error", "t1")
				sendTurn(t, a.Client, chatURI, "t2", "the client's own")
				q1 := awaitStartOf(t, b.Client, chatURI, "q1")
				awaitEnd(t, b.Client, chatURI, turnID(q1))
				envs := chatEnvelopes(b.Client, chatURI)
				if next := nextStart(envs, failed.ServerSeq); turnID(next) != "t2" {
					t.Fatalf("after the failure %s started, want t2: %v", next.Raw, sequence(envs))
				}
				if indexOf(envs, isType("chat/turnComplete", "t2")) > indexOf(envs, func(e ahptest.Envelope) bool { return e.ServerSeq == q1.ServerSeq }) {
					t.Fatalf("q1 started before t2 completed: %v", sequence(envs))
				}
				sameState(t, a, b)
			})

			// C-TURN-34, C-TURN-35, C-TURN-36: while nothing runs, queuing,
			// taking back or reordering starts the head.
			for _, kick := range []struct {
				name  string
				rule  string
				do    func(c *ahptest.Client, chat string) int64
				first string
			}{
				{"queuing", "C-TURN-34", func(c *ahptest.Client, chat string) int64 {
					return setPending(c, chat, ahp.PendingQueued, "q3", "three")
				}, "q1"},
				{"taking back", "C-TURN-35", func(c *ahptest.Client, chat string) int64 {
					return removePending(c, chat, ahp.PendingQueued, "q1")
				}, "q2"},
				{"reordering", "C-TURN-36", func(c *ahptest.Client, chat string) int64 {
					return reorderQueued(c, chat, "q2", "q1")
				}, "q2"},
			} {
				t.Run(kick.name+" starts the head", func(t *testing.T) {
					t.Parallel()
					chatURI, a, b := e.twoWatchers(t, prov)
					startTurn(a.Client, chatURI, "t1", "[hold] first")
					awaitStreaming(t, b.Client, chatURI, "t1")
					awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingQueued, "q1", "one"))
					awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingQueued, "q2", "two"))
					stop := awaitAccepted(t, a.Client, stopTurn(a.Client, chatURI, "t1"))
					echo := awaitAccepted(t, b.Client, kick.do(b.Client, chatURI))
					started := awaitStartOf(t, a.Client, chatURI, kick.first)
					envs := chatEnvelopes(a.Client, chatURI)
					if next := nextStart(envs, stop.ServerSeq); next.ServerSeq != started.ServerSeq {
						t.Fatalf("%s: %s started first, want %s: %v", kick.rule, next.Raw, kick.first, sequence(envs))
					}
					if started.ServerSeq < echo.ServerSeq {
						t.Fatalf("%s: started before the client acted", kick.rule)
					}
					settle(t, a, b)
					sameState(t, a, b)
				})
			}
		})
	}

	// C-TURN-38, C-TURN-39: nothing starts behind an error a client can
	// resume, a message queued after it included, until the turn is
	// resumed and completes or another turn completes. A backend that cannot
	// resume fails no turn resumably, and holds nothing.
	for _, prov := range []string{provScript, provConcurrent, provNoResume} {
		resumes := prov != provNoResume
		for _, lift := range []string{"resumed", "another turn"} {
			t.Run(prov+"/resumable failure, lifted by "+lift, func(t *testing.T) {
				t.Parallel()
				chatURI, a, b := e.twoWatchers(t, prov)
				// One client, so the queued message reaches the chat while t1
				// streams.
				startTurn(a.Client, chatURI, "t1", "[slow][error:resumable] first")
				awaitAccepted(t, a.Client, setPending(a.Client, chatURI, ahp.PendingQueued, "q1", "before the failure"))
				failed := awaitTyped(t, b.Client, chatURI, "chat/error", "t1")
				var part ahp.ResponsePart
				_ = failed.Field("part", &part)
				if part.IsResumableError() != resumes {
					t.Fatalf("resumable = %v, want %v", part.IsResumableError(), resumes)
				}
				// C-TURN-38: a message queued after the error starts nothing
				// either. Had anything started, the resume below would be
				// refused: a turn would be running.
				awaitAccepted(t, b.Client, setPending(b.Client, chatURI, ahp.PendingQueued, "q2", "after the failure"))
				if !resumes {
					// No hold: queuing lifted the failure's pause.
					q1 := awaitStartOf(t, a.Client, chatURI, "q1")
					awaitRefused(t, a.Client, resumeTurn(a.Client, chatURI, "t1"), "Only the latest turn, ended by a resumable error while nothing runs, can be resumed.")
					awaitEnd(t, a.Client, chatURI, turnID(q1))
					q2 := awaitStartOf(t, a.Client, chatURI, "q2")
					awaitEnd(t, a.Client, chatURI, turnID(q2))
					sameState(t, a, b)
					return
				}
				var done ahptest.Envelope
				if lift == "resumed" {
					awaitAccepted(t, a.Client, resumeTurn(a.Client, chatURI, "t1"))
					done = awaitTyped(t, b.Client, chatURI, "chat/turnComplete", "t1")
				} else {
					sendTurn(t, a.Client, chatURI, "t2", "another")
					done = awaitTyped(t, b.Client, chatURI, "chat/turnComplete", "t2")
				}
				q1 := awaitStartOf(t, b.Client, chatURI, "q1")
				envs := chatEnvelopes(b.Client, chatURI)
				if next := nextStart(envs, failed.ServerSeq); lift == "resumed" && next.ServerSeq != q1.ServerSeq {
					t.Fatalf("something started before the resumed turn completed: %v", sequence(envs))
				}
				if q1.ServerSeq < done.ServerSeq {
					t.Fatalf("C-TURN-39: q1 started before the turn completed: %v", sequence(envs))
				}
				awaitEnd(t, b.Client, chatURI, turnID(q1))
				q2 := awaitStartOf(t, b.Client, chatURI, "q2")
				awaitEnd(t, b.Client, chatURI, turnID(q2))
				st := sameState(t, a, b)
				if lift == "resumed" {
					if tr := turnOf(t, st, "t1"); tr.State != ahp.TurnComplete {
						t.Fatalf("resumed t1 ended %s", tr.State)
					}
				}
			})
		}
	}
}
