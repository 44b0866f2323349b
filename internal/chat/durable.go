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

// storeBeforeTelling commits what a, already reduced into the state, makes
// durable. It runs before a is published.
func (c *Chat) storeBeforeTelling(a ahp.Action) {
	var ops []store.Op
	switch a := a.(type) {
	case ahp.ChatTurnStarted:
		if rec, ok := c.runningRecord(); ok && rec.ID == a.TurnID {
			ops = append(ops, putTurnOp(rec))
			c.runningDirty = false
		}
		if c.pendingChanged() { // a queued message became this turn
			ops = append(ops, c.recordOp())
		}
	case ahp.ChatTurnResume:
		// The resumed turn runs again: it is stored running before it is
		// said, as a new turn is.
		if rec, ok := c.runningRecord(); ok && rec.ID == a.TurnID {
			ops = append(ops, putTurnOp(rec))
			c.runningDirty = false
		}
	case ahp.ChatTurnComplete:
		ops = c.endedOps(a.TurnID)
	case ahp.ChatTurnCancelled:
		ops = c.endedOps(a.TurnID)
	case ahp.ChatError:
		ops = c.endedOps(a.TurnID)
	case ahp.ChatDraftChanged:
		ops = append(ops, c.draftOp())
	case ahp.ChatPendingMessageSet, ahp.ChatPendingMessageRemoved, ahp.ChatQueuedMessagesReordered:
		if c.pendingChanged() {
			ops = append(ops, c.recordOp())
		}
	case ahp.ChatTruncated:
		// Turn i is stored at seq i, so the kept turns are seq 0..len-1.
		uri, keep := c.cfg.URI, len(c.st().Turns)-1
		ops = append(ops, func(ctx context.Context, s *store.Store) error { return s.TruncateTurns(ctx, uri, keep) })
		c.pendingChanged()
		ops = append(ops, c.recordOp())
	case ahp.ChatIsReadChanged, ahp.ChatIsArchivedChanged, ahp.ChatWorkingDirectorySet, ahp.ChatWorkingDirectoryRemoved, ahp.ChatCanvasesChanged:
		ops = append(ops, c.recordOp())
	}
	c.commit(a.ActionType(), ops...)
}

// endedOps stores a turn that just ended, and the chat's record (its
// modification time moved).
func (c *Chat) endedOps(id string) []store.Op {
	rec, ok := c.endedRecord(id)
	if !ok {
		return nil
	}
	c.runningDirty = false
	return []store.Op{putTurnOp(rec), c.recordOp()}
}

// commit runs ops in one committed write and waits for it (the store
// groups it with other actors' commits). A failure is logged: the state
// already moved on, and a client is told what the chat now holds.
func (c *Chat) commit(what string, ops ...store.Op) {
	ctx, cancel := context.WithTimeout(context.Background(), store.CommitWait)
	defer cancel()
	if err := c.cfg.Env.Store.CommitAll(ctx, ops...); err != nil {
		c.log.Error("commit before telling clients", "what", what, "err", err)
	}
}

func putTurnOp(rec store.TurnRecord) store.Op {
	return func(ctx context.Context, s *store.Store) error { return s.PutTurn(ctx, rec) }
}
