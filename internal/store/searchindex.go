package store

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Indexing turns in batches, off their commits' path (search.go).
//
// A finished turn waits for the index past the mark (search_through) or
// marked (search_pending); search.go says which. Both are in the file,
// committed with the turn, so a crash loses none: Open finds them. putTurn
// keeps the text its writer gave in memory once the turn's transaction
// committed, before the writer token is let go (a write that rolled back
// keeps none, so a kept text is always the committed body's). The writer
// goroutine indexes waiting turns between groups of ops, in one
// transaction per batch, once a batch is due; Search indexes whatever
// waits before it reads. A turn whose text is not kept (a fork's copy, a
// turn left by a crash, a text not kept because too much was) is indexed
// from its body in SQL.

// searchBatchMax bounds the turns one indexing transaction holds: enough
// to spread FTS5's per-transaction cost thinly, few enough that commits
// queued behind it wait tens of milliseconds at most.
const searchBatchMax = 500

// searchBatchBytes bounds the text one indexing transaction takes, past
// its first turn: tokenizing is most of a long turn's cost, which a batch
// does not spread, and a batch of 500 turns of 200 parts held commits for
// most of a second.
const searchBatchBytes = 1 << 20

// searchIndexDelay is the longest a finished turn waits for the writer to
// index it (a search does not wait: it indexes first).
const searchIndexDelay = time.Second

// searchTextsMax bounds the bytes of text kept for waiting turns; past it
// a turn's text is taken from its body when it is indexed.
const searchTextsMax = 8 << 20

// pendingMarked reads up to ? marked turns, oldest rowid first, with what
// indexing them needs: their name and state (NULL for a turn no longer
// stored; none should be: the delete trigger drops its marker) and their
// body's size.
const pendingMarked = `SELECT p.turn, t.chat, t.id, t.state, octet_length(t.body) FROM search_pending p
	LEFT JOIN turns t ON t.rowid = p.turn ORDER BY p.turn LIMIT ?`

// pendingNew reads up to ?2 turns past the mark ?1, oldest first, the
// same way.
const pendingNew = `SELECT rowid, chat, id, state, octet_length(body) FROM turns
	WHERE rowid > ?1 ORDER BY rowid LIMIT ?2`

// searchBacklog counts the marked turns and the turns past the mark.
const searchBacklog = `SELECT (SELECT count(*) FROM search_pending) +
	(SELECT count(*) FROM turns WHERE rowid > (SELECT turn FROM search_through))`

const (
	// unindexTurn drops a marked turn's row: it may hold an earlier text.
	unindexTurn = `DELETE FROM search_index WHERE rowid = ? * 4`
	// indexTurnGiven and indexTurnFromBody index a finished turn stored
	// at rowid: with the text kept for it, or with the text of its body.
	indexTurnGiven = `INSERT INTO search_index (rowid, text) VALUES (? * 4, ?)`
	// unmarkTurns drops the markers of a batch (turns ≤ the batch's last,
	// read under the writer token, so exactly the batch).
	unmarkTurns = `DELETE FROM search_pending WHERE turn <= ?`
	// readThrough and moveThrough read and move the mark.
	readThrough = `SELECT turn FROM search_through`
	moveThrough = `UPDATE search_through SET turn = ?`
)

var indexTurnFromBody = `INSERT INTO search_index (rowid, text) SELECT rowid * 4, ` + turnTextSQL("body") + `
	FROM turns WHERE rowid = ? AND json_valid(body)`

// indexer keeps the search index up to date with the turns waiting for
// it: it keeps their texts and indexes them. What it holds in memory is
// guarded by mu, and only hints and a cache: the mark and the markers in
// the file are the truth.
type indexer struct {
	db     *database
	logger *slog.Logger

	mu sync.Mutex
	// texts are the kept texts by turn, textBytes their size.
	texts     map[turnKey]string
	textBytes int
	// marked counts finished turns written since the last batch (an
	// over-count: a rolled-back write counts too); since is when the first
	// of them was, zero when none is known.
	marked int
	since  time.Time
	// delay is searchIndexDelay (a test shortens it); held keeps the
	// writer from indexing (a test sees a search's or a batch's work
	// alone).
	delay time.Duration
	held  bool

	// batches and indexed count the indexing transactions committed and
	// the waiting turns they took (Stats).
	batches, indexed atomic.Uint64
}

// turnKey names a turn.
type turnKey struct{ chat, id string }

// keptTurnText is a text to keep once its transaction commits; text nil
// drops what was kept (the turn was written without one).
type keptTurnText struct {
	turn turnKey
	text *string
}

// stagedTexts are the texts an op of a grouped transaction wrote turns
// with, kept once the group commits if the op succeeded (queue.go).
type stagedTexts struct{ texts []keptTurnText }

// stagedKey is the context key of an op's stagedTexts.
type stagedKey struct{}

// load readies the indexer at Open: a batch is due at once when a crash
// left turns waiting.
func (ix *indexer) load(ctx context.Context) error {
	ix.texts = make(map[turnKey]string)
	ix.delay = searchIndexDelay
	var tables int
	if err := ix.db.pool.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name = 'search_pending'`).Scan(&tables); err != nil {
		return fmt.Errorf("read schema: %w", err)
	}
	if tables == 0 {
		return nil // a schema before the index (a migration test)
	}
	var n int
	if err := ix.db.pool.QueryRowContext(ctx, searchBacklog).Scan(&n); err != nil {
		return fmt.Errorf("read search markers: %w", err)
	}
	if n > 0 {
		ix.marked = n
		ix.since = time.Now().Add(-ix.delay)
	}
	return nil
}

// wrote takes note of a finished turn just written (past the mark, or
// marked by trigger), with the text its writer gave, if any. Inside an op of a grouped
// transaction the text is staged, for the writer to keep once the group
// commits (queue.go); a write in its own transaction has committed when
// this runs, still holding the writer token, and its text is kept now.
func (ix *indexer) wrote(ctx context.Context, turn turnKey, text *string) {
	staged, ok := ctx.Value(stagedKey{}).(*stagedTexts)
	switch {
	case ok:
		staged.texts = append(staged.texts, keptTurnText{turn, text})
	case ctx.Value(batchTxKey{}) != nil:
		// In a transaction whose end this cannot see: keep no text, and
		// none kept before (the turn's text is taken from its body).
		ix.keep([]keptTurnText{{turn, nil}})
	default:
		ix.keep([]keptTurnText{{turn, text}})
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.marked == 0 {
		ix.since = time.Now()
	}
	ix.marked++
}

// keep keeps texts of committed writes, in the order they were written.
// It is called holding the writer token, so no batch reads texts
// meanwhile.
func (ix *indexer) keep(texts []keptTurnText) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, k := range texts {
		if old, ok := ix.texts[k.turn]; ok {
			ix.textBytes -= len(old)
			delete(ix.texts, k.turn)
		}
		if k.text != nil && ix.textBytes+len(*k.text) <= searchTextsMax {
			ix.texts[k.turn] = *k.text
			ix.textBytes += len(*k.text)
		}
	}
}

// due says when the writer should index a batch: ok is false when no
// turn is known to wait.
func (ix *indexer) due() (due time.Time, ok bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	switch {
	case ix.marked == 0:
		return time.Time{}, false
	case ix.held:
		return time.Time{}, false
	case ix.marked >= searchBatchMax:
		return ix.since, true
	}
	return ix.since.Add(ix.delay), true
}

// indexPending indexes waiting turns in one write transaction: the marked
// ones, then those past the mark, oldest first; up to limit of them, and
// once searchBatchBytes of text are indexed no more. It reports how many
// it took and whether any is left.
func (ix *indexer) indexPending(ctx context.Context, limit int) (n int, more bool, err error) {
	type waiting struct {
		turn            int64
		chat, id, state sql.NullString
		size            int64 // its body's bytes, for a text not kept
		marked          bool
	}
	err = ix.db.withWrite(ctx, func(tx *sql.Tx) error {
		n, more = 0, false
		var batch []waiting
		read := func(marked bool, query string, args ...any) error {
			st, err := ix.db.stmt(ctx, query)
			if err != nil {
				return err
			}
			rows, err := tx.StmtContext(ctx, st).QueryContext(ctx, args...)
			if err != nil {
				return err
			}
			for rows.Next() {
				w := waiting{marked: marked}
				var size sql.NullInt64
				if err := rows.Scan(&w.turn, &w.chat, &w.id, &w.state, &size); err != nil {
					rows.Close()
					return err
				}
				w.size = size.Int64
				batch = append(batch, w)
			}
			return rows.Close()
		}
		if err := read(true, pendingMarked, limit); err != nil {
			return err
		}
		if len(batch) < limit {
			var through int64
			if err := ix.db.txQueryRow(ctx, tx, readThrough).Scan(&through); err != nil {
				return err
			}
			if err := read(false, pendingNew, through, limit-len(batch)); err != nil {
				return err
			}
		}
		if len(batch) == 0 {
			ix.forgetIndexed(nil, true)
			return nil
		}
		var bytes int64
		lastMarked, lastNew := int64(-1), int64(-1)
		for _, w := range batch {
			if bytes >= searchBatchBytes {
				break
			}
			n++
			if w.marked {
				// Its row may hold an earlier text. (A turn past the
				// mark was never indexed.)
				lastMarked = w.turn
				if err := ix.db.txExec(ctx, tx, unindexTurn, w.turn); err != nil {
					return fmt.Errorf("unindex turn %d: %w", w.turn, err)
				}
			} else {
				lastNew = w.turn
			}
			if !w.state.Valid || w.state.String == TurnRunning {
				continue // indexed once it ends: the mark is past it
			}
			var err error
			if text, ok := ix.keptText(turnKey{w.chat.String, w.id.String}); ok {
				bytes += int64(len(text))
				err = ix.db.txExec(ctx, tx, indexTurnGiven, w.turn, text)
			} else {
				bytes += w.size
				err = ix.db.txExec(ctx, tx, indexTurnFromBody, w.turn)
			}
			if err != nil {
				return fmt.Errorf("index turn %d: %w", w.turn, err)
			}
		}
		if lastMarked >= 0 {
			if err := ix.db.txExec(ctx, tx, unmarkTurns, lastMarked); err != nil {
				return err
			}
		}
		if lastNew >= 0 {
			if err := ix.db.txExec(ctx, tx, moveThrough, lastNew); err != nil {
				return err
			}
		}
		more = n < len(batch) || len(batch) == limit
		// Under the writer token, so no text is kept meanwhile.
		turns := make([]turnKey, n)
		for i, w := range batch[:n] {
			turns[i] = turnKey{w.chat.String, w.id.String}
		}
		ix.forgetIndexed(turns, !more)
		return nil
	})
	if err != nil {
		ix.remind()
		return 0, true, fmt.Errorf("index %d waiting turns: %w", n, err)
	}
	if n > 0 {
		ix.batches.Add(1)
		ix.indexed.Add(uint64(n))
	}
	return n, more, nil
}

// keptText is the text kept for turn, if any.
func (ix *indexer) keptText(turn turnKey) (string, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	text, ok := ix.texts[turn]
	return text, ok
}

// forgetIndexed forgets the texts of the turns a batch indexed, and when
// the batch emptied the markers, every text and count: a text left is of
// a turn deleted since. It runs in the batch's transaction, holding the
// writer token, so no text is kept meanwhile; should the commit fail,
// remind counts the markers again (their texts are then taken from the
// bodies).
func (ix *indexer) forgetIndexed(turns []turnKey, drained bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if drained {
		clear(ix.texts)
		ix.textBytes = 0
		ix.marked, ix.since = 0, time.Time{}
		return
	}
	for _, turn := range turns {
		if text, ok := ix.texts[turn]; ok {
			ix.textBytes -= len(text)
			delete(ix.texts, turn)
		}
	}
	// More are marked: the next batch is due now.
	ix.marked = max(ix.marked, searchBatchMax)
	if ix.since.IsZero() {
		ix.since = time.Now()
	}
}

// remind has the writer try a batch again after the delay (one failed).
func (ix *indexer) remind() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.since = time.Now()
	ix.marked = max(ix.marked, 1)
}

// catchUp indexes every waiting turn, batch by batch, so a search that
// follows agrees with every commit before it. With none waiting (a read,
// which needs no writer token) it does nothing.
func (ix *indexer) catchUp(ctx context.Context) error {
	var pending bool
	if err := ix.db.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM search_pending)
		OR EXISTS (SELECT 1 FROM turns WHERE rowid > (SELECT turn FROM search_through))`).Scan(&pending); err != nil {
		return fmt.Errorf("read the turns waiting for the search index: %w", err)
	}
	for pending {
		var err error
		if _, pending, err = ix.indexPending(ctx, searchBatchMax); err != nil {
			return err
		}
	}
	return nil
}

// indexInBackground is the writer's indexing between groups of ops: one
// batch when one is due. A failure is logged and tried again after the
// delay (a search would report it).
func (ix *indexer) indexInBackground(ctx context.Context) {
	due, ok := ix.due()
	if !ok || time.Now().Before(due) {
		return
	}
	if _, _, err := ix.indexPending(ctx, searchBatchMax); err != nil {
		ix.logger.Error("index waiting turns for search", "err", err)
	}
}
