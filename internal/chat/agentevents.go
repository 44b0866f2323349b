package chat

import (
	"fmt"

	"github.com/ahpd/ahpd/internal/agent"
)

// onAgentEvent hands one event of the chat's agent conversation on: a
// worker's to the worker chat (worker.go), the rest to the turn engine.
func (c *Chat) onAgentEvent(ev agent.Event) {
	if c.workers.route(ev) {
		return
	}
	c.changesets.track(ev) // changesets.go: a stopped turn's events too (C-TURN-19)
	if ev.Kind == agent.EventExited {
		err := ev.Err
		if err == nil {
			err = fmt.Errorf("agent process exited")
		}
		c.log.Warn("agent conversation exited", "err", err)
		c.backends.gone(err)
		return
	}
	// A turn's ending and the start of the one behind it commit together.
	c.durable.hold()
	defer c.durable.release()
	c.eng.Event(c.backends.conv, ev)
}

// gone handles a backend process that ended: the conversation
// is closed, so the next turn opens it again, resumed, and the engine ends
// the turn that ran on it (a turn that waited unsent goes to the new one).
func (be *backends) gone(err error) {
	c := be.c
	c.changesets.settle("") // what the gone process changed stays its turns'
	gone := be.conv
	if be.conv != nil {
		_ = be.conv.Close()
		be.conv = nil
	}
	c.slot.release()
	c.eng.ConversationGone(gone, agent.End{Outcome: agent.OutcomeError, ErrorType: "agentExited", Message: err.Error()})
}
