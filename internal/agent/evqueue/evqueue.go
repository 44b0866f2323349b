// Package evqueue is the bounded queue between a backend's goroutines and
// the chat actor reading its conversation's Events(), shared by the
// backends that drive an agent process (acp, pi).
package evqueue

import (
	"sync"

	"github.com/ahpd/ahpd/internal/agent"
)

// Cap bounds the events waiting for the chat actor. A producer that finds
// it full waits (Push), which in the end holds back reading the agent's
// stdout: the agent slows down, nothing is dropped.
const Cap = 256

// Queue stands between the backend's goroutines and the chat actor reading
// Events(). Push blocks while the queue is full; PushOwed never blocks, for
// the events the chat actor's own calls (Stop, Send) report: the actor is
// the queue's reader and must not wait on itself. What PushOwed can add is
// bounded by the turns a conversation holds, so the queue never holds more
// than Cap plus those.
type Queue struct {
	out chan agent.Event
	// emitMu orders Emit's callers: held from before the caller's lock is
	// taken until the events it decided are queued.
	emitMu sync.Mutex
	// abort is closed by Abandon: pump stops delivering.
	abort chan struct{}
	// mu guards items and abandoned; space and ready are signalled on it.
	mu        sync.Mutex
	space     *sync.Cond
	ready     *sync.Cond
	items     []agent.Event
	abandoned bool
}

// New returns a queue and starts its goroutine.
func New() *Queue {
	q := &Queue{out: make(chan agent.Event), abort: make(chan struct{})}
	q.space = sync.NewCond(&q.mu)
	q.ready = sync.NewCond(&q.mu)
	go q.pump()
	return q
}

// Events is what the chat actor reads; closed once the queue is abandoned.
func (q *Queue) Events() <-chan agent.Event { return q.out }

// Push queues ev, waiting while the queue is full. After Abandon it reports
// false and ev is not delivered (the conversation is closed).
func (q *Queue) Push(ev agent.Event) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) >= Cap && !q.abandoned {
		q.space.Wait()
	}
	return q.add(ev)
}

// Emit decides on events with mu held (decide runs under it), lets mu go
// and queues them, waiting while the queue is full: events reach the chat
// actor in the order they were decided, and nothing waits on the actor
// while holding mu, which the actor's own calls take. The actor never
// calls Emit (it would wait on itself).
func (q *Queue) Emit(mu sync.Locker, decide func() []agent.Event) {
	q.emitMu.Lock()
	defer q.emitMu.Unlock()
	mu.Lock()
	evs := decide()
	mu.Unlock()
	for _, ev := range evs {
		if !q.Push(ev) {
			return
		}
	}
}

// PushOwed queues ev without waiting (see the type's comment).
func (q *Queue) PushOwed(ev agent.Event) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.add(ev)
}

// add queues ev unless the queue was abandoned; q.mu is held.
func (q *Queue) add(ev agent.Event) bool {
	if q.abandoned {
		return false
	}
	q.items = append(q.items, ev)
	q.ready.Signal()
	return true
}

// Abandon closes Events without delivering what is queued: the
// conversation was closed and its reader may have stopped reading.
func (q *Queue) Abandon() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.abandoned {
		return
	}
	q.abandoned = true
	q.items = nil
	q.space.Broadcast()
	q.ready.Broadcast()
	close(q.abort)
}

// pump is the queue's goroutine, started by New; it is the only sender on
// out and closes it once abandoned.
func (q *Queue) pump() {
	defer close(q.out)
	for {
		q.mu.Lock()
		for len(q.items) == 0 && !q.abandoned {
			q.ready.Wait()
		}
		if q.abandoned {
			q.mu.Unlock()
			return
		}
		ev := q.items[0]
		q.mu.Unlock()
		select {
		case q.out <- ev:
		case <-q.abort:
			return
		}
		q.mu.Lock()
		if len(q.items) > 0 {
			q.items[0] = agent.Event{}
			q.items = q.items[1:]
		}
		q.space.Signal()
		q.mu.Unlock()
	}
}
