package host

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/attach"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/hosttools"
)

var _ hosttools.Host = (*Host)(nil)

// ToolsHandler serves the host's tools to agents (mount it at
// hosttools.Path on the daemon's port).
func (h *Host) ToolsHandler() http.Handler { return h.tools }

// SetToolsURL tells the host where its tools are served, once the daemon
// listens; until then no conversation is offered them.
func (h *Host) SetToolsURL(url string) { h.toolsURL.Store(&url) }

// toolsFor mints a chat's credential for the host's tools.
func (h *Host) toolsFor(session, chatURI string) (*agent.HostTools, func(), error) {
	url := h.toolsURL.Load()
	if url == nil || *url == "" {
		return nil, nil, fmt.Errorf("host tools are not served yet")
	}
	tok, err := h.tools.Grant(hosttools.Caller{Session: session, Chat: chatURI})
	if err != nil {
		return nil, nil, err
	}
	return &agent.HostTools{URL: *url, Token: tok, ServerName: hosttools.ServerName, Names: hosttools.Names},
		func() { h.tools.Revoke(tok) }, nil
}

// sessionOf is the session a chat belongs to ("" when none here holds it).
func (h *Host) sessionOf(chatURI string) string {
	uri, _, _ := h.cat.chatSession(chatURI)
	return uri
}

// RenameChat renames a chat of the caller's session (C-COMP-30): the
// chat's actor stores the title and every client is told.
func (h *Host) RenameChat(ctx context.Context, caller hosttools.Caller, chatURI, title string) error {
	if !ahp.IsChatURI(chatURI) || h.sessionOf(chatURI) != caller.Session {
		return fmt.Errorf("%s is not a chat of this session", chatURI)
	}
	return h.onChat(ctx, chatURI, func(c *chat.Chat) error { return c.SetTitle(title, false) })
}

// ChatContext is the transcript a #chat: pointer names, read as the
// caller's session's owner would: a chat of a session of the same owner
// (any chat for a session root started).
func (h *Host) ChatContext(ctx context.Context, caller hosttools.Caller, chatURI, endTurn string) (string, error) {
	target := h.sessionOf(chatURI)
	if target == "" {
		return "", fmt.Errorf("%s: %s", ahp.ErrResourceNotFound.Message, chatURI)
	}
	if target != caller.Session {
		own, err1 := h.ownerOf(ctx, caller.Session)
		theirs, err2 := h.ownerOf(ctx, target)
		if err1 != nil || err2 != nil || (!strings.HasPrefix(own, "root:") && own != "" && own != theirs) {
			return "", fmt.Errorf("%s is not this session's to read", chatURI)
		}
	}
	st, running := h.chatStateFor(ctx, chatURI)
	if !running {
		return "", fmt.Errorf("%s cannot be read now", chatURI)
	}
	return attach.ChatExcerpt(st, endTurn)
}

// ownerOf is who started a session ("user:<id>", "root:<host>", or "").
func (h *Host) ownerOf(ctx context.Context, session string) (string, error) {
	rec, found, err := h.opts.Env.Store.Session(ctx, session)
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("%s: %s", ahp.ErrResourceNotFound.Message, session)
	}
	return rec.Owner, nil
}
