package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// holdIndexing keeps s's writer from indexing marked turns on its own, so
// a test sees what a search's catch-up does.
func holdIndexing(st *Store) {
	st.search.mu.Lock()
	st.search.held = true
	st.search.mu.Unlock()
}

// markers counts the finished turns waiting for the index (marked, or
// past the mark), and the index's turn rows.
func markers(t *testing.T, s *Store) (pending, indexed int) {
	t.Helper()
	must(t, s.db.pool.QueryRow(`SELECT (SELECT count(*) FROM search_pending) +
			(SELECT count(*) FROM turns WHERE state != 'running' AND rowid > (SELECT turn FROM search_through)),
		(SELECT count(*) FROM search_index WHERE rowid % 4 = 0)`).Scan(&pending, &indexed))
	return pending, indexed
}

// commitTurn stores r the way a chat actor does (Commit).
func commitTurn(t *testing.T, s *Store, r TurnRecord) {
	t.Helper()
	must(t, s.Commit(context.Background(), func(ctx context.Context, st *Store) error { return st.PutTurn(ctx, r) }))
}

// withText is r with the text a chat actor gives for the index.
func withText(r TurnRecord, text string) TurnRecord {
	r.SearchText = &text
	return r
}

// TestTurnCommitLeavesIndexingForLater: a finished turn's commit leaves
// the index alone (its FTS5 work is what doubled the commit); the turn
// waits for a batch, a running one does not.
func TestTurnCommitLeavesIndexingForLater(t *testing.T) {
	s, _ := openTemp(t)
	holdIndexing(s)
	_, chat := seed(t, s, "ahp-session:/s1")
	running := saidTurn(chat, 0, "still going", "")
	running.State = TurnRunning
	commitTurn(t, s, running)
	if p, i := markers(t, s); p != 0 || i != 0 {
		t.Fatalf("a running turn: %d marked, %d indexed; want none", p, i)
	}
	commitTurn(t, s, withText(saidTurn(chat, 0, "ended now", ""), "ended now"))
	commitTurn(t, s, withText(saidTurn(chat, 1, "and another", ""), "and another"))
	if p, i := markers(t, s); p != 2 || i != 0 {
		t.Fatalf("after two commits: %d marked, %d indexed; want 2 and 0", p, i)
	}
}

// TestSearchRightAfterACommitFindsTheTurn: a search indexes what is marked
// before it reads, so it finds every turn committed before it, with the
// text the writer gave.
func TestSearchRightAfterACommitFindsTheTurn(t *testing.T) {
	s, _ := openTemp(t)
	holdIndexing(s)
	sess, chat := seed(t, s, "ahp-session:/s1")
	commitTurn(t, s, withText(saidTurn(chat, 0, "the body's own words", ""), "a freshly committed pangolin"))
	wantFound(t, s, "pangolin", "turn "+sess+" "+chat+" t0")
	if p, i := markers(t, s); p != 0 || i != 1 {
		t.Errorf("after the search: %d marked, %d indexed; want 0 and 1", p, i)
	}
	// Rewritten after it was indexed (an edited message): the search
	// after the commit has the new text only.
	commitTurn(t, s, withText(saidTurn(chat, 0, "edited", ""), "now an armadillo"))
	wantFound(t, s, "pangolin")
	wantFound(t, s, "armadillo", "turn "+sess+" "+chat+" t0")
	// A fork's copy gives no text: it is indexed from its body.
	must(t, s.PutTurn(context.Background(), saidTurn(chat, 1, "copied tapir", "")))
	wantFound(t, s, "tapir", "turn "+sess+" "+chat+" t1")
	// Written running again (a turn resumed), it is not found until it
	// ends again.
	running := saidTurn(chat, 1, "copied tapir", "")
	running.State = TurnRunning
	commitTurn(t, s, running)
	wantFound(t, s, "tapir")
	checkIndexAgrees(t, s)
}

// TestSearchNeverIndexesARolledBackWritesText: a write of a marked turn
// whose transaction rolled back left its text in memory, not its marker in
// the file; the turn is indexed with what was committed.
func TestSearchNeverIndexesARolledBackWritesText(t *testing.T) {
	s, _ := openTemp(t)
	holdIndexing(s)
	sess, chat := seed(t, s, "ahp-session:/s1")
	ctx := context.Background()
	commitTurn(t, s, withText(saidTurn(chat, 0, "committed", ""), "the committed marmot"))
	failed := errors.New("the op failed after writing")
	err := s.Commit(ctx, func(ctx context.Context, st *Store) error {
		if err := st.PutTurn(ctx, withText(saidTurn(chat, 0, "never", ""), "the rolled back lemming")); err != nil {
			return err
		}
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatalf("commit = %v", err)
	}
	wantFound(t, s, "lemming")
	wantFound(t, s, "marmot", "turn "+sess+" "+chat+" t0")
	checkIndexAgrees(t, s)
}

// TestDeletingAMarkedTurnDropsItsMarker: a rewind or a deleted session
// takes the turns not yet indexed (past the mark, or marked) out of the
// waiting ones, and the rows of those indexed out of the index.
func TestDeletingAMarkedTurnDropsItsMarker(t *testing.T) {
	s, _ := openTemp(t)
	holdIndexing(s)
	sess, chat := seed(t, s, "ahp-session:/s1")
	ctx := context.Background()
	for i, word := range []string{"alpha", "bravo", "charlie"} {
		commitTurn(t, s, withText(saidTurn(chat, i, word, ""), "say "+word))
	}
	wantFound(t, s, "say", "turn "+sess+" "+chat+" t0", "turn "+sess+" "+chat+" t1", "turn "+sess+" "+chat+" t2")
	commitTurn(t, s, withText(saidTurn(chat, 3, "delta", ""), "say delta"))
	commitTurn(t, s, withText(saidTurn(chat, 4, "echo", ""), "say echo"))
	must(t, s.TruncateTurns(ctx, chat, 2)) // t3 marked, t0..t2 indexed
	if p, _ := markers(t, s); p != 0 {
		t.Errorf("after the rewind: %d markers left, want 0", p)
	}
	wantFound(t, s, "delta")
	wantFound(t, s, "say", "turn "+sess+" "+chat+" t0", "turn "+sess+" "+chat+" t1", "turn "+sess+" "+chat+" t2")

	// Written again behind the mark, t2 is marked; the rewind drops the
	// marker with the turn.
	commitTurn(t, s, withText(saidTurn(chat, 2, "charlie", ""), "say charlie again"))
	var marked int
	must(t, s.db.pool.QueryRow(`SELECT count(*) FROM search_pending`).Scan(&marked))
	if marked != 1 {
		t.Fatalf("a turn written again behind the mark: %d markers, want 1", marked)
	}
	must(t, s.TruncateTurns(ctx, chat, 1))
	if p, _ := markers(t, s); p != 0 {
		t.Errorf("after the rewind: %d waiting, want 0", p)
	}
	wantFound(t, s, "say", "turn "+sess+" "+chat+" t0", "turn "+sess+" "+chat+" t1")

	commitTurn(t, s, withText(saidTurn(chat, 3, "foxtrot", ""), "say foxtrot"))
	must(t, s.DeleteSession(ctx, sess))
	if p, i := markers(t, s); p != 0 || i != 0 {
		t.Errorf("after the session was deleted: %d marked, %d indexed; want none", p, i)
	}
	wantFound(t, s, "say")
}

// TestMarkedTurnsSurviveACrash: a marker is committed with its turn, so
// turns committed and never indexed (the daemon killed first) are found
// after the store is opened again: its writer indexes them at once, and a
// search before that indexes them itself (from their bodies: the texts
// kept in memory went with the process).
func TestMarkedTurnsSurviveACrash(t *testing.T) {
	s, path := openTemp(t)
	holdIndexing(s)
	sess, chat := seed(t, s, "ahp-session:/s1")
	for i := range 3 {
		said := fmt.Sprintf("a stranded okapi %d", i)
		commitTurn(t, s, withText(saidTurn(chat, i, said, ""), said))
	}
	// Close does not index (the writer stops with its markers unindexed,
	// as a kill would leave them).
	must(t, s.Close())

	// Searched at once.
	s2, _ := openAt(t, path)
	holdIndexing(s2)
	wantFound(t, s2, "okapi", "turn "+sess+" "+chat+" t0", "turn "+sess+" "+chat+" t1", "turn "+sess+" "+chat+" t2")
	commitTurn(t, s2, withText(saidTurn(chat, 3, "a second stranded okapi", ""), "a second stranded okapi"))
	must(t, s2.Close())

	// Not searched: the writer indexes what it finds marked at Open.
	s3, _ := openAt(t, path)
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The batch's count is added once its transaction committed, just
		// after a reader can see its markers gone.
		if p, _ := markers(t, s3); p == 0 && s3.Stats().SearchIndexed > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer did not index the turns marked before Open")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := s3.Stats(); st.SearchIndexed != 1 {
		t.Errorf("indexed %d turns at Open, want 1", st.SearchIndexed)
	}
	checkIndexAgrees(t, s3)
	wantFound(t, s3, "second", "turn "+sess+" "+chat+" t3")
}

// TestIndexerTakesMarkedTurnsInBatches: the writer indexes marked turns
// on its own, in transactions of at most searchBatchMax turns, once a
// batch is due (searchBatchMax marked, or the delay after the first).
func TestIndexerTakesMarkedTurnsInBatches(t *testing.T) {
	s, _ := openTemp(t)
	// Only searchBatchMax marked makes a batch due, at first.
	s.search.mu.Lock()
	s.search.delay = time.Hour
	s.search.mu.Unlock()
	sess, chat := seed(t, s, "ahp-session:/s1")
	ctx := context.Background()
	const n = 2*searchBatchMax + 100
	ops := make([]Op, n)
	for i := range ops {
		r := withText(saidTurn(chat, i, "batched", ""), fmt.Sprintf("batched turn%d", i))
		ops[i] = func(ctx context.Context, st *Store) error { return st.PutTurn(ctx, r) }
	}
	// Half in one commit, the rest one by one: the writer groups them,
	// and indexes between groups once searchBatchMax are marked.
	must(t, s.CommitAll(ctx, ops[:n/2]...))
	for _, op := range ops[n/2:] {
		s.Enqueue(op)
	}
	must(t, s.Flush(ctx))
	// The last hundred wait for the delay: shorten it.
	s.search.mu.Lock()
	s.search.delay = 10 * time.Millisecond
	s.search.mu.Unlock()
	s.Enqueue(func(context.Context, *Store) error { return nil }) // wake the writer
	deadline := time.Now().Add(10 * time.Second)
	for {
		if p, _ := markers(t, s); p == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer left turns marked")
		}
		time.Sleep(5 * time.Millisecond)
	}
	st := s.Stats()
	if st.SearchIndexed != n || st.SearchBatches < n/searchBatchMax+1 || st.SearchBatches > n/10 {
		t.Errorf("indexed %d turns in %d batches; want %d in a few of at most %d", st.SearchIndexed, st.SearchBatches, n, searchBatchMax)
	}
	checkIndexAgrees(t, s)
	wantFound(t, s, "turn1099", "turn "+sess+" "+chat+" t1099")
	if again := s.Stats().SearchBatches; again != st.SearchBatches {
		t.Errorf("a search with nothing marked indexed %d batches", again-st.SearchBatches)
	}
}

// TestIndexPendingBoundsItsBatch: one indexing transaction takes at most
// its limit, oldest turns first, and says when none is left; a search
// indexes the whole backlog however long.
func TestIndexPendingBoundsItsBatch(t *testing.T) {
	s, _ := openTemp(t)
	holdIndexing(s)
	_, chat := seed(t, s, "ahp-session:/s1")
	ctx := context.Background()
	ops := make([]Op, 25)
	for i := range ops {
		r := withText(saidTurn(chat, i, "queued", ""), "queued words")
		ops[i] = func(ctx context.Context, st *Store) error { return st.PutTurn(ctx, r) }
	}
	must(t, s.CommitAll(ctx, ops...))
	for _, want := range []int{10, 10, 5} {
		got, more, err := s.search.indexPending(ctx, 10)
		must(t, err)
		if got != want || more != (want == 10) {
			t.Fatalf("indexPending took %d (more: %v), want %d", got, more, want)
		}
	}
	if p, i := markers(t, s); p != 0 || i != 25 {
		t.Fatalf("%d marked, %d indexed; want 0 and 25", p, i)
	}
	if st := s.Stats(); st.SearchBatches != 3 {
		t.Errorf("%d batches, want 3", st.SearchBatches)
	}

	// Long turns: a batch stops once searchBatchBytes of text are in it.
	long := strings.Repeat("lengthy ", searchBatchBytes/8/2+1) // past half the bound
	for i := range 3 {
		commitTurn(t, s, withText(saidTurn(chat, 25+i, "long", ""), long))
	}
	for _, want := range []int{2, 1} {
		got, more, err := s.search.indexPending(ctx, 10)
		must(t, err)
		if got != want || more != (want == 2) {
			t.Fatalf("indexPending of long turns took %d (more: %v), want %d", got, more, want)
		}
	}
	checkIndexAgrees(t, s)
}

// TestTurnsBehindTheMarkAreMarked: a batch moves the mark past every turn
// it read, running ones too; such a turn ending later is marked and found,
// and so is a new turn that reuses the rowid of a deleted one behind the
// mark (SQLite reuses the largest).
func TestTurnsBehindTheMarkAreMarked(t *testing.T) {
	s, _ := openTemp(t)
	holdIndexing(s)
	sess, chat := seed(t, s, "ahp-session:/s1")
	ctx := context.Background()
	commitTurn(t, s, withText(saidTurn(chat, 0, "first", ""), "first gazelle"))
	running := saidTurn(chat, 1, "slow", "")
	running.State = TurnRunning
	commitTurn(t, s, running)
	wantFound(t, s, "gazelle", "turn "+sess+" "+chat+" t0") // the mark passes both
	var through, rowid int64
	must(t, s.db.pool.QueryRow(`SELECT (SELECT turn FROM search_through), (SELECT rowid FROM turns WHERE id = 't1')`).Scan(&through, &rowid))
	if through < rowid {
		t.Fatalf("the mark is at %d, before the running turn's %d", through, rowid)
	}
	commitTurn(t, s, withText(saidTurn(chat, 1, "slow", ""), "a slow gazelle"))
	if p, _ := markers(t, s); p != 1 {
		t.Errorf("the turn that ended behind the mark: %d waiting, want 1", p)
	}
	wantFound(t, s, "gazelle", "turn "+sess+" "+chat+" t0", "turn "+sess+" "+chat+" t1")

	// The newest turn deleted (a rewind), a new one takes its rowid.
	must(t, s.TruncateTurns(ctx, chat, 0))
	commitTurn(t, s, withText(saidTurn(chat, 1, "again", ""), "a reborn gazelle"))
	must(t, s.db.pool.QueryRow(`SELECT rowid FROM turns WHERE id = 't1'`).Scan(&rowid))
	if rowid > through {
		t.Logf("the new turn took rowid %d past the mark %d (no reuse to check)", rowid, through)
	}
	wantFound(t, s, "reborn", "turn "+sess+" "+chat+" t1")
	wantFound(t, s, "slow")
	checkIndexAgrees(t, s)
}
