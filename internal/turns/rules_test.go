package turns

import (
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
)

func caps(c agent.Capabilities) *agent.Capabilities { return &c }

// TestTurnRules: one case per rule of CHATS.md "Turns" (C-TURN-01..124).
// A rule about a backend's own side ([claude], [pi], [cofold], [bot],
// [acp]) is checked here for the part the engine plays in it: what it
// hands the backend, what it does with the backend's answer. The backend's
// half is the wire test docs/CHATS.md names beside this one.
func TestTurnRules(t *testing.T) {
	runRules(t, []rule{
		{id: "C-TURN-01", what: "a client's chat/turnStarted is told again, as the client sent it",
			steps: []step{start("t1", "hi")},
			want:  []string{"tell turnStarted t1 by c1"}},
		{id: "C-TURN-02", what: "the running turn is activeTurn and not in turns",
			steps: []step{start("t1", "hi")},
			check: func(t *testing.T, h *harness) {
				st := h.e.State()
				if st.ActiveTurn == nil || st.ActiveTurn.ID != "t1" || len(st.Turns) != 0 {
					t.Fatalf("activeTurn %+v, turns %d", st.ActiveTurn, len(st.Turns))
				}
			}},
		{id: "C-TURN-03", what: "a completed turn moves from activeTurn into turns",
			steps: []step{start("t1", "hi"), done("t1")},
			check: func(t *testing.T, h *harness) {
				st := h.e.State()
				if st.ActiveTurn != nil || len(st.Turns) != 1 || st.Turns[0].ID != "t1" {
					t.Fatalf("activeTurn %+v, turns %+v", st.ActiveTurn, st.Turns)
				}
			}},
		{id: "C-TURN-04", what: "a turn names its sender as a typed reference",
			steps: []step{as("c2", "user:bob", ahp.ChatTurnStarted{TurnID: "t1", Message: msg("hi")})},
			check: func(t *testing.T, h *harness) { wantSender(t, h, "user:bob") }},
		{id: "C-TURN-05", what: "a signed-in sender is user:<id>",
			steps: []step{start("t1", "hi")},
			check: func(t *testing.T, h *harness) { wantSender(t, h, alice) }},
		{id: "C-TURN-06", what: "the deployment's own token names root:<host>",
			steps: []step{as("c0", "root:box", ahp.ChatTurnStarted{TurnID: "t1", Message: msg("hi")})},
			check: func(t *testing.T, h *harness) { wantSender(t, h, "root:box") }},
		{id: "C-TURN-07", what: "the sender rides in the message's _meta, over one the client wrote there",
			steps: []step{client(ahp.ChatTurnStarted{TurnID: "t1", Message: ahp.Message{Text: "hi", Meta: map[string]any{SenderMetaKey: "root:forged", "k": "v"}}})},
			check: func(t *testing.T, h *harness) {
				wantSender(t, h, alice)
				if h.e.State().ActiveTurn.Message.Meta["k"] != "v" {
					t.Fatal("the rest of _meta was lost")
				}
			}},
		{id: "C-TURN-08", what: "the sender is kept by turn, for the host to store with it, and names the turn ended after a restart",
			steps: []step{start("t1", "hi"), done("t1")},
			check: func(t *testing.T, h *harness) {
				if got := h.e.Turn("t1").Sender; got != alice {
					t.Fatalf("Turn(t1).Sender = %q", got)
				}
				st := ahp.ChatState{ActiveTurn: &ahp.ActiveTurn{ID: "t9", StartedAt: ISOTime(t0)}, Turns: []ahp.Turn{}}
				h2 := newHarness(t, capsFull, st)
				h2.e.Remember("t9", TurnInfo{Sender: alice})
				h2.e.Recover()
				if got := h2.e.Turn("t9").Sender; got != alice {
					t.Fatalf("recovered turn names %q", got)
				}
			}},
		{id: "C-TURN-09", what: "a turn stored before senders were kept names no sender",
			state: &ahp.ChatState{Turns: []ahp.Turn{{ID: "old", Message: msg("hi"), State: ahp.TurnComplete}}},
			check: func(t *testing.T, h *harness) {
				if s := h.e.Turn("old").Sender; s != "" {
					t.Fatalf("guessed sender %q", s)
				}
				if _, ok := h.e.State().Turns[0].Message.Meta[SenderMetaKey]; ok {
					t.Fatal("a sender was written into the old turn")
				}
			}},
		{id: "C-TURN-10", what: "exactly one action ends a turn: a second end is dropped",
			steps: []step{start("t1", "hi"), mark, done("t1"), fail("t1"), cancelled("t1")},
			want:  []string{"tell turnComplete t1"},
			none:  []string{"tell error t1", "tell turnCancelled t1"}},
		{id: "C-TURN-11", what: "a turn that worked ends with chat/turnComplete",
			steps: []step{start("t1", "hi"), done("t1")},
			want:  []string{"tell turnComplete t1"}},
		{id: "C-TURN-12", what: "a turn that failed ends with chat/error and nothing else",
			steps: []step{start("t1", "hi"), mark, fail("t1")},
			want:  []string{"tell error t1"},
			none:  []string{"tell turnComplete", "tell turnCancelled"}},
		{id: "C-TURN-13", what: "a turn somebody stopped ends with chat/turnCancelled",
			steps: []step{start("t1", "hi"), stop("t1")},
			want:  []string{"tell turnCancelled t1 by c1"}},
		{id: "C-TURN-14", what: "every ending carries a duration",
			steps: []step{start("t1", "a"), later(5e9), done("t1"), start("t2", "b"), later(2e9), fail("t2"), start("t3", "c"), later(1e9), stop("t3")},
			check: func(t *testing.T, h *harness) {
				want := map[string]int64{"t1": 5000, "t2": 2000, "t3": 1000}
				for _, a := range h.told {
					var id string
					var d int64
					switch a := a.(type) {
					case ahp.ChatTurnComplete:
						id, d = a.TurnID, a.Duration
					case ahp.ChatError:
						id, d = a.TurnID, a.Duration
					case ahp.ChatTurnCancelled:
						id, d = a.TurnID, a.Duration
					default:
						continue
					}
					if d != want[id] {
						t.Errorf("%s ended after %d ms, want %d", id, d, want[id])
					}
					delete(want, id)
				}
				if len(want) > 0 {
					t.Errorf("no ending for %v", want)
				}
			}},
		{id: "C-TURN-15", what: "an ended turn takes no more results",
			steps: []step{start("t1", "hi"), done("t1"), mark, say("t1", "late"), tool("t1", "x")},
			none:  []string{"tell"}},
		{id: "C-TURN-16", what: "a call a stop cancelled stays cancelled: its result is never told",
			steps: []step{start("t1", "hi"), tool("t1", "call1"), stop("t1"), mark, toolDone("t1", "call1")},
			none:  []string{"tell toolCallComplete"},
			check: func(t *testing.T, h *harness) { wantCallCancelled(t, h, "call1") }},
		{id: "C-TURN-17", what: "[claude] the CLI's answer, after a stop, to the call it was in is told to no client",
			steps: []step{start("t1", "hi"), tool("t1", "call1"), stop("t1"), mark, toolDone("t1", "call1"), say("t1", "I ran it"), cancelled("t1")},
			none:  []string{"tell"}},
		{id: "C-TURN-18", what: "[claude] that answer does not change the record: the call reads back cancelled",
			steps: []step{start("t1", "hi"), tool("t1", "call1"), stop("t1"), toolDone("t1", "call1")},
			check: func(t *testing.T, h *harness) { wantCallCancelled(t, h, "call1") }},
		{id: "C-TURN-19", what: "[claude] engine part: a stopped turn's late result reaches no client; the changeset it belongs in is issue 16's",
			steps: []step{start("t1", "edit"), tool("t1", "edit1"), stop("t1"), mark, toolDone("t1", "edit1")},
			none:  []string{"tell toolCallComplete t1 edit1"}},
		{id: "C-TURN-20", what: "a message sent while a turn runs waits as a pending message",
			steps: []step{start("t1", "hi"), queue("q1", "next")},
			want:  []string{"tell pendingMessageSet queued q1 by c1"},
			check: func(t *testing.T, h *harness) { wantQueued(t, h, "q1") }},
		{id: "C-TURN-21", what: "a queued message waits for the running turn",
			steps: []step{start("t1", "hi"), queue("q1", "next"), mark, say("t1", "working")},
			none:  []string{"send agent n1", "tell turnStarted"}},
		{id: "C-TURN-22", what: "a steering message goes into the running turn",
			steps: []step{start("t1", "hi"), steer("s1", "faster")},
			want:  []string{"tell pendingMessageSet steering s1 by c1", "steer s1 -> t1 taken"}},
		{id: "C-TURN-23", what: "a client's pending message is told as it came and held in the state",
			steps: []step{start("t1", "hi"), queue("q1", "next")},
			check: func(t *testing.T, h *harness) {
				a, _ := lastTold[ahp.ChatPendingMessageSet](h)
				if a.Message.Text != "next" || a.Message.Meta != nil {
					t.Fatalf("told %+v", a.Message)
				}
				wantQueued(t, h, "q1")
			}},
		{id: "C-TURN-24", what: "the backend is handed turns and steering, never a waiting queued message",
			steps: []step{start("t1", "hi"), queue("q1", "later"), steer("s1", "now")},
			want:  []string{"send agent t1 hi", "steer s1 -> t1"},
			none:  []string{"send agent n1"}},
		{id: "C-TURN-25", what: "[claude] engine part: every turn goes to the one conversation the host keeps open; the engine never closes it",
			steps: []step{start("t1", "a"), done("t1"), start("t2", "b"), done("t2")},
			want:  []string{"send agent t1 a", "send agent t2 b"},
			none:  []string{"close"}},
		{id: "C-TURN-26", what: "a completed turn starts the head of the queue as a turn of its own",
			steps: []step{start("t1", "hi"), queue("q1", "next"), queue("q2", "after"), mark, done("t1")},
			want:  []string{"tell turnComplete t1", "tell turnStarted n1 q=q1", "send agent n1 next"},
			none:  []string{"tell turnStarted n2"}},
		{id: "C-TURN-27", what: "a ! command's turn, failed or not, starts the head of the queue",
			steps: []step{start("t1", "!false"), queue("q1", "next"), mark, shellDone("t1", 1)},
			want:  []string{"tell error t1", "tell turnStarted n1 q=q1", "send agent n1 next"}},
		{id: "C-TURN-28", what: "the head of the queue starts with the message as the chat holds it and its id as queuedMessageId",
			steps: []step{start("t1", "hi"), queue("q1", "next"), done("t1")},
			check: func(t *testing.T, h *harness) {
				a, _ := lastTold[ahp.ChatTurnStarted](h)
				if a.QueuedMessageID != "q1" || a.Message.Text != "next" || a.Message.Meta[SenderMetaKey] != alice {
					t.Fatalf("told %+v", a)
				}
				if len(h.e.State().QueuedMessages) != 0 {
					t.Fatal("the started message still waits")
				}
			}},
		{id: "C-TURN-29", what: "a turn from the queue is admitted as a client's turn: prepared, said, admitted",
			steps: []step{start("t1", "hi"), queue("q1", "next"), mark, done("t1")},
			want:  []string{"prepare next", "tell turnStarted n1 q=q1", "admitted n1", "open agent", "send agent n1 next"}},
		{id: "C-TURN-30", what: "a turn from the queue is sent to the backend",
			steps: []step{start("t1", "hi"), queue("q1", "next"), done("t1")},
			want:  []string{"send agent n1 next"}},
		{id: "C-TURN-31", what: "a ! command from the queue runs on the host's shell, not the backend",
			steps: []step{start("t1", "hi"), queue("q1", "!ls -l"), mark, done("t1")},
			want:  []string{"tell turnStarted n1 q=q1", "open local", "send local n1 ls -l"},
			none:  []string{"send agent"}},
		{id: "C-TURN-32", what: "a stopped turn starts nothing behind it, not even when the backend hands its steering back",
			steps: []step{start("t1", "hi"), steer("s1", "also"), queue("q1", "next"), mark, stop("t1"), cancelled("t1"), returned("t1", "s1")},
			none:  []string{"tell turnStarted"},
			check: func(t *testing.T, h *harness) { wantQueued(t, h, "q1") }},
		{id: "C-TURN-33", what: "a failed turn starts nothing behind it, not even when the backend hands steering back",
			steps: []step{start("t1", "hi"), steer("s1", "also"), queue("q1", "next"), mark, fail("t1"), consumed("s1")},
			none:  []string{"tell turnStarted"},
			check: func(t *testing.T, h *harness) { wantQueued(t, h, "q1") }},
		{id: "C-TURN-34", what: "while nothing runs, queuing a message starts the head of the queue",
			steps: []step{start("t1", "hi"), queue("q1", "next"), stop("t1"), mark, queue("q2", "more")},
			want:  []string{"tell pendingMessageSet queued q2", "tell turnStarted n1 q=q1"}},
		{id: "C-TURN-35", what: "while nothing runs, taking back a message starts the head of the queue",
			steps: []step{start("t1", "hi"), queue("q1", "next"), queue("q2", "more"), stop("t1"), mark, takeBack(ahp.PendingQueued, "q1")},
			want:  []string{"tell pendingMessageRemoved queued q1 by c1", "tell turnStarted n1 q=q2"}},
		{id: "C-TURN-36", what: "while nothing runs, reordering starts the head of the queue",
			steps: []step{start("t1", "hi"), queue("q1", "a"), queue("q2", "b"), stop("t1"), mark, reorder("q2", "q1")},
			want:  []string{"tell queuedMessagesReordered", "tell turnStarted n1 q=q2"}},
		{id: "C-TURN-37", what: "after a stop, a client's turn that completes starts the head of the queue",
			steps: []step{start("t1", "hi"), queue("q1", "next"), stop("t1"), start("t2", "again"), mark, done("t2")},
			want:  []string{"tell turnComplete t2", "tell turnStarted n1 q=q1"}},
		{id: "C-TURN-38", what: "while the latest turn failed resumably, nothing starts, a message queued after it included",
			steps: []step{start("t1", "hi"), queue("q1", "next"), failResumable("t1"), mark, queue("q2", "more")},
			want:  []string{"tell pendingMessageSet queued q2"},
			none:  []string{"tell turnStarted"}},
		{id: "C-TURN-39", what: "that hold lasts until the turn is resumed and completes",
			steps: []step{start("t1", "hi"), queue("q1", "next"), failResumable("t1"), resume("t1"), mark, done("t1")},
			want:  []string{"tell turnComplete t1", "tell turnStarted n1 q=q1"}},
		{id: "C-TURN-40", what: "nothing starts while the backend holds a steering message it has not run",
			steps: []step{start("t1", "hi"), steer("s1", "also"), queue("q1", "next"), mark, done("t1")},
			want:  []string{"tell turnComplete t1"},
			none:  []string{"tell turnStarted"}},
		{id: "C-TURN-41", what: "a pending steering message is handed at the turn's start",
			steps: []step{start("t1", "hi"), steerAnswer("t1", agent.SteerNotYet), steer("s1", "also"), start("t2", "next"), mark, done("t1")},
			want:  []string{"tell turnStarted t2", "send agent t2 next", "steer s1 -> t2 taken"}},
		{id: "C-TURN-42", what: "a backend not ready for steering is handed it again on each of the turn's actions",
			steps: []step{start("t1", "hi"), steerAnswer("t1", agent.SteerNotYet), steer("s1", "also"), say("t1", "a"), steerAnswer("t1", agent.SteerTaken), mark, say("t1", "b")},
			want:  []string{"tell delta t1 b", "steer s1 -> t1 taken"}},
		{id: "C-TURN-43", what: "a steering message handed back after its turn ended steers the turn that runs then",
			steps: []step{start("t1", "hi"), steer("s1", "also"), start("t2", "next"), done("t1"), mark, returned("t1", "s1")},
			want:  []string{"steer s1 -> t2 taken"}},
		{id: "C-TURN-44", what: "a steering message handed back while no turn runs runs next",
			steps: []step{start("t1", "hi"), steer("s1", "also"), done("t1"), mark, returned("t1", "s1")},
			want:  []string{"tell turnStarted n1 q=s1", "send agent n1 also"}},
		{id: "C-TURN-45", what: "a steering message waiting while no turn runs runs as a turn of its own, named by queuedMessageId",
			steps: []step{mark, steer("s1", "go")},
			want:  []string{"tell pendingMessageSet steering s1", "tell turnStarted n1 q=s1", "send agent n1 go"}},
		{id: "C-TURN-46", what: "a steering message that runs as a turn of its own starts ahead of every queued message",
			steps: []step{start("t1", "hi"), failResumable("t1"), queue("q1", "first queued"), steer("s1", "steer"), steerAnswer("t2", agent.SteerNotYet), start("t2", "other"), mark, done("t2")},
			want:  []string{"tell turnComplete t2", "tell turnStarted n1 q=s1"}},
		{id: "C-TURN-47", what: "a steering message behind a resumable failure starts no turn; it goes into the next turn that starts",
			steps: []step{start("t1", "hi"), failResumable("t1"), mark, steer("s1", "also"), start("t2", "next")},
			want:  []string{"tell pendingMessageSet steering s1", "tell turnStarted t2", "steer s1 -> t2 taken"},
			none:  []string{"tell turnStarted n1"}},
		{id: "C-TURN-48", what: "a ! command as a steering message is never handed; it runs as a command",
			steps: []step{start("t1", "hi"), steer("s1", "!make"), mark, done("t1")},
			want:  []string{"tell turnStarted n1 q=s1", "send local n1 make"},
			none:  []string{"steer s1"}},
		{id: "C-TURN-49", what: "a backend without steering refuses steering, a turn running or not",
			caps:  caps(capsNoSteer),
			steps: []step{steer("s1", "idle"), start("t1", "hi"), steer("s2", "busy")},
			want:  []string{"refuse pendingMessageSet steering s1 by c1: " + ReasonNoSteering, "refuse pendingMessageSet steering s2 by c1: " + ReasonNoSteering},
			none:  []string{"tell pendingMessageSet", "steer"}},
		{id: "C-TURN-50", what: "the held steering message sent again unchanged is answered, not handed twice",
			steps: []step{start("t1", "hi"), steer("s1", "also"), mark, steer("s1", "also")},
			want:  []string{"tell pendingMessageSet steering s1"},
			none:  []string{"steer s1"}},
		{id: "C-TURN-51", what: "another message under the held steering message's id is refused",
			steps: []step{start("t1", "hi"), steer("s1", "also"), mark, steer("s1", "changed")},
			want:  []string{"refuse pendingMessageSet steering s1 by c1: " + ReasonSteeringBusy},
			none:  []string{"tell pendingMessageSet"}},
		{id: "C-TURN-52", what: "a stop takes every pending steering message out with the host's own removal",
			steps: []step{start("t1", "hi"), steerAnswer("t1", agent.SteerNotYet), steer("s1", "also"), mark, stop("t1")},
			want:  []string{"tell pendingMessageRemoved steering s1"},
			check: func(t *testing.T, h *harness) {
				if h.e.State().SteeringMessage != nil {
					t.Fatal("steering still pending")
				}
			}},
		{id: "C-TURN-53", what: "those removals come right behind the stop and before the backend is told",
			steps: []step{start("t1", "hi"), steer("s1", "also"), mark, stop("t1")},
			want:  []string{"tell turnCancelled t1 by c1", "tell pendingMessageRemoved steering s1", "stop agent"}},
		{id: "C-TURN-54", what: "a stop starts nothing",
			steps: []step{start("t1", "hi"), queue("q1", "next"), mark, stop("t1")},
			none:  []string{"tell turnStarted", "send"}},
		{id: "C-TURN-55", what: "a client takes a pending message back, told as sent",
			steps: []step{start("t1", "hi"), queue("q1", "next"), mark, takeBack(ahp.PendingQueued, "q1")},
			want:  []string{"tell pendingMessageRemoved queued q1 by c1"},
			check: func(t *testing.T, h *harness) {
				if len(h.e.State().QueuedMessages) != 0 {
					t.Fatal("still queued")
				}
			}},
		{id: "C-TURN-56", what: "a removal of a message the chat no longer holds is told and changes nothing",
			steps: []step{start("t1", "hi"), queue("q1", "next"), mark, takeBack(ahp.PendingQueued, "gone")},
			want:  []string{"tell pendingMessageRemoved queued gone by c1"},
			check: func(t *testing.T, h *harness) { wantQueued(t, h, "q1") }},
		{id: "C-TURN-57", what: "taking back a handed steering message withdraws it from the backend",
			steps: []step{start("t1", "hi"), steer("s1", "also"), mark, takeBack(ahp.PendingSteering, "s1"), done("t1"), queue("q1", "next")},
			want:  []string{"withdraw s1 true", "tell pendingMessageRemoved steering s1 by c1", "tell turnComplete t1", "tell turnStarted n1 q=q1"}},
		{id: "C-TURN-58", what: "a steering message the model read stays with the backend when taken back",
			steps: []step{start("t1", "hi"), steer("s1", "also"), func(h *harness) { h.agent.withdraw = false }, mark, takeBack(ahp.PendingSteering, "s1"), queue("q1", "next"), done("t1")},
			want:  []string{"withdraw s1 false", "tell pendingMessageRemoved steering s1", "tell turnComplete t1"},
			none:  []string{"tell turnStarted"}},
		{id: "C-TURN-59", what: "a backend that cannot withdraw keeps a handed steering message while a turn runs",
			caps:  caps(capsNoWd),
			steps: []step{start("t1", "hi"), steer("s1", "also"), mark, takeBack(ahp.PendingSteering, "s1")},
			want:  []string{"refuse pendingMessageRemoved steering s1 by c1: " + ReasonSteeringBusy},
			none:  []string{"withdraw", "tell pendingMessageRemoved"}},
		{id: "C-TURN-60", what: "[claude] engine part: the handed steering message waits until the backend says it took it in (at a tool call)",
			steps: []step{start("t1", "hi"), steer("s1", "also"), tool("t1", "c1"), mark, consumed("s1")},
			want:  []string{"tell pendingMessageRemoved steering s1"}},
		{id: "C-TURN-61", what: "[claude] engine part: a steering message the backend runs after the last answer stays in the steered turn",
			steps: []step{start("t1", "hi"), say("t1", "answer"), steer("s1", "also"), consumed("s1"), mark, say("t1", "to the steering"), done("t1")},
			want:  []string{"tell delta t1 to the steering", "tell turnComplete t1"},
			none:  []string{"tell turnStarted"}},
		{id: "C-TURN-62", what: "[claude] engine part: the answer to that steering message arrives in the steered turn",
			steps: []step{start("t1", "hi"), steer("s1", "also"), consumed("s1"), mark, say("t1", "steered answer")},
			want:  []string{"tell responsePart t1"}},
		{id: "C-TURN-63", what: "[claude] engine part: the steered turn stays open until the backend ends it",
			steps: []step{start("t1", "hi"), steer("s1", "also"), consumed("s1"), say("t1", "x")},
			none:  []string{"tell turnComplete"},
			check: func(t *testing.T, h *harness) { wantRunning(t, h, "t1") }},
		{id: "C-TURN-64", what: "[claude] engine part: a queued message waits until the backend ended the turn",
			steps: []step{start("t1", "hi"), steer("s1", "also"), queue("q1", "next"), consumed("s1"), mark, say("t1", "x")},
			none:  []string{"tell turnStarted"}},
		{id: "C-TURN-65", what: "[claude] engine part: no steering is handed to a turn whose prompt is not out",
			caps:  caps(capsParallel),
			steps: []step{start("t1", "a"), stop("t1"), start("t2", "b"), mark, steer("s1", "also")},
			want:  []string{"tell pendingMessageSet steering s1"},
			none:  []string{"steer s1", "send agent t2"}},
		{id: "C-TURN-66", what: "[claude] engine part: until the prompt is out the backend declines, and it is handed again on the next action",
			steps: []step{start("t1", "hi"), steerAnswer("t1", agent.SteerNotYet), steer("s1", "also"), steerAnswer("t1", agent.SteerTaken), mark, tool("t1", "c1")},
			want:  []string{"tell toolCallStart t1 c1", "steer s1 -> t1 taken"}},
		{id: "C-TURN-67", what: "[claude] a failing turn takes its steering message with it; the backend's answer to it is told to no client",
			steps: []step{start("t1", "hi"), steer("s1", "also"), mark, fail("t1"), say("t1", "answer to s1")},
			want:  []string{"tell pendingMessageRemoved steering s1", "tell error t1"},
			none:  []string{"tell responsePart", "tell delta"}},
		{id: "C-TURN-68", what: "[claude] no turn opens for the steering message a failed turn took",
			steps: []step{start("t1", "hi"), steer("s1", "also"), fail("t1"), mark, returned("t1", "s1")},
			none:  []string{"tell turnStarted"}},
		{id: "C-TURN-69", what: "[claude] engine part: a stop is handed to the backend's own stop (the SDK's interrupt)",
			steps: []step{start("t1", "hi"), mark, stop("t1")},
			want:  []string{"tell turnCancelled t1", "stop agent"}},
		{id: "C-TURN-70", what: "[claude] a stop keeps the conversation: the next turn goes to it",
			steps: []step{start("t1", "a"), stop("t1"), cancelled("t1"), mark, start("t2", "b")},
			want:  []string{"send agent t2 b"},
			none:  []string{"close"}},
		{id: "C-TURN-71", what: "[claude] a steering message the backend was not handed goes with the stop",
			steps: []step{start("t1", "hi"), steerAnswer("t1", agent.SteerNotYet), steer("s1", "also"), mark, stop("t1"), cancelled("t1")},
			want:  []string{"tell pendingMessageRemoved steering s1"},
			none:  []string{"tell turnStarted"}},
		{id: "C-TURN-72", what: "[claude] the workers the stopped turn spawned end with the stop",
			steps: []step{start("t1", "hi"), mark, stop("t1")},
			want:  []string{"tell turnCancelled t1", "ended t1 cancelled"}},
		{id: "C-TURN-73", what: "[claude] engine part: only the stopped turn's workers end; earlier turns' are not named",
			steps: []step{start("t0", "bg"), done("t0"), start("t1", "hi"), mark, stop("t1")},
			want:  []string{"ended t1 cancelled"},
			none:  []string{"ended t0"}},
		{id: "C-TURN-74", what: "[claude] a steering message the backend holds when stopped is run by it once the stop is through",
			steps: []step{start("t1", "hi"), steer("s1", "also"), stop("t1"), cancelled("t1"), mark, ownTurn("t9", "s1"), say("t9", "on it")},
			want:  []string{"tell turnStarted t9 q=s1", "tell responsePart t9"}},
		{id: "C-TURN-75", what: "[claude] that turn is opened at the stop, its chat/turnStarted naming the message as handed",
			steps: []step{start("t1", "hi"), steer("s1", "also"), stop("t1"), cancelled("t1"), ownTurn("t9", "s1")},
			check: func(t *testing.T, h *harness) {
				a, _ := lastTold[ahp.ChatTurnStarted](h)
				if a.TurnID != "t9" || a.QueuedMessageID != "s1" || a.Message.Text != "also" || a.Message.Meta[SenderMetaKey] != alice {
					t.Fatalf("told %+v", a)
				}
			}},
		{id: "C-TURN-76", what: "[claude] engine part: with stopEnds query the stop is the backend's; the engine stops and ends the turn's workers",
			steps: []step{start("t1", "hi"), mark, stop("t1")},
			want:  []string{"ended t1 cancelled", "stop agent"}},
		{id: "C-TURN-77", what: "[claude] engine part: the next turn after a stop asks the host for the conversation again (it resumes one it ended)",
			steps: []step{start("t1", "a"), stop("t1"), cancelled("t1"), mark, start("t2", "b")},
			want:  []string{"open agent", "send agent t2 b"}},
		{id: "C-TURN-78", what: "[claude] a turn sent while another runs is sent once the one in front ended",
			steps: []step{start("t1", "a"), start("t2", "b"), mark, say("t1", "x"), done("t1")},
			want:  []string{"tell turnComplete t1", "tell turnStarted t2", "send agent t2 b"}},
		{id: "C-TURN-79", what: "[claude] engine part: the model the message names is handed to the backend, which logs one it will not take",
			steps: []step{client(ahp.ChatTurnStarted{TurnID: "t1", Message: ahp.Message{Text: "hi", Model: &ahp.ModelSelection{ID: "m-unknown"}}})},
			check: func(t *testing.T, h *harness) {
				if len(h.sent) != 1 || h.sent[0].Model != "m-unknown" {
					t.Fatalf("sent %+v", h.sent)
				}
			}},
		{id: "C-TURN-80", what: "[pi] engine part: steering is handed into the running turn",
			steps: []step{start("t1", "hi"), steer("s1", "also")},
			want:  []string{"steer s1 -> t1 taken"}},
		{id: "C-TURN-81", what: "[pi] the client's steering message is told as it came, answering the client",
			steps: []step{start("t1", "hi"), steer("s1", "also")},
			want:  []string{"tell pendingMessageSet steering s1 by c1"}},
		{id: "C-TURN-82", what: "[pi] steering is handed once the backend has the turn's prompt",
			steps: []step{steer("s0", "first"), mark, start("t1", "hi")},
			none:  []string{"steer"}},
		{id: "C-TURN-83", what: "[pi] engine part: a backend that declines steering is handed it again on the next action",
			steps: []step{start("t1", "hi"), steerAnswer("t1", agent.SteerNotYet), steer("s1", "also"), steerAnswer("t1", agent.SteerTaken), mark, say("t1", "x")},
			want:  []string{"steer s1 -> t1 taken"}},
		{id: "C-TURN-84", what: "[pi] steering is taken out once the backend's queue no longer holds it",
			steps: []step{start("t1", "hi"), steer("s1", "also"), mark, consumed("s1")},
			want:  []string{"tell pendingMessageRemoved steering s1"}},
		{id: "C-TURN-85", what: "[pi] a steering message the backend would not take is taken out at once, with the reason logged",
			steps: []step{start("t1", "hi"), steerAnswer("t1", agent.SteerRefused), mark, steer("s1", "also")},
			want:  []string{"steer s1 -> t1 refused", "warn backend would not take steering message", "tell pendingMessageRemoved steering s1"}},
		{id: "C-TURN-86", what: "[pi] a steering message the backend still holds at the turn's end comes back and runs next",
			steps: []step{start("t1", "hi"), steer("s1", "also"), done("t1"), mark, returned("t1", "s1")},
			want:  []string{"tell turnStarted n1 q=s1"}},
		{id: "C-TURN-87", what: "[cofold] engine part: steering is handed to the run",
			steps: []step{start("t1", "hi"), steer("s1", "also")},
			want:  []string{"steer s1 -> t1 taken"}},
		{id: "C-TURN-88", what: "[cofold] the client's steering message is told as it came, answering the client",
			steps: []step{start("t1", "hi"), steer("s1", "also")},
			want:  []string{"tell pendingMessageSet steering s1 by c1"}},
		{id: "C-TURN-89", what: "[cofold] steering is handed once the run has started (its prompt sent)",
			steps: []step{start("t1", "hi"), steer("s1", "also")},
			want:  []string{"send agent t1 hi", "tell pendingMessageSet steering s1", "steer s1 -> t1"}},
		{id: "C-TURN-90", what: "[cofold] steering is taken out once written into the transcript (consumed)",
			steps: []step{start("t1", "hi"), steer("s1", "also"), mark, consumed("s1")},
			want:  []string{"tell pendingMessageRemoved steering s1"}},
		{id: "C-TURN-91", what: "[cofold] steering a run settled before reading comes back: it steers the next turn",
			steps: []step{start("t1", "hi"), steer("s1", "also"), start("t2", "next"), done("t1"), mark, returned("t1", "s1")},
			want:  []string{"steer s1 -> t2 taken"}},
		{id: "C-TURN-92", what: "[cofold] a client can take back steering the run holds: the removal is told",
			steps: []step{start("t1", "hi"), steer("s1", "also"), mark, takeBack(ahp.PendingSteering, "s1")},
			want:  []string{"withdraw s1", "tell pendingMessageRemoved steering s1 by c1"}},
		{id: "C-TURN-93", what: "[cofold] steering taken back after the run read it stays with the run",
			steps: []step{start("t1", "hi"), steer("s1", "also"), func(h *harness) { h.agent.withdraw = false }, takeBack(ahp.PendingSteering, "s1"), mark, consumed("s1"), say("t1", "read it")},
			want:  []string{"tell responsePart t1"},
			none:  []string{"tell pendingMessageRemoved"}},
		{id: "C-TURN-94", what: "[bot] engine part: steering is handed to the backend (the bot's hands it to its work session)",
			steps: []step{start("t1", "hi"), steer("s1", "also")},
			want:  []string{"steer s1 -> t1 taken"}},
		{id: "C-TURN-95", what: "[bot] the open turn goes on after the hand-off",
			steps: []step{start("t1", "hi"), steer("s1", "also"), say("t1", "more")},
			none:  []string{"tell turnComplete", "tell error"},
			check: func(t *testing.T, h *harness) { wantRunning(t, h, "t1") }},
		{id: "C-TURN-96", what: "[bot] the hand-off is answered once the message is on its way",
			steps: []step{start("t1", "hi"), steer("s1", "also")},
			want:  []string{"tell pendingMessageSet steering s1 by c1", "steer s1"}},
		{id: "C-TURN-97", what: "[bot] steering is taken out once the work session takes it up",
			steps: []step{start("t1", "hi"), steer("s1", "also"), mark, consumed("s1")},
			want:  []string{"tell pendingMessageRemoved steering s1"}},
		{id: "C-TURN-98", what: "[bot] steering whose turn ended on its way comes back and runs next",
			steps: []step{start("t1", "hi"), steer("s1", "also"), done("t1"), mark, returned("t1", "s1")},
			want:  []string{"tell turnStarted n1 q=s1"}},
		{id: "C-TURN-99", what: "[bot] steering that could not be sent is taken out, logged, and the turn goes on",
			steps: []step{start("t1", "hi"), steerAnswer("t1", agent.SteerRefused), steer("s1", "also")},
			want:  []string{"warn", "tell pendingMessageRemoved steering s1"},
			check: func(t *testing.T, h *harness) { wantRunning(t, h, "t1") }},
		{id: "C-TURN-100", what: "[bot] steering the work session never took up is taken out when the turn ends",
			steps: []step{start("t1", "hi"), steer("s1", "also"), mark, done("t1"), consumed("s1")},
			want:  []string{"tell turnComplete t1", "tell pendingMessageRemoved steering s1"}},
		{id: "C-TURN-101", what: "[bot] engine part: the steering message's turn is the one it was handed to",
			steps: []step{start("t1", "hi"), steer("s1", "also")},
			want:  []string{"steer s1 -> t1"}},
		{id: "C-TURN-102", what: "[bot] engine part: a chat read back keeps its turns as stored",
			state: &ahp.ChatState{Turns: []ahp.Turn{{ID: "b1", Message: msg("hi"), State: ahp.TurnComplete}}},
			check: func(t *testing.T, h *harness) { wantTurns(t, h, "b1") }},
		{id: "C-TURN-103", what: "a backend that runs one turn at a time is sent none while it still ends another",
			caps:  caps(capsParallel),
			steps: []step{start("t1", "a"), stop("t1"), mark, start("t2", "b")},
			want:  []string{"tell turnStarted t2"},
			none:  []string{"send agent t2"}},
		{id: "C-TURN-104", what: "a turn sent while another runs goes to the backend once the one in front ends",
			caps:  caps(capsParallel),
			steps: []step{start("t1", "a"), stop("t1"), start("t2", "b"), mark, cancelled("t1")},
			want:  []string{"send agent t2 b"}},
		{id: "C-TURN-105", what: "a stop runs none of the turns sent behind it",
			steps: []step{start("t1", "a"), start("t2", "b"), start("t3", "c"), mark, stop("t1"), cancelled("t1")},
			none:  []string{"send agent t2", "send agent t3"}},
		{id: "C-TURN-106", what: "the turns sent behind a stopped turn are said and ended by the host",
			steps: []step{start("t1", "a"), start("t2", "b"), mark, stop("t1")},
			want:  []string{"tell turnCancelled t1", "tell turnStarted t2 by c1", "tell turnCancelled t2"}},
		{id: "C-TURN-107", what: "[pi, acp] engine part: a stop of a sent turn is handed to the backend, which checks it between steps",
			steps: []step{start("t1", "hi"), mark, stop("t1")},
			want:  []string{"stop agent"}},
		{id: "C-TURN-108", what: "[pi, acp] a turn stopped before its prompt was sent ends unsent",
			caps:  caps(capsParallel),
			steps: []step{start("t1", "a"), stop("t1"), start("t2", "b"), mark, stop("t2"), cancelled("t1")},
			want:  []string{"tell turnCancelled t2"},
			none:  []string{"send agent t2", "stop agent"}},
		{id: "C-TURN-109", what: "what the host has to say goes into the turn's prompt",
			steps: []step{func(h *harness) { h.hostCtx = "the side chat's source" }, start("t1", "hi"), start("t2", "next")},
			check: func(t *testing.T, h *harness) {
				if len(h.sent) == 0 || h.sent[0].HostContext != "the side chat's source" {
					t.Fatalf("sent %+v", h.sent)
				}
			}},
		{id: "C-TURN-110", what: "[cofold] engine part: the host's words reach the backend apart from what was said, for its system prompt",
			steps: []step{func(h *harness) { h.hostCtx = "context" }, start("t1", "hi")},
			check: func(t *testing.T, h *harness) {
				if h.sent[0].Text != "hi" || h.sent[0].HostContext != "context" {
					t.Fatalf("sent %+v", h.sent[0])
				}
			}},
		{id: "C-TURN-111", what: "[pi, acp] engine part: the host's words reach the backend beside what was said, to go ahead of it",
			steps: []step{func(h *harness) { h.hostCtx = "context" }, start("t1", "hi"), done("t1"), start("t2", "again")},
			check: func(t *testing.T, h *harness) {
				if h.sent[0].HostContext != "context" || h.sent[1].HostContext != "" {
					t.Fatalf("host context given %q then %q", h.sent[0].HostContext, h.sent[1].HostContext)
				}
			}},
		{id: "C-TURN-112", what: "[claude] engine part: a transcript read back is the chat's turns as read",
			state: &ahp.ChatState{Turns: []ahp.Turn{{ID: "r1", Message: msg("hi"), State: ahp.TurnComplete}, {ID: "r2", Message: msg("late steering"), State: ahp.TurnComplete}}},
			check: func(t *testing.T, h *harness) { wantTurns(t, h, "r1", "r2") }},
		{id: "C-TURN-113", what: "[claude] engine part: every turn read back is kept, nothing starts",
			state: &ahp.ChatState{Turns: []ahp.Turn{{ID: "r1", Message: msg("a"), State: ahp.TurnComplete}, {ID: "r2", Message: msg("b"), State: ahp.TurnComplete}}},
			none:  []string{"tell", "send"},
			check: func(t *testing.T, h *harness) { wantTurns(t, h, "r1", "r2") }},
		{id: "C-TURN-114", what: "[claude] engine part: a turn read back with its steering message inside stays one turn",
			state: &ahp.ChatState{Turns: []ahp.Turn{{ID: "r1", Message: msg("a"), State: ahp.TurnComplete, ResponseParts: []ahp.ResponsePart{ahp.MarkdownPart("p", "steered")}}}},
			check: func(t *testing.T, h *harness) { wantTurns(t, h, "r1") }},
		{id: "C-TURN-115", what: "[claude] engine part: a cancelled turn read back is ended; a client's next turn runs",
			state: &ahp.ChatState{Turns: []ahp.Turn{{ID: "r1", Message: msg("a"), State: ahp.TurnCancelled}}},
			steps: []step{start("t1", "next")},
			want:  []string{"send agent t1 next"}},
		{id: "C-TURN-116", what: "[claude] engine part: a steering message's own turn after a stop is a turn of the chat",
			steps: []step{start("t1", "hi"), steer("s1", "also"), stop("t1"), cancelled("t1"), ownTurn("t9", "s1"), done("t9")},
			check: func(t *testing.T, h *harness) { wantTurns(t, h, "t1", "t9") }},
		{id: "C-TURN-117", what: "a draft is a Message",
			steps: []step{client(ahp.ChatDraftChanged{Draft: &ahp.Message{Text: "half a thought"}})},
			check: func(t *testing.T, h *harness) {
				if d := h.e.State().Draft; d == nil || d.Text != "half a thought" {
					t.Fatalf("draft %+v", d)
				}
			}},
		{id: "C-TURN-118", what: "a draft is the chat's, told to every watcher",
			steps: []step{as("c1", alice, ahp.ChatDraftChanged{Draft: &ahp.Message{Text: "a"}}), as("c2", "user:bob", ahp.ChatDraftChanged{Draft: &ahp.Message{Text: "ab"}})},
			want:  []string{"tell draftChanged by c1", "tell draftChanged by c2"},
			check: func(t *testing.T, h *harness) {
				if h.e.State().Draft.Text != "ab" {
					t.Fatal("the second person's draft is not the chat's")
				}
			}},
		{id: "C-TURN-119", what: "every draft change is told to the host, which keeps it, whatever the backend",
			caps:  caps(agent.Capabilities{}),
			steps: []step{client(ahp.ChatDraftChanged{Draft: &ahp.Message{Text: "a"}}), client(ahp.ChatDraftChanged{Draft: &ahp.Message{Text: "ab"}})},
			want:  []string{"tell draftChanged", "tell draftChanged"}},
		{id: "C-TURN-120", what: "the chat opens with its kept draft",
			state: &ahp.ChatState{Draft: &ahp.Message{Text: "kept"}},
			check: func(t *testing.T, h *harness) {
				if d := h.e.State().Draft; d == nil || d.Text != "kept" {
					t.Fatalf("draft %+v", d)
				}
			}},
		{id: "C-TURN-121", what: "a draft is taken while nothing runs, and starts nothing",
			steps: []step{client(ahp.ChatDraftChanged{Draft: &ahp.Message{Text: "x"}})},
			want:  []string{"tell draftChanged"},
			none:  []string{"refuse", "tell turnStarted"}},
		{id: "C-TURN-122", what: "a refusal is an effect the host sends (the bus gives it a serverSeq)",
			steps: []step{stop("nothing")},
			want:  []string{"refuse turnCancelled nothing by c1: " + ReasonNoActiveTurn}},
		{id: "C-TURN-123", what: "every action is in the state before it is told, so a snapshot taken after it holds it (checked in every case's Tell)",
			steps: []step{start("t1", "a"), queue("q1", "b"), steer("s1", "c"), done("t1")},
			want:  []string{"tell turnStarted t1", "tell pendingMessageSet queued q1", "tell turnComplete t1"}},
		{id: "C-TURN-124", what: "actions are told once each, in the order they change the state",
			steps: []step{start("t1", "a"), say("t1", "x"), say("t1", "y"), done("t1")},
			want:  []string{"tell turnStarted t1", "tell responsePart t1", "tell delta t1 y", "tell turnComplete t1"},
			check: func(t *testing.T, h *harness) {
				if n := len(h.told); n != 4 {
					t.Fatalf("told %d actions, want 4", n)
				}
			}},
	})
}

func wantSender(t *testing.T, h *harness, sender string) {
	t.Helper()
	at := h.e.State().ActiveTurn
	if at == nil || at.Message.Meta[SenderMetaKey] != sender {
		t.Fatalf("active turn %+v, want sender %s", at, sender)
	}
	if got := h.e.Turn(at.ID).Sender; got != sender {
		t.Fatalf("Turn(%s).Sender = %q", at.ID, got)
	}
}

func wantQueued(t *testing.T, h *harness, ids ...string) {
	t.Helper()
	var got []string
	for _, q := range h.e.State().QueuedMessages {
		got = append(got, q.ID)
	}
	if len(got) != len(ids) {
		t.Fatalf("queued %v, want %v", got, ids)
	}
	for i := range ids {
		if got[i] != ids[i] {
			t.Fatalf("queued %v, want %v", got, ids)
		}
	}
}

func wantRunning(t *testing.T, h *harness, id string) {
	t.Helper()
	if a := h.e.Active(); a == nil || a.ID != id {
		t.Fatalf("running %+v, want %s", a, id)
	}
}

func wantTurns(t *testing.T, h *harness, ids ...string) {
	t.Helper()
	st := h.e.State()
	if len(st.Turns) != len(ids) {
		t.Fatalf("turns %+v, want %v", st.Turns, ids)
	}
	for i, id := range ids {
		if st.Turns[i].ID != id {
			t.Fatalf("turn %d is %s, want %s", i, st.Turns[i].ID, id)
		}
	}
}

func wantCallCancelled(t *testing.T, h *harness, id string) {
	t.Helper()
	st := h.e.State()
	if len(st.Turns) == 0 {
		t.Fatal("no ended turn")
	}
	for _, p := range st.Turns[len(st.Turns)-1].ResponseParts {
		if p.ToolCall != nil && p.ToolCall.ToolCallID == id {
			if p.ToolCall.Status != ahp.ToolCancelled {
				t.Fatalf("call %s is %s", id, p.ToolCall.Status)
			}
			return
		}
	}
	t.Fatalf("no call %s in the ended turn", id)
}
