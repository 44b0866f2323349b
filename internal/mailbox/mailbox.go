// Package mailbox is the queue in front of an actor: a slice plus a
// one-slot wake-up channel, drained in batches, bounded. Push never blocks
// the sender; it fails when the box is full or closed (nats ipqueue style).
//
// Session and chat actors use it for everything clients, timers and the
// store ask of them; an actor's loop selects on Wake() and drains with Pop.
package mailbox

import (
	"errors"
	"sync"
)

// ErrFull is returned by Push when the mailbox holds its limit.
var ErrFull = errors.New("mailbox full")

// ErrClosed is returned by Push after Close.
var ErrClosed = errors.New("mailbox closed")

// Box is a bounded multi-producer, single-consumer queue.
type Box[T any] struct {
	wake chan struct{}

	// mu guards items and closed.
	mu     sync.Mutex
	items  []T
	closed bool
	limit  int
}

// New returns a mailbox that holds at most limit items (limit <= 0 means
// 1<<16).
func New[T any](limit int) *Box[T] {
	if limit <= 0 {
		limit = 1 << 16
	}
	return &Box[T]{wake: make(chan struct{}, 1), limit: limit}
}

// Push appends v and wakes the consumer. It never blocks.
func (b *Box[T]) Push(v T) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	if len(b.items) >= b.limit {
		b.mu.Unlock()
		return ErrFull
	}
	b.items = append(b.items, v)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	return nil
}

// Wake is signalled after a Push; the consumer then drains with Pop.
func (b *Box[T]) Wake() <-chan struct{} { return b.wake }

// Pop takes every queued item, oldest first, appending them to buf[:0].
func (b *Box[T]) Pop(buf []T) []T {
	b.mu.Lock()
	defer b.mu.Unlock()
	buf = append(buf[:0], b.items...)
	clear(b.items)
	b.items = b.items[:0]
	return buf
}

// Len is the number of queued items.
func (b *Box[T]) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.items)
}

// Close refuses further pushes; queued items can still be popped.
func (b *Box[T]) Close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// CloseIfEmpty closes the box when nothing is queued, and reports whether
// it did: an actor that unloads itself loses nothing a sender pushed.
func (b *Box[T]) CloseIfEmpty() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.items) > 0 || b.closed {
		return false
	}
	b.closed = true
	return true
}

// Closed reports whether the box refuses pushes.
func (b *Box[T]) Closed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}
