package chat

import (
	"context"
	"fmt"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/sessionconfig"
	"github.com/google/uuid"
)

// ensureConversation opens the chat's backend conversation: resumed when the
// backend already holds it, forked or rewound when a fork or a rewind waits
// for the chat's next turn (RecordMeta.PendingOpen), new otherwise.
func (c *Chat) ensureConversation() error {
	if c.conv != nil {
		return nil
	}
	if c.cfg.Agent == nil {
		return fmt.Errorf("agent %q is not available on this host", c.cfg.Provider)
	}
	info := c.cfg.Agent.Info(context.Background())
	if info.Unavailable != "" {
		return fmt.Errorf("agent %q is unavailable: %s", c.cfg.Provider, info.Unavailable)
	}
	if c.record.ConversationID == "" {
		c.record.ConversationID = uuid.NewString()
	}
	meta := ParseRecordMeta(c.record.Meta)
	p := agent.OpenParams{
		Mode:           agent.OpenNew,
		ConversationID: c.record.ConversationID,
		Directories:    c.cfg.Directories,
		Settings:       c.cfg.Settings,
		Logger:         c.log,
		Owner:          c.cfg.Owner,
	}
	if c.cfg.HostTools != nil && c.tools == nil {
		tools, revoke, err := c.cfg.HostTools(c.cfg.URI)
		if err != nil {
			c.log.Warn("host tools not offered", "err", err)
		} else {
			c.tools, c.revokeTools = tools, revoke
		}
	}
	p.HostTools = c.tools
	if c.cfg.SessionConfig != nil {
		// The session's settings: its model, and what the backend declared
		// it takes (resolveSessionConfig's schema).
		values := c.cfg.SessionConfig()
		p.Model = sessionconfig.Model(values)
		p.Config = sessionconfig.Backend(info, values)
	}
	if (meta.BackendStarted || c.hasBackendTurns()) && c.caps.Resume {
		p.Mode = agent.OpenResume
	}
	if po := meta.PendingOpen; po != nil {
		switch {
		case po.Rewind && c.caps.Rewind && po.Point != "":
			// C-COMP-06: resumed at the kept turn's last point.
			p.Mode, p.Point = agent.OpenRewind, po.Point
		case po.Rewind:
			// A backend that cannot cut keeps its history (C-COMP-11).
		case c.caps.Fork && po.Point != "":
			// C-FROM-04, 07: the source resumed at the backend's own point,
			// under this chat's id.
			p.Mode, p.Source, p.Point = agent.OpenFork, po.Source, po.Point
		default:
			// C-FROM-09: no point to resume from: a conversation of its own.
			p.Mode = agent.OpenNew
		}
	}
	conv, err := c.cfg.Agent.Open(context.Background(), p)
	if err != nil {
		return fmt.Errorf("open %s conversation (%s): %w", c.cfg.Provider, p.Mode, err)
	}
	c.conv = conv
	c.silence.opened()
	return nil
}

// conversationUsed is called once a turn was handed to the backend: a
// waiting fork or rewind has taken effect (kept until then, so a
// conversation closed before its first prompt still opens cut), and the
// backend now holds a conversation under ConversationID.
func (c *Chat) conversationUsed() {
	meta := ParseRecordMeta(c.record.Meta)
	if meta.PendingOpen == nil && meta.BackendStarted {
		return
	}
	meta.PendingOpen = nil
	meta.BackendStarted = true
	c.record.Meta = meta.Raw()
	c.persistRecord()
}

// hasBackendTurns reports whether the backend has seen a turn of this chat
// (any finished turn that was not a local ! command): chats stored before
// RecordMeta.BackendStarted existed.
func (c *Chat) hasBackendTurns() bool {
	for i := range c.st().Turns {
		if !c.isLocal(c.st().Turns[i].ID) {
			return true
		}
	}
	return false
}
