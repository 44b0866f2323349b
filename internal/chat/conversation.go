package chat

import (
	"context"
	"fmt"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/agentproc"
	"github.com/ahpd/ahpd/internal/agent/hostcmd"
	"github.com/ahpd/ahpd/internal/agent/shell"
	"github.com/ahpd/ahpd/internal/sessionconfig"
	"github.com/ahpd/ahpd/internal/turns"
	"github.com/google/uuid"
)

// backends are the conversations a chat's turns run on: the agent's
// (opened on the first turn that needs it, resumed, forked or rewound as
// the record says), the shell of its ! commands and the conversation that
// answers host commands, with the host-tools credential its agent
// conversations are handed. It is part of the chat actor and runs only on
// the actor's goroutine.
type backends struct {
	c    *Chat
	conv agent.Conversation
	caps agent.Capabilities
	// shell runs the chat's ! commands, nil until one runs.
	shell *shell.Conversation
	// hostCmds answers the host's own commands (/rename), nil until one runs.
	hostCmds *hostcmd.Conversation
	// tools is the chat's credential for the host's tools, minted when a
	// conversation first opens and revoked when the actor ends.
	tools  *agent.HostTools
	revoke func()
}

// open returns the conversation a turn of route r runs on: the chat's
// agent conversation (opened if need be), its ! command shell, or its host
// commands (engineHost.Open).
func (be *backends) open(r turns.Route) (agent.Conversation, agent.Capabilities, error) {
	c := be.c
	if r == turns.RouteHost {
		if be.hostCmds == nil {
			be.hostCmds = hostcmd.New()
		}
		return be.hostCmds, hostcmd.Caps, nil
	}
	if r == turns.RouteLocal {
		if be.shell == nil {
			dir := ""
			if len(c.cfg.Directories) > 0 {
				dir = c.cfg.Directories[0]
			}
			wrap, err := c.sandboxWrap("! commands", agent.Info{})
			if err != nil {
				return nil, agent.Capabilities{}, err
			}
			be.shell = shell.New(shell.Config{Dir: dir, Terminals: c.cfg.Env.Terminals, Session: c.cfg.Session, Chat: c.cfg.URI, Owner: c.cfg.Owner, Wrap: wrap})
		}
		return localConv{be.shell}, shell.Caps, nil
	}
	if err := be.ensure(); err != nil {
		return nil, agent.Capabilities{}, err
	}
	return be.conv, be.caps, nil
}

// ensure opens the chat's backend conversation: resumed when the
// backend already holds it, forked or rewound when a fork or a rewind waits
// for the chat's next turn (RecordMeta.PendingOpen), new otherwise.
func (be *backends) ensure() error {
	c := be.c
	if be.conv != nil {
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
	if c.cfg.HostTools != nil && be.tools == nil {
		tools, revoke, err := c.cfg.HostTools(c.cfg.URI)
		if err != nil {
			c.log.Warn("host tools not offered", "err", err)
		} else {
			be.tools, be.revoke = tools, revoke
		}
	}
	p.HostTools = be.tools
	if c.cfg.SessionConfig != nil {
		// The session's settings: its model, and what the backend declared
		// it takes (resolveSessionConfig's schema).
		values := c.cfg.SessionConfig()
		p.Model = sessionconfig.Model(values)
		p.Config = sessionconfig.Backend(info, values)
	}
	wrap, err := c.sandboxWrap("the "+c.cfg.Provider+" agent", info)
	if err != nil {
		return err
	}
	p.Sandbox = agentproc.FromCmd(wrap)
	if (meta.BackendStarted || be.hasTurns()) && be.caps.Resume {
		p.Mode = agent.OpenResume
	}
	if po := meta.PendingOpen; po != nil {
		switch {
		case po.Rewind && be.caps.Rewind && po.Point != "":
			// C-COMP-06: resumed at the kept turn's last point.
			p.Mode, p.Point = agent.OpenRewind, po.Point
		case po.Rewind:
			// A backend that cannot cut keeps its history (C-COMP-11).
		case be.caps.Fork && po.Point != "":
			// C-FROM-04, 07: the source resumed at the backend's own point,
			// under this chat's id.
			p.Mode, p.Source, p.Point = agent.OpenFork, po.Source, po.Point
		default:
			// C-FROM-09: no point to resume from: a conversation of its own.
			p.Mode = agent.OpenNew
		}
	}
	// A process of the agent's own counts against maxAgentProcesses: the
	// turn waits for a slot rather than fail (slots.go).
	if err := c.slot.acquire(); err != nil {
		return err
	}
	conv, err := c.cfg.Agent.Open(context.Background(), p)
	if err != nil {
		c.slot.release()
		return fmt.Errorf("open %s conversation (%s): %w", c.cfg.Provider, p.Mode, err)
	}
	be.conv = conv
	c.silence.opened()
	return nil
}

// used is called once a turn was handed to the backend: a
// waiting fork or rewind has taken effect (kept until then, so a
// conversation closed before its first prompt still opens cut), and the
// backend now holds a conversation under ConversationID.
func (be *backends) used() {
	c := be.c
	meta := c.meta.of(c.record.Meta)
	if meta.PendingOpen == nil && meta.BackendStarted {
		return
	}
	meta.PendingOpen = nil
	meta.BackendStarted = true
	c.record.Meta = meta.Raw()
	c.durable.persistRecord()
}

// hasTurns reports whether the backend has seen a turn of this chat
// (any finished turn that was not a local ! command): chats stored before
// RecordMeta.BackendStarted existed.
func (be *backends) hasTurns() bool {
	c := be.c
	for i := range c.st().Turns {
		if !c.isLocal(c.st().Turns[i].ID) {
			return true
		}
	}
	if older := c.eng.Window().Older(); older > 0 {
		_, ok, err := c.cfg.Env.Store.LastAgentTurnThrough(context.Background(), c.cfg.URI, older-1)
		if err != nil {
			c.log.Error("look for a backend turn older than the window", "err", err)
		}
		return ok
	}
	return false
}

// close ends the backend process of this chat and gives its process
// slot back; the next turn opens it again.
func (be *backends) close() {
	be.shut()
	be.c.slot.release()
}

// shut ends the backend process of this chat and keeps its process slot,
// for a conversation opened again at once (new directories); the actor's
// loop gives the slot back when none is opened (agentSlot.settle).
func (be *backends) shut() {
	c := be.c
	if be.conv == nil {
		return
	}
	if err := be.conv.Close(); err != nil {
		c.log.Warn("close agent conversation", "err", err)
	}
	c.eng.Forget(be.conv)
	be.conv = nil
}

// closeAll ends every conversation of the chat as its actor ends, and
// gives its process slot back (or takes a turn that waited for one out of
// the queue).
func (be *backends) closeAll() {
	be.closeShell()
	be.closeHostCommands()
	if be.conv != nil {
		if err := be.conv.Close(); err != nil {
			be.c.log.Warn("close agent conversation", "err", err)
		}
		be.conv = nil
	}
	be.c.slot.release()
}

// deleteConversation closes the agent conversation and deletes it in the
// backend too, when the backend can (closedChats "delete").
func (be *backends) deleteConversation(ctx context.Context) {
	c := be.c
	if be.conv != nil {
		_ = be.conv.Close()
		be.conv = nil
	}
	c.slot.release()
	if c.cfg.Agent == nil || !be.caps.Delete || c.record.ConversationID == "" {
		return
	}
	if err := c.cfg.Agent.Delete(ctx, c.record.ConversationID, c.cfg.Directories); err != nil {
		c.log.Warn("delete agent conversation", "conversation", c.record.ConversationID, "err", err)
	}
}

// revokeTools revokes the chat's host-tools credential, if one was minted.
func (be *backends) revokeTools() {
	if be.revoke != nil {
		be.revoke()
	}
}
