package chat

import (
	"context"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/store"
)

// Durability (docs/RELIABILITY.md): publish only what is stored. Every
// action that starts or ends a turn, changes the draft, what waits, the
// chat's flags or directories, or cuts the transcript is committed by
// storeBeforeTelling before apply publishes it. The store groups commits
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
type durable struct {
	c *Chat
	// runningDirty: the active turn streamed since it was last written.
	runningDirty bool
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

// storeBeforeTelling commits what a, already reduced into the state, makes
// durable. It runs before a is published.
func (du *durable) storeBeforeTelling(a ahp.Action) {
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
	du.commit(a.ActionType(), ops...)
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

// commit runs ops in one committed write and waits for it (the store
// groups it with other actors' commits). A failure is logged: the state
// already moved on, and a client is told what the chat now holds.
func (du *durable) commit(what string, ops ...store.Op) {
	c := du.c
	ctx, cancel := context.WithTimeout(context.Background(), store.CommitWait)
	defer cancel()
	if err := c.cfg.Env.Store.CommitAll(ctx, ops...); err != nil {
		c.log.Error("commit before telling clients", "what", what, "err", err)
	}
}

func putTurnOp(rec store.TurnRecord) store.Op {
	return func(ctx context.Context, s *store.Store) error { return s.PutTurn(ctx, rec) }
}
