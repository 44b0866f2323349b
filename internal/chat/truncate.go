package chat

import (
	"context"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/google/uuid"
)

const reasonTruncateRunning = "A chat cannot be rewound while a turn runs; stop it first."

// rewind cuts a chat back at a client's chat/truncated: its turns, and its
// backend to where the kept turn ended, or the chat starts over. It is part
// of the chat actor and runs only on the actor's goroutine.
type rewind struct{ c *Chat }

// truncate is a rewind (chat/truncated, CHATS.md "Compacted context,
// and a rewind"): the turns after the named one drop, said first
// (C-COMP-05, 10); then the backend is cut back to where the kept turn
// ended, or, with no turnId, the chat starts over (C-COMP-13..19).
func (rw *rewind) truncate(cl Client, origin *ahp.ActionOrigin, a ahp.ChatTruncated) {
	c := rw.c
	if c.readOnly() {
		c.refuse(cl, origin, a, reasonReadOnly)
		return
	}
	if c.running() {
		c.refuse(cl, origin, a, reasonTruncateRunning)
		return
	}
	keep := -1
	if a.TurnID != "" {
		keep = c.turnIndex(a.TurnID)
		if keep < 0 {
			// A turn older than the window: the window is reloaded to end
			// at it first, since every turn after it goes (window.go).
			if r, ok := c.window.olderTurn(a.TurnID); ok && c.window.reloadThrough(r.Seq) {
				keep = c.turnIndex(a.TurnID)
			}
		}
		if keep < 0 {
			c.refuse(cl, origin, a, "No turn "+a.TurnID+" in this chat.")
			return
		}
	}
	// Stored turns read off the actor before this cut are read again.
	c.window.cuts++
	// The commands and points of the turns that drop go with them
	// (C-COMP-24); what the backend is cut to is decided on the turns
	// as they were.
	anchor := rw.anchorAt(keep)
	var dropped []string
	for _, t := range c.st().Turns[keep+1:] {
		dropped = append(dropped, t.ID)
	}
	c.apply(a, origin)
	for id := range c.points {
		if c.turnIndex(id) < 0 {
			delete(c.points, id)
		}
	}
	for _, id := range dropped {
		c.eng.Drop(id)
		delete(c.window.sizes, id)
	}
	// apply committed the cut before saying it (durable.go).
	c.pages.cut()
	rw.cut(anchor)
}

func (c *Chat) turnIndex(id string) int {
	for i := range c.st().Turns {
		if c.st().Turns[i].ID == id {
			return i
		}
	}
	return -1
}

// anchorAt is the backend's point for a rewind that keeps the window's
// turns 0..keep (and every turn older than the window): the last turn at or before keep that the backend saw (a !
// command's turn rewinds the backend at the turn before it, C-COMP-20).
// found is false when there is no such turn: the chat starts over
// (C-COMP-13, 22).
type anchor struct {
	found bool
	point string
}

func (rw *rewind) anchorAt(keep int) anchor {
	c := rw.c
	for i := keep; i >= 0; i-- {
		id := c.st().Turns[i].ID
		if c.isLocal(id) {
			continue
		}
		return anchor{found: true, point: c.points[id]}
	}
	if older := c.eng.Window().Older(); keep >= 0 && older > 0 {
		// Every turn the window keeps up to keep was a ! command: the
		// store knows the backend's last one before them.
		r, ok, err := c.cfg.Env.Store.LastAgentTurnThrough(context.Background(), c.cfg.URI, older-1)
		if err != nil {
			c.log.Error("rewind: find the backend's turn before the window", "err", err)
		}
		if ok {
			return anchor{found: true, point: r.Point}
		}
	}
	return anchor{}
}

// cut cuts the backend to the anchor, or starts the chat over.
func (rw *rewind) cut(at anchor) {
	c := rw.c
	if at.found {
		if at.point == "" || !c.backends.caps.Rewind {
			// C-COMP-11, 12: no rewind point (a turn read back by a backend
			// that names points only for turns it watched), or a backend
			// that cannot cut: the turns dropped from every client stay in
			// the backend.
			c.log.Info("rewind: backend keeps its history", "point", at.point, "canRewind", c.backends.caps.Rewind)
			return
		}
		c.backends.close()
		meta := ParseRecordMeta(c.record.Meta)
		meta.PendingOpen = &PendingOpen{Rewind: true, Point: at.point}
		c.record.Meta = meta.Raw()
		c.durable.persistRecord()
		return
	}
	// Start over (C-COMP-14..19): the backend stops, its conversation is
	// deleted through its delete, and a new one starts for this chat.
	c.backends.close()
	meta := ParseRecordMeta(c.record.Meta)
	meta.PendingOpen = nil
	if !meta.BackendStarted && !c.backends.hasTurns() {
		c.record.Meta = meta.Raw()
		c.durable.persistRecord()
		return
	}
	if c.cfg.Agent == nil || !c.backends.caps.Delete {
		// C-COMP-17: a backend with no delete keeps the conversation, and
		// the chat comes back on it (reading 10, docs/CHATS.md).
		c.log.Info("clear: backend has no delete; it keeps the conversation", "conversation", c.record.ConversationID)
		meta.Cleared = true
		c.record.Meta = meta.Raw()
		c.durable.persistRecord()
		return
	}
	if err := c.cfg.Agent.Delete(context.Background(), c.record.ConversationID, c.cfg.Directories); err != nil {
		// C-COMP-18, 19: logged; the backend comes back on the
		// conversation it had.
		c.log.Warn("clear: delete backend conversation failed; keeping it", "conversation", c.record.ConversationID, "err", err)
		meta.Cleared = true
		c.record.Meta = meta.Raw()
		c.durable.persistRecord()
		return
	}
	// C-COMP-16: a new conversation for the same chat, nothing to resume.
	c.record.ConversationID = uuid.NewString()
	meta.BackendStarted = false
	c.record.Meta = meta.Raw()
	c.durable.persistRecord()
}
