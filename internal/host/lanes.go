package host

import (
	"context"
	"log/slog"

	"github.com/ahpd/ahpd/internal/bug"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/lockorder"
)

// Lane bounds: how many routed actions may wait for one channel, and for
// all channels together. Past either, a dispatch is refused (never dropped).
const (
	laneLimit  = 1024
	lanesLimit = 64 << 10
)

// lanes carry dispatched actions to their channel's owner off the
// connection's read loop, one lane per channel, in order. Routing may wait
// (a chat being loaded, or still unloading while its agent ends); a lane
// waits alone, and every other channel and connection goes on. A lane's
// goroutine lives while it has work.
type lanes struct {
	log *slog.Logger
	// mu (rank lockorder.HostLanes) guards m and queued; no other lock is
	// taken inside it (a lane's work runs outside it).
	mu     lockorder.Mutex
	m      map[string]*lane
	queued int
	// opened is closed once the host has listed its stored sessions
	// (Host.restore): until then no lane runs and none is idle, so every
	// request and routed action waits on its lane, off the read loops,
	// for a catalogue that is whole.
	opened chan struct{}
}

type lane struct{ queue []func() }

func newLanes(log *slog.Logger) *lanes {
	return &lanes{log: log, mu: lockorder.Mutex{Rank: lockorder.HostLanes}, m: make(map[string]*lane), opened: make(chan struct{})}
}

// open lets the lanes run (once the catalogue is restored).
func (l *lanes) open() { close(l.opened) }

// isOpen reports whether the lanes run yet.
func (l *lanes) isOpen() bool {
	select {
	case <-l.opened:
		return true
	default:
		return false
	}
}

// idle reports whether nothing waits or runs in channel's lane, so an
// action may go to the channel's owner directly without passing one.
func (l *lanes) idle(channel string) bool {
	if !l.isOpen() {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[channel] == nil
}

// push queues fn on channel's lane. false: the lane or all lanes are full.
func (l *lanes) push(channel string, fn func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.m[channel]
	if ln != nil && len(ln.queue) >= laneLimit || l.queued >= lanesLimit {
		return false
	}
	l.queued++
	if ln == nil {
		ln = &lane{}
		l.m[channel] = ln
		go l.run(channel, ln)
	}
	ln.queue = append(ln.queue, fn)
	return true
}

// drain waits, within ctx, until what channel's lane holds now has run;
// false when it could not wait (the lanes are full, or ctx ended first).
func (l *lanes) drain(ctx context.Context, channel string) bool {
	done := make(chan struct{})
	if !l.push(channel, func() { close(done) }) {
		return false
	}
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// run is channel's lane goroutine: it runs what the lane holds in order
// and ends, removing the lane, once it is empty.
func (l *lanes) run(channel string, ln *lane) {
	<-l.opened
	for {
		l.mu.Lock()
		if len(ln.queue) == 0 {
			delete(l.m, channel)
			l.mu.Unlock()
			return
		}
		fn := ln.queue[0]
		ln.queue[0] = nil
		ln.queue = ln.queue[1:]
		l.mu.Unlock()
		bug.Recover(l.log, "dispatch lane "+channel, fn)
		l.mu.Lock()
		l.queued--
		l.mu.Unlock()
	}
}

// actors remembers the live actor of each chat the host reached, so a
// dispatch to a loaded chat is one push into its mailbox. An entry leaves
// when its actor ends.
type actors struct {
	// mu (rank lockorder.HostActors) guards m; no other lock is taken
	// inside it.
	mu lockorder.Mutex
	m  map[string]*chat.Chat
}

func newActors() *actors {
	return &actors{mu: lockorder.Mutex{Rank: lockorder.HostActors}, m: make(map[string]*chat.Chat)}
}

func (a *actors) remember(uri string, c *chat.Chat) {
	a.mu.Lock()
	if a.m[uri] == c {
		a.mu.Unlock()
		return
	}
	a.m[uri] = c
	a.mu.Unlock()
	c.AfterDone(func() {
		a.mu.Lock()
		if a.m[uri] == c {
			delete(a.m, uri)
		}
		a.mu.Unlock()
	})
}

// live is chat uri's actor when it is loaded and not ending.
func (a *actors) live(uri string) *chat.Chat {
	a.mu.Lock()
	c := a.m[uri]
	a.mu.Unlock()
	if c == nil || c.Ending() {
		return nil
	}
	return c
}
