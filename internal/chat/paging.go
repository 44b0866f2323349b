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
// and runs only on the actor's goroutine. Turns are counted by their place
// in the chat's whole transcript (their stored seq), whether the window
// holds them or only the store does (window.go).
type pager struct {
	c *Chat
	// loadedFrom is the place of the oldest turn a paged watcher holds
	// (-1: none), where fetchTurns without a cursor continues.
	loadedFrom int
}

// viewFrom is the place of the first turn a subscription's view holds: 0
// for every turn.
func (pg *pager) viewFrom(view *ahp.SubscribeView) int {
	total := pg.c.turnCount()
	if n, ok := viewTurns(view); ok && n < total {
		return total - n
	}
	return 0
}

// viewTurns is the count a view asks for, ok false when it names none.
func viewTurns(view *ahp.SubscribeView) (int, bool) {
	if view == nil || view.Turns == nil {
		return 0, false
	}
	return max(*view.Turns, 0), true
}

// view cuts st, a snapshot of the chat's state, to what a subscription's
// view asks for: its turns from place from on (older are the stored turns
// before the window that the snapshot holds, which the caller puts before
// st's), with a cursor to fetch older ones when the view leaves some out.
func (pg *pager) view(st *ahp.ChatState, view *ahp.SubscribeView, from int, older []ahp.Turn) {
	c := pg.c
	st.Turns = st.Turns[max(from-c.eng.Window().Older(), 0):]
	n, ok := viewTurns(view)
	if !ok || n >= c.turnCount() {
		return
	}
	// A view of zero turns pages from the very end.
	cur := endCursor
	switch {
	case len(older) > 0:
		cur = turnCursor(older[0].ID)
	case len(st.Turns) > 0:
		cur = turnCursor(st.Turns[0].ID)
	}
	st.TurnsNextCursor = &cur
	if pg.loadedFrom < 0 || from < pg.loadedFrom {
		pg.loadedFrom = from
	}
}

// cut keeps loadedFrom within the chat's turns after a truncation.
func (pg *pager) cut() {
	if n := pg.c.turnCount(); pg.loadedFrom > n {
		pg.loadedFrom = n
	}
}

// FetchTurns publishes the page of turns older than cursor as
// chat/turnsLoaded to every watcher before it returns (C-CMD-11..14). A page
// older than the window is read from the store by the caller's goroutine.
func (c *Chat) FetchTurns(ctx context.Context, cursor string) error {
	var ferr error
	err := c.withOlder(ctx, &olderTurns{}, func(o *olderTurns) bool {
		var done bool
		done, ferr = c.pages.fetch(cursor, o)
		return done
	})
	if err != nil {
		return err
	}
	return ferr
}

// fetch is FetchTurns on the actor: false when it needs stored turns o does
// not hold (asked for), else done, with the refusal of a bad cursor.
func (pg *pager) fetch(cursor string, o *olderTurns) (bool, error) {
	c := pg.c
	base, total := c.eng.Window().Older(), c.turnCount()
	end := max(pg.loadedFrom, 0)
	if cursor != "" {
		id, ok := parseCursor(cursor)
		if !ok {
			return true, ahp.Errorf(ahp.ErrInvalidParams, "params.cursor: unrecognized fetchTurns cursor %q", cursor)
		}
		end = -1
		if cursor == endCursor {
			end = total
		} else if i := c.turnIndex(id); i >= 0 {
			end = base + i
		} else if r, ok := c.window.olderTurn(id); ok {
			end = r.Seq
		}
		if end < 0 {
			return true, ahp.Errorf(ahp.ErrInvalidParams, "params.cursor: cursor %q names no turn of this chat", cursor)
		}
	}
	start := max(0, end-c.cfg.Env.Limits.TurnsView)
	if !o.has(start, min(end, base)) {
		o.want(start, min(end, base))
		return false, nil
	}
	_, stored := o.span(start, min(end, base))
	held := c.st().Turns[min(max(start-base, 0), len(c.st().Turns)):max(end-base, 0)]
	page := make([]ahp.Turn, 0, len(stored)+len(held))
	page = append(append(page, stored...), held...)
	a := ahp.ChatTurnsLoaded{Turns: page}
	if start > 0 && len(page) > 0 {
		cur := turnCursor(page[0].ID)
		a.TurnsNextCursor = &cur
	}
	if pg.loadedFrom < 0 || start < pg.loadedFrom {
		pg.loadedFrom = start
	}
	// The reducer prepends and dedupes; the actor's own state holds every
	// turn it keeps already, so only the watchers change.
	c.cfg.Env.Bus.Publish(c.cfg.URI, a, nil)
	return true, nil
}
