package chat

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/store"
)

// persistRunning writes the active turn as running behind the actor; a
// streaming turn is written again every runningEvery so a crash loses at
// most that much of its tail.
func (du *durable) persistRunning() {
	du.runningDirty = false
	rec, ok := du.runningRecord()
	if !ok {
		return
	}
	du.enqueue(putTurnOp(rec))
}

func (du *durable) runningRecord() (store.TurnRecord, bool) {
	c := du.c
	at := c.st().ActiveTurn
	if at == nil {
		return store.TurnRecord{}, false
	}
	body, err := json.Marshal(at)
	if err != nil {
		c.log.Error("marshal running turn", "err", err)
		return store.TurnRecord{}, false
	}
	started, _ := time.Parse(time.RFC3339Nano, at.StartedAt)
	return store.TurnRecord{
		Chat: c.cfg.URI, ID: at.ID, Seq: c.turnCount(), State: store.TurnRunning,
		Sender: c.eng.Turn(at.ID).Sender, Command: c.isLocal(at.ID), StartedAt: started, Body: body, BodyMarshalled: true,
	}, true
}

// endedRecord is the stored form of the turn that just ended (the last of
// state.Turns).
func (du *durable) endedRecord(id string) (store.TurnRecord, bool) {
	c := du.c
	n := len(c.st().Turns)
	if n == 0 || c.st().Turns[n-1].ID != id {
		return store.TurnRecord{}, false
	}
	t := c.st().Turns[n-1]
	body, err := json.Marshal(t)
	if err != nil {
		c.log.Error("marshal ended turn", "err", err)
		return store.TurnRecord{}, false
	}
	started, _ := time.Parse(time.RFC3339Nano, t.StartedAt)
	c.window.noteEnded(id, len(body))
	text := SearchText(&t) // so the store need not parse body for its search index
	return store.TurnRecord{
		Chat: c.cfg.URI, ID: t.ID, Seq: c.eng.Window().Older() + n - 1, State: string(t.State), Sender: c.eng.Turn(id).Sender,
		Point: c.points[id], Command: c.isLocal(id), StartedAt: started, Body: body, BodyMarshalled: true,
		SearchText: &text,
	}, true
}

func (du *durable) draftOp() store.Op {
	c := du.c
	var raw json.RawMessage
	if c.st().Draft != nil {
		raw, _ = json.Marshal(c.st().Draft)
	}
	uri := c.cfg.URI
	c.record.Draft = raw
	return func(ctx context.Context, s *store.Store) error { return s.SetDraft(ctx, uri, raw) }
}

// persistRecord writes the chat's record behind the actor's back (for what
// no client is shown; durable.tell commits the rest).
func (du *durable) persistRecord() {
	du.enqueue(du.recordOp())
}

// recordOp brings the chat's record up to date with its state and returns
// the op that stores it.
func (du *durable) recordOp() store.Op {
	c := du.c
	rec := c.record
	st := c.st()
	rec.Title = st.Title
	rec.Flags = int(st.Status & (ahp.StatusIsRead | ahp.StatusIsArchived))
	rec.WorkingDirectories = st.WorkingDirectories
	if m, err := time.Parse(time.RFC3339Nano, st.ModifiedAt); err == nil {
		rec.ModifiedAt = m
	}
	c.record = rec
	return func(ctx context.Context, s *store.Store) error { return s.PutChat(ctx, rec) }
}

// SearchText is what a finished turn is found by in search: its message's
// text and its markdown parts' content, one per line; the same text the
// store takes from the turn's JSON when a writer gives none
// (TestSearchTextAgreesWithTheStores).
func SearchText(t *ahp.Turn) string {
	var b strings.Builder
	b.WriteString(t.Message.Text)
	for i := range t.ResponseParts {
		if p := &t.ResponseParts[i]; p.Kind == ahp.PartMarkdown {
			b.WriteByte('\n')
			b.WriteString(p.Content)
		}
	}
	return b.String()
}
