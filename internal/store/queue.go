package store

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// An Op is a unit of write-behind work. It runs on the writer goroutine with
// a context that is never cancelled (Close drains the queue rather than
// abandoning it) and usually calls one or more of the Store's sync methods.
// An op must not call Flush or Close: it would wait for itself.
type Op func(ctx context.Context, s *Store) error

// queuedOp is an op waiting in the queue. A Flush marker has op == nil and a
// done channel to close once everything before it is committed. A Commit's
// op has a result channel (1-buffered) for its error, sent once the
// transaction holding it is committed.
type queuedOp struct {
	op     Op
	done   chan struct{}
	result chan error
	caller uintptr // the program counter of Enqueue's caller, for error logs
	queued time.Time
	// observe: the writer tells commitSeen how long the op waited (a
	// CommitAsync, whose caller does not wait to see it).
	observe bool
}

// maxBatchOps bounds the ops one grouped transaction holds, so a waiting
// Commit never waits behind an unbounded backlog's single commit.
const maxBatchOps = 256

// queueStats are the queue's counters; all are updated atomically.
type queueStats struct {
	pending     atomic.Int64
	maxPending  atomic.Int64
	enqueued    atomic.Uint64
	written     atomic.Uint64
	writeErrors atomic.Uint64
	refused     atomic.Uint64
	groups      atomic.Uint64
}

// Stats is a snapshot of the write-behind queue's counters.
type Stats struct {
	Pending     int    // ops enqueued and not yet finished (the running one included)
	MaxPending  int    // the largest Pending seen since Open
	Enqueued    uint64 // ops accepted by Enqueue
	Written     uint64 // ops that finished without error
	WriteErrors uint64 // ops that returned an error or panicked (each one logged)
	Refused     uint64 // ops enqueued after Close had drained the queue (each one logged)
	Groups      uint64 // transactions the writer opened: group commits, and each lone Commit

	SearchBatches uint64 // search index transactions committed (searchindex.go)
	SearchIndexed uint64 // marked turns they indexed

	Checkpoints uint64 // WAL checkpoints the background checkpointer ran (checkpoint.go)
}

// Stats reports the write-behind queue's counters.
func (s *Store) Stats() Stats {
	st := s.queue.snapshot()
	st.SearchBatches = s.search.batches.Load()
	st.SearchIndexed = s.search.indexed.Load()
	st.Checkpoints = s.checkpoints.runs.Load()
	return st
}

// Enqueue hands op to the writer goroutine and returns at once. Ops run one
// at a time in the order they were enqueued (across all callers: the order of
// their Enqueue calls). The queue has no bound on its length, because a
// dropped write is lost state; past a high mark it logs a warning once per
// backlog, and Stats reports its length.
//
// An op's error is logged (with the op's Enqueue site and how long it waited)
// and counted in Stats().WriteErrors; there is no one to return it to. An op
// enqueued after Close has drained the queue cannot run: it is logged and
// counted in Stats().Refused.
func (s *Store) Enqueue(op Op) {
	if op == nil {
		return
	}
	var pc [1]uintptr
	runtime.Callers(2, pc[:])
	s.queue.push(queuedOp{op: op, caller: pc[0], queued: time.Now()})
}

// Commit runs op on the writer, in order with every op enqueued before it,
// and returns once the transaction holding it is committed: what op wrote
// survives a kill -9 from then on (WAL, synchronous=NORMAL). Ops waiting
// together share one transaction (a group commit), so many actors
// committing at once pay for one commit. Its error is op's own, or the
// commit's. When ctx is done first Commit returns ctx's error; op still
// runs in its turn. Like Flush, it must not be called from inside an op.
func (s *Store) Commit(ctx context.Context, op Op) error {
	if op == nil {
		return nil
	}
	var pc [1]uintptr
	runtime.Callers(2, pc[:])
	return s.queue.commit(ctx, op, pc[0])
}

// ObserveCommits sets f to be told how long each Commit took, from its
// call until its transaction committed (the daemon's metrics).
func (s *Store) ObserveCommits(f func(time.Duration)) { s.queue.commitSeen.Store(&f) }

// CommitWait is how long an actor waits for a Commit before it logs the
// stall and says the action anyway: the chat goes on rather than hang every
// client on a disk that stopped.
const CommitWait = 30 * time.Second

// CommitAll is Commit of ops run in order as one op: they land together,
// or a failing one rolls all of them back.
func (s *Store) CommitAll(ctx context.Context, ops ...Op) error {
	switch len(ops) {
	case 0:
		return nil
	case 1:
		return s.Commit(ctx, ops[0])
	}
	return s.Commit(ctx, func(ctx context.Context, st *Store) error {
		for _, op := range ops {
			if err := op(ctx, st); err != nil {
				return err
			}
		}
		return nil
	})
}

// CommitAsync is CommitAll without the wait: ops go to the writer at once,
// in order with everything pushed before, and the returned channel
// (1-buffered) receives the result once their transaction is committed,
// or ErrClosed at once when the store no longer writes. A chat actor
// goes on with its next work while its commit is in flight, and publishes
// what waited for it when the result comes (chat/durable.go).
func (s *Store) CommitAsync(ops ...Op) <-chan error {
	result := make(chan error, 1)
	op := func(ctx context.Context, st *Store) error {
		for _, op := range ops {
			if err := op(ctx, st); err != nil {
				return err
			}
		}
		return nil
	}
	var pc [1]uintptr
	runtime.Callers(2, pc[:])
	if !s.queue.push(queuedOp{op: op, result: result, caller: pc[0], queued: time.Now(), observe: true}) {
		result <- ErrClosed
	}
	return result
}

// Flush waits until every op enqueued before the call has run (successfully
// or not), or ctx is done. After Close it returns at once with nil: Close has
// already drained the queue. It must not be called from inside an op.
func (s *Store) Flush(ctx context.Context) error { return s.queue.flush(ctx) }

// queue is the store's one ordered write-behind queue and the writer
// goroutine that drains it: Enqueue, Commit and Flush push into it, and
// only the writer runs ops, grouping those that wait together into one
// transaction. Its fields are guarded by mu or are atomic; the writer
// reaches the database (its writer token and pool) through s.
type queue struct {
	// s is the store the ops run against.
	s *Store

	// mu guards the fields below it.
	mu sync.Mutex
	// ops holds ops not yet taken by the writer, oldest first.
	ops []queuedOp
	// stopped is set by the writer, under mu, when it has drained the
	// queue after Close; from then on Enqueue refuses ops.
	stopped bool
	// closing is set by Close; the writer exits once the queue is empty.
	closing bool

	// wake tells the writer the queue is no longer empty (1-buffered).
	wake chan struct{}
	// writerDone is closed when the writer goroutine has returned.
	writerDone chan struct{}

	highWater int
	// warned is set when the queue crossed highWater and cleared when it
	// falls below half of it, so a long backlog logs once, not per op.
	warned atomic.Bool

	stats queueStats
	// commitSeen, when set (ObserveCommits), is told how long each Commit
	// waited for its transaction.
	commitSeen atomic.Pointer[func(time.Duration)]
}

// newQueue makes s's queue; Open starts its writer (go s.queue.writer()).
func newQueue(s *Store) *queue {
	return &queue{
		s:          s,
		wake:       make(chan struct{}, 1),
		writerDone: make(chan struct{}),
		highWater:  defaultHighWater,
	}
}

// snapshot is Stats: the queue's counters as they are now.
func (q *queue) snapshot() Stats {
	return Stats{
		Pending:     int(q.stats.pending.Load()),
		MaxPending:  int(q.stats.maxPending.Load()),
		Enqueued:    q.stats.enqueued.Load(),
		Written:     q.stats.written.Load(),
		WriteErrors: q.stats.writeErrors.Load(),
		Refused:     q.stats.refused.Load(),
		Groups:      q.stats.groups.Load(),
	}
}

// commit is Commit of op, enqueued from caller.
func (q *queue) commit(ctx context.Context, op Op, caller uintptr) error {
	result := make(chan error, 1)
	queued := time.Now()
	if !q.push(queuedOp{op: op, result: result, caller: caller, queued: queued}) {
		return ErrClosed
	}
	select {
	case err := <-result:
		if f := q.commitSeen.Load(); f != nil {
			(*f)(time.Since(queued))
		}
		return err
	case <-ctx.Done():
		return fmt.Errorf("commit: %w", ctx.Err())
	}
}

// flush is Flush.
func (q *queue) flush(ctx context.Context) error {
	done := make(chan struct{})
	if !q.push(queuedOp{done: done}) {
		// The writer has stopped, which it does only with an empty queue.
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("flush store: %w", ctx.Err())
	}
}

// push appends it to the queue and wakes the writer. It reports false, and
// logs and counts an op, when the writer has already stopped.
func (q *queue) push(it queuedOp) bool {
	q.mu.Lock()
	if q.stopped {
		q.mu.Unlock()
		if it.op != nil {
			q.stats.refused.Add(1)
			q.s.logger.Error("store write refused: store is closed", "op", callerName(it.caller))
		}
		return false
	}
	q.ops = append(q.ops, it)
	var pending int64
	if it.op != nil {
		q.stats.enqueued.Add(1)
		pending = q.stats.pending.Add(1)
	}
	q.mu.Unlock()
	q.signal()

	if it.op != nil {
		for {
			peak := q.stats.maxPending.Load()
			if pending <= peak || q.stats.maxPending.CompareAndSwap(peak, pending) {
				break
			}
		}
		if pending > int64(q.highWater) && q.warned.CompareAndSwap(false, true) {
			q.s.logger.Warn("store write queue is backing up", "pending", pending, "high_water", q.highWater)
		}
	}
	return true
}

// signal wakes the writer if it is waiting; a wake-up already pending is
// enough, so it never blocks.
func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// close has the writer drain the queue and stop (Close), and waits for it.
func (q *queue) close() {
	q.mu.Lock()
	q.closing = true
	q.mu.Unlock()
	q.signal()
	<-q.writerDone
}

// writer is the write-behind loop; it runs in its own goroutine from Open
// until Close, and is the only goroutine that runs ops. It takes the whole
// queue at once, runs it in order, and exits once Close has been called and
// the queue is empty.
func (q *queue) writer() {
	defer close(q.writerDone)
	ctx := context.Background()
	var batch []queuedOp
	for {
		q.mu.Lock()
		if len(q.ops) == 0 {
			if q.closing {
				q.stopped = true
				q.mu.Unlock()
				return
			}
			q.mu.Unlock()
			q.idle(ctx)
			continue
		}
		// Swap buffers so the next batch reuses this one's backing array.
		batch, q.ops = q.ops, batch[:0]
		q.mu.Unlock()

		for from := 0; from < len(batch); from += maxBatchOps {
			q.runGroup(ctx, batch[from:min(from+maxBatchOps, len(batch))])
		}
		clear(batch) // let the ops' closures be collected
		// Between groups, a batch of the search index when one is due,
		// so a writer never idle still indexes (searchindex.go).
		q.s.search.indexInBackground(ctx)
	}
}

// idle waits for ops; when turns are marked for the search index, it
// indexes a batch once that batch is due, unless ops come first.
func (q *queue) idle(ctx context.Context) {
	due, ok := q.s.search.due()
	if !ok {
		<-q.wake
		return
	}
	wait := time.Until(due)
	if wait <= 0 {
		q.s.search.indexInBackground(ctx)
		return
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-q.wake:
	case <-timer.C:
	}
}

// batchTxKey is the context key under which the writer hands a grouped
// transaction to the ops running in it; writeExec and withWrite use it.
type batchTxKey struct{}

// runGroup runs a group of queued ops. One op runs as it is (its statement
// autocommits); several share one transaction, each inside its own
// savepoint so a failing op undoes only its own writes. Commits and
// Flushes are answered after the transaction commits.
func (q *queue) runGroup(ctx context.Context, group []queuedOp) {
	ops, waited := 0, false
	for i := range group {
		if group[i].op != nil {
			ops++
			waited = waited || group[i].result != nil
		}
	}
	// A lone write-behind op autocommits. A lone Commit runs in a
	// transaction too: an actor's commit often writes a turn and its chat's
	// record, which then cost one WAL commit and land together.
	if ops == 0 || ops == 1 && !waited {
		for i := range group {
			q.finish(group[i], q.run(ctx, group[i]))
		}
		return
	}
	q.s.db.writeSem <- struct{}{}
	// Optimistic first: the whole group in one transaction with no
	// savepoints, which a lone commit (two of them a turn) would pay two
	// statements each for. Only when an op fails is the transaction
	// rolled back and the group run again, each op in its own savepoint,
	// so a failing op undoes only its own writes.
	errs, done := q.groupTx(ctx, group, false)
	if !done {
		errs, done = q.groupTx(ctx, group, true)
	}
	q.s.db.releaseWriter()
	if !done {
		q.s.logger.Warn("grouped write failed to start; running the ops one by one", "ops", ops)
		for i := range group {
			q.finish(group[i], q.run(ctx, group[i]))
		}
		return
	}
	for i := range group {
		q.finish(group[i], errs[i])
	}
}

// groupTx runs group in one transaction and commits it, each op in a
// savepoint of its own when savepoints is set. Without savepoints it gives
// up (done false, nothing counted, the transaction rolled back) as soon as
// an op fails, for the caller to run the group again with them. done is
// false too when the transaction could not begin. errs are the ops'
// results, the commit's failure included; each op is counted once.
func (q *queue) groupTx(ctx context.Context, group []queuedOp, savepoints bool) (errs []error, done bool) {
	tx, err := q.s.db.pool.BeginTx(ctx, nil)
	if err != nil {
		q.s.logger.Warn("begin grouped write", "err", err)
		return nil, false
	}
	txCtx := context.WithValue(ctx, batchTxKey{}, tx)
	errs = make([]error, len(group))
	ops := 0
	// The search texts of the ops that succeeded, kept once the group
	// commits (store/searchindex.go).
	var texts []keptTurnText
	for i := range group {
		if group[i].op == nil {
			continue
		}
		ops++
		staged := &stagedTexts{}
		opCtx := context.WithValue(txCtx, stagedKey{}, staged)
		if !savepoints {
			if errs[i] = q.call(opCtx, group[i]); errs[i] != nil {
				_ = tx.Rollback()
				return nil, false
			}
			texts = append(texts, staged.texts...)
			continue
		}
		if _, err := tx.ExecContext(ctx, "SAVEPOINT op"); err != nil {
			errs[i] = fmt.Errorf("savepoint: %w", err)
			continue
		}
		errs[i] = q.call(opCtx, group[i])
		if errs[i] != nil {
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO op"); err != nil {
				q.s.logger.Error("roll back a failed op", "err", err, "op", callerName(group[i].caller))
			}
		} else {
			texts = append(texts, staged.texts...)
		}
		if _, err := tx.ExecContext(ctx, "RELEASE op"); err != nil {
			q.s.logger.Error("release savepoint", "err", err, "op", callerName(group[i].caller))
		}
	}
	commitErr := tx.Commit()
	if commitErr == nil && len(texts) > 0 {
		q.s.search.keep(texts) // before the token goes: no batch reads them meanwhile
	}
	q.stats.groups.Add(1)
	if commitErr != nil {
		commitErr = fmt.Errorf("commit %d grouped writes: %w", ops, commitErr)
		q.s.logger.Error("store group commit failed", "err", commitErr)
	}
	for i := range group {
		if group[i].op == nil {
			continue
		}
		if commitErr != nil && errs[i] == nil {
			errs[i] = commitErr
		}
		q.account(group[i], errs[i])
	}
	return errs, true
}

// finish answers whoever waits for it: a Flush marker, or a Commit.
func (q *queue) finish(it queuedOp, err error) {
	switch {
	case it.op == nil:
		close(it.done)
	case it.result != nil:
		if f := q.commitSeen.Load(); f != nil && it.observe {
			(*f)(time.Since(it.queued))
		}
		it.result <- err
	}
}

// run runs one queued op on the writer goroutine, logging and counting its
// failure; a panicking op is a failed write, not a dead writer. A Flush
// marker does nothing here: finish answers it.
func (q *queue) run(ctx context.Context, it queuedOp) error {
	if it.op == nil {
		return nil
	}
	err := q.call(ctx, it)
	q.account(it, err)
	return err
}

// call runs one op, a panic turned into its error; nothing is counted.
func (q *queue) call(ctx context.Context, it queuedOp) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("op panicked: %v", p)
		}
	}()
	return it.op(ctx, q.s)
}

// account counts one finished op, logging its failure.
func (q *queue) account(it queuedOp, err error) {
	pending := q.stats.pending.Add(-1)
	if pending < int64(q.highWater)/2 && q.warned.Load() {
		q.warned.Store(false)
		q.s.logger.Info("store write queue drained below half the high mark", "pending", pending)
	}
	if err != nil {
		q.stats.writeErrors.Add(1)
		q.s.logger.Error("store write failed",
			"err", err,
			"op", callerName(it.caller),
			"waited", time.Since(it.queued),
			"pending", pending)
		return
	}
	q.stats.written.Add(1)
}

// callerName turns a program counter from Enqueue into "file:line (func)".
func callerName(pc uintptr) string {
	if pc == 0 {
		return "unknown"
	}
	frames := runtime.CallersFrames([]uintptr{pc})
	f, _ := frames.Next()
	if f.Function == "" {
		return "unknown"
	}
	return fmt.Sprintf("%s:%d (%s)", f.File, f.Line, f.Function)
}
