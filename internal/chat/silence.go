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

// silence is the watchdog of a running turn's agent: when it last heard
// from the agent and whether the open conversation has said anything yet.
// It is part of the chat actor and runs only on the actor's goroutine.
type silence struct {
	c *Chat
	// heard is when the agent last said something or was handed a prompt;
	// spoke, whether the agent conversation (backends.conv) has said
	// anything since it was opened (a process still starting gets longer).
	heard time.Time
	spoke bool
}

// limit is the configured silence limit; 0 when it is off.
func (sl *silence) limit() time.Duration {
	c := sl.c
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

// hear notes that the agent said something, or was just handed a
// prompt: the silence is counted from here.
func (sl *silence) hear() { sl.heard = sl.c.cfg.Env.Now() }

// agentSpoke notes that the conversation said something: the silence is
// counted from here, and it is no longer a process still starting.
func (sl *silence) agentSpoke() {
	sl.hear()
	sl.spoke = true
}

// opened notes that a new conversation was opened: it has said nothing yet.
func (sl *silence) opened() { sl.spoke = false }

// check runs on the actor's ticker. A turn handed to a backend that
// has said nothing since for agentSilence ends with chat/error naming the
// silence; the conversation is killed, not closed politely (a hung process
// would not answer), and the next turn opens a new one, resumed. A turn
// waiting on a client (a confirmation, an input request) is not the agent's
// silence.
func (sl *silence) check() {
	c := sl.c
	limit := sl.limit()
	t := c.eng.Active()
	if limit == 0 || t == nil || !t.Sent || t.Conv != c.backends.conv || c.backends.conv == nil || sl.waitingOnClient() {
		return
	}
	if !sl.spoke {
		limit = max(limit, AgentStartAllowance)
	}
	quiet := c.cfg.Env.Now().Sub(sl.heard)
	if quiet < limit {
		return
	}
	c.log.Warn("agent silent; ending the turn and replacing its process", "turn", t.ID, "silent", quiet.Round(time.Second), "spoke", sl.spoke)
	message := fmt.Sprintf("The agent said nothing for %s (agentSilenceSeconds); its process was replaced.", limit.Round(time.Second))
	if !sl.spoke {
		message = fmt.Sprintf("The agent said nothing for %s after it was started; its process was replaced.", limit.Round(time.Second))
	}
	conv := c.backends.conv
	c.backends.conv = nil
	// Killed off the actor's goroutine: a process that stopped answering
	// may take its kill grace, and nobody waits on this actor for that.
	// Its process slot is given back now, on the actor, so a late release
	// can never give back the slot of the conversation opened next.
	go killConversation(conv)
	c.slot.release()
	c.eng.ConversationGone(conv, agent.End{
		Outcome:   agent.OutcomeError,
		ErrorType: "agentSilent",
		Message:   message,
	})
}

// waitingOnClient reports whether the running turn waits for a client: a
// tool call to confirm or an input request to answer.
func (sl *silence) waitingOnClient() bool {
	c := sl.c
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
