package mailbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Inbox is an actor's front door: closures pushed into a bounded Box, run
// in order by the actor's loop, with Call to wait for one. The loop selects
// on Wake, runs what Pop returns, and closes Done when it stops.
type Inbox struct {
	*Box[func()]
	done chan struct{}
	// closed is returned once the actor has stopped; name the actor in
	// full is the error's job (chat.ErrClosed, session.ErrClosed).
	closed error
	name   string

	// stopMu guards stopped and afterStop: what runs once the loop has
	// returned (AfterStopped), instead of a goroutine per watcher parked
	// on Done.
	stopMu    sync.Mutex
	stopped   bool
	afterStop []func()
}

// NewInbox returns an inbox of at most limit closures; closed is the
// error a caller gets once the actor has stopped, name says whose it is.
func NewInbox(limit int, closed error, name string) *Inbox {
	return &Inbox{Box: New[func()](limit), done: make(chan struct{}), closed: closed, name: name}
}

// Done is closed when the actor's loop has returned.
func (in *Inbox) Done() <-chan struct{} { return in.done }

// Stopped marks the actor's loop as returned and runs what AfterStopped
// registered; the loop calls it once.
func (in *Inbox) Stopped() {
	in.stopMu.Lock()
	in.stopped = true
	after := in.afterStop
	in.afterStop = nil
	in.stopMu.Unlock()
	close(in.done)
	for _, f := range after {
		f()
	}
}

// AfterStopped runs f once the actor's loop has returned: on the actor's
// goroutine as it stops, or at once when it already has. f must not wait
// on the actor.
func (in *Inbox) AfterStopped(f func()) {
	in.stopMu.Lock()
	if in.stopped {
		in.stopMu.Unlock()
		f()
		return
	}
	in.afterStop = append(in.afterStop, f)
	in.stopMu.Unlock()
}

// Do queues fn for the actor; it never blocks.
func (in *Inbox) Do(fn func()) error {
	select {
	case <-in.done:
		return in.closed
	default:
	}
	if err := in.Push(fn); err != nil {
		if errors.Is(err, ErrClosed) {
			return in.closed
		}
		return fmt.Errorf("%s: %w", in.name, err)
	}
	return nil
}

// Call runs fn on the actor and waits until it has run, the actor stopped,
// or ctx ended.
func (in *Inbox) Call(ctx context.Context, fn func()) error {
	finished := make(chan struct{})
	if err := in.Do(func() { defer close(finished); fn() }); err != nil {
		return err
	}
	select {
	case <-finished:
		return nil
	case <-in.done:
		select {
		case <-finished:
			return nil
		default:
		}
		return in.closed
	case <-ctx.Done():
		return ctx.Err()
	}
}
