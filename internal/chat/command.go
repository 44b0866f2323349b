package chat

import (
	"context"
	"fmt"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/shell"
)

// runCommand hands turn t to the chat's shell backend (internal/agent/shell):
// a ! command is a turn like any other, on a conversation of its own whose
// capabilities say how it differs (no steering, no resume, a failure
// pauses nothing, C-TURN-27..31).
func (c *Chat) runCommand(t *runningTurn, command string) {
	if c.shell == nil {
		dir := ""
		if len(c.cfg.Directories) > 0 {
			dir = c.cfg.Directories[0]
		}
		c.shell = shell.New(c.cfg.CommandShell, dir)
	}
	t.conv, t.caps, t.sent = c.shell, shell.Caps, true
	if err := c.shell.Send(context.Background(), agent.Turn{ID: t.id, Text: command}); err != nil {
		c.endTurn(agent.End{Outcome: agent.OutcomeError, ErrorType: "commandFailed", Message: fmt.Sprintf("run %q: %v", command, err)})
	}
}

// onCommandEvent applies what the shell said to the turn handed to it.
func (c *Chat) onCommandEvent(ev agent.Event) {
	t := c.turn
	if t == nil || c.shell == nil || t.conv != c.shell || t.id != ev.TurnID {
		return
	}
	if ev.Kind == agent.EventTurnEnd {
		// C-TURN-27: however it went, the head of the queue starts
		// (shell.Caps.FailureGoesOn).
		c.endTurn(*ev.End)
		return
	}
	c.applyTurnEvent(t, ev)
}

// closeShell ends the chat's shell: a running command is interrupted (the
// chat unloads, closes, or works in other directories now).
func (c *Chat) closeShell() {
	if c.shell != nil {
		_ = c.shell.Close()
		c.shell = nil
	}
}
