package chat

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/reduce"
	"github.com/ahpd/ahpd/internal/store"
)

// Durability (docs/RELIABILITY.md): publish only what is stored. Every
// action that starts or ends a turn, changes the draft, what waits, the
// chat's flags or directories, or cuts the transcript is committed by
// durable.tell before apply publishes it. The store groups commits
// that wait together into one transaction, so twenty chats ending at once
// pay for one commit. Streaming parts are not committed one by one: the
// running turn is written behind the actor at least every runningEvery, so
// a crash loses at most that much of a turn's tail, and the turn comes back
// ended with an error saying the host restarted (C-TURN-10).

const (
	// runningEvery is how often a streaming turn's answer so far is written.
	runningEvery = time.Second
)

// durable is what the chat actor commits and writes of its chat: the
// record, the running turn, the turns as they end, the draft and what
// waits. It is part of the chat actor and runs only on the actor's
// goroutine.
//
// While it holds (hold, release: the actor's handling of one agent event),
// commits and the publications behind them gather instead of going out
// one by one, and go out together at release, or sooner when something
// outside the chat is about to see the chat (a backend is opened or sent
// to, a write goes behind the actor, a client is refused, another chat is
// told something or opened): one transaction stores them all, then they
// are published in order. A turn's ending, the start of the turn waiting
// behind it and what waits then were three commits in a row, each awaited
// by the actor, and one chat's turns ran at the pace of its commits
// (issue 37, fan-out of one chat's turns).
//
// Commits are pipelined: what the actor commits on its own (a client's
// turn sent behind the running one, a held step's writes at release) goes
// to the store without the actor waiting for it; the publications behind
// it wait in inflight, in order, and go out when the store says the
// commit landed (the loop wakes on it, loop.go). Whatever lets something
// outside the chat see the chat first waits for every commit in flight
// (drain): a backend opened or sent to (a backend sees only what is
// stored), a client refused or answered, another chat or the session told,
// every other message the actor takes but a client's action that touches
// no backend (pipelinable). Any other commit is waited for where it is
// made, as what follows it in the step may show it (a steering message
// handed to the backend, a canvas's channel told). A chat's turn paid for
// its queued message's commit twice: the actor waited for it, then the
// turn's events waited for the actor (issue 37, fan-out).
type durable struct {
	c *Chat
	// runningDirty: the active turn streamed since it was last written.
	runningDirty bool

	// inflight are the commits the store runs for this chat, oldest first,
	// each with the publications that wait for it. Both are bounded
	// (maxInflight, maxWaitingTells): past a bound the actor waits for the
	// oldest.
	inflight []inflight
	// pipelining: the step may leave its commits in flight (a held
	// backend event's release, a pipelinable client action). Anywhere
	// else a commit is waited for, as what follows it in the step (a
	// backend steered, a canvas's channel told) may show it.
	pipelining bool

	// holding: commits and publications gather in held until release.
	holding bool
	held    heldWrites
	// summaryDue: the chat's summary was to be told while holding (a
	// title set in the held step); flush tells it.
	summaryDue bool
}

// heldWrites are the commits and publications gathered while holding.
type heldWrites struct {
	ops   []store.Op
	tells []heldTell
	// what names the commits, for the log.
	what []string
}

// heldTell is one publication waiting for the held commits.
type heldTell struct {
	a      ahp.Action
	origin *ahp.ActionOrigin
	// stored: a turn start, ending, draft or other change that needs its
	// summary told after it (not a streaming delta).
	stored bool
}

// inflight is one commit in the store's hands: its result comes on done,
// then its publications go out, then the chat's summary as it stood once
// they were reduced (nil: none to tell).
type inflight struct {
	done    <-chan error
	what    string
	tells   []heldTell
	summary *ahp.ChatSummary
}

const (
	// maxInflight bounds the commits one chat has in flight, and
	// maxWaitingTells the publications waiting behind them: a stalled disk
	// holds the chat back (its agent's events wait in their channel), not
	// its memory.
	maxInflight     = 8
	maxWaitingTells = 1024
)

// hold starts gathering commits and publications.
func (du *durable) hold() { du.holding = true }

// release stops gathering and hands what was gathered to the store, its
// publications waiting for the commit in flight: the event's step ends
// here, and nothing after it in the step shows the chat.
func (du *durable) release() {
	du.holding = false
	du.enterHeld()
}

// enterHeld hands what was gathered to the store (enter), and starts the
// gathering over.
func (du *durable) enterHeld() {
	h := &du.held
	if len(h.ops) == 0 && len(h.tells) == 0 && !du.summaryDue {
		return
	}
	summary := du.summaryDue
	du.summaryDue = false
	for _, t := range h.tells {
		summary = summary || t.stored
	}
	// The held slices are kept for the next step; the batch gets copies.
	ops, tells, what := slices.Clone(h.ops), slices.Clone(h.tells), strings.Join(h.what, ", ")
	clear(h.ops)
	clear(h.tells)
	h.ops, h.tells, h.what = h.ops[:0], h.tells[:0], h.what[:0]
	du.enter(what, ops, tells, summary)
}

// pipelined runs fn with its commits left in flight (pipelining).
func (du *durable) pipelined(fn func()) {
	was := du.pipelining
	du.pipelining = true
	defer func() { du.pipelining = was }()
	fn()
}

// submit hands ops to the store and puts tells, and the chat's summary
// when summary is set, behind their commit. With no ops they go behind the
// newest commit in flight, or out at once when none is. Unless pipelining,
// it returns once they are stored and told.
func (du *durable) submit(what string, ops []store.Op, tells []heldTell, summary bool) {
	du.enter(what, ops, tells, summary)
	if !du.pipelining {
		du.drain()
	}
}

// enter is submit without the wait.
func (du *durable) enter(what string, ops []store.Op, tells []heldTell, summary bool) {
	c := du.c
	var sum *ahp.ChatSummary
	if summary {
		s := reduce.ChatSummaryOf(c.st())
		sum = &s
	}
	if len(ops) == 0 {
		n := len(du.inflight)
		if n == 0 {
			du.publish(tells, sum)
			return
		}
		last := &du.inflight[n-1]
		last.tells = append(last.tells, tells...)
		if sum != nil {
			last.summary = sum
		}
		du.bound()
		return
	}
	for len(du.inflight) >= maxInflight {
		du.awaitOldest()
	}
	du.inflight = append(du.inflight, inflight{done: c.cfg.Env.Store.CommitAsync(ops...), what: what, tells: tells, summary: sum})
	du.bound()
}

// bound waits for the oldest commits while too many publications wait
// behind them (counted over at most maxInflight commits).
func (du *durable) bound() {
	for len(du.inflight) > 0 {
		waiting := 0
		for _, f := range du.inflight {
			waiting += len(f.tells)
		}
		if waiting <= maxWaitingTells {
			return
		}
		du.awaitOldest()
	}
}

// inFlight reports whether a commit of the chat's is in the store's hands.
func (du *durable) inFlight() bool { return len(du.inflight) > 0 }

// oldest is the channel the oldest commit in flight lands on; nil (never
// ready) when none is.
func (du *durable) oldest() <-chan error {
	if len(du.inflight) == 0 {
		return nil
	}
	return du.inflight[0].done
}

// awaitOldest waits for the oldest commit in flight to land, up to
// store.CommitWait, and publishes what waited for it.
func (du *durable) awaitOldest() {
	t := time.NewTimer(store.CommitWait)
	defer t.Stop()
	select {
	case err := <-du.inflight[0].done:
		du.landed(err)
	case <-t.C:
		du.landed(fmt.Errorf("commit: no answer from the store in %s", store.CommitWait))
	}
}

// landed publishes what waited for the oldest commit in flight, which
// ended with err, then what waited for any later one that landed too. A
// failure is logged: the state already moved on, and a client is told
// what the chat now holds.
func (du *durable) landed(err error) {
	for {
		h := du.inflight[0]
		du.inflight[0] = inflight{}
		du.inflight = du.inflight[1:]
		if len(du.inflight) == 0 {
			du.inflight = nil
		}
		if err != nil {
			du.c.log.Error("commit before telling clients", "what", h.what, "err", err)
		}
		du.publish(h.tells, h.summary)
		if len(du.inflight) == 0 {
			return
		}
		select {
		case err = <-du.inflight[0].done:
		default:
			return
		}
	}
}

// drain waits for every commit in flight and publishes what waited for
// them: after it, everything the chat said is stored and told.
func (du *durable) drain() {
	for len(du.inflight) > 0 {
		du.awaitOldest()
	}
}

// publish tells clients tells, in order, then the session sum.
func (du *durable) publish(tells []heldTell, sum *ahp.ChatSummary) {
	c := du.c
	for _, t := range tells {
		c.cfg.Env.Bus.Publish(c.cfg.URI, t.a, t.origin)
	}
	if sum != nil {
		du.tellSummaryOf(*sum)
	}
}

// flush commits what was gathered, in one transaction behind the commits
// in flight, and waits for them all: what the chat said is all stored and
// told, in order, with the chat's summary once, when it returns (even in a
// pipelined step).
func (du *durable) flush() {
	du.enterHeld()
	du.drain()
}

// pending reports whether publications wait for a flush, so a streaming
// delta must wait behind them.
func (du *durable) pending() bool { return len(du.held.tells) > 0 }

// tell commits what a makes durable and publishes a, or gathers both while
// holding.
func (du *durable) tell(a ahp.Action, origin *ahp.ActionOrigin) {
	ops := du.opsFor(a)
	if du.holding {
		if len(ops) > 0 {
			du.held.ops = append(du.held.ops, ops...)
			du.held.what = append(du.held.what, a.ActionType())
		}
		du.held.tells = append(du.held.tells, heldTell{a: a, origin: origin, stored: true})
		return
	}
	du.submit(a.ActionType(), ops, []heldTell{{a: a, origin: origin, stored: true}}, true)
}

// tellStreamed publishes a streaming action, behind what waits for a
// flush.
func (du *durable) tellStreamed(a ahp.Action, origin *ahp.ActionOrigin) {
	if du.holding && du.pending() {
		du.held.tells = append(du.held.tells, heldTell{a: a, origin: origin})
		return
	}
	if n := len(du.inflight); n > 0 {
		last := &du.inflight[n-1]
		last.tells = append(last.tells, heldTell{a: a, origin: origin})
		du.bound()
		return
	}
	du.c.cfg.Env.Bus.Publish(du.c.cfg.URI, a, origin)
}

// enqueue writes op behind the actor, after whatever was gathered.
func (du *durable) enqueue(op store.Op) {
	du.flush()
	du.c.cfg.Env.Store.Enqueue(op)
}

// streamed notes that the active turn changed since it was last written.
func (du *durable) streamed() { du.runningDirty = true }

// flushRunning writes the active turn when it streamed since it was last
// written (the actor's ticker, every runningEvery).
func (du *durable) flushRunning() {
	if du.runningDirty {
		du.persistRunning()
	}
}

// opsFor is what a, already reduced into the state, makes durable: the
// commit that runs before a is published.
func (du *durable) opsFor(a ahp.Action) []store.Op {
	c := du.c
	var ops []store.Op
	switch a := a.(type) {
	case ahp.ChatTurnStarted:
		if rec, ok := du.runningRecord(); ok && rec.ID == a.TurnID {
			ops = append(ops, putTurnOp(rec))
			du.runningDirty = false
		}
		if du.pendingChanged() { // a queued message became this turn
			ops = append(ops, du.recordOp())
		}
	case ahp.ChatTurnResume:
		// The resumed turn runs again: it is stored running before it is
		// said, as a new turn is.
		if rec, ok := du.runningRecord(); ok && rec.ID == a.TurnID {
			ops = append(ops, putTurnOp(rec))
			du.runningDirty = false
		}
	case ahp.ChatTurnComplete:
		ops = du.endedOps(a.TurnID)
	case ahp.ChatTurnCancelled:
		ops = du.endedOps(a.TurnID)
	case ahp.ChatError:
		ops = du.endedOps(a.TurnID)
	case ahp.ChatDraftChanged:
		ops = append(ops, du.draftOp())
	case ahp.ChatPendingMessageSet, ahp.ChatPendingMessageRemoved, ahp.ChatQueuedMessagesReordered:
		if du.pendingChanged() {
			ops = append(ops, du.recordOp())
		}
	case ahp.ChatTruncated:
		// Turn i of the state is stored at seq Older()+i, so the kept
		// turns are seq 0..turnCount()-1.
		uri, keep := c.cfg.URI, c.turnCount()-1
		ops = append(ops, func(ctx context.Context, s *store.Store) error { return s.TruncateTurns(ctx, uri, keep) })
		du.pendingChanged()
		ops = append(ops, du.recordOp())
	case ahp.ChatIsReadChanged, ahp.ChatIsArchivedChanged, ahp.ChatWorkingDirectorySet, ahp.ChatWorkingDirectoryRemoved, ahp.ChatCanvasesChanged:
		ops = append(ops, du.recordOp())
	}
	return ops
}

// endedOps stores a turn that just ended, and the chat's record (its
// modification time moved).
func (du *durable) endedOps(id string) []store.Op {
	rec, ok := du.endedRecord(id)
	if !ok {
		return nil
	}
	du.runningDirty = false
	return []store.Op{putTurnOp(rec), du.recordOp()}
}

// commit runs ops in one committed write and waits for it, or gathers
// them while holding, in order with the rest.
func (du *durable) commit(what string, ops ...store.Op) {
	if len(ops) == 0 {
		return
	}
	if du.holding {
		du.held.ops = append(du.held.ops, ops...)
		du.held.what = append(du.held.what, what)
		return
	}
	du.submit(what, ops, nil, false)
}

func putTurnOp(rec store.TurnRecord) store.Op {
	return func(ctx context.Context, s *store.Store) error { return s.PutTurn(ctx, rec) }
}

// summaryChanged tells the session the chat's summary when it changed;
// while holding it is told once the held writes are stored (flush), as
// every other change is.
func (du *durable) summaryChanged() {
	if du.holding {
		du.summaryDue = true
		return
	}
	du.submit("", nil, nil, true)
}

// tellSummaryOf tells the session s when it is not what it was last told.
func (du *durable) tellSummaryOf(s ahp.ChatSummary) {
	c := du.c
	if summaryEqual(s, c.lastSummary) {
		return
	}
	c.lastSummary = s
	if c.cfg.OnSummary != nil {
		c.cfg.OnSummary(s)
	}
}
