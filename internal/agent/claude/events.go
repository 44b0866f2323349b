package claude

import (
	"sync"

	"github.com/ahpd/ahpd/internal/agent"
)

// eventQueue stands between the goroutines that report events and the
// chat actor reading Events(): push never blocks (the reader goroutine
// pushes while it holds the conversation's lock), and pump delivers in
// order. It is unbounded: what the CLI prints is bounded by what the model
// writes, and a stalled reader of Events must not stall the CLI's stdout.
type eventQueue struct {
	out  chan agent.Event
	wake chan struct{}
	// abort is closed by abandon: pump stops delivering and closes out.
	abort     chan struct{}
	abortOnce sync.Once

	// mu guards items and finished.
	mu       sync.Mutex
	items    []agent.Event
	finished bool
}

func newEventQueue() *eventQueue {
	q := &eventQueue{
		out:   make(chan agent.Event),
		wake:  make(chan struct{}, 1),
		abort: make(chan struct{}),
	}
	go q.pump()
	return q
}

// push queues ev; after finish it is dropped.
func (q *eventQueue) push(ev agent.Event) {
	q.mu.Lock()
	if q.finished {
		q.mu.Unlock()
		return
	}
	q.items = append(q.items, ev)
	q.mu.Unlock()
	q.signal()
}

// finish takes no more events; pump delivers what is queued, then closes out.
func (q *eventQueue) finish() {
	q.mu.Lock()
	q.finished = true
	q.mu.Unlock()
	q.signal()
}

// abandon closes out without delivering what is queued (Close: the reader
// may have stopped reading).
func (q *eventQueue) abandon() {
	q.finish()
	q.abortOnce.Do(func() { close(q.abort) })
}

func (q *eventQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pump is the queue's goroutine, started by newEventQueue; it is the only
// sender on out and closes it.
func (q *eventQueue) pump() {
	defer close(q.out)
	var batch []agent.Event
	for {
		q.mu.Lock()
		batch = append(batch[:0], q.items...)
		clear(q.items)
		q.items = q.items[:0]
		finished := q.finished
		q.mu.Unlock()
		for _, ev := range batch {
			select {
			case q.out <- ev:
			case <-q.abort:
				return
			}
		}
		if len(batch) > 0 {
			continue
		}
		if finished {
			return
		}
		select {
		case <-q.wake:
		case <-q.abort:
			return
		}
	}
}
