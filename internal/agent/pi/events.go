package pi

import (
	"sync"

	"github.com/ahpd/ahpd/internal/agent"
)

// eventCap bounds the events waiting for the chat actor. A producer that
// finds it full waits (push), which in the end holds back reading the
// pi's stdout (the reader pushes): the agent slows down, nothing is dropped.
const eventCap = 256

// eventQueue stands between the backend's goroutines and the chat actor
// reading Events(). push blocks while the queue is full; pushOwed never
// blocks, for the events the chat actor's own calls (Stop, Send) report:
// the actor is the queue's reader and must not wait on itself. What
// pushOwed can add is bounded by the turns a conversation holds
// (maxHeld + 1) and a steering message, so the queue never holds more than eventCap + maxHeld + 1.
type eventQueue struct {
	out chan agent.Event
	// abort is closed by abandon: pump stops delivering.
	abort     chan struct{}
	abortOnce sync.Once
	// mu guards items, finished and abandoned; space is signalled on it.
	mu        sync.Mutex
	space     *sync.Cond
	ready     *sync.Cond
	items     []agent.Event
	finished  bool
	abandoned bool
}

func newEventQueue() *eventQueue {
	q := &eventQueue{out: make(chan agent.Event), abort: make(chan struct{})}
	q.space = sync.NewCond(&q.mu)
	q.ready = sync.NewCond(&q.mu)
	go q.pump()
	return q
}

// push queues ev, waiting while the queue is full. After finish it
// reports false and ev is not delivered (the conversation is closed).
func (q *eventQueue) push(ev agent.Event) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) >= eventCap && !q.finished {
		q.space.Wait()
	}
	if q.finished {
		return false
	}
	q.items = append(q.items, ev)
	q.ready.Signal()
	return true
}

// pushOwed queues ev without waiting (see the type's comment).
func (q *eventQueue) pushOwed(ev agent.Event) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.finished {
		return false
	}
	q.items = append(q.items, ev)
	q.ready.Signal()
	return true
}

// abandon closes out without delivering what is queued: the conversation
// was closed and its reader may have stopped reading.
func (q *eventQueue) abandon() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.finished, q.abandoned = true, true
	q.items = nil
	q.space.Broadcast()
	q.ready.Broadcast()
	q.abortOnce.Do(func() { close(q.abort) })
}

// pump is the queue's goroutine, started by newEventQueue; it is the only
// sender on out and closes it once abandoned.
func (q *eventQueue) pump() {
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
