package chat

import (
	"fmt"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
)

// DefaultAgentSilence is how long a running turn's agent may say nothing
// before the turn ends with an error and the agent's process is replaced
// (daemon config agentSilenceSeconds).
const DefaultAgentSilence = 10 * time.Minute

// agentSilence is the configured silence limit; 0 when it is off.
func (c *Chat) agentSilence() time.Duration {
	switch {
	case c.cfg.Env.Limits.AgentSilence > 0:
		return c.cfg.Env.Limits.AgentSilence
	case c.cfg.Env.Limits.AgentSilence < 0:
		return 0
	}
	return DefaultAgentSilence
}

// AgentStartAllowance is the least silence allowed a conversation that has
// said nothing since it was opened: its process may still be starting (a
// Node CLI on a loaded machine takes seconds), and a start is not a hang.
// A start that takes longer than this, or than agentSilenceSeconds when
// that is longer, is still caught.
const AgentStartAllowance = time.Minute

// heardFromAgent notes that the agent said something, or was just handed a
// prompt: the silence is counted from here.
func (c *Chat) heardFromAgent() { c.heard = c.cfg.Env.Now() }

// checkSilence runs on the actor's ticker. A turn handed to a backend that
// has said nothing since for agentSilence ends with chat/error naming the
// silence; the conversation is killed, not closed politely (a hung process
// would not answer), and the next turn opens a new one, resumed. A turn
// waiting on a client (a confirmation, an input request) is not the agent's
// silence.
func (c *Chat) checkSilence() {
	limit := c.agentSilence()
	t := c.eng.Active()
	if limit == 0 || t == nil || !t.Sent || t.Conv != c.conv || c.conv == nil || c.waitingOnClient() {
		return
	}
	if !c.convSpoke {
		limit = max(limit, AgentStartAllowance)
	}
	quiet := c.cfg.Env.Now().Sub(c.heard)
	if quiet < limit {
		return
	}
	c.log.Warn("agent silent; ending the turn and replacing its process", "turn", t.ID, "silent", quiet.Round(time.Second), "spoke", c.convSpoke)
	message := fmt.Sprintf("The agent said nothing for %s (agentSilenceSeconds); its process was replaced.", limit.Round(time.Second))
	if !c.convSpoke {
		message = fmt.Sprintf("The agent said nothing for %s after it was started; its process was replaced.", limit.Round(time.Second))
	}
	conv := c.conv
	c.conv = nil
	// Killed off the actor's goroutine: a process that stopped answering
	// may take its kill grace, and nobody waits on this actor for that.
	go killConversation(conv)
	c.eng.ConversationGone(conv, agent.End{
		Outcome:   agent.OutcomeError,
		ErrorType: "agentSilent",
		Message:   message,
	})
}

// waitingOnClient reports whether the running turn waits for a client: a
// tool call to confirm or an input request to answer.
func (c *Chat) waitingOnClient() bool {
	at := c.st().ActiveTurn
	if at == nil {
		return false
	}
	for _, p := range at.ResponseParts {
		switch {
		case p.Kind == ahp.PartToolCall && p.ToolCall != nil &&
			(p.ToolCall.Status == ahp.ToolPendingConfirmation || p.ToolCall.Status == ahp.ToolPendingResultConfirmation):
			return true
		case p.Kind == ahp.PartInputRequest && p.Response == "":
			return true
		}
	}
	return false
}

// killConversation ends a conversation at once when its backend can
// (agent.Killer), else closes it.
func killConversation(conv agent.Conversation) {
	if k, ok := conv.(agent.Killer); ok {
		_ = k.Kill()
		return
	}
	_ = conv.Close()
}
