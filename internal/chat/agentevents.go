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
		c.conversationGone(err)
		return
	}
	c.eng.Event(c.conv, ev)
}

// conversationGone handles a backend process that ended: the conversation
// is closed, so the next turn opens it again, resumed, and the engine ends
// the turn that ran on it (a turn that waited unsent goes to the new one).
func (c *Chat) conversationGone(err error) {
	c.changesets.settle("") // what the gone process changed stays its turns'
	gone := c.conv
	if c.conv != nil {
		_ = c.conv.Close()
		c.conv = nil
	}
	c.eng.ConversationGone(gone, agent.End{Outcome: agent.OutcomeError, ErrorType: "agentExited", Message: err.Error()})
}
