package chat

import (
	"context"
	"fmt"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/shell"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/attach"
	"github.com/ahpd/ahpd/internal/turns"
	"github.com/google/uuid"
)

// engineHost is the turn engine's Host: it carries out what the engine
// decides against the bus, the store and the backends. Its methods run on
// the chat actor's goroutine, inside an engine call.
type engineHost struct{ c *Chat }

var _ turns.Host = engineHost{}

// Tell stores what a makes durable, then publishes it (durable.go).
func (h engineHost) Tell(a ahp.Action, origin *ahp.ActionOrigin) { h.c.tell(a, origin) }

func (h engineHost) Refuse(from turns.From, origin *ahp.ActionOrigin, a ahp.Action, reason string) {
	cl, _ := from.Client.(Client)
	h.c.refuse(cl, origin, a, reason)
}

func (h engineHost) Prepare(m ahp.Message, extra any) (ahp.Message, []agent.Attachment, error) {
	resolved, _ := extra.([]attach.Resolved)
	return h.c.attachments.prepare(m, resolved)
}

// Open returns the chat's agent conversation, or its ! command shell.
func (h engineHost) Open(r turns.Route) (agent.Conversation, agent.Capabilities, error) {
	// A backend sees the turn only once it is stored (durable.go).
	h.c.durable.flush()
	return h.c.backends.open(r)
}

// HostContext is what the host has to say on the chat's first prompt
// (C-TURN-109): consumed once it is handed out.
func (h engineHost) HostContext() string {
	c := h.c
	meta := c.meta.of(c.record.Meta)
	if meta.FirstPromptContext == "" {
		return ""
	}
	text := meta.FirstPromptContext
	meta.FirstPromptContext = ""
	c.record.Meta = meta.Raw()
	c.durable.persistRecord()
	return text
}

func (h engineHost) Admitted(s turns.Start) {
	if s.Route == turns.RouteHost {
		// A host command is not a message to name the chat after: a
		// /rename names it itself, an empty one leaves it as it was.
		if cmd, _ := turns.ParseHostCommand(s.Text); cmd.Name == turns.CommandRename && cmd.Arg != "" {
			h.c.setTitle(cmd.Arg, false)
		}
		return
	}
	h.c.autoTitle(s.Text, s.First, s.Route == turns.RouteLocal)
}

func (h engineHost) Sent(_ string, r turns.Route) {
	if r == turns.RouteAgent {
		h.c.backends.used() // conversation.go
	}
	h.c.silence.hear() // the silence counts from the prompt (silence.go)
}

func (h engineHost) Point(id, point string) { h.c.notePoint(id, point) }

func (h engineHost) Ended(id string, outcome agent.Outcome) { h.c.workers.endWorkersOf(id, outcome) }

func (h engineHost) WaitingChanged() { h.c.durable.persistPending() }

func (h engineHost) SpawnedContent(toolCallID string) []ahp.ToolResultContent {
	return h.c.workers.spawnedContent(toolCallID)
}

// OlderTurn: a turn older than the window is one row of the store.
func (h engineHost) OlderTurn(id string) bool {
	if !h.c.window.mayBeOlder(id) {
		return false
	}
	_, ok := h.c.window.olderTurn(id)
	return ok
}

func (h engineHost) Warn(msg string, args ...any) { h.c.log.Warn(msg, args...) }

func (h engineHost) Now() time.Time { return h.c.cfg.Env.Now() }

func (h engineHost) NewID() string { return uuid.NewString() }

// localConv is the chat's shell as the conversation a ! command turn is
// handed to: a command that cannot start ends its turn as commandFailed.
type localConv struct{ *shell.Conversation }

func (l localConv) Send(ctx context.Context, t agent.Turn) error {
	if err := l.Conversation.Send(ctx, t); err != nil {
		return &turns.Failure{Type: "commandFailed", Message: fmt.Sprintf("run %q: %v", t.Text, err)}
	}
	return nil
}
