package rpc

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ahpd/ahpd/internal/lockorder"
)

// ErrConnClosed is returned by Notify and NotifyRaw once the connection is
// closing or closed. The frame was not queued.
var ErrConnClosed = errors.New("rpc: connection closed")

// ErrSlowConsumer is returned by the Notify call whose frame would have
// pushed the connection's outbox over its byte budget. The connection is
// closed with CloseSlowConsumer; errors.Is(err, ErrConnClosed) holds.
var ErrSlowConsumer = fmt.Errorf("%w: slow consumer", ErrConnClosed)

// outbox is a connection's single ordered queue of encoded frames (replies
// and notifications) waiting for its writer. push never blocks: it appends
// under mu and, when no writer runs, starts one; a push that would exceed
// the byte budget is refused and the caller closes the connection
// (nats server/client.go queueOutbound). The writer runs only while there
// is something to write (next): 4,000 mostly idle connections held a
// parked writer goroutine each (issue 37's memory under load).
//
// Holds (Conn.Hold): while any hold is open, notifications go to held
// instead of queue; replies never wait. A hold is released after the
// reply of the request that opened it is queued, so every notification
// queued while it was open reaches the client after that reply, and
// notifications keep their relative order. Holds may overlap (requests are
// answered off the read loop, several at a time): held is released behind
// the queue when the last open hold ends.
type outbox struct {
	// budget is the most bytes that may be queued but unwritten; a single
	// frame larger than budget is still accepted when nothing is pending,
	// and a reply whenever what is pending is within budget.
	budget int

	// start runs a writer (in a goroutine of its own) that drains the
	// queue with next and calls writer.Done when next says stop; nil in
	// tests that take by hand.
	start func()
	// writer counts the running writer (0 or 1); it is added to under mu
	// as writing is set, so a wait that follows close sees every writer.
	writer sync.WaitGroup

	// mu guards the fields below.
	mu lockorder.Mutex // rank lockorder.Outbox
	// queue is what the writer sends next, in order.
	queue [][]byte
	// held are notifications queued while holding, in order.
	held [][]byte
	// pending counts bytes in queue and held plus the bytes the writer has
	// taken but not finished writing.
	pending int
	// holds counts the open holds.
	holds int
	// closed refuses further pushes.
	closed bool
	// writing: a writer runs, or was started and will run.
	writing bool
}

func newOutbox(budget int, start func()) *outbox {
	return &outbox{mu: lockorder.Mutex{Rank: lockorder.Outbox}, budget: budget, start: start}
}

// wantWriterLocked marks a writer as running when none is and reports
// whether the caller must start it (after unlocking). o.mu must be held.
func (o *outbox) wantWriterLocked() bool {
	if o.writing || o.closed || o.start == nil || len(o.queue) == 0 {
		return false
	}
	o.writing = true
	o.writer.Add(1)
	return true
}

// overBudgetError is what push returns when frame would exceed the budget.
type overBudgetError struct {
	pending, frame, budget int
}

func (e *overBudgetError) Error() string {
	return fmt.Sprintf("outbox over budget: %d bytes pending + %d byte frame > %d", e.pending, e.frame, e.budget)
}

// push queues frame. A reply (isReply) is never held. It returns
// ErrConnClosed after close, or an *overBudgetError, after which the outbox
// is closed.
func (o *outbox) push(frame []byte, isReply bool) error {
	n := len(frame)
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return ErrConnClosed
	}
	// A reply is what the client asked for (a snapshot may be larger than
	// the whole budget): it is refused only when what waits before it is
	// already over budget. A notification must fit.
	over := o.pending > 0 && o.pending+n > o.budget
	if isReply {
		over = o.pending > o.budget
	}
	if over {
		err := &overBudgetError{pending: o.pending, frame: n, budget: o.budget}
		o.closed = true
		o.mu.Unlock()
		return err
	}
	o.pending += n
	if o.holds > 0 && !isReply {
		o.held = append(o.held, frame)
		o.mu.Unlock()
		return nil
	}
	o.queue = append(o.queue, frame)
	start := o.wantWriterLocked()
	o.mu.Unlock()
	if start {
		o.start()
	}
	return nil
}

// next hands the writer everything queued, as take does, or nil when
// there is nothing (or the outbox is closed: what is left is finishWrites'
// to write or drop); the writer stops at nil and calls writer.Done.
func (o *outbox) next(spare [][]byte) [][]byte {
	clear(spare)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || len(o.queue) == 0 {
		o.writing = false
		return nil
	}
	frames := o.queue
	o.queue = spare[:0]
	return frames
}

// take hands the writer everything queued, swapping in spare (emptied) as
// the new queue so steady traffic does not allocate. The bytes stay
// pending until the writer reports them with written.
func (o *outbox) take(spare [][]byte) [][]byte {
	clear(spare)
	o.mu.Lock()
	frames := o.queue
	o.queue = spare[:0]
	o.mu.Unlock()
	return frames
}

// written reports n bytes as written to the socket.
func (o *outbox) written(n int) {
	o.mu.Lock()
	o.pending -= n
	o.mu.Unlock()
}

// hold opens a hold: notifications are held until every open hold ends.
func (o *outbox) hold() {
	o.mu.Lock()
	o.holds++
	o.mu.Unlock()
}

// unhold ends one hold; the last one to end releases what was held behind
// the queue (the reply that ended it is already there).
func (o *outbox) unhold() {
	o.mu.Lock()
	start := false
	if o.holds > 0 {
		o.holds--
		if o.holds == 0 && o.releaseLocked() {
			start = o.wantWriterLocked()
		}
	}
	o.mu.Unlock()
	if start {
		o.start()
	}
}

// releaseLocked moves held to the tail of queue. o.mu must be held.
func (o *outbox) releaseLocked() bool {
	if len(o.held) == 0 {
		return false
	}
	o.queue = append(o.queue, o.held...)
	clear(o.held)
	o.held = o.held[:0]
	return true
}

// close refuses further pushes. Held notifications are released behind
// what is queued, so a graceful close can still deliver them.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.holds = 0
	o.releaseLocked()
	o.mu.Unlock()
}

// pendingBytes returns the bytes queued or being written.
func (o *outbox) pendingBytes() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pending
}
