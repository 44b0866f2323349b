// Package agentslots bounds how many agent processes run at once
// (maxAgentProcesses). Each chat whose backend runs a process of its own
// (agent.Capabilities.Process: claude, pi, acp) is a Member; it holds a
// slot while its agent conversation is open. A chat that needs a slot
// when every one is held waits in a FIFO queue, and the least recently
// used member whose agent is idle is asked to close it.
//
// The pool is bookkeeping under one lock and never reaches into a chat
// while it holds it: what it decides for a member (a grant, a request to
// close an idle agent) is posted to that member's actor (its mailbox)
// after the lock is released, and the actor answers by calling the pool
// again. No actor waits on another, and the pool waits on nobody.
//
// The chat actor (internal/chat, slots.go) is the only caller; the daemon
// makes the one Pool and shares it through internal/env.
package agentslots

import (
	"log/slog"

	"github.com/ahpd/ahpd/internal/lockorder"
)

// Pool is the daemon's agent process slots.
type Pool struct {
	log *slog.Logger
	// mu guards slots and every Member's fields below it.
	mu    lockorder.Mutex
	slots slots
}

// New returns a pool of max slots; max <= 0 sets no limit (the pool still
// counts what runs).
func New(max int, log *slog.Logger) *Pool {
	if log == nil {
		log = slog.Default()
	}
	return &Pool{log: log, mu: lockorder.Mutex{Rank: lockorder.AgentSlots}, slots: slots{max: max}}
}

// Max is the number of slots; 0 or less: no limit.
func (p *Pool) Max() int {
	if p == nil {
		return 0
	}
	return p.slots.max
}

// Stats are how many members hold a slot and how many wait for one.
func (p *Pool) Stats() (holding, waiting int) {
	if p == nil {
		return 0, 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.slots.holders), len(p.slots.queue)
}

// Member is one chat's place in the pool. Its methods are called from the
// chat's actor, never with a lock of the chat's held.
type Member struct {
	pool *Pool
	name string
	// post hands a func to the member's actor without blocking (its
	// mailbox's Do); an error means the actor did not take it.
	post func(func()) error
	// onGrant runs on the actor when a queued request was granted;
	// onClose when the pool asks it to close its idle agent (it answers
	// Release after closing, or Declined).
	onGrant, onClose func()

	// Guarded by pool.mu.
	state   state
	idle    bool
	closing bool
	used    uint64
}

// Join makes a member of the pool; name is for the log. A nil pool
// returns a nil member, which always has a slot.
func (p *Pool) Join(name string, post func(func()) error, onGrant, onClose func()) *Member {
	if p == nil {
		return nil
	}
	return &Member{pool: p, name: name, post: post, onGrant: onGrant, onClose: onClose}
}

// Acquire asks a slot for the member's agent. It reports true when the
// member holds one now; otherwise the member waits in the queue and
// onGrant runs on its actor when the slot is given (Release leaves the
// queue). It never blocks.
func (m *Member) Acquire() bool {
	if m == nil {
		return true
	}
	p := m.pool
	p.mu.Lock()
	ok, effs := p.slots.acquire(m)
	p.mu.Unlock()
	p.deliver(effs)
	return ok
}

// Release gives the member's slot back, or takes it out of the queue.
// Saying it again does nothing.
func (m *Member) Release() {
	if m == nil {
		return
	}
	p := m.pool
	p.mu.Lock()
	effs := p.slots.release(m)
	p.mu.Unlock()
	p.deliver(effs)
}

// Idle says whether the member's agent has no work and could be closed
// now without losing anything (the chat's endIdleAgent test).
func (m *Member) Idle(idle bool) {
	if m == nil {
		return
	}
	p := m.pool
	p.mu.Lock()
	effs := p.slots.setIdle(m, idle)
	p.mu.Unlock()
	p.deliver(effs)
}

// Declined answers a close request the member did not follow: its agent
// had work by then.
func (m *Member) Declined() {
	if m == nil {
		return
	}
	p := m.pool
	p.mu.Lock()
	effs := p.slots.declined(m)
	p.mu.Unlock()
	p.deliver(effs)
}

// CloseWanted reports whether the pool still wants the member to close its
// idle agent: a close request is out for it and was not taken back (the
// turn it was for stopped waiting).
func (m *Member) CloseWanted() bool {
	if m == nil {
		return false
	}
	m.pool.mu.Lock()
	defer m.pool.mu.Unlock()
	return m.closing
}

// Holding reports whether the member holds a slot.
func (m *Member) Holding() bool {
	if m == nil {
		return true
	}
	m.pool.mu.Lock()
	defer m.pool.mu.Unlock()
	return m.state == holding
}

// Waiting reports whether the member waits in the queue.
func (m *Member) Waiting() bool {
	if m == nil {
		return false
	}
	m.pool.mu.Lock()
	defer m.pool.mu.Unlock()
	return m.state == waiting
}

// deliver posts each effect to its member's actor; called without p.mu.
// A grant the actor does not take (it ended) is released, so the slot
// goes on; a close request it does not take counts as declined.
func (p *Pool) deliver(effs []effect) {
	for len(effs) > 0 {
		e := effs[0]
		effs = effs[1:]
		fn := e.m.onGrant
		if e.kind == closeIdle {
			fn = e.m.onClose
		}
		err := e.m.post(fn)
		if err == nil {
			continue
		}
		p.log.Warn("agent slots: a chat did not take the pool's message", "chat", e.m.name, "message", e.kind.String(), "err", err)
		p.mu.Lock()
		var more []effect
		if e.kind == grant {
			more = p.slots.release(e.m)
		} else {
			more = p.slots.declined(e.m)
		}
		p.mu.Unlock()
		effs = append(effs, more...)
	}
}
