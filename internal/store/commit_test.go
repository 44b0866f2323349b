package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestCommitIsStoredWhenItReturns: once Commit returns, another connection
// to the file reads what the op wrote (publish only what is stored).
func TestCommitIsStoredWhenItReturns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ahpd.db")
	s, _ := openAt(t, path)
	ctx := context.Background()
	_, chat := seed(t, s, "ahp://s/1")

	must(t, s.Commit(ctx, func(ctx context.Context, s *Store) error { return s.PutTurn(ctx, sampleTurn(chat, 0)) }))

	other, err := sql.Open("sqlite", dsn(path))
	must(t, err)
	defer other.Close()
	var n int
	must(t, other.QueryRow(`SELECT count(*) FROM turns WHERE chat = ?`, chat).Scan(&n))
	if n != 1 {
		t.Fatalf("a second connection reads %d turns after Commit returned, want 1", n)
	}
}

// TestCommitsWaitingTogetherShareOneTransaction: commits that queue while
// the writer is busy are grouped into one transaction, and a failing op in
// the group undoes only its own writes and gets its own error.
func TestCommitsWaitingTogetherShareOneTransaction(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	_, chat := seed(t, s, "ahp://s/1")

	block, started, release := gate()
	defer release()
	s.Enqueue(block)
	<-started
	before := s.Stats().Groups

	const n = 50
	errs := make([]error, n)
	var wg sync.WaitGroup
	queued := make(chan struct{}, n)
	for i := range n {
		wg.Go(func() {
			queued <- struct{}{}
			errs[i] = s.Commit(ctx, func(ctx context.Context, s *Store) error {
				if i == 7 {
					// Writes, then fails: the write must be undone.
					if err := s.PutTurn(ctx, TurnRecord{Chat: chat, ID: "doomed", Seq: 1000, State: TurnComplete}); err != nil {
						return err
					}
					return errors.New("op 7 fails")
				}
				return s.PutTurn(ctx, sampleTurn(chat, i))
			})
		})
	}
	for range n {
		<-queued
	}
	// Every Commit has been pushed once Pending counts them all.
	deadline := time.Now().Add(5 * time.Second)
	for s.Stats().Pending < n+1 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d ops queued", s.Stats().Pending)
		}
		time.Sleep(time.Millisecond)
	}
	release()
	wg.Wait()

	for i, err := range errs {
		if i == 7 {
			if err == nil || err.Error() != "op 7 fails" {
				t.Errorf("commit 7 = %v, want its own error", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("commit %d = %v", i, err)
		}
	}
	if got := s.Stats().Groups - before; got != 1 {
		t.Errorf("%d group transactions for %d waiting commits, want 1", got, n)
	}
	if c, _ := s.CountTurns(ctx, chat); c != n-1 {
		t.Errorf("%d turns stored, want %d (the failed op's write undone)", c, n-1)
	}
	if st := s.Stats(); st.WriteErrors != 1 || st.Pending != 0 {
		t.Errorf("stats = %+v, want one write error and nothing pending", st)
	}
}

// TestCommitAfterClose is refused with ErrClosed, not lost silently.
func TestCommitAfterClose(t *testing.T) {
	s, _ := openTemp(t)
	must(t, s.Close())
	err := s.Commit(context.Background(), func(context.Context, *Store) error { return nil })
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("Commit after Close = %v, want ErrClosed", err)
	}
}

// TestCommitKeepsQueueOrder: a Commit runs after every op enqueued before
// it, so a write-behind progress record never overwrites a committed end.
func TestCommitKeepsQueueOrder(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	_, chat := seed(t, s, "ahp://s/1")
	for i := range 20 {
		r := sampleTurn(chat, 0)
		r.State = TurnRunning
		r.Body = []byte(fmt.Sprintf(`{"n":%d}`, i))
		s.Enqueue(func(ctx context.Context, s *Store) error { return s.PutTurn(ctx, r) })
	}
	end := sampleTurn(chat, 0)
	end.Body = []byte(`{"n":"end"}`)
	must(t, s.Commit(ctx, func(ctx context.Context, s *Store) error { return s.PutTurn(ctx, end) }))
	turns, err := s.Turns(ctx, chat)
	must(t, err)
	if len(turns) != 1 || string(turns[0].Body) != `{"n":"end"}` || turns[0].State != TurnComplete {
		t.Fatalf("stored %+v, want the committed end", turns)
	}
}

// TestCommitAllLandsTogether: ops committed together all land, or a failing
// one takes the others back with it.
func TestCommitAllLandsTogether(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	_, chat := seed(t, s, "ahp://s/1")
	put := func(seq int) Op {
		return func(ctx context.Context, s *Store) error { return s.PutTurn(ctx, sampleTurn(chat, seq)) }
	}
	must(t, s.CommitAll(ctx, put(0), put(1)))
	boom := errors.New("boom")
	if err := s.CommitAll(ctx, put(2), func(context.Context, *Store) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("CommitAll with a failing op: %v, want boom", err)
	}
	turns, err := s.Turns(ctx, chat)
	must(t, err)
	if len(turns) != 2 {
		t.Fatalf("%d turns stored, want the 2 of the first commit and none of the failed one", len(turns))
	}
	must(t, s.CommitAll(ctx))
}

// TestCommitAsyncLandsInOrder: CommitAsync's ops run as one write, in order
// with what was pushed before them, and its result comes once the
// transaction is committed (a second connection reads it then); a failing
// op rolls the whole back and is the result; the commit's wait is told to
// ObserveCommits; after Close the result is ErrClosed at once.
func TestCommitAsyncLandsInOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ahpd.db")
	s, _ := openAt(t, path)
	_, chat := seed(t, s, "ahp://s/1")
	var mu sync.Mutex
	observed := 0
	s.ObserveCommits(func(time.Duration) {
		mu.Lock()
		observed++
		mu.Unlock()
	})

	release := make(chan struct{})
	s.Enqueue(func(context.Context, *Store) error { <-release; return nil })
	put := func(seq int) Op {
		return func(ctx context.Context, s *Store) error { return s.PutTurn(ctx, sampleTurn(chat, seq)) }
	}
	first := s.CommitAsync(put(0), put(1))
	failing := s.CommitAsync(put(2), func(context.Context, *Store) error { return errors.New("refused") })
	select {
	case err := <-first:
		t.Fatalf("a commit behind a stalled write landed: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("first: %v", err)
	}
	other, err := sql.Open("sqlite", dsn(path))
	must(t, err)
	defer other.Close()
	var n int
	must(t, other.QueryRow(`SELECT count(*) FROM turns WHERE chat = ?`, chat).Scan(&n))
	if n != 2 {
		t.Fatalf("a second connection reads %d turns once the commit landed, want 2", n)
	}
	if err := <-failing; err == nil || err.Error() != "refused" {
		t.Fatalf("failing commit: %v, want its op's error", err)
	}
	must(t, other.QueryRow(`SELECT count(*) FROM turns WHERE chat = ?`, chat).Scan(&n))
	if n != 2 {
		t.Fatalf("%d turns after a failing commit, want its first op rolled back (2)", n)
	}
	mu.Lock()
	if observed != 2 {
		t.Errorf("ObserveCommits told of %d commits, want 2", observed)
	}
	mu.Unlock()

	must(t, s.Close())
	select {
	case err := <-s.CommitAsync(put(3)):
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("after Close: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a commit after Close never answered")
	}
}
