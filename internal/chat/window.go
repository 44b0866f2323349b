package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/store"
	"github.com/ahpd/ahpd/internal/turns"
)

// A loaded chat's memory is bounded by what is live, not by its history
// (issue #34, docs/ARCHITECTURE.md "Persistence"): the store holds the
// transcript; the actor keeps the running turn, what waits, and a window of
// its newest ended turns, at most turnsKept of them (4 by default) and
// keptBytes of their stored JSON, the newest always. Whatever asks for an
// older turn reads it from the store:
//
//   - a subscribe whose snapshot reaches past the window (no view, or a view
//     larger than the window), fetchTurns for a page past it, State (chat
//     attachments, completions) and a fork read the older turns off the
//     actor, in the goroutine that asked (a request's lane, the session's
//     actor for a fork), then finish on the actor (withOlder);
//   - a single turn named by id (a fetchTurns cursor, a side chat's or a
//     changeset's turn, a repeated start, a rewind's target, a point said
//     late) is one row read by its key on the actor (window.olderTurn);
//     a turn start, which must know whether its id is an older turn's,
//     asks a filter of the older ids first (olderids.go), so a new id
//     costs no read.
//
// Why 4: what the actor itself acts on is the newest turn (a resume, the
// holds on what waits) and, now and then, one near the end (a rewind of
// the last turn or two, a fork, a side chat, a late point); a larger window
// only spares the store reads of snapshots and paging, and those read past
// any small window anyway: a snapshot without a view holds every turn, a
// view without a count turnsView (50) and the web console's view 30, each
// read off the actor at about a millisecond a page. A turn in memory costs about four times its
// stored JSON (2.5 KB for a short one: its parts, its message, the sender
// in its _meta, its point and sender beside it), so at 20 a chat's window
// was most of what a busy chat held: 1,000 busy chats kept 50 MB of ended
// turns, a third of ahpd's live heap under issue 37's load; at 4 they keep
// 10 MB. keptBytes bounds a chat whose turns are large (long answers, big
// tool results): 1 MiB a chat keeps a few hundred loaded chats under a few
// hundred MiB whatever their turns hold.
const (
	defaultTurnsKept = 4
	keptBytes        = 1 << 20
	// olderTries is how many times a step that needs older turns reads
	// them off the actor; past it (turns keep leaving the window, or
	// cuts keep coming, faster than they are read) the actor reads them
	// itself, where nothing moves.
	olderTries = 4
)

// window is the part of the actor that keeps the chat's turns in memory
// bounded. It runs only on the actor's goroutine.
type window struct {
	c *Chat
	// sizes is the stored size of each ended turn the state holds, by id.
	sizes map[string]int
	// ended: a turn ended since the window was last trimmed.
	ended bool
	// cuts counts the truncations. Stored turns older than the window
	// change only by one, so turns read off the actor before a cut are
	// read again.
	cuts int
	// ids filters a turn start's check for an older turn of its id
	// (olderids.go): it holds every turn older than the window (a rewind
	// leaves it a superset: a false positive costs a read). nil until a
	// start first asks, or when the store could not be read.
	ids *olderIDs
}

// olderIDsMax is the most older turns a chat filters; past it (a chat of a
// million turns) every start reads the store, as it did before the filter.
const olderIDsMax = 1 << 20

// kept is how many ended turns the window holds at most.
func (w *window) kept() int {
	if n := w.c.cfg.Env.Limits.TurnsKept; n > 0 {
		return n
	}
	return defaultTurnsKept
}

// noteEnded says a turn ended and was stored with size bytes.
func (w *window) noteEnded(id string, size int) {
	w.sizes[id] = size
	w.ended = true
}

// settle trims the window when a turn ended. It runs between the actor's
// steps, never inside an engine call, and only once no commit is in flight
// (durable.go: an ending's commit can land after the step that told the
// engine), so a turn leaves memory only once the store has it.
func (w *window) settle() {
	if !w.ended || w.c.durable.inFlight() {
		return
	}
	w.ended = false
	c := w.c
	ts := c.st().Turns
	keep, bytes := 0, 0
	for i := len(ts) - 1; i >= 0; i-- {
		size := w.sizes[ts[i].ID]
		if keep > 0 && (keep >= w.kept() || bytes+size > keptBytes) {
			break
		}
		keep++
		bytes += size
	}
	for _, id := range c.eng.Window().Trim(len(ts) - keep) {
		delete(c.points, id)
		delete(w.sizes, id)
		if w.ids != nil {
			w.ids.add(id) // older now: the filter must hold it
		}
	}
}

// turnCount is how many ended turns the chat has: the stored ones older
// than the window, and the window's.
func (c *Chat) turnCount() int { return c.eng.Window().Older() + len(c.st().Turns) }

// olderTurn returns the stored turn id when it is one of the chat's ended
// turns older than the window: one row read by its key.
func (w *window) olderTurn(id string) (store.TurnRecord, bool) {
	c := w.c
	older := c.eng.Window().Older()
	if older == 0 || id == "" {
		return store.TurnRecord{}, false
	}
	r, ok, err := c.cfg.Env.Store.Turn(context.Background(), c.cfg.URI, id)
	if err != nil {
		c.log.Error("read a turn older than the window", "turn", id, "err", err)
		return store.TurnRecord{}, false
	}
	if !ok || r.Seq >= older || r.State == store.TurnRunning {
		return store.TurnRecord{}, false
	}
	return r, true
}

// mayBeOlder reports whether id may name one of the chat's ended turns
// older than the window; false means it does not, answered without the
// store once the filter is read (olderids.go). A turn start asks it of
// every new id.
func (w *window) mayBeOlder(id string) bool {
	older := w.c.eng.Window().Older()
	if older == 0 || id == "" {
		return false
	}
	if w.ids == nil || w.ids.full() {
		if w.ids = w.readOlderIDs(older); w.ids == nil {
			return true // the store answers
		}
	}
	return w.ids.mayHold(id)
}

// readOlderIDs builds the filter of the turns older than the window (the
// first start that asks, or a filter grown full), with room for as many
// again; nil when there are too many or the store could not be read.
func (w *window) readOlderIDs(older int) *olderIDs {
	c := w.c
	if older > olderIDsMax {
		return nil
	}
	ids, err := c.cfg.Env.Store.TurnIDsBefore(context.Background(), c.cfg.URI, older)
	if err != nil {
		c.log.Error("read the ids of the turns older than the window", "err", err)
		return nil
	}
	f := newOlderIDs(2 * len(ids))
	for _, id := range ids {
		f.add(id)
	}
	return f
}

// reloadThrough makes the stored turn at seq, older than the window, the
// window's newest, with the turns before it up to the window's size: a
// rewind to it cuts every turn after it. It reports whether the store
// answered.
func (w *window) reloadThrough(seq int) bool {
	c := w.c
	recs, err := c.cfg.Env.Store.TurnsBetween(context.Background(), c.cfg.URI, max(0, seq+1-w.kept()), seq+1)
	if err != nil || len(recs) == 0 || recs[len(recs)-1].Seq != seq {
		c.log.Error("reload the window for a rewind", "seq", seq, "err", err)
		return false
	}
	ts := make([]ahp.Turn, 0, len(recs))
	infos := make(map[string]turns.TurnInfo, len(recs))
	clear(c.points)
	clear(w.sizes)
	for _, r := range recs {
		t, err := storedTurn(r)
		if err != nil {
			c.log.Error("reload the window for a rewind", "err", err)
			return false
		}
		ts = append(ts, t)
		infos[r.ID] = recordInfo(r)
		if r.Point != "" {
			c.points[r.ID] = r.Point
		}
		w.sizes[r.ID] = len(r.Body)
	}
	c.eng.Window().Reload(recs[0].Seq, ts, infos)
	return true
}

// storedTurn is a stored ended turn as the chat holds it: its sender back
// in its message's _meta when the body lost it.
func storedTurn(r store.TurnRecord) (ahp.Turn, error) {
	var t ahp.Turn
	if err := json.Unmarshal(r.Body, &t); err != nil {
		return ahp.Turn{}, fmt.Errorf("turn %s: %w", r.ID, err)
	}
	t.Message = withSenderMeta(t.Message, r.Sender)
	return t, nil
}

// recordInfo is what the engine knows of a stored turn.
func recordInfo(r store.TurnRecord) turns.TurnInfo {
	info := turns.TurnInfo{Sender: r.Sender}
	if r.Command {
		info.Route = turns.RouteLocal
	}
	return info
}

// olderTurns are the stored turns older than the window that a step on the
// actor needs, by seq: [from, to). They are read by the goroutine that asked
// for the step, never by the actor's loop nor by a connection's read loop,
// and belong to it.
type olderTurns struct {
	// recordsOnly: the step needs the records, not the turns (a fork).
	recordsOnly bool

	read     bool
	from, to int
	recs     []store.TurnRecord
	turns    []ahp.Turn // recs as turns; nil with recordsOnly
	// cuts is window.cuts when they were asked for.
	cuts int
	// wantFrom, wantTo is what the step asked for.
	wantFrom, wantTo int
}

// has reports whether o holds the stored turns [from, to).
func (o *olderTurns) has(from, to int) bool {
	return from >= to || o.read && from >= o.from && to <= o.to
}

// want asks for the stored turns [from, to).
func (o *olderTurns) want(from, to int) { o.wantFrom, o.wantTo = from, to }

// span returns the stored turns with from <= seq < to that o holds.
func (o *olderTurns) span(from, to int) ([]store.TurnRecord, []ahp.Turn) {
	i := sort.Search(len(o.recs), func(k int) bool { return o.recs[k].Seq >= from })
	j := sort.Search(len(o.recs), func(k int) bool { return o.recs[k].Seq >= to })
	if j < i {
		j = i
	}
	var ts []ahp.Turn
	if o.turns != nil {
		ts = o.turns[i:j]
	}
	return o.recs[i:j], ts
}

// fetch reads what the step asked for from st, adding to what o holds
// when it continues it.
func (o *olderTurns) fetch(ctx context.Context, st *store.Store, chat string) error {
	from, to := o.wantFrom, o.wantTo
	if !o.read || from < o.from || from > o.to {
		o.read, o.from, o.to, o.recs, o.turns = false, from, from, nil, nil
	}
	from = max(from, o.to)
	if to > from {
		recs, err := st.TurnsBetween(ctx, chat, from, to)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if r.State == store.TurnRunning {
				continue // never older than the window; not an ended turn
			}
			if !o.recordsOnly {
				t, err := storedTurn(r)
				if err != nil {
					return fmt.Errorf("read turns of %s: %w", chat, err)
				}
				if o.turns == nil {
					o.turns = []ahp.Turn{}
				}
				o.turns = append(o.turns, t)
			}
			o.recs = append(o.recs, r)
		}
		o.to = to
	}
	o.read = true
	return nil
}

// withOlder runs step on the actor with the stored turns older than the
// window that it asks for. A step that needs turns o does not hold asks
// for them (o.want) and returns false, changing nothing; they are read in
// the calling goroutine and step runs again, until it returns true. Turns
// read before a cut are read again.
func (c *Chat) withOlder(ctx context.Context, o *olderTurns, step func(o *olderTurns) bool) error {
	for try := 1; ; try++ {
		var done bool
		var ferr error
		err := c.call(ctx, func() {
			if o.read && o.cuts != c.window.cuts {
				o.read, o.recs, o.turns = false, nil, nil
			}
			if done = step(o); done {
				return
			}
			o.cuts = c.window.cuts
			if try < olderTries {
				return
			}
			if ferr = o.fetch(ctx, c.cfg.Env.Store, c.cfg.URI); ferr != nil {
				return
			}
			if done = step(o); !done {
				ferr = fmt.Errorf("read the turns of %s older than its window: asked for them again once read", c.cfg.URI)
			}
		})
		switch {
		case err != nil:
			return err
		case ferr != nil:
			return ferr
		case done:
			return nil
		}
		if err := o.fetch(ctx, c.cfg.Env.Store, c.cfg.URI); err != nil {
			return err
		}
	}
}
