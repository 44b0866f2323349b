package chat

import (
	"time"

	"github.com/ahpd/ahpd/internal/store"
)

// DefaultIdleTimeout is how long a chat actor with nothing to do stays
// loaded.
const DefaultIdleTimeout = 10 * time.Minute

// idler unloads the chat when it has had nothing to do for the idle
// timeout (chatIdleSeconds). It is part of the chat actor and runs only on
// the actor's goroutine.
type idler struct{ c *Chat }

// timer is nil when the chat never unloads itself (IdleTimeout < 0).
func (il *idler) timer() *time.Timer {
	c := il.c
	if c.cfg.Env.Limits.ChatIdle < 0 {
		return nil
	}
	d := c.cfg.Env.Limits.ChatIdle
	if d == 0 {
		d = DefaultIdleTimeout
	}
	return time.NewTimer(d)
}

// busy reports whether unloading the chat now would lose anything: a turn
// running or waiting, a backend turn not yet ended, a steering message the
// backend holds, a worker still running, or somebody watching (the chat or
// one of its canvases).
func (il *idler) busy() bool {
	c := il.c
	if c.eng.Busy() {
		return true
	}
	if c.workers.running() {
		return true
	}
	return c.cfg.Env.Bus.Subscribers(c.cfg.URI) > 0 || c.canvases.watched()
}

// unloadIfIdle ends the actor when the chat is idle and nobody pushed
// anything since: its backend process is closed (the next turn resumes
// it), its state is all in the store, and the session opens it again when
// anybody names it. It reports whether the actor ended.
func (il *idler) unloadIfIdle() bool {
	c := il.c
	if il.busy() || !c.inbox.CloseIfEmpty() {
		return false
	}
	c.log.Debug("chat idle: unloading")
	c.shutdown()
	if c.cfg.OnUnload != nil {
		c.cfg.OnUnload(c, c.record)
	}
	return true
}

// DefaultAgentIdle is how long a chat's agent may have no work before its
// process is ended.
const DefaultAgentIdle = 10 * time.Minute

// agentTimer is nil when agents are never ended for idling (AgentIdle < 0).
func (il *idler) agentTimer() *time.Timer {
	if il.c.cfg.Env.Limits.AgentIdle < 0 {
		return nil
	}
	return time.NewTimer(il.agentTimeout())
}

func (il *idler) agentTimeout() time.Duration {
	if d := il.c.cfg.Env.Limits.AgentIdle; d > 0 {
		return d
	}
	return DefaultAgentIdle
}

// endIdleAgent ends the chat's agent conversation, and so its process
// tree, when it has no work: no turn running or waiting on it, no worker,
// nothing the backend holds (eng.Busy). The chat stays loaded and watched;
// its next turn opens the conversation again, resumed. An agent that
// cannot resume is kept: ending it would lose the conversation.
func (il *idler) endIdleAgent() {
	if !il.agentEndable() {
		return
	}
	il.c.log.Info("agent idle: ending its process; the next turn resumes it", "idle", il.agentTimeout())
	il.c.backends.close()
}

// agentEndable reports whether the chat's agent conversation is open and
// could end now without losing anything: it can resume, and it has no
// work (no turn running or waiting on it, no worker, nothing the backend
// holds). endIdleAgent and the agent slots' close requests (slots.go)
// end only such a one.
func (il *idler) agentEndable() bool {
	c := il.c
	be := &c.backends
	return be.conv != nil && be.caps.Resume && !c.eng.Busy() && !c.workers.running()
}

func (il *idler) timeout() time.Duration {
	c := il.c
	if c.cfg.Env.Limits.ChatIdle > 0 {
		return c.cfg.Env.Limits.ChatIdle
	}
	return DefaultIdleTimeout
}

// Ending reports whether the actor takes no more work: it is closing or
// unloading, and Done follows.
func (c *Chat) Ending() bool { return c.inbox.Closed() }

// LastRecord is the chat's record as the actor left it; valid once Done is
// closed.
func (c *Chat) LastRecord() store.ChatRecord { return c.record }
