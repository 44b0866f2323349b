package chat

import (
	"context"
	"encoding/base64"
	"strings"

	"github.com/ahpd/ahpd/internal/ahp"
)

// turnCursor is the fetchTurns cursor naming "the turns before this one".
func turnCursor(turnID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("before:" + turnID))
}

// endCursor names the end of the chat: the page before it is the newest
// turns (what a subscribe with a view of zero turns hands out).
var endCursor = base64.RawURLEncoding.EncodeToString([]byte("end"))

func parseCursor(cur string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(cur)
	if err != nil {
		return "", false
	}
	if string(b) == "end" {
		return "", true
	}
	id, ok := strings.CutPrefix(string(b), "before:")
	return id, ok && id != ""
}

// FetchTurns publishes the page of turns older than cursor as
// chat/turnsLoaded to every watcher before it returns (C-CMD-11..14).
func (c *Chat) FetchTurns(ctx context.Context, cursor string) error {
	var ferr error
	err := c.call(ctx, func() { ferr = c.fetchTurns(cursor) })
	if err != nil {
		return err
	}
	return ferr
}

func (c *Chat) fetchTurns(cursor string) error {
	end := max(c.loadedFrom, 0)
	if cursor != "" {
		id, ok := parseCursor(cursor)
		if !ok {
			return ahp.Errorf(ahp.ErrInvalidParams, "params.cursor: unrecognized fetchTurns cursor %q", cursor)
		}
		end = -1
		if cursor == endCursor {
			end = len(c.st().Turns)
		}
		for i := range c.st().Turns {
			if c.st().Turns[i].ID == id {
				end = i
				break
			}
		}
		if end < 0 {
			return ahp.Errorf(ahp.ErrInvalidParams, "params.cursor: cursor %q names no turn of this chat", cursor)
		}
	}
	start := max(0, end-c.cfg.Env.Limits.TurnsView)
	page := append([]ahp.Turn(nil), c.st().Turns[start:end]...)
	a := ahp.ChatTurnsLoaded{Turns: page}
	if page == nil {
		a.Turns = []ahp.Turn{}
	}
	if start > 0 {
		cur := turnCursor(c.st().Turns[start].ID)
		a.TurnsNextCursor = &cur
	}
	if c.loadedFrom < 0 || start < c.loadedFrom {
		c.loadedFrom = start
	}
	// The reducer prepends and dedupes; the actor's own state holds every
	// turn already, so only the watchers change.
	c.cfg.Env.Bus.Publish(c.cfg.URI, a, nil)
	return nil
}
