package claude

import (
	"sync"

	"github.com/ahpd/ahpd/internal/agent"
)

// eventQueue stands between the goroutines that report events and the
// chat actor reading Events(): push never blocks (the reader goroutine
// pushes while it holds the conversation's lock), and pump delivers in
// order. It is bounded by back-pressure, not by refusing: push never
// blocks (it runs under the conversation's lock, which the chat actor also
// takes), and the stdout reader calls waitRoom after each line, outside the
// lock, so once eventHighWater events wait undelivered the CLI's stdout is
// not read until the chat actor catches up. The queue holds at most
// eventHighWater plus the events of one line.
type eventQueue struct {
	out  chan agent.Event
	wake chan struct{}
	// abort is closed by abandon: pump stops delivering and closes out.
	abort     chan struct{}
	abortOnce sync.Once

	// mu guards items, finished, pending and aborted; room is signalled
	// when pending falls under eventHighWater or the queue is abandoned.
	mu       sync.Mutex
	items    []agent.Event
	finished bool
	pending  int // pushed and not delivered yet
	aborted  bool
	room     *sync.Cond
}

// eventHighWater is how many undelivered events stop the stdout reader.
const eventHighWater = 4096

func newEventQueue() *eventQueue {
	q := &eventQueue{
		out:   make(chan agent.Event),
		wake:  make(chan struct{}, 1),
		abort: make(chan struct{}),
	}
	q.room = sync.NewCond(&q.mu)
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
	q.pending++
	q.mu.Unlock()
	q.signal()
}

// waitRoom returns once fewer than eventHighWater events wait undelivered,
// or the queue was abandoned. The stdout reader calls it between lines,
// without the conversation's lock.
func (q *eventQueue) waitRoom() {
	q.mu.Lock()
	for q.pending >= eventHighWater && !q.aborted {
		q.room.Wait()
	}
	q.mu.Unlock()
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
	q.mu.Lock()
	q.aborted = true
	q.room.Broadcast()
	q.mu.Unlock()
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
			q.mu.Lock()
			q.pending--
			if q.pending < eventHighWater {
				q.room.Broadcast()
			}
			q.mu.Unlock()
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
