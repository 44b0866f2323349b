package store

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
)

// An Op is a unit of write-behind work. It runs on the writer goroutine with
// a context that is never cancelled (Close drains the queue rather than
// abandoning it) and usually calls one or more of the Store's sync methods.
// An op must not call Flush or Close: it would wait for itself.
type Op func(ctx context.Context, s *Store) error

// queuedOp is an op waiting in the queue. A Flush marker has op == nil and a
// done channel to close when the writer reaches it.
type queuedOp struct {
	op     Op
	done   chan struct{}
	caller uintptr // the program counter of Enqueue's caller, for error logs
	queued time.Time
}

// queueStats are the queue's counters; all are updated atomically.
type queueStats struct {
	pending     atomic.Int64
	maxPending  atomic.Int64
	enqueued    atomic.Uint64
	written     atomic.Uint64
	writeErrors atomic.Uint64
	refused     atomic.Uint64
}

// Stats is a snapshot of the write-behind queue's counters.
type Stats struct {
	Pending     int    // ops enqueued and not yet finished (the running one included)
	MaxPending  int    // the largest Pending seen since Open
	Enqueued    uint64 // ops accepted by Enqueue
	Written     uint64 // ops that finished without error
	WriteErrors uint64 // ops that returned an error or panicked (each one logged)
	Refused     uint64 // ops enqueued after Close had drained the queue (each one logged)
}

// Stats reports the write-behind queue's counters.
func (s *Store) Stats() Stats {
	return Stats{
		Pending:     int(s.stats.pending.Load()),
		MaxPending:  int(s.stats.maxPending.Load()),
		Enqueued:    s.stats.enqueued.Load(),
		Written:     s.stats.written.Load(),
		WriteErrors: s.stats.writeErrors.Load(),
		Refused:     s.stats.refused.Load(),
	}
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
	s.push(queuedOp{op: op, caller: pc[0], queued: time.Now()})
}

// Flush waits until every op enqueued before the call has run (successfully
// or not), or ctx is done. After Close it returns at once with nil: Close has
// already drained the queue. It must not be called from inside an op.
func (s *Store) Flush(ctx context.Context) error {
	done := make(chan struct{})
	if !s.push(queuedOp{done: done}) {
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

// push appends q to the queue and wakes the writer. It reports false, and
// logs and counts an op, when the writer has already stopped.
func (s *Store) push(q queuedOp) bool {
	s.queueMu.Lock()
	if s.stopped {
		s.queueMu.Unlock()
		if q.op != nil {
			s.stats.refused.Add(1)
			s.logger.Error("store write refused: store is closed", "op", callerName(q.caller))
		}
		return false
	}
	s.queue = append(s.queue, q)
	var pending int64
	if q.op != nil {
		s.stats.enqueued.Add(1)
		pending = s.stats.pending.Add(1)
	}
	s.queueMu.Unlock()
	s.signal()

	if q.op != nil {
		for {
			peak := s.stats.maxPending.Load()
			if pending <= peak || s.stats.maxPending.CompareAndSwap(peak, pending) {
				break
			}
		}
		if pending > int64(s.highWater) && s.warned.CompareAndSwap(false, true) {
			s.logger.Warn("store write queue is backing up", "pending", pending, "high_water", s.highWater)
		}
	}
	return true
}

// signal wakes the writer if it is waiting; a wake-up already pending is
// enough, so it never blocks.
func (s *Store) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// writer is the write-behind loop; it runs in its own goroutine from Open
// until Close, and is the only goroutine that runs ops. It takes the whole
// queue at once, runs it in order, and exits once Close has been called and
// the queue is empty.
func (s *Store) writer() {
	defer close(s.writerDone)
	ctx := context.Background()
	var batch []queuedOp
	for {
		s.queueMu.Lock()
		if len(s.queue) == 0 {
			if s.closing {
				s.stopped = true
				s.queueMu.Unlock()
				return
			}
			s.queueMu.Unlock()
			<-s.wake
			continue
		}
		// Swap buffers so the next batch reuses this one's backing array.
		batch, s.queue = s.queue, batch[:0]
		s.queueMu.Unlock()

		for i := range batch {
			s.run(ctx, batch[i])
			batch[i] = queuedOp{} // let the op's closure be collected
		}
	}
}

// run runs one queued op on the writer goroutine, logging and counting its
// failure; a panicking op is a failed write, not a dead writer.
func (s *Store) run(ctx context.Context, q queuedOp) {
	if q.op == nil {
		close(q.done)
		return
	}
	start := time.Now()
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("op panicked: %v", p)
			}
		}()
		return q.op(ctx, s)
	}()
	pending := s.stats.pending.Add(-1)
	if pending < int64(s.highWater)/2 && s.warned.Load() {
		s.warned.Store(false)
		s.logger.Info("store write queue drained below half the high mark", "pending", pending)
	}
	if err != nil {
		s.stats.writeErrors.Add(1)
		s.logger.Error("store write failed",
			"err", err,
			"op", callerName(q.caller),
			"waited", start.Sub(q.queued),
			"took", time.Since(start),
			"pending", pending)
		return
	}
	s.stats.written.Add(1)
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
