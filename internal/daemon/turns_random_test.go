package daemon_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/reduce"
	"github.com/ahpd/ahpd/internal/testutil"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// view is a client's chat state, folded incrementally from what it
// received; the random driver picks ids off it, stale as a real client's.
type view struct {
	w  *watcher
	st ahp.ChatState
	n  int
}

func (v *view) refresh(t testing.TB) {
	envs := v.w.Envelopes()
	for _, env := range envs[v.n:] {
		if env.Channel != v.w.chat || env.ServerSeq <= v.w.fromSeq || env.RejectionReason != "" {
			continue
		}
		a, err := ahp.DecodeAction(env.Action)
		if err != nil {
			t.Fatalf("decode %s: %v", env.Raw, err)
		}
		reduce.Chat(&v.st, a)
	}
	v.n = len(envs)
}

// randomTexts are the turn and pending message texts the driver draws from:
// every marker of the script agent that ends on its own or with a stop, and
// ! commands. %s is a token unique to the message.
var randomTexts = []string{
	"plain %s", "plain %s", "plain %s", "[slow] %s", "[think] %s", "[tool] %s",
	"[hold] %s", "[confirm] %s", "[error] %s", "[error:resumable] %s",
	"[slow][error:resumable] %s", "[prep] %s", "[deaf] %s", "[late][slow] %s",
	"[hold][stubborn] %s", "[confirm][stubborn] %s", "!echo %s", "!false %s",
	"[refuse] %s", "[exit] %s",
}

// TestTurnsRandomized (issue 4, acceptance 2): clients fire queue, steer,
// take back, reorder, stop, resume and turnStarted at random, stale views
// and all, against script agents of several capability combinations. Then
// every client's state is its fresh snapshot, every turn ended exactly once
// per run, and no pending message was lost or run twice. The seed is
// printed; AHPD_TURNS_SEED replays one. make test runs 150 actions a
// chat, make check 800.
func TestTurnsRandomized(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("AHPD_TURNS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("AHPD_TURNS_SEED: %v", err)
		}
		seed = n
	}
	t.Logf("seed %d (replay with AHPD_TURNS_SEED=%d)", seed, seed)
	perChat := 150
	if testutil.Check() {
		perChat = 800
	}
	e := newTurnsEnvDelays(t, 2*time.Millisecond, 20*time.Millisecond, 30*time.Millisecond, true)
	for i, prov := range []string{provScript, provConcurrent, provNoWithdraw, provNoSteer} {
		t.Run(prov, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			runRandom(t, e, prov, rng, perChat)
		})
	}
}

func runRandom(t *testing.T, e *turnsEnv, prov string, rng *rand.Rand, actions int) {
	creator := e.dial(t, "creator-"+prov)
	_, chatURI := e.newSession(t, creator, prov)
	ws := e.watchers(t, chatURI, "r0", "r1", "r2", "r3")
	views := make([]*view, len(ws))
	for i, w := range ws {
		views[i] = &view{w: w, st: chatState(t, w.first)}
	}
	next := 0
	fresh := func(prefix string) string {
		next++
		return fmt.Sprintf("%s%d", prefix, next)
	}
	text := func(id string) string {
		return fmt.Sprintf(randomTexts[rng.IntN(len(randomTexts))], id)
	}
	var turnIDs []string
	pick := func(ids []string) string {
		if len(ids) == 0 {
			return "none"
		}
		return ids[rng.IntN(len(ids))]
	}
	counts := map[string]int{}
	for range actions {
		i := rng.IntN(len(ws))
		w, v := ws[i], views[i]
		if rng.IntN(8) == 0 {
			v.refresh(t)
		}
		st := &v.st
		var seq int64
		kind := ""
		switch r := rng.IntN(100); {
		case r < 12:
			kind = "start"
			id := fresh("t")
			turnIDs = append(turnIDs, id)
			startTurn(w.Client, chatURI, id, text(id))
		case r < 14:
			kind = "start again"
			startTurn(w.Client, chatURI, pick(turnIDs), "again")
		case r < 30:
			kind = "queue"
			id := fresh("q")
			seq = setPending(w.Client, chatURI, ahp.PendingQueued, id, text(id))
		case r < 40:
			kind = "steer"
			id := fresh("s")
			seq = setPending(w.Client, chatURI, ahp.PendingSteering, id, text(id))
		case r < 43:
			kind = "steer again"
			if s := st.SteeringMessage; s != nil {
				msg := s.Message.Text
				if rng.IntN(3) == 0 {
					msg += " changed"
				}
				seq = setPending(w.Client, chatURI, ahp.PendingSteering, s.ID, msg)
			}
		case r < 50:
			kind = "take back queued"
			var ids []string
			for _, q := range st.QueuedMessages {
				ids = append(ids, q.ID)
			}
			seq = removePending(w.Client, chatURI, ahp.PendingQueued, pick(ids))
		case r < 55:
			kind = "take back steering"
			id := "none"
			if s := st.SteeringMessage; s != nil {
				id = s.ID
			}
			seq = removePending(w.Client, chatURI, ahp.PendingSteering, id)
		case r < 60:
			kind = "reorder"
			var ids []string
			for _, q := range st.QueuedMessages {
				ids = append(ids, q.ID)
			}
			rng.Shuffle(len(ids), func(a, b int) { ids[a], ids[b] = ids[b], ids[a] })
			seq = reorderQueued(w.Client, chatURI, ids...)
		case r < 72:
			kind = "stop"
			id := pick(turnIDs)
			if st.ActiveTurn != nil && rng.IntN(4) != 0 {
				id = st.ActiveTurn.ID
			}
			seq = stopTurn(w.Client, chatURI, id)
		case r < 78:
			kind = "resume"
			id := "none"
			if n := len(st.Turns); n > 0 {
				id = st.Turns[n-1].ID
			}
			seq = resumeTurn(w.Client, chatURI, id)
		case r < 85:
			kind = "confirm"
			if at := st.ActiveTurn; at != nil {
				for _, p := range at.ResponseParts {
					if p.Kind == ahp.PartToolCall && p.ToolCall != nil && p.ToolCall.Status == ahp.ToolPendingConfirmation {
						seq = w.Dispatch(chatURI, map[string]any{"type": "chat/toolCallConfirmed", "turnId": at.ID,
							"toolCallId": p.ToolCall.ToolCallID, "approved": rng.IntN(4) != 0})
					}
				}
			}
		default:
			kind = "draft"
			seq = w.Dispatch(chatURI, map[string]any{"type": "chat/draftChanged", "draft": userMessage(fresh("d"))})
		}
		counts[kind]++
		// A stop of a turn waiting behind another is answered when that
		// turn is said, so only other actions are waited for.
		if seq != 0 && kind != "stop" && rng.IntN(3) == 0 {
			w.AwaitEcho(seq)
		}
	}
	t.Logf("%s: %d actions: %v", prov, actions, counts)

	// Drain: stop what runs and take back what waits until the chat is
	// idle. The drainer's view is exact as of the echo of its own last
	// action; a fresh snapshot confirms the end.
	drainer := views[0]
	barrier := func(seq int64) {
		drainer.w.AwaitEcho(seq)
		drainer.refresh(t)
	}
	barrier(draftBarrier(t, drainer.w.Client, chatURI, "drain").Origin.ClientSeq)
	for round := 0; ; round++ {
		if round > 2000 {
			t.Fatal("the chat did not settle")
		}
		st := &drainer.st
		switch {
		case st.ActiveTurn != nil:
			barrier(stopTurn(drainer.w.Client, chatURI, st.ActiveTurn.ID))
			continue
		case st.SteeringMessage != nil:
			barrier(removePending(drainer.w.Client, chatURI, ahp.PendingSteering, st.SteeringMessage.ID))
			continue
		case len(st.QueuedMessages) > 0:
			barrier(removePending(drainer.w.Client, chatURI, ahp.PendingQueued, st.QueuedMessages[0].ID))
			continue
		}
		// Idle with nothing pending is final: a steering message the
		// backend still holds was taken out of the chat, so when it comes
		// back it runs nowhere, and nothing else waits.
		raw, _ := drainer.w.Subscribe(chatURI)
		if fresh := chatState(t, raw); fresh.ActiveTurn == nil && fresh.SteeringMessage == nil && len(fresh.QueuedMessages) == 0 {
			break
		}
		barrier(draftBarrier(t, drainer.w.Client, chatURI, "drain").Origin.ClientSeq)
	}
	for _, w := range ws {
		draftBarrier(t, w.Client, chatURI, "done")
	}
	final := sameState(t, ws...)
	checkRandomRun(t, e, prov, ws[0], final)
}

// checkRandomRun checks what one client saw of a random run, envelope by
// envelope, against a reducer of its own.
func checkRandomRun(t *testing.T, e *turnsEnv, prov string, w *watcher, final ahp.ChatState) {
	st := chatState(t, w.first)
	endings := map[string]int{}
	runs := map[string]int{}
	pendingRuns := 0
	pending := func(s *ahp.ChatState) map[string]string {
		out := map[string]string{}
		if s.SteeringMessage != nil {
			out[s.SteeringMessage.ID] = ahp.PendingSteering
		}
		for _, q := range s.QueuedMessages {
			out[q.ID] = ahp.PendingQueued
		}
		return out
	}
	var seqs []string
	for _, env := range chatEnvelopes(w.Client, w.chat) {
		if env.ServerSeq <= w.fromSeq {
			continue
		}
		seqs = append(seqs, sequence([]ahptest.Envelope{env})...)
		a, err := ahp.DecodeAction(env.Action)
		if err != nil {
			t.Fatal(err)
		}
		before := pending(&st)
		switch a := a.(type) {
		case ahp.ChatTurnStarted:
			known := (st.ActiveTurn != nil && st.ActiveTurn.ID == a.TurnID) || slices.ContainsFunc(st.Turns, func(tr ahp.Turn) bool { return tr.ID == a.TurnID })
			if !known {
				// The host never says a new turn over a running one: the
				// reducer would drop the running turn.
				if st.ActiveTurn != nil {
					t.Fatalf("turn %s started while %s runs: %v", a.TurnID, st.ActiveTurn.ID, lastOf(seqs))
				}
				runs[a.TurnID]++
				if id := a.QueuedMessageID; id != "" {
					// Run once: the chat holds it until it runs, and a
					// message set again under its id is another message.
					if _, ok := before[id]; !ok {
						t.Fatalf("turn %s runs pending message %s, which the chat does not hold (run twice?): %v", a.TurnID, id, lastOf(seqs))
					}
					pendingRuns++
				}
			}
		case ahp.ChatTurnResume:
			if st.ActiveTurn != nil {
				t.Fatalf("resume of %s while %s runs", a.TurnID, st.ActiveTurn.ID)
			}
			runs[a.TurnID]++
		case ahp.ChatTurnComplete:
			endings[a.TurnID]++
		case ahp.ChatError:
			endings[a.TurnID]++
		case ahp.ChatTurnCancelled:
			endings[a.TurnID]++
		}
		reduce.Chat(&st, a)
		after := pending(&st)
		for id, kind := range before {
			if _, still := after[id]; still {
				continue
			}
			// Gone: run as a turn, taken out, or (the one steering slot)
			// replaced by another steering message.
			ok := false
			switch a := a.(type) {
			case ahp.ChatTurnStarted:
				ok = a.QueuedMessageID == id
			case ahp.ChatPendingMessageRemoved:
				ok = a.ID == id
			case ahp.ChatPendingMessageSet:
				ok = kind == ahp.PendingSteering && a.Kind == ahp.PendingSteering
			}
			if !ok {
				t.Fatalf("pending message %s was lost by %s: %v", id, env.Raw, lastOf(seqs))
			}
		}
	}
	for id, n := range endings {
		if n != runs[id] {
			t.Fatalf("turn %s ran %d times and ended %d times", id, runs[id], n)
		}
	}
	for id, n := range runs {
		if endings[id] != n {
			t.Fatalf("turn %s ran %d times and ended %d times", id, n, endings[id])
		}
	}
	seen := map[string]bool{}
	for _, tr := range final.Turns {
		if seen[tr.ID] {
			t.Fatalf("turn %s is in the transcript twice", tr.ID)
		}
		seen[tr.ID] = true
		if runs[tr.ID] == 0 {
			t.Fatalf("turn %s in the transcript never started", tr.ID)
		}
	}
	// The backend was sent each turn at most once per run, and only turns
	// the chat holds.
	sent := map[string]int{}
	for _, tr := range e.scripts[prov].Sent() {
		sent[tr.ID]++
	}
	for id := range runs {
		if sent[id] > runs[id] {
			t.Fatalf("turn %s sent to the backend %d times for %d runs", id, sent[id], runs[id])
		}
	}
	t.Logf("%s: %d turns, %d runs from pending messages", prov, len(final.Turns), pendingRuns)
}

func lastOf(s []string) string {
	if len(s) > 12 {
		s = s[len(s)-12:]
	}
	return strings.Join(s, " ")
}
