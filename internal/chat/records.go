package chat

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/ahpd/ahpd/internal/store"
)

// autoTitle names the chat after its first message (C-COMP-26): a ! command
// gives a provisional title its first message replaces (C-COMP-27, 28).
func (c *Chat) autoTitle(text string, first, isCommand bool) {
	if !first && !c.record.TitleProvisional {
		return
	}
	if !first && isCommand {
		return
	}
	if !c.record.TitleProvisional && c.st().Title != "" && c.st().Title != DefaultTitle {
		return
	}
	title := CleanTitle(text)
	if title == "" {
		return
	}
	c.setTitle(title, isCommand)
}

// DefaultTitle is an unnamed chat's title.
const DefaultTitle = "New Chat"

// CleanTitle makes a short one-line title out of a message.
func CleanTitle(text string) string {
	line := strings.TrimSpace(text)
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = strings.TrimSpace(line[:i])
	}
	line = strings.Join(strings.Fields(line), " ")
	const limit = 60
	if r := []rune(line); len(r) > limit {
		line = strings.TrimSpace(string(r[:limit-1])) + "…"
	}
	return line
}

// persistRunning writes the active turn as running behind the actor; a
// streaming turn is written again every runningEvery so a crash loses at
// most that much of its tail.
func (c *Chat) persistRunning() {
	c.runningDirty = false
	rec, ok := c.runningRecord()
	if !ok {
		return
	}
	c.cfg.Env.Store.Enqueue(putTurnOp(rec))
}

func (c *Chat) runningRecord() (store.TurnRecord, bool) {
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
		Chat: c.cfg.URI, ID: at.ID, Seq: len(c.st().Turns), State: store.TurnRunning,
		Sender: c.eng.Turn(at.ID).Sender, Command: c.isLocal(at.ID), StartedAt: started, Body: body, BodyMarshalled: true,
	}, true
}

// endedRecord is the stored form of the turn that just ended (the last of
// state.Turns).
func (c *Chat) endedRecord(id string) (store.TurnRecord, bool) {
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
	return store.TurnRecord{
		Chat: c.cfg.URI, ID: t.ID, Seq: n - 1, State: string(t.State), Sender: c.eng.Turn(id).Sender,
		Point: c.points[id], Command: c.isLocal(id), StartedAt: started, Body: body, BodyMarshalled: true,
	}, true
}

func (c *Chat) draftOp() store.Op {
	var raw json.RawMessage
	if c.st().Draft != nil {
		raw, _ = json.Marshal(c.st().Draft)
	}
	uri := c.cfg.URI
	c.record.Draft = raw
	return func(ctx context.Context, s *store.Store) error { return s.SetDraft(ctx, uri, raw) }
}
