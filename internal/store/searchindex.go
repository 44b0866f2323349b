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
// putTurn writes a marker (search_pending) in the turn's transaction and
// keeps the turn's text in memory under a generation number that the
// marker carries too. The writer goroutine indexes marked turns between
// groups of ops, in one transaction per batch, once the batch is due;
// Search indexes whatever is marked before it reads. A kept text is used
// only for the marker of its own generation: a marker written by a
// transaction that rolled back is not in the file, so its text is never
// taken for an older body's. Any other marked turn (a fork's copy, a
// marker left by a crash, a text not kept because too much was) is
// indexed from its body in SQL.

// searchBatchMax bounds the turns one indexing transaction holds: enough
// to spread FTS5's per-transaction cost thinly, few enough that commits
// queued behind it wait tens of milliseconds at most.
const searchBatchMax = 500

// searchBatchBytes bounds the text one indexing transaction takes, past
// its first turn: tokenizing is most of a long turn's cost, which a batch
// does not spread, and a batch of 500 turns of 200 parts held commits for
// most of a second.
const searchBatchBytes = 1 << 20

// searchIndexDelay is the longest a marked turn waits for the writer to
// index it (a search does not wait: it indexes first).
const searchIndexDelay = time.Second

// searchTextsMax bounds the bytes of text kept for marked turns; past it
// a turn's text is taken from its body when it is indexed.
const searchTextsMax = 8 << 20

// markTurn marks the turn (chat, id), just written, for indexing; gen
// says which kept text is its own. (The turn's upsert returning its rowid
// cost more than this second look-up of the row it just wrote.)
const markTurn = `INSERT INTO search_pending (turn, gen) SELECT rowid, ?3 FROM turns WHERE chat = ?1 AND id = ?2
	ON CONFLICT (turn) DO UPDATE SET gen = excluded.gen`

// pendingBatch reads up to ? marked turns, oldest rowid first, with what
// indexing them needs: their state (NULL for a turn no longer stored; none
// should be: the delete trigger drops its marker) and their body's size.
const pendingBatch = `SELECT p.turn, p.gen, t.state, octet_length(t.body) FROM search_pending p
	LEFT JOIN turns t ON t.rowid = p.turn ORDER BY p.turn LIMIT ?`

const (
	// unindexTurn drops a marked turn's row: it may hold an earlier text.
	unindexTurn = `DELETE FROM search_index WHERE rowid = ? * 4`
	// indexTurnGiven and indexTurnFromBody index a finished turn stored
	// at rowid: with the text kept for it, or with the text of its body.
	indexTurnGiven = `INSERT INTO search_index (rowid, text) VALUES (? * 4, ?)`
	// unmarkTurns drops the markers of a batch (turns ≤ the batch's last,
	// read under the writer token, so exactly the batch).
	unmarkTurns = `DELETE FROM search_pending WHERE turn <= ?`
)

var indexTurnFromBody = `INSERT INTO search_index (rowid, text) SELECT rowid * 4, ` + turnTextSQL("body") + `
	FROM turns WHERE rowid = ? AND json_valid(body)`

// indexer keeps the search index up to date with the marked turns: it
// writes their markers, keeps their texts, and indexes them. What it
// holds in memory is guarded by mu, and only hints and a cache: the
// markers in the file are the truth.
type indexer struct {
	db     *database
	logger *slog.Logger

	mu sync.Mutex
	// gen numbers markers; it starts past every marker in the file.
	gen int64
	// texts are the kept texts by their markers' generation, textBytes
	// their size.
	texts     map[int64]string
	textBytes int
	// marked counts markers written since the last batch (an
	// over-count: a rolled-back write counts too); since is when the
	// first of them was, zero when none is known.
	marked int
	since  time.Time
	// delay is searchIndexDelay (a test shortens it); held keeps the
	// writer from indexing (a test sees a search's or a batch's work
	// alone).
	delay time.Duration
	held  bool

	// batches and indexed count the indexing transactions committed and
	// the marked turns they took (Stats).
	batches, indexed atomic.Uint64
}

// load readies the indexer at Open: the generation past the
// file's markers, and a batch due at once when a crash left some.
func (ix *indexer) load(ctx context.Context) error {
	ix.texts = make(map[int64]string)
	ix.delay = searchIndexDelay
	var tables int
	if err := ix.db.pool.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name = 'search_pending'`).Scan(&tables); err != nil {
		return fmt.Errorf("read schema: %w", err)
	}
	if tables == 0 {
		return nil // a schema before the index (a migration test)
	}
	var n int
	var maxGen int64
	if err := ix.db.pool.QueryRowContext(ctx, `SELECT count(*), coalesce(max(gen), 0) FROM search_pending`).Scan(&n, &maxGen); err != nil {
		return fmt.Errorf("read search markers: %w", err)
	}
	ix.gen = maxGen
	if n > 0 {
		ix.marked = n
		ix.since = time.Now().Add(-ix.delay)
	}
	return nil
}

// mark writes the marker of the turn (chat, id), just written, in
// the caller's transaction and keeps text (when given, and there is room)
// under the marker's generation.
func (ix *indexer) mark(ctx context.Context, tx *sql.Tx, chat, id string, text *string) error {
	ix.mu.Lock()
	ix.gen++
	gen := ix.gen
	ix.mu.Unlock()
	if err := ix.db.txExec(ctx, tx, markTurn, chat, id, gen); err != nil {
		return fmt.Errorf("mark for the search index: %w", err)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if text != nil && ix.textBytes+len(*text) <= searchTextsMax {
		ix.texts[gen] = *text
		ix.textBytes += len(*text)
	}
	ix.noteMarked()
	return nil
}

// noteMarked counts a marker just written. ix.mu is held.
func (ix *indexer) noteMarked() {
	if ix.marked == 0 {
		ix.since = time.Now()
	}
	ix.marked++
}

// due says when the writer should index a batch: ok is false when no
// marker is known.
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

// indexPending indexes marked turns, oldest first, in one write
// transaction: up to limit of them, and once searchBatchBytes of text are
// indexed no more. It reports how many it took and whether any is left.
func (ix *indexer) indexPending(ctx context.Context, limit int) (n int, more bool, err error) {
	type marked struct {
		turn, gen int64
		state     sql.NullString
		size      int64 // its body's bytes, for a text not kept
	}
	var batch []marked
	err = ix.db.withWrite(ctx, func(tx *sql.Tx) error {
		batch, n, more = batch[:0], 0, false
		st, err := ix.db.stmt(ctx, pendingBatch)
		if err != nil {
			return err
		}
		rows, err := tx.StmtContext(ctx, st).QueryContext(ctx, limit)
		if err != nil {
			return err
		}
		for rows.Next() {
			var m marked
			var size sql.NullInt64
			if err := rows.Scan(&m.turn, &m.gen, &m.state, &size); err != nil {
				rows.Close()
				return err
			}
			m.size = size.Int64
			batch = append(batch, m)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if len(batch) == 0 {
			ix.forgetIndexed(nil, true)
			return nil
		}
		var bytes int64
		for _, m := range batch {
			if bytes >= searchBatchBytes {
				break
			}
			n++
			if err := ix.db.txExec(ctx, tx, unindexTurn, m.turn); err != nil {
				return fmt.Errorf("unindex turn %d: %w", m.turn, err)
			}
			if !m.state.Valid || m.state.String == TurnRunning {
				continue
			}
			if text, ok := ix.keptText(m.gen); ok {
				bytes += int64(len(text))
				err = ix.db.txExec(ctx, tx, indexTurnGiven, m.turn, text)
			} else {
				bytes += m.size
				err = ix.db.txExec(ctx, tx, indexTurnFromBody, m.turn)
			}
			if err != nil {
				return fmt.Errorf("index turn %d: %w", m.turn, err)
			}
		}
		if err := ix.db.txExec(ctx, tx, unmarkTurns, batch[n-1].turn); err != nil {
			return err
		}
		more = n < len(batch) || len(batch) == limit
		// Under the writer token, so no marker is being written.
		gens := make([]int64, n)
		for i, m := range batch[:n] {
			gens[i] = m.gen
		}
		ix.forgetIndexed(gens, !more)
		return nil
	})
	if err != nil {
		ix.remind()
		return 0, true, fmt.Errorf("index %d marked turns: %w", n, err)
	}
	if n > 0 {
		ix.batches.Add(1)
		ix.indexed.Add(uint64(n))
	}
	return n, more, nil
}

// keptText is the text kept under gen, if any.
func (ix *indexer) keptText(gen int64) (string, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	text, ok := ix.texts[gen]
	return text, ok
}

// forgetIndexed forgets the texts of the markers a batch indexed (gens),
// and when the batch emptied the markers, every text and count: a text
// left was kept for a write that rolled back or was written again. It
// runs in the batch's transaction, holding the writer token, so no marker
// is written meanwhile; should the commit fail, remind counts the markers
// again (their texts are then taken from the bodies).
func (ix *indexer) forgetIndexed(gens []int64, drained bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if drained {
		clear(ix.texts)
		ix.textBytes = 0
		ix.marked, ix.since = 0, time.Time{}
		return
	}
	for _, gen := range gens {
		if text, ok := ix.texts[gen]; ok {
			ix.textBytes -= len(text)
			delete(ix.texts, gen)
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

// catchUp indexes every marked turn, batch by batch, so a search
// that follows agrees with every commit before it. With no marker in the
// file (a read, which needs no writer token) it does nothing.
func (ix *indexer) catchUp(ctx context.Context) error {
	var pending bool
	if err := ix.db.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM search_pending)`).Scan(&pending); err != nil {
		return fmt.Errorf("read search markers: %w", err)
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
		ix.logger.Error("index marked turns for search", "err", err)
	}
}
