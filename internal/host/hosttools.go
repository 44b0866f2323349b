package host

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/attach"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/env"
	"github.com/ahpd/ahpd/internal/hosttools"
	"github.com/ahpd/ahpd/internal/lockorder"
)

var _ hosttools.Host = (*Host)(nil)

// toolDesk is the host's tools for agents: the server, the credential each
// conversation gets, and the tools that act on chats (the canvas tools are
// canvases.go's).
type toolDesk struct {
	server *hosttools.Server
	// url is where the tools are served, once the daemon listens
	// (SetToolsURL).
	url      atomic.Pointer[string]
	env      *env.Env
	log      *slog.Logger
	cat      *catalogue
	sessions *sessionDesk
	// principals are the configured tokens' principals: who a session's
	// owner is when its agent delegates work (spawn.go).
	principals map[string]auth.Principal

	// spawnMu (rank lockorder.HostSpawns) guards spawned: how many times
	// each session's agents delegated work.
	spawnMu lockorder.Mutex
	spawned map[string]int
}

// ToolsHandler serves the host's tools to agents (mount it at
// hosttools.Path on the daemon's port).
// It waits for the catalogue (Host.restore) as the lanes do.
func (h *Host) ToolsHandler() http.Handler { return h.afterRestore(h.tools.server) }

// SetToolsURL tells the host where its tools are served, once the daemon
// listens; until then no conversation is offered them.
func (h *Host) SetToolsURL(url string) { h.tools.url.Store(&url) }

// RenameChat renames a chat of the caller's session (C-COMP-30): the
// chat's actor stores the title and every client is told.
func (h *Host) RenameChat(ctx context.Context, caller hosttools.Caller, chatURI, title string) error {
	return h.tools.renameChat(ctx, caller, chatURI, title)
}

// ChatContext is the transcript a #chat: pointer names, read as the
// caller's session's owner would: a chat of a session of the same owner
// (any chat for a session root started).
func (h *Host) ChatContext(ctx context.Context, caller hosttools.Caller, chatURI, endTurn string) (string, error) {
	return h.tools.chatContext(ctx, caller, chatURI, endTurn)
}

// grant mints a chat's credential for the host's tools.
func (d *toolDesk) grant(session, chatURI string) (*agent.HostTools, func(), error) {
	url := d.url.Load()
	if url == nil || *url == "" {
		return nil, nil, fmt.Errorf("host tools are not served yet")
	}
	tok, err := d.server.Grant(hosttools.Caller{Session: session, Chat: chatURI})
	if err != nil {
		return nil, nil, err
	}
	return &agent.HostTools{URL: *url, Token: tok, ServerName: hosttools.ServerName, Names: hosttools.Names, Confirm: hosttools.Confirm},
		func() { d.server.Revoke(tok) }, nil
}

// origin is the daemon's own http origin, from where its tools are
// served ("" until it listens).
func (d *toolDesk) origin() string {
	u := d.url.Load()
	if u == nil {
		return ""
	}
	return strings.TrimSuffix(*u, hosttools.Path)
}

// sessionOf is the session a chat belongs to ("" when none here holds it).
func (d *toolDesk) sessionOf(chatURI string) string {
	uri, _, _ := d.cat.chatSession(chatURI)
	return uri
}

func (d *toolDesk) renameChat(ctx context.Context, caller hosttools.Caller, chatURI, title string) error {
	if !ahp.IsChatURI(chatURI) || d.sessionOf(chatURI) != caller.Session {
		return fmt.Errorf("%s is not a chat of this session", chatURI)
	}
	return d.sessions.onChat(ctx, chatURI, func(c *chat.Chat) error { return c.SetTitle(title, false) })
}

func (d *toolDesk) chatContext(ctx context.Context, caller hosttools.Caller, chatURI, endTurn string) (string, error) {
	target := d.sessionOf(chatURI)
	if target == "" {
		return "", fmt.Errorf("%s: %s", ahp.ErrResourceNotFound.Message, chatURI)
	}
	if target != caller.Session {
		own, err1 := d.ownerOf(ctx, caller.Session)
		theirs, err2 := d.ownerOf(ctx, target)
		if err1 != nil || err2 != nil || (!strings.HasPrefix(own, "root:") && own != "" && own != theirs) {
			return "", fmt.Errorf("%s is not this session's to read", chatURI)
		}
	}
	st, running := d.sessions.chatState(ctx, chatURI)
	if !running {
		return "", fmt.Errorf("%s cannot be read now", chatURI)
	}
	return attach.ChatExcerpt(st, endTurn)
}

// ownerOf is who started a session ("user:<id>", "root:<host>", or "").
func (d *toolDesk) ownerOf(ctx context.Context, session string) (string, error) {
	rec, found, err := d.env.Store.Session(ctx, session)
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("%s: %s", ahp.ErrResourceNotFound.Message, session)
	}
	return rec.Owner, nil
}
