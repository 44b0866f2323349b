package chat

import (
	"errors"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/bug"
)

// The actor's loop (Chat.run) keeps what it waits in apart from what it
// does: an idle chat's goroutine is parked in await, and the runtime halves
// a parked goroutine's stack only while under a quarter of it is in use.
// With the handling in the waiting frame (1.8 KB of locals), every loaded
// chat kept an 8 KB stack; parked in awaitQuiet's small frame, it keeps 4
// KB (BenchmarkIdleSessionMemory, docs/PERFORMANCE.md).

// loop is the actor goroutine's own state: its timers, the batch it runs,
// and the event it received.
type loop struct {
	c      *Chat
	timers actorTimers
	batch  []func()
	// woke is the event await received, until handle takes it.
	woke wokenEvent
	// landed is the result of the commit whose landing woke the actor.
	landed error
}

// actorTimers are the loop's timers: the flush of a running turn, and the
// unloading of an idle chat and of its idle agent (nil channels when off).
type actorTimers struct {
	flush                 *time.Ticker
	idleTimer, agentTimer *time.Timer
	idle, agentIdle       <-chan time.Time
}

// wokenEvent is an event await received: ok false when its channel
// closed.
type wokenEvent struct {
	ev agent.Event
	ok bool
}

// wakeKind is which of await's cases woke the actor.
type wakeKind uint8

const (
	wokeStopping wakeKind = iota
	wokeInbox
	wokeAgent
	wokeShell
	wokeHostCommand
	wokeFlush
	wokeIdle
	wokeAgentIdle
	wokeLanded
)

func newLoop(c *Chat) *loop {
	l := &loop{c: c, timers: actorTimers{flush: time.NewTicker(runningEvery)}}
	if l.timers.idleTimer = c.idle.timer(); l.timers.idleTimer != nil {
		l.timers.idle = l.timers.idleTimer.C
	}
	if l.timers.agentTimer = c.idle.agentTimer(); l.timers.agentTimer != nil {
		l.timers.agentIdle = l.timers.agentTimer.C
	}
	return l
}

func (t *actorTimers) stop() {
	t.flush.Stop()
	if t.idleTimer != nil {
		t.idleTimer.Stop()
	}
	if t.agentTimer != nil {
		t.agentTimer.Stop()
	}
}

// settle brings what the agent process slots know of this chat, and the
// turns it keeps in memory, up to what the last step did (slots.go,
// window.go).
//
//go:noinline
func (l *loop) settle() {
	l.c.slot.settle()
	l.c.window.settle()
}

// await waits for the actor's next work. A chat with no agent or command
// conversation open (an idle one, once its agent was let go) waits in
// awaitQuiet, whose frame holds no room for received events.
func (l *loop) await() wakeKind {
	b := &l.c.backends
	if b.conv == nil && b.shell == nil && b.hostCmds == nil {
		return l.awaitQuiet()
	}
	return l.awaitEvents()
}

func (l *loop) awaitQuiet() wakeKind {
	select {
	case <-l.c.stopping:
		return wokeStopping
	case <-l.c.inbox.Wake():
		return wokeInbox
	case l.landed = <-l.c.durable.oldest():
		return wokeLanded
	case <-l.timers.flush.C:
		return wokeFlush
	case <-l.timers.idle:
		return wokeIdle
	case <-l.timers.agentIdle:
		return wokeAgentIdle
	}
}

// awaitEvents is await with the conversations' events, received into
// l.woke. Its other cases are awaitQuiet's: one select each, since a
// select's frame holds room for every case it has.
//
//go:noinline
func (l *loop) awaitEvents() wakeKind {
	var events, shellEvents, hostEvents <-chan agent.Event
	b := &l.c.backends
	if b.conv != nil {
		events = b.conv.Events()
	}
	if b.shell != nil {
		shellEvents = b.shell.Events()
	}
	if b.hostCmds != nil {
		hostEvents = b.hostCmds.Events()
	}
	w := &l.woke
	select {
	case <-l.c.stopping:
		return wokeStopping
	case <-l.c.inbox.Wake():
		return wokeInbox
	case l.landed = <-l.c.durable.oldest():
		return wokeLanded
	case w.ev, w.ok = <-events:
		return wokeAgent
	case w.ev, w.ok = <-shellEvents:
		return wokeShell
	case w.ev, w.ok = <-hostEvents:
		return wokeHostCommand
	case <-l.timers.flush.C:
		return wokeFlush
	case <-l.timers.idle:
		return wokeIdle
	case <-l.timers.agentIdle:
		return wokeAgentIdle
	}
}

// handle does what woke the actor; done says the actor ends.
//
//go:noinline
func (l *loop) handle(kind wakeKind) (done bool) {
	c, t := l.c, &l.timers
	// The event, if one woke the actor, is taken out of l.woke: an idle
	// chat keeps none.
	ev, ok := l.woke.ev, l.woke.ok
	l.woke = wokenEvent{}
	switch kind {
	case wokeStopping:
		for _, fn := range c.inbox.Pop(l.batch) {
			fn()
		}
		c.canvases.endAll() // a canvas goes with its chat (canvases.go)
		c.shutdown()
		return true
	case wokeInbox:
		l.batch = c.inbox.Pop(l.batch)
		for i, fn := range l.batch {
			bug.Recover(c.log, "chat actor", fn)
			l.batch[i] = nil
		}
	case wokeAgent:
		if !ok {
			c.backends.gone(errors.New("agent conversation ended"))
			return false
		}
		c.silence.agentSpoke()
		bug.Recover(c.log, "agent event", func() { c.onAgentEvent(ev) })
	case wokeShell:
		if !ok {
			c.eng.Forget(localConv{c.backends.shell})
			c.backends.shell = nil
			return false
		}
		bug.Recover(c.log, "command event", func() { c.eng.Event(localConv{c.backends.shell}, ev) })
	case wokeHostCommand:
		if !ok {
			c.eng.Forget(c.backends.hostCmds)
			c.backends.hostCmds = nil
			return false
		}
		bug.Recover(c.log, "host command event", func() { c.eng.Event(c.backends.hostCmds, ev) })
	case wokeFlush:
		c.durable.flushRunning()
		c.silence.check()
		// The ticker is not activity: it must not keep an idle chat
		// loaded by resetting the idle timer.
		return false
	case wokeLanded:
		err := l.landed
		l.landed = nil
		c.durable.landed(err)
		// A commit landing is not activity: the idle timers run on.
		return false
	case wokeIdle:
		if c.idle.unloadIfIdle() {
			return true
		}
		// A timer is not activity: the agent's keeps running.
		t.idleTimer.Reset(c.idle.timeout())
		return false
	case wokeAgentIdle:
		// Armed again by the next activity, not by itself.
		c.idle.endIdleAgent()
		return false
	}
	if t.idleTimer != nil {
		t.idleTimer.Reset(c.idle.timeout())
	}
	if t.agentTimer != nil {
		t.agentTimer.Reset(c.idle.agentTimeout())
	}
	return false
}
