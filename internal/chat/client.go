package chat

import (
	"fmt"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/turns"
)

// Refusal texts CHATS.md quotes from VS Code's agent host.
const (
	ReasonNoSteering      = turns.ReasonNoSteering
	ReasonSteeringBusy    = turns.ReasonSteeringBusy
	reasonNotDispatchable = "Action is not client-dispatchable."
	reasonReadOnly        = turns.ReasonReadOnly
)

// onClientAction checks a client's action at the chat's door, then hands
// it on: what turns run and wait is the turn engine's; a truncation and a
// change of directories are the chat's own (truncate.go, directories.go).
func (c *Chat) onClientAction(cl Client, origin *ahp.ActionOrigin, a ahp.Action) {
	if !ahp.IsClientDispatchable(a.ActionType()) {
		c.refuse(cl, origin, a, reasonNotDispatchable)
		return
	}
	if grant := ahp.GrantFor(a.ActionType()); grant != "" && !cl.can(grant) {
		c.refuse(cl, origin, a, fmt.Sprintf("Permission denied: %s needs the grant %s.", a.ActionType(), grant))
		return
	}
	if text, ok := messageText(a); ok && turns.RouteOf(text) == turns.RouteLocal && !c.mayRunCommands(cl) {
		c.refuse(cl, origin, a, "Permission denied: a ! command runs a shell on the host, which only the session's owner or root may do.")
		return
	}
	switch a := a.(type) {
	case ahp.SessionTitleChanged:
		// A client renames this chat (C-COMP-25): stored, told to the
		// session (session/chatUpdated), then echoed on the chat, where
		// it changes no state (the shared reducers ignore it there).
		c.setTitle(a.Title, false)
		c.cfg.Env.Bus.Publish(c.cfg.URI, a, origin)
	case ahp.ChatTruncated:
		c.rewind.truncate(cl, origin, a)
	case ahp.ChatWorkingDirectorySet, ahp.ChatWorkingDirectoryRemoved:
		c.directories.change(cl, origin, a)
	default:
		// Turns, pending messages, stops, resumes and confirmations are
		// the engine's rules; a draft, a flag or a client's tool result
		// only changes the state, stored before it is said (durable.go).
		c.eng.Client(turns.From{Client: cl, Sender: cl.Sender, Extra: cl.ChatAttachments}, origin, a)
	}
}

// messageText is the text of the message a client action would run.
func messageText(a ahp.Action) (string, bool) {
	switch a := a.(type) {
	case ahp.ChatTurnStarted:
		return a.Message.Text, true
	case ahp.ChatPendingMessageSet:
		return a.Message.Text, true
	}
	return "", false
}

// mayRunCommands: a ! command is a shell on the host with the daemon's
// rights, so chat:send is not enough; only root or the session's owner.
func (c *Chat) mayRunCommands(cl Client) bool {
	return cl.Root || cl.Can == nil || (cl.Sender != "" && cl.Sender == c.cfg.Owner)
}

func (c *Chat) readOnly() bool { return c.st().Interactivity == "read-only" }

// running reports whether a turn is active.
func (c *Chat) running() bool { return c.eng.Running() }

// isLocal reports whether turn id was a ! command.
func (c *Chat) isLocal(id string) bool { return c.eng.Turn(id).Route == turns.RouteLocal }

func sameMessage(a, b ahp.Message) bool { return turns.SameMessage(a, b) }
