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

// pager pages a chat's turns to its watchers: a subscription's view of the
// newest turns, and fetchTurns for older ones. It is part of the chat actor
// and runs only on the actor's goroutine.
type pager struct {
	c *Chat
	// loadedFrom is the index of the oldest turn a paged watcher holds
	// (-1: none), where fetchTurns without a cursor continues.
	loadedFrom int
}

// view cuts st, a snapshot of the chat's state, to what a subscription's
// view asks for: only the newest turns, with a cursor to fetch older ones.
func (pg *pager) view(st *ahp.ChatState, view *ahp.SubscribeView) {
	c := pg.c
	if view != nil && view.Turns != nil {
		n := *view.Turns
		if n < 0 {
			n = 0
		}
		if n < len(st.Turns) {
			from := len(st.Turns) - n
			st.Turns = st.Turns[from:]
			// A view of zero turns pages from the very end.
			cur := endCursor
			if from < len(c.st().Turns) {
				cur = turnCursor(c.st().Turns[from].ID)
			}
			st.TurnsNextCursor = &cur
			if pg.loadedFrom < 0 || from < pg.loadedFrom {
				pg.loadedFrom = from
			}
		}
	}
}

// cut keeps loadedFrom within the chat's turns after a truncation.
func (pg *pager) cut() {
	if n := len(pg.c.st().Turns); pg.loadedFrom > n {
		pg.loadedFrom = n
	}
}

// FetchTurns publishes the page of turns older than cursor as
// chat/turnsLoaded to every watcher before it returns (C-CMD-11..14).
func (c *Chat) FetchTurns(ctx context.Context, cursor string) error {
	var ferr error
	err := c.call(ctx, func() { ferr = c.pages.fetch(cursor) })
	if err != nil {
		return err
	}
	return ferr
}

// fetch is FetchTurns on the actor.
func (pg *pager) fetch(cursor string) error {
	c := pg.c
	end := max(pg.loadedFrom, 0)
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
	if pg.loadedFrom < 0 || start < pg.loadedFrom {
		pg.loadedFrom = start
	}
	// The reducer prepends and dedupes; the actor's own state holds every
	// turn already, so only the watchers change.
	c.cfg.Env.Bus.Publish(c.cfg.URI, a, nil)
	return nil
}
