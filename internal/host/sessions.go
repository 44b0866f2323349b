package host

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/ahpd/ahpd/internal/canvas"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/env"
	"github.com/ahpd/ahpd/internal/lockorder"
	"github.com/ahpd/ahpd/internal/session"
	"github.com/ahpd/ahpd/internal/sessionconfig"
	"github.com/ahpd/ahpd/internal/store"
	"github.com/google/uuid"
)

const (
	listSessionsMax = 500
	// listSessionsDefault is the page a client that names no limit gets:
	// never more than one that asks for the most (issue 18).
	listSessionsDefault = listSessionsMax
)

// sessionDesk keeps the sessions: it opens their actors and lists them in
// the catalogue, finds the actor of a chat (onChat, which every family
// that reaches a chat goes through), registers a session a backend's
// catalogue holds (catalogue.go), tells root watchers what changed, and
// answers the session commands (createSession, disposeSession,
// listSessions, createChat, disposeChat, fetchTurns).
type sessionDesk struct {
	env             *env.Env
	log             *slog.Logger
	bus             *bus.Bus
	agents          *agent.Registry
	settings        map[string]json.RawMessage
	defaultProvider string
	closedChats     string
	paths           servedPaths

	// tell (rank lockorder.HostTell) is held across a catalogue update and
	// the root notification that says it, so a session's changes are
	// never heard before the session (announce).
	tell lockorder.Mutex

	cat      *catalogue
	actors   *actors
	root     *rootDesk
	config   *configDesk
	tools    *toolDesk
	canvases *canvas.Plugins
	git      *gitDesk
}

// createSession makes a session under the URI the client chose, with its
// first chat (C-FIRST-01, 02), stores both, then announces it.
func (d *sessionDesk) createSession(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
	var p ahp.CreateSessionParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := requireChannel(p.Channel, false); err != nil {
		return nil, err
	}
	if _, err := d.create(ctx, cl, cl.principal, p, nil); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// create makes the session p asks for, as principal, and returns its
// first chat: for cl, a client's createSession; with cl nil, the host's
// own for an agent's create_session tool (by names the session it was
// delegated from), which seeds no active client and reports no progress.
func (d *sessionDesk) create(ctx context.Context, cl *client, principal auth.Principal, p ahp.CreateSessionParams, by *session.CreatedBy) (string, error) {
	if !principal.Can("session:create") {
		return "", ahp.Errorf(ahp.ErrPermissionDenied, "creating a session needs the grant session:create")
	}
	if !ahp.IsSessionURI(p.Channel) {
		return "", ahp.Errorf(ahp.ErrInvalidParams, "params.channel: %q is not a session URI", p.Channel)
	}
	// A session id names a folder (attachments): dot names and separators
	// would share or escape one.
	if id, _ := ahp.SessionID(p.Channel); strings.Trim(id, ".") == "" || strings.ContainsAny(id, "/\\\x00") {
		return "", ahp.Errorf(ahp.ErrInvalidParams, "params.channel: session id %q is not allowed", id)
	}
	provider := p.Provider
	if provider == "" {
		provider = ahp.SessionProviderScheme(p.Channel)
		if _, ok := d.agents.Get(provider); !ok {
			provider = d.defaultProvider
		}
	}
	if _, ok := d.agents.Get(provider); !ok {
		return "", fmt.Errorf("%w: %s", ahp.ErrProviderNotFound, provider)
	}
	if err := ahp.CheckCreationCarrier(&p); err != nil {
		return "", err
	}
	if err := ahp.CheckRepositories("params.repositories", p.Repositories, d.git.repositoryCapabilities(), p.Config); err != nil {
		return "", err
	}
	if p.Repositories != nil {
		if !principal.Can(auth.SessionClone) {
			return "", ahp.Errorf(ahp.ErrPermissionDenied, "creating a session from repositories needs the grant %s", auth.SessionClone)
		}
		if sessionconfig.Isolation(p.Config) == sessionconfig.IsolationWorktree {
			return "", ahp.Errorf(ahp.ErrInvalidParams, "params.config.isolation: a session cloned from repositories works in its own clone; leave isolation out")
		}
	}
	dirs := p.Directories()
	if len(dirs) == 0 && len(d.paths) > 0 && p.Repositories == nil {
		dirs = []string{ahp.FileURI(d.paths[0])}
	}
	for i, dir := range dirs {
		path, err := ahp.LocalPath(dir)
		if err != nil {
			return "", ahp.Errorf(ahp.ErrInvalidParams, "params.workingDirectories[%d]: %v", i, err)
		}
		if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("%w: working directory %s", ahp.ErrNotFound, dir)
		}
		if !d.paths.holds(path) {
			return "", ahp.Errorf(ahp.ErrInvalidParams, "params.workingDirectories[%d]: %s is outside the daemon's served paths", i, dir)
		}
		dirs[i] = ahp.FileURI(path)
	}
	if ac := p.ActiveClient; ac != nil && ac.ClientID == "" {
		return "", ahp.Errorf(ahp.ErrInvalidParams, "params.activeClient.clientId: required")
	} else if ac != nil && (cl == nil || ac.ClientID != cl.ClientID()) {
		// A connection seeds itself, never another client it cannot speak for.
		return "", ahp.Errorf(ahp.ErrInvalidParams, "params.activeClient.clientId: %s is not this connection's client", ac.ClientID)
	}
	if f := p.Fork; f != nil {
		// AHP 0.9 moved forking to chats (createChat with a fork source);
		// a fork of a session that does not exist is refused as missing,
		// and one of a session that does is answered with the way to do it.
		if f.Session == p.Channel {
			return "", fmt.Errorf("%w: %s cannot fork onto itself", ahp.ErrSessionAlreadyExists, p.Channel)
		}
		if !d.cat.known(f.Session) {
			return "", fmt.Errorf("%w: %s", ahp.ErrResourceNotFound, f.Session)
		}
		return "", ahp.Errorf(ahp.ErrInvalidParams, "params.fork: sessions are not forked since AHP 0.9; fork a chat with createChat and a fork source")
	}
	progress(cl, p.ProgressToken, 1, "checking the "+provider+" agent")
	d.root.probeAgents(ctx)
	if d.cat.known(p.Channel) {
		return "", fmt.Errorf("%w: %s", ahp.ErrSessionAlreadyExists, p.Channel)
	}
	if _, found, err := d.env.Store.Session(ctx, p.Channel); err != nil {
		return "", err
	} else if found {
		return "", fmt.Errorf("%w: %s", ahp.ErrSessionAlreadyExists, p.Channel)
	}
	// A repository-backed session's clone is made first: it is the
	// folder the session's config and sandbox are resolved for. Until the
	// session is stored, a work tree made for it is undone on failure.
	var gitRec *store.SessionGit
	created := false
	defer func() {
		if !created {
			d.git.abandon(context.WithoutCancel(ctx), gitRec)
		}
	}()
	if len(p.Repositories) > 0 {
		progress(cl, p.ProgressToken, 1, "cloning "+string(p.Repositories[0].Source))
		workDir, rec, err := d.git.prepareClone(ctx, p.Channel, p.Repositories[0], d.paths)
		if err != nil {
			return "", err
		}
		gitRec, dirs = rec, []string{ahp.FileURI(workDir)}
	}
	now := d.env.Now()
	id, _ := ahp.SessionID(p.Channel)
	rec := store.SessionRecord{
		URI: p.Channel, Provider: provider, Title: chat.DefaultTitle,
		CreatedAt: now, ModifiedAt: now, WorkingDirectories: dirs, Owner: principal.Sender,
	}
	// The session's config: the schema of what its backend takes, and the
	// values the client chose over the defaults (resolveSessionConfig).
	firstDir := ""
	if len(dirs) > 0 {
		firstDir, _ = ahp.LocalPath(dirs[0])
	}
	schema, values := d.config.schema(ctx, provider, firstDir, p.Config)
	if err := d.config.checkSandbox(ctx, p.Channel, provider, dirs, values); err != nil {
		return "", err
	}
	rec.Meta = recordMeta(values, p.Repositories, by)
	raw, err := json.Marshal(ahp.SessionConfig{Schema: schema, Values: values})
	if err != nil {
		return "", fmt.Errorf("create session %s: config: %w", p.Channel, err)
	}
	rec.Config = raw
	// A session in a git repository is a git session; one asked for a
	// worktree works in a new one, made here, before it is stored or
	// announced (gitsessions.go).
	workDir := firstDir
	if gitRec == nil {
		if workDir, gitRec, err = d.git.prepare(ctx, p.Channel, firstDir, p.Config, values); err != nil {
			return "", err
		}
	}
	if workDir != firstDir {
		progress(cl, p.ProgressToken, 1, "worktree made at "+workDir)
		rec.WorkingDirectories = append([]string{ahp.FileURI(workDir)}, rec.WorkingDirectories[1:]...)
	}
	if gitRec != nil {
		if err := d.git.put(ctx, gitRec); err != nil {
			return "", fmt.Errorf("create session %s: %w", p.Channel, err)
		}
	}
	if err := d.env.Store.PutSession(ctx, rec); err != nil {
		return "", fmt.Errorf("create session %s: %w", p.Channel, err)
	}
	created = true
	progress(cl, p.ProgressToken, 2, "session stored; opening its chat")
	s, err := d.open(ctx, rec, false)
	if err != nil {
		return "", fmt.Errorf("create session %s: %w", p.Channel, err)
	}
	first := store.ChatRecord{
		URI:            firstChatURI(p.Channel),
		Title:          chat.DefaultTitle,
		ConversationID: conversationIDFor(id),
		CreatedAt:      now,
		ModifiedAt:     now,
	}
	if err := s.AddChat(ctx, first); err != nil {
		return "", fmt.Errorf("create session %s: %w", p.Channel, err)
	}
	if ac := p.ActiveClient; ac != nil {
		// The creating client is the session's first participant.
		if err := s.Dispatch(cl.chatClient(), 0, ahp.SessionActiveClientSet{ActiveClient: *ac}); err != nil {
			return "", fmt.Errorf("create session %s: active client: %w", p.Channel, err)
		}
	}
	sum, err := s.Summary(ctx)
	if err != nil {
		return "", err
	}
	d.announce(p.Channel, sum)
	progress(cl, p.ProgressToken, createProgress, "session ready")
	return first.URI, nil
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
func (d *sessionDesk) resolveChat(ctx context.Context, uri string) (*session.Session, *chat.Chat, error) {
	notFound := fmt.Errorf("%w: %s", ahp.ErrResourceNotFound, uri)
	owner, s, known := d.cat.chatSession(uri)
	if s == nil && known {
		s, _ = d.cat.live(ctx, owner)
	}
	if s == nil {
		parsed, err := ahp.ParseChatURI(uri)
		if err != nil || parsed.Kind != ahp.ChatURIDefault {
			return nil, nil, notFound
		}
		sess, live := d.orCatalogue(ctx, parsed.Session)
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
			now := d.env.Now()
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
func (d *sessionDesk) disposeSession(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
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
	// The registration claim keeps a stored session from opening while it
	// goes (catalogue.live); an open one has no claim to take.
	if _, done, err := d.cat.register(ctx, p.Channel); err != nil {
		return nil, err
	} else if done != nil {
		defer done()
	}
	s, chats, ok := d.cat.remove(p.Channel)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ahp.ErrResourceNotFound, p.Channel)
	}
	if s != nil {
		if err := s.Close(ctx); err != nil {
			d.log.Warn("close disposed session", "session", p.Channel, "err", err)
		}
	}
	if err := d.env.Store.Flush(ctx); err != nil {
		return nil, err
	}
	if err := d.env.Store.DeleteSession(ctx, p.Channel); err != nil {
		return nil, fmt.Errorf("dispose session %s: %w", p.Channel, err)
	}
	// A worktree of its own goes when nothing would be lost; one holding
	// changes or commits is kept and recorded (ahpd worktrees).
	d.git.dispose(ctx, p.Channel)
	d.tools.forgetSpawns(p.Channel)
	d.bus.DropChannel(p.Channel)
	for _, c := range chats {
		d.bus.DropChannel(c)
	}
	if err := d.env.Sandbox.RemoveTemp(p.Channel); err != nil {
		d.log.Warn("remove the session's sandbox temp dir", "session", p.Channel, "err", err)
	}
	removed := &ahp.SessionRemovedParams{Channel: ahp.RootURI, Session: p.Channel}
	d.root.notifySessions("root/sessionRemoved", removed, removed)
	return struct{}{}, nil
}

// listSessions pages the catalogue, most recently modified first.
func (d *sessionDesk) listSessions(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
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
	items, more := d.cat.page(offset, limit)
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
func (d *sessionDesk) createChat(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
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
	if !d.cat.known(p.Channel) {
		return nil, fmt.Errorf("%w: %s", ahp.ErrResourceNotFound, p.Channel)
	}
	owner, _, taken := d.cat.chatSession(p.Chat)
	if taken && owner != p.Channel {
		return nil, fmt.Errorf("%w: chat %s belongs to another session", ahp.ErrAlreadyExists, p.Chat)
	}
	found, err := d.cat.onSession(ctx, p.Channel, func(s *session.Session) error { return s.CreateChat(ctx, p, cl.chatClient()) })
	if !found {
		return nil, fmt.Errorf("%w: %s", ahp.ErrResourceNotFound, p.Channel)
	}
	if err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// disposeChat closes a chat; the default chat and a chat this host does
// not hold answer null and nothing is removed (C-CMD-08, 09).
func (d *sessionDesk) disposeChat(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
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
	owner, _, ok := d.cat.chatSession(p.Channel)
	if !ok {
		return nil, nil
	}
	// The session may be unloaded, or unloading: onSession opens it (a
	// chat of a session not loaded is disposed as one of a loaded one).
	if _, err := d.cat.onSession(ctx, owner, func(s *session.Session) error {
		_, err := s.DisposeChat(ctx, p.Channel)
		return err
	}); err != nil {
		return nil, err
	}
	return nil, nil
}

// fetchTurns publishes the next older page as chat/turnsLoaded before it
// answers {} (C-CMD-13, 14).
func (d *sessionDesk) fetchTurns(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
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
	if err := d.onChat(ctx, p.Channel, func(c *chat.Chat) error { return c.FetchTurns(ctx, p.Cursor) }); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// onChat runs fn on the actor of chat uri; when the actor it reached was
// unloading (idle) or closing, it runs fn again on the one that replaces it.
func (d *sessionDesk) onChat(ctx context.Context, uri string, fn func(*chat.Chat) error) error {
	for attempt := 0; ; attempt++ {
		_, c, err := d.resolveChat(ctx, uri)
		if errors.Is(err, session.ErrClosed) && attempt < 3 {
			continue // its session unloaded meanwhile: it opens again
		}
		if err != nil {
			return err
		}
		d.actors.remember(uri, c)
		err = fn(c)
		if (errors.Is(err, chat.ErrClosed) || errors.Is(err, session.ErrClosed)) && attempt < 3 {
			continue
		}
		return err
	}
}

// open starts the actor of a stored session and indexes its chats.
func (d *sessionDesk) open(ctx context.Context, r store.SessionRecord, announced bool) (*session.Session, error) {
	a, _ := d.agents.Get(r.Provider)
	uri := r.URI
	changesets := d.git.catalogueAtOpen(ctx, uri)
	s, err := session.Open(ctx, session.Config{
		Served:      d.paths.holds,
		Record:      r,
		Agent:       a,
		Settings:    d.settings[r.Provider],
		Env:         d.env,
		ClosedChats: d.closedChats,
		HostTools:   func(chat string) (*agent.HostTools, func(), error) { return d.tools.grant(uri, chat) },
		Canvases:    d.canvases,
		OnSummary:   func(sum ahp.SessionSummary) { d.summaryChanged(uri, sum) },
		OnChatIndex: func(chat string, added bool) { d.cat.indexChat(chat, uri, added) },
		Changesets:  changesets,
		OnTurn:      func(chat, turn string, start bool) { d.git.onTurn(uri, chat, turn, start) },
		// A session in git keeps its actor: its changesets and summary
		// come from the work tree, not from its records.
		OnUnload: func(s *session.Session) { d.cat.unloaded(uri, s) },
		KeepOpen: changesets != nil,
	})
	if err != nil {
		return nil, err
	}
	sum, err := s.Summary(ctx)
	if err != nil {
		return nil, err
	}
	recs, err := s.ChatRecords(ctx)
	if err != nil {
		return nil, err
	}
	d.cat.add(uri, s, sum, recs, announced)
	d.git.opened(ctx, uri) // gitsessions.go
	return s, nil
}

// recoverRunningTurns opens every chat that has a turn left running, whose
// actor then ends it with chat/error.
func (d *sessionDesk) recoverRunningTurns(ctx context.Context) error {
	running, err := d.env.Store.RunningTurns(ctx)
	if err != nil {
		return fmt.Errorf("find interrupted turns: %w", err)
	}
	for _, t := range running {
		if _, _, err := d.resolveChat(ctx, t.Chat); err != nil {
			d.log.Warn("interrupted turn of an unknown chat", "chat", t.Chat, "turn", t.ID, "err", err)
		}
	}
	return nil
}

// summaryChanged keeps the catalogue entry and tells root watchers
// what changed (root/sessionSummaryChanged).
func (d *sessionDesk) summaryChanged(uri string, sum ahp.SessionSummary) {
	d.tell.Lock()
	defer d.tell.Unlock()
	old, ok, told := d.cat.updateSummary(uri, sum)
	if !ok || !told {
		return
	}
	changes, changed := ahp.DiffSessionSummary(old, sum)
	if !changed {
		return
	}
	full := &ahp.SessionSummaryChangedParams{Channel: ahp.RootURI, Session: uri, Changes: changes}
	legacy := *full
	legacy.Changes.Chats, legacy.Changes.DefaultChat = nil, nil
	if jsonString(legacy.Changes) == "{}" {
		d.root.notifySessions("root/sessionSummaryChanged", full, nil)
		return
	}
	d.root.notifySessions("root/sessionSummaryChanged", full, &legacy)
}

// chatState reads the state of a chat this host runs: one its chat
// index holds, its session loaded or not. A chat the index does not hold
// is not running here.
func (d *sessionDesk) chatState(ctx context.Context, uri string) (ahp.ChatState, bool) {
	if _, _, ok := d.cat.chatSession(uri); !ok {
		return ahp.ChatState{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	var st ahp.ChatState
	err := d.onChat(ctx, uri, func(c *chat.Chat) (err error) {
		st, err = c.State(ctx)
		return err
	})
	if err != nil {
		d.log.Debug("chat attachment: chat not readable", "chat", uri, "err", err)
		return ahp.ChatState{}, false
	}
	return st, true
}

// progressParams is root/progress (AHP 0.5.0): how far a createSession
// that carried a progressToken has come.
type progressParams struct {
	Channel       string `json:"channel"`
	ProgressToken string `json:"progressToken"`
	Progress      int    `json:"progress"`
	Total         int    `json:"total,omitempty"`
	Message       string `json:"message,omitempty"`
}

// createProgress is the number of steps createSession reports.
const createProgress = 3

// progress tells cl alone, when it gave a progress token, that step of
// createProgress is reached.
func progress(cl *client, token string, step int, message string) {
	if token == "" || cl == nil {
		return
	}
	raw, err := json.Marshal(progressParams{Channel: ahp.RootURI, ProgressToken: token, Progress: step, Total: createProgress, Message: message})
	if err != nil {
		return
	}
	cl.Deliver("root/progress", raw)
}

// announce keeps a new session's summary (the one it reported once its
// first chat was added) and tells root watchers the session was added.
func (d *sessionDesk) announce(uri string, sum ahp.SessionSummary) {
	d.tell.Lock()
	defer d.tell.Unlock()
	if last, ok := d.cat.announced(uri); ok {
		// The newest the session reported while it was made (every
		// report is kept, none told), so nothing falls between this and
		// the changes told after it.
		sum = last
	} else {
		d.cat.putSummary(uri, sum)
	}
	legacy := &ahp.SessionAddedParams{Channel: ahp.RootURI, Summary: sum}
	legacy.Summary.Chats, legacy.Summary.DefaultChat = nil, ""
	d.root.notifySessions("root/sessionAdded", &ahp.SessionAddedParams{Channel: ahp.RootURI, Summary: sum}, legacy)
}
