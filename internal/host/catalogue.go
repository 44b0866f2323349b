package host

import (
	"context"
	"fmt"
	"os"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/session"
	"github.com/ahpd/ahpd/internal/store"
)

// sessionOrCatalogue returns the live session of uri or, when the host has
// never registered it, one a backend's catalogue holds under the id the
// URI carries (C-FIRST-08, 09): it is registered now, with its first chat
// on the backend's conversation, and read back from its transcript when
// the chat opens.
func (h *Host) sessionOrCatalogue(ctx context.Context, uri string) (*session.Session, bool) {
	if s, ok := h.session(uri); ok {
		return s, true
	}
	id, ok := ahp.SessionID(uri)
	if !ok {
		return nil, false
	}
	h.catalogueMu.Lock()
	defer h.catalogueMu.Unlock()
	if s, ok := h.session(uri); ok {
		return s, true
	}
	if _, found, err := h.opts.Env.Store.Session(ctx, uri); err != nil || found {
		// A stored session is live from start-up; one found now is being
		// disposed.
		return nil, false
	}
	providers := h.opts.Agents.Providers()
	if p := ahp.SessionProviderScheme(uri); p != "" {
		providers = []string{p}
	}
	for _, p := range providers {
		a, ok := h.opts.Agents.Get(p)
		if !ok {
			continue
		}
		cat, ok := a.(agent.Catalogue)
		if !ok {
			continue
		}
		info, found, err := cat.FindConversation(ctx, id)
		if err != nil {
			h.log.Warn("catalogue lookup", "provider", p, "id", id, "err", err)
			continue
		}
		if !found {
			continue
		}
		s, err := h.registerFromCatalogue(ctx, uri, p, info)
		if err != nil {
			h.log.Warn("register a catalogue session", "session", uri, "err", err)
			return nil, false
		}
		return s, true
	}
	return nil, false
}

func (h *Host) registerFromCatalogue(ctx context.Context, uri, provider string, info agent.ConversationInfo) (*session.Session, error) {
	dir := info.Directory
	if fi, err := os.Stat(dir); dir == "" || err != nil || !fi.IsDir() {
		if len(h.opts.Paths) == 0 {
			return nil, fmt.Errorf("no directory for %s", uri)
		}
		dir = h.opts.Paths[0]
	}
	title := chat.CleanTitle(info.Title)
	if title == "" {
		title = chat.DefaultTitle
	}
	rec := store.SessionRecord{
		URI: uri, Provider: provider, Title: title, CreatedAt: info.Created, ModifiedAt: info.Modified,
		WorkingDirectories: []string{ahp.FileURI(dir)},
	}
	if err := h.opts.Env.Store.PutSession(ctx, rec); err != nil {
		return nil, err
	}
	s, err := h.openSession(ctx, rec)
	if err != nil {
		return nil, err
	}
	first := store.ChatRecord{
		URI: firstChatURI(uri), Title: title, ConversationID: info.ID,
		CreatedAt: info.Created, ModifiedAt: info.Modified,
		// The backend holds this conversation: the chat resumes it.
		Meta: chat.RecordMeta{BackendStarted: true}.Raw(),
	}
	if err := s.AddChat(ctx, first); err != nil {
		return nil, err
	}
	sum, err := s.Summary(ctx)
	if err != nil {
		return nil, err
	}
	h.sessionsMu.Lock()
	h.summaries.put(uri, sum)
	h.sessionsMu.Unlock()
	legacy := &ahp.SessionAddedParams{Channel: ahp.RootURI, Summary: sum}
	legacy.Summary.Chats, legacy.Summary.DefaultChat = nil, ""
	h.root.notifySessions("root/sessionAdded", &ahp.SessionAddedParams{Channel: ahp.RootURI, Summary: sum}, legacy)
	h.log.Info("registered a session from the catalogue", "session", uri, "provider", provider, "conversation", info.ID)
	return s, nil
}
