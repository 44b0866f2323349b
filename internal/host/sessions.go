package host

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/session"
	"github.com/ahpd/ahpd/internal/store"
	"github.com/google/uuid"
)

const (
	listSessionsMax = 500
	// listSessionsDefault is the page a client that names no limit gets:
	// never more than one that asks for the most (issue 18).
	listSessionsDefault = listSessionsMax
)

// createSession makes a session under the URI the client chose, with its
// first chat (C-FIRST-01, 02), stores both, then announces it.
func (h *Host) createSession(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
	var p ahp.CreateSessionParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := requireChannel(p.Channel, false); err != nil {
		return nil, err
	}
	if !cl.principal.Can("session:create") {
		return nil, ahp.Errorf(ahp.ErrPermissionDenied, "creating a session needs the grant session:create")
	}
	if !ahp.IsSessionURI(p.Channel) {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.channel: %q is not a session URI", p.Channel)
	}
	// A session id names a folder (attachments): dot names and separators
	// would share or escape one.
	if id, _ := ahp.SessionID(p.Channel); strings.Trim(id, ".") == "" || strings.ContainsAny(id, "/\\\x00") {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.channel: session id %q is not allowed", id)
	}
	provider := p.Provider
	if provider == "" {
		provider = ahp.SessionProviderScheme(p.Channel)
		if _, ok := h.opts.Agents.Get(provider); !ok {
			provider = h.opts.DefaultProvider
		}
	}
	if _, ok := h.opts.Agents.Get(provider); !ok {
		return nil, fmt.Errorf("%w: %s", ahp.ErrProviderNotFound, provider)
	}
	dirs := p.Directories()
	if len(dirs) == 0 && len(h.opts.Paths) > 0 {
		dirs = []string{ahp.FileURI(h.opts.Paths[0])}
	}
	for i, d := range dirs {
		path, err := ahp.LocalPath(d)
		if err != nil {
			return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.workingDirectories[%d]: %v", i, err)
		}
		if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%w: working directory %s", ahp.ErrNotFound, d)
		}
		if !h.paths.holds(path) {
			return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.workingDirectories[%d]: %s is outside the daemon's served paths", i, d)
		}
		dirs[i] = ahp.FileURI(path)
	}
	if ac := p.ActiveClient; ac != nil && ac.ClientID == "" {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.activeClient.clientId: required")
	}
	h.progress(cl, p.ProgressToken, 1, "checking the "+provider+" agent")
	h.root.probeAgents(ctx)
	if _, exists := h.cat.session(p.Channel); exists {
		return nil, fmt.Errorf("%w: %s", ahp.ErrSessionAlreadyExists, p.Channel)
	}
	if _, found, err := h.opts.Env.Store.Session(ctx, p.Channel); err != nil {
		return nil, err
	} else if found {
		return nil, fmt.Errorf("%w: %s", ahp.ErrSessionAlreadyExists, p.Channel)
	}
	now := h.opts.Env.Now()
	id, _ := ahp.SessionID(p.Channel)
	rec := store.SessionRecord{
		URI: p.Channel, Provider: provider, Title: chat.DefaultTitle,
		CreatedAt: now, ModifiedAt: now, WorkingDirectories: dirs, Owner: cl.principal.Sender,
	}
	// The session's config: the schema of what its backend takes, and the
	// values the client chose over the defaults (resolveSessionConfig).
	firstDir := ""
	if len(dirs) > 0 {
		firstDir, _ = ahp.LocalPath(dirs[0])
	}
	schema, values := h.config.schema(ctx, provider, firstDir, p.Config)
	raw, err := json.Marshal(ahp.SessionConfig{Schema: schema, Values: values})
	if err != nil {
		return nil, fmt.Errorf("create session %s: config: %w", p.Channel, err)
	}
	rec.Config = raw
	if err := h.opts.Env.Store.PutSession(ctx, rec); err != nil {
		return nil, fmt.Errorf("create session %s: %w", p.Channel, err)
	}
	h.progress(cl, p.ProgressToken, 2, "session stored; opening its chat")
	s, err := h.openSession(ctx, rec)
	if err != nil {
		return nil, fmt.Errorf("create session %s: %w", p.Channel, err)
	}
	first := store.ChatRecord{
		URI:            firstChatURI(p.Channel),
		Title:          chat.DefaultTitle,
		ConversationID: conversationIDFor(id),
		CreatedAt:      now,
		ModifiedAt:     now,
	}
	if err := s.AddChat(ctx, first); err != nil {
		return nil, fmt.Errorf("create session %s: %w", p.Channel, err)
	}
	if ac := p.ActiveClient; ac != nil {
		// The creating client is the session's first participant.
		if err := s.Dispatch(cl.chatClient(), 0, ahp.SessionActiveClientSet{ActiveClient: *ac}); err != nil {
			return nil, fmt.Errorf("create session %s: active client: %w", p.Channel, err)
		}
	}
	sum, err := s.Summary(ctx)
	if err != nil {
		return nil, err
	}
	h.cat.putSummary(p.Channel, sum)
	legacy := &ahp.SessionAddedParams{Channel: ahp.RootURI, Summary: sum}
	legacy.Summary.Chats, legacy.Summary.DefaultChat = nil, ""
	h.root.notifySessions("root/sessionAdded", &ahp.SessionAddedParams{Channel: ahp.RootURI, Summary: sum}, legacy)
	h.progress(cl, p.ProgressToken, createProgress, "session ready")
	return struct{}{}, nil
}

// conversationIDFor: the session URI's id is the first chat's backend
// conversation id when it is a UUID, so a backend's transcript lines up
// with the session; otherwise a fresh one.
func conversationIDFor(id string) string {
	if _, err := uuid.Parse(id); err == nil {
		return id
	}
	return uuid.NewString()
}

// firstChatURI mints a new session's first chat as VS Code's host mints
// it: the derived ahp-chat://default/<base64url(session)> for a VS Code
// window, which computes that URI from the session on its own, and an
// opaque ahp-chat:/<uuid> for every other client (C-FIRST-01, 02).
//
// A VS Code window is recognised by the URI dialect it speaks: it names
// sessions <provider>:/<uuid>, where other clients use ahp-session:/
// (CHATS.md reading 17, docs/CHATS.md).
func firstChatURI(sessionURI string) string {
	if ahp.SessionProviderScheme(sessionURI) != "" {
		return ahp.DefaultChatURI(sessionURI)
	}
	return ahp.OpaqueChatURI(uuid.NewString())
}

// resolveChat finds the session and actor of a chat URI. An unknown chat is
// -32001 "Resource not found: <uri>" (C-FIRST-10). The derived default
// URI names the session's chat only while the session records no other
// default (C-FIRST-05..09); an opaque URI never names a session
// (C-FIRST-16).
func (h *Host) resolveChat(ctx context.Context, uri string) (*session.Session, *chat.Chat, error) {
	notFound := fmt.Errorf("%w: %s", ahp.ErrResourceNotFound, uri)
	_, s, _ := h.cat.chatSession(uri)
	if s == nil {
		parsed, err := ahp.ParseChatURI(uri)
		if err != nil || parsed.Kind != ahp.ChatURIDefault {
			return nil, nil, notFound
		}
		sess, live := h.sessionOrCatalogue(ctx, parsed.Session)
		if !live {
			return nil, nil, notFound
		}
		def, err := sess.DefaultChat(ctx)
		if err != nil {
			return nil, nil, notFound
		}
		if def != "" && def != uri {
			return nil, nil, notFound
		}
		if def == "" {
			// The session records no default chat: the derived URI is its
			// chat, minted now.
			id, _ := ahp.SessionID(parsed.Session)
			now := h.opts.Env.Now()
			rec := store.ChatRecord{URI: uri, Title: chat.DefaultTitle, ConversationID: conversationIDFor(id), CreatedAt: now, ModifiedAt: now}
			if err := sess.AddChat(ctx, rec); err != nil {
				return nil, nil, err
			}
		}
		s = sess
	}
	c, err := s.Chat(ctx, uri)
	if err != nil {
		return nil, nil, err
	}
	return s, c, nil
}

// disposeSession ends a session and every chat of it.
func (h *Host) disposeSession(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
	var p ahp.DisposeSessionParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := requireChannel(p.Channel, false); err != nil {
		return nil, err
	}
	if !cl.principal.Can("session:dispose") {
		return nil, ahp.Errorf(ahp.ErrPermissionDenied, "disposing a session needs the grant session:dispose")
	}
	s, chats, ok := h.cat.remove(p.Channel)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ahp.ErrResourceNotFound, p.Channel)
	}
	if err := s.Close(ctx); err != nil {
		h.log.Warn("close disposed session", "session", p.Channel, "err", err)
	}
	if err := h.opts.Env.Store.Flush(ctx); err != nil {
		return nil, err
	}
	if err := h.opts.Env.Store.DeleteSession(ctx, p.Channel); err != nil {
		return nil, fmt.Errorf("dispose session %s: %w", p.Channel, err)
	}
	h.bus.DropChannel(p.Channel)
	for _, c := range chats {
		h.bus.DropChannel(c)
	}
	removed := &ahp.SessionRemovedParams{Channel: ahp.RootURI, Session: p.Channel}
	h.root.notifySessions("root/sessionRemoved", removed, removed)
	return struct{}{}, nil
}

// listSessions pages the catalogue, most recently modified first.
func (h *Host) listSessions(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
	var p ahp.ListSessionsParams
	if len(params) > 0 && string(params) != "null" {
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
	}
	if p.Channel != "" && !ahp.IsRootURI(p.Channel) {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.channel: must be %s", ahp.RootURI)
	}
	if !cl.principal.Can(auth.SessionList) {
		return nil, ahp.WithData(ahp.Errorf(ahp.ErrPermissionDenied, "listing sessions needs the grant %s", auth.SessionList), map[string]any{"grant": auth.SessionList})
	}
	limit := listSessionsDefault
	if p.Limit != nil {
		if *p.Limit <= 0 {
			return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.limit: must be positive")
		}
		limit = min(*p.Limit, listSessionsMax)
	}
	offset := 0
	if p.Cursor != "" {
		n, ok := parseListCursor(p.Cursor)
		if !ok {
			return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.cursor: unrecognized cursor %q", p.Cursor)
		}
		offset = n
	}
	items, more := h.cat.page(offset, limit)
	if !ahp.SummaryChatsKnownTo(cl.negotiated()) {
		for i := range items {
			items[i].Chats, items[i].DefaultChat = nil, ""
		}
	}
	res := ahp.ListSessionsResult{}
	if len(items) > 0 {
		res.Items = items
	}
	if more {
		res.NextCursor = listCursor(offset + len(items))
	}
	return res, nil
}

func listCursor(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("sessions:" + strconv.Itoa(offset)))
}

func parseListCursor(c string) (int, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(string(b), "sessions:"))
	if err != nil || n < 0 || !strings.HasPrefix(string(b), "sessions:") {
		return 0, false
	}
	return n, true
}

// createChat adds a chat to a session.
func (h *Host) createChat(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
	var p ahp.CreateChatParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := requireChannel(p.Channel, false); err != nil {
		return nil, err
	}
	if !cl.principal.Can(auth.ChatCreate) {
		return nil, ahp.Errorf(ahp.ErrPermissionDenied, "creating a chat needs the grant %s", auth.ChatCreate)
	}
	if p.Chat == "" {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.chat: required")
	}
	if _, err := ahp.ParseChatURI(p.Chat); err != nil {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.chat: %v", err)
	}
	s, ok := h.cat.session(p.Channel)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ahp.ErrResourceNotFound, p.Channel)
	}
	owner, _, taken := h.cat.chatSession(p.Chat)
	if taken && owner != p.Channel {
		return nil, fmt.Errorf("%w: chat %s belongs to another session", ahp.ErrAlreadyExists, p.Chat)
	}
	if err := s.CreateChat(ctx, p, cl.chatClient()); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// disposeChat closes a chat; the default chat and a chat this host does
// not hold answer null and nothing is removed (C-CMD-08, 09).
func (h *Host) disposeChat(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
	var p ahp.DisposeChatParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := requireChannel(p.Channel, false); err != nil {
		return nil, err
	}
	if !cl.principal.Can(auth.ChatDispose) {
		return nil, ahp.Errorf(ahp.ErrPermissionDenied, "closing a chat needs the grant %s", auth.ChatDispose)
	}
	_, s, ok := h.cat.chatSession(p.Channel)
	if !ok || s == nil {
		return nil, nil
	}
	if _, err := s.DisposeChat(ctx, p.Channel); err != nil {
		return nil, err
	}
	return nil, nil
}

// fetchTurns publishes the next older page as chat/turnsLoaded before it
// answers {} (C-CMD-13, 14).
func (h *Host) fetchTurns(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
	var p ahp.FetchTurnsParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := requireChannel(p.Channel, false); err != nil {
		return nil, err
	}
	if !cl.principal.Can(auth.ChatTurns) {
		return nil, ahp.Errorf(ahp.ErrPermissionDenied, "reading turns needs the grant %s", auth.ChatTurns)
	}
	if err := h.onChat(ctx, p.Channel, func(c *chat.Chat) error { return c.FetchTurns(ctx, p.Cursor) }); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// onChat runs fn on the actor of chat uri; when the actor it reached was
// unloading (idle) or closing, it runs fn again on the one that replaces it.
func (h *Host) onChat(ctx context.Context, uri string, fn func(*chat.Chat) error) error {
	for attempt := 0; ; attempt++ {
		_, c, err := h.resolveChat(ctx, uri)
		if err != nil {
			return err
		}
		h.actors.remember(uri, c)
		err = fn(c)
		if errors.Is(err, chat.ErrClosed) && attempt < 3 {
			continue
		}
		return err
	}
}
