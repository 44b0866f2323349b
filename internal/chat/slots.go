package chat

import (
	"fmt"

	"github.com/ahpd/ahpd/internal/agentslots"
	"github.com/ahpd/ahpd/internal/turns"
)

// SlotWaitMetaKey is the _meta key of the systemNotification part a turn
// waiting for an agent process says; its value is maxAgentProcesses.
const SlotWaitMetaKey = "ahpd.waitingForAgentProcess"

// agentSlot is the chat's place among the daemon's agent process slots
// (internal/agentslots, maxAgentProcesses): the chat holds a slot while
// its agent conversation is open, a turn that finds none free waits for
// one (turns.Wait), and the pool may ask the chat to close its agent when
// it is the least recently used idle one. It is part of the chat actor and
// runs only on the actor's goroutine; the pool reaches it only through the
// actor's mailbox (granted, closeRequested).
type agentSlot struct {
	c *Chat
	// m is nil when the chat's agent runs no process of its own
	// (agent.Capabilities.Process) or the daemon bounds none.
	m *agentslots.Member
	// asked: the chat asked the pool for a slot (it holds or waits) and
	// has not given it back.
	asked bool
	// idle is what the pool was last told of the agent (agentEndable).
	idle bool
}

func (s *agentSlot) join() {
	c := s.c
	if !c.backends.caps.Process || c.cfg.Env.AgentSlots == nil {
		return
	}
	s.m = c.cfg.Env.AgentSlots.Join(c.cfg.URI, c.do, s.granted, s.closeRequested)
}

// acquire takes a slot before the agent conversation opens; a *turns.Wait
// when every slot is held (the chat then waits in the queue).
func (s *agentSlot) acquire() error {
	if s.m == nil {
		return nil
	}
	s.asked = true
	if s.m.Acquire() {
		return nil
	}
	max := s.c.cfg.Env.AgentSlots.Max()
	return &turns.Wait{
		Notice: fmt.Sprintf("Waiting for an agent process: all %d the host runs at once (maxAgentProcesses) are busy. This turn starts when one is free.", max),
		Meta:   map[string]any{SlotWaitMetaKey: max},
	}
}

// release gives the slot back (or leaves the queue) once the agent
// conversation is closed; said again it does nothing.
func (s *agentSlot) release() {
	if s.m == nil || !s.asked {
		return
	}
	s.asked, s.idle = false, false
	s.m.Release()
}

// granted runs on the actor when the pool gave the chat the slot it waited
// for: the waiting turn is sent (a turn stopped meanwhile needs none, and
// settle gives it back).
func (s *agentSlot) granted() { s.c.eng.Slot().Free() }

// closeRequested runs on the actor when the pool asks the chat to close
// its agent, the least recently used idle one, for a turn that waits: it
// closes it when it still has no work, as endIdleAgent would, and says no
// otherwise.
func (s *agentSlot) closeRequested() {
	c := s.c
	if !s.m.CloseWanted() {
		return // the turn it was for no longer waits
	}
	if !c.idle.agentEndable() {
		s.idle = false
		s.m.Declined()
		return
	}
	c.log.Info("agent slots: ending the least recently used idle agent for a turn that waits; the next turn resumes it")
	c.backends.close()
}

// settle runs at each turn of the actor's loop and keeps what the pool
// knows true: a slot nothing needs any more (a turn stopped while it
// waited, an agent that failed to open) is given back, a turn left
// waiting without a place in the queue asks again, and whether the open
// agent is idle is told when it changes.
func (s *agentSlot) settle() {
	if s.m == nil {
		return
	}
	c := s.c
	if c.backends.conv == nil {
		switch {
		case !c.eng.Slot().Waiting():
			s.release()
		case !s.m.Holding() && !s.m.Waiting():
			// The pool could not hand the chat its grant (its mailbox was
			// full) and gave the slot on: ask again.
			if s.acquire() == nil {
				c.eng.Slot().Free()
			}
		}
		return
	}
	if idle := c.idle.agentEndable(); idle != s.idle {
		s.idle = idle
		s.m.Idle(idle)
	}
}
