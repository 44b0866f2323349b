// Package session is the session actor: one goroutine per live session owns
// its SessionState (the chats catalogue, the default chat, the session's
// directories and flags) and the chat actors of its chats. The host routes
// session-channel requests and actions here and asks it for its chats.
package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/bug"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/ahpd/ahpd/internal/canvas"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/env"
	"github.com/ahpd/ahpd/internal/mailbox"
	"github.com/ahpd/ahpd/internal/reduce"
	"github.com/ahpd/ahpd/internal/sessionconfig"
	"github.com/ahpd/ahpd/internal/store"
)

// ErrClosed is returned by a session that has been closed.
var ErrClosed = errors.New("session closed")

// Config is what a session actor needs.
type Config struct {
	// Served reports whether a local directory is inside the daemon's
	// served paths; nil takes any.
	Served   func(dir string) bool
	Record   store.SessionRecord
	Agent    agent.Agent // nil when the provider is not available here
	Settings json.RawMessage
	// Env is what every actor of the daemon shares (bus, store, logger,
	// clock, limits, attachment settings); handed to each chat unchanged.
	Env *env.Env
	// OnSummary receives the session's summary whenever it changes; called
	// from the actor's goroutine, must not block.
	OnSummary func(ahp.SessionSummary)
	// OnChatIndex tells the host which chats the session holds, so it can
	// route chat URIs (added true, removed false).
	OnChatIndex func(chat string, added bool)
	ClosedChats string // "hidden" | "delete"
	// HostTools hands each chat's conversations the host's tools (chat.Config).
	HostTools func(chat string) (*agent.HostTools, func(), error)
	// Canvases are the host's canvas plugins (chat.Config).
	Canvases canvas.Keeper
	// Changesets is the session's changeset catalogue as it opens (a git
	// session's; nil for none).
	Changesets []ahp.Changeset
	// OnTurn is told, on the chat actor's goroutine, that a turn of one of
	// the session's chats starts (start) or ended, before clients hear it
	// (chat.Config.OnTurn); nil for none.
	OnTurn func(chat, turn string, start bool)
	// OnUnload is told when the actor ended because the session had
	// nothing to do (unloadIfIdle): the host keeps the session listed and
	// opens it again when something needs it. Nil, or KeepOpen, keeps the
	// actor for the session's life.
	OnUnload func(*Session)
	KeepOpen bool
}

// Session is one session actor.
type Session struct {
	cfg      Config
	uri      string
	log      *slog.Logger
	inbox    *mailbox.Inbox
	stopping chan struct{}
	once     sync.Once

	// dirs is a snapshot of the session's directories that chat actors read
	// (atomically replaced by run whenever they change).
	dirs atomic.Pointer[[]string]
	// configValues is a snapshot of SessionState.config.values that chat
	// actors read when they open a conversation (replaced by run).
	configValues atomic.Pointer[map[string]any]
	// sandbox is the sandbox mode fixed at createSession (RecordMeta),
	// "" for a session stored before it was kept; set before the actor
	// starts and never written again.
	sandbox string

	// Owned by run.
	state       ahp.SessionState
	record      store.SessionRecord
	chats       map[string]*chatEntry
	annotations ahp.AnnotationsState // the <session>/annotations channel (annotations.go)
	// disposing counts the DisposeChat calls between their two steps on
	// the actor: the chat is out of chats but not yet said removed, and
	// the session must not unload in between (the second step would find
	// it closed and the removal would never be told or unindexed).
	disposing int
}

type chatEntry struct {
	record store.ChatRecord
	actor  *chat.Chat
}

// Open loads the session's chats and starts its actor.
func Open(ctx context.Context, cfg Config) (*Session, error) {
	if cfg.ClosedChats == "" {
		cfg.ClosedChats = "hidden"
	}
	s := &Session{
		cfg:      cfg,
		uri:      cfg.Record.URI,
		log:      cfg.Env.Logger.With("session", cfg.Record.URI),
		inbox:    mailbox.NewInbox(4096, ErrClosed, "session "+cfg.Record.URI),
		stopping: make(chan struct{}),
		record:   cfg.Record,
		chats:    make(map[string]*chatEntry),
	}
	recs, err := cfg.Env.Store.Chats(ctx, s.uri, false)
	if err != nil {
		return nil, fmt.Errorf("open session %s: %w", s.uri, err)
	}
	s.state = stateOf(cfg.Record, recs)
	if len(cfg.Record.Config) > 0 {
		var c ahp.SessionConfig
		if err := json.Unmarshal(cfg.Record.Config, &c); err != nil {
			return nil, fmt.Errorf("open session %s: config: %w", cfg.Record.URI, err)
		}
		s.state.Config = &c
	}
	s.state.Changesets = cfg.Changesets
	for _, r := range recs {
		s.chats[r.URI] = &chatEntry{record: r}
	}
	meta := ParseRecordMeta(cfg.Record.Meta)
	s.annotations.Annotations = meta.Annotations
	s.sandbox = meta.Sandbox
	// The config lives in state.Config from here on (recordOp writes it
	// from there), so neither record keeps its JSON: a kilobyte or two a
	// loaded session held twice over (BenchmarkIdleSessionMemory).
	s.cfg.Record = store.SessionRecord{}
	if s.state.Config != nil {
		s.record.Config = nil
	}
	s.publishDirs()
	go loop{s}.run()
	return s, nil
}

// stateOf is the state a session opens with, but its config: its record,
// and its open chats in catalogue order.
func stateOf(rec store.SessionRecord, chats []store.ChatRecord) ahp.SessionState {
	meta := ParseRecordMeta(rec.Meta)
	st := ahp.SessionState{
		Resource:           rec.URI,
		Provider:           rec.Provider,
		Title:              rec.Title,
		Status:             ahp.StatusIdle | ahp.SessionStatus(rec.Flags),
		WorkingDirectories: rec.WorkingDirectories,
		CreatedAt:          iso(rec.CreatedAt),
		ModifiedAt:         iso(rec.ModifiedAt),
		Lifecycle:          "ready",
		ActiveClients:      []ahp.ActiveClient{},
		Chats:              []ahp.ChatSummary{},
		DefaultChat:        rec.DefaultChat,
		// The repositories a session was created from are its intent,
		// kept exactly as accepted (ahp/repositories.go).
		Repositories: meta.Repositories,
	}
	if by := meta.CreatedBy; by != nil {
		st.Meta = map[string]any{CreatedByKey: map[string]any{"session": by.Session, "chat": by.Chat, "depth": by.Depth}}
	}
	for _, r := range chats {
		cs := summaryOfRecord(r)
		// A session was modified when its last chat was: each chat's
		// commit stores that, so the session record need not be written
		// for it on every turn (chatSummaryChanged).
		if cs.ModifiedAt > st.ModifiedAt {
			st.ModifiedAt = cs.ModifiedAt
		}
		st.Chats = append(st.Chats, cs)
	}
	if st.DefaultChat == "" && len(st.Chats) > 0 {
		st.DefaultChat = st.Chats[0].Resource
	}
	return st
}

// Summarize is the catalogue entry of a session that is not open: what
// Summary says of it once it opens from the same records. The host lists
// stored sessions from it without starting their actors.
func Summarize(rec store.SessionRecord, chats []store.ChatRecord) ahp.SessionSummary {
	st := stateOf(rec, chats)
	return summaryOfState(&st)
}

func summaryOfRecord(r store.ChatRecord) ahp.ChatSummary {
	cs := ahp.ChatSummary{
		Resource:           r.URI,
		Title:              r.Title,
		Status:             ahp.StatusIdle | ahp.SessionStatus(r.Flags),
		ModifiedAt:         iso(r.ModifiedAt),
		Interactivity:      r.Interactivity,
		WorkingDirectories: r.WorkingDirectories,
	}
	if len(r.Origin) > 0 {
		var o ahp.ChatOrigin
		if json.Unmarshal(r.Origin, &o) == nil {
			cs.Origin = &o
		}
	}
	return cs
}

func iso(t time.Time) string {
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// URI is the session's URI.
func (s *Session) URI() string { return s.uri }

// Ending reports whether the actor takes no more work (closing or
// unloading); Done follows.
func (s *Session) Ending() bool { return s.inbox != nil && s.inbox.Closed() }

// Done is closed when the actor has stopped.
func (s *Session) Done() <-chan struct{} { return s.inbox.Done() }

func (s *Session) do(fn func()) error { return s.inbox.Do(fn) }

// tell queues what a chat actor says to the session. It must not block the
// chat (the session may be waiting on it), and must not be lost: a full
// mailbox is a bug, reported. After Close nobody needs it.
func (s *Session) tell(what string, fn func()) {
	if err := s.do(fn); err != nil && !errors.Is(err, ErrClosed) {
		bug.Report(s.log, "session %s dropped %s: %v", s.uri, what, err)
	}
}

// call runs fn on the actor's goroutine and waits for it.
func (s *Session) call(ctx context.Context, fn func()) error { return s.inbox.Call(ctx, fn) }

// run is the session actor's loop; only it touches state, record and chats.
// loop is the session actor's goroutine: it runs what the inbox holds, in
// order, and ends the actor when the session is closed or has nothing to
// do (its own type, so Session's methods stay the session's API).
type loop struct{ s *Session }

func (l loop) run() {
	s := l.s
	defer s.inbox.Stopped()
	var batch []func()
	// The session looks every idle period whether it has anything to do;
	// what it was asked meanwhile does not count (a status read or the
	// metrics' count of open chats must not keep it loaded): what keeps
	// it are its loaded chats and its subscribers, which unloadIfIdle
	// checks.
	var idle <-chan time.Time
	if timeout := l.idleTimeout(); timeout > 0 {
		t := time.NewTicker(timeout)
		defer t.Stop()
		idle = t.C
	}
	for {
		select {
		case <-s.stopping:
			l.drain(batch)
			return
		case <-s.inbox.Wake():
			batch = l.runBatch(batch)
		case <-idle:
			if l.unloadIfIdle() {
				return
			}
		}
	}
}

func (l loop) runBatch(batch []func()) []func() {
	s := l.s
	batch = s.inbox.Pop(batch)
	for i, fn := range batch {
		bug.Recover(s.log, "session actor", fn)
		batch[i] = nil
	}
	return batch
}

func (l loop) drain(batch []func()) {
	s := l.s
	for _, fn := range s.inbox.Pop(batch) {
		fn()
	}
}

// idleTimeout is how long the session may have nothing to do before it
// unloads (the chats' chatIdleSeconds); 0 when it never does.
func (l loop) idleTimeout() time.Duration {
	s := l.s
	if s.cfg.OnUnload == nil || s.cfg.KeepOpen {
		return 0
	}
	d := s.cfg.Env.Limits.ChatIdle
	switch {
	case d < 0:
		return 0
	case d == 0:
		return chat.DefaultIdleTimeout
	}
	return d
}

// unloadIfIdle ends the actor when the session has nothing to do: no chat
// loaded or being disposed, nobody subscribed to it or its annotations, and nothing pushed
// since. Everything it holds is in the store; the host lists it from its
// summary and opens it again when something needs it. It reports whether
// the actor ended.
func (l loop) unloadIfIdle() bool {
	s := l.s
	if s.disposing > 0 {
		return false
	}
	for _, e := range s.chats {
		if e.actor != nil {
			return false
		}
	}
	bus := s.cfg.Env.Bus
	if bus.Subscribers(s.uri) > 0 || bus.Subscribers(ahp.AnnotationsURI(s.uri)) > 0 {
		return false
	}
	if !s.inbox.CloseIfEmpty() {
		return false
	}
	s.log.Debug("session idle: unloading")
	s.once.Do(func() { close(s.stopping) })
	s.cfg.OnUnload(s)
	return true
}

// Close stops every open chat and the actor.
func (s *Session) Close(ctx context.Context) error {
	var actors []*chat.Chat
	_ = s.call(ctx, func() {
		for _, e := range s.chats {
			if e.actor != nil {
				actors = append(actors, e.actor)
			}
		}
	})
	var errs []error
	for _, a := range actors {
		if err := a.Close(ctx, false); err != nil && !errors.Is(err, chat.ErrClosed) {
			errs = append(errs, err)
		}
	}
	s.once.Do(func() {
		s.inbox.Close()
		close(s.stopping)
	})
	select {
	case <-s.inbox.Done():
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

// apply runs a's reducer on the session state and publishes it. What a
// client must not lose (the title, flags, directories, the default chat) is
// committed first: publish only what is stored.
func (s *Session) apply(a ahp.Action, origin *ahp.ActionOrigin) {
	before := s.summary()
	reduce.Session(&s.state, a)
	switch a.(type) {
	case ahp.SessionChatAdded, ahp.SessionChatRemoved, ahp.SessionChatUpdated, ahp.SessionDefaultChatChanged:
		// The session's status is its chats' (AHP's aggregation rule), told
		// in its summary: the protocol's reducer leaves it alone.
		reduce.AggregateChats(&s.state)
	}
	if storedInRecord(a) {
		s.commitRecord(a.ActionType())
	}
	// The host's catalogue takes the summary before the action goes out:
	// a client that saw the action and lists the sessions at once finds
	// it there (VS Code's "listSessions reflects live title and status
	// changes" listed the flags as they were before).
	if after := s.summary(); s.cfg.OnSummary != nil && !reflect.DeepEqual(before, after) {
		s.cfg.OnSummary(after)
	}
	s.cfg.Env.Bus.Publish(s.uri, a, origin)
	switch a.(type) {
	case ahp.SessionWorkingDirectorySet, ahp.SessionWorkingDirectoryRemoved,
		ahp.SessionWorkingDirectoryReplaced, ahp.SessionConfigChanged:
		// Only these change what publishDirs copies; every turn's chat
		// updates cloned both for nothing.
		s.publishDirs()
	}
}

func (s *Session) publishDirs() {
	d := slices.Clone(s.state.WorkingDirectories)
	s.dirs.Store(&d)
	v := map[string]any{}
	if s.state.Config != nil {
		v = maps.Clone(s.state.Config.Values)
	}
	s.configValues.Store(&v)
}

// summary is the session's catalogue entry (listSessions, root
// notifications), derived from its state.
func (s *Session) summary() ahp.SessionSummary { return summaryOfState(&s.state) }

func summaryOfState(st *ahp.SessionState) ahp.SessionSummary {
	sum := ahp.SessionSummary{
		Resource:           st.Resource,
		Provider:           st.Provider,
		Title:              st.Title,
		Status:             st.Status,
		Activity:           st.Activity,
		WorkingDirectories: st.WorkingDirectories,
		Repositories:       st.Repositories,
		CreatedAt:          st.CreatedAt,
		ModifiedAt:         st.ModifiedAt,
		DefaultChat:        st.DefaultChat,
		Changes:            st.Changes,
	}
	for _, c := range st.Chats {
		if c.ModifiedAt > sum.ModifiedAt {
			sum.ModifiedAt = c.ModifiedAt
		}
		sum.Chats = append(sum.Chats, ahp.SessionChatSummary{
			Resource: c.Resource, Title: c.Title, Origin: c.Origin, Interactivity: c.Interactivity, Status: c.Status, Changes: c.Changes,
		})
	}
	return sum
}

// Summary returns the session's catalogue entry.
func (s *Session) Summary(ctx context.Context) (ahp.SessionSummary, error) {
	var sum ahp.SessionSummary
	err := s.call(ctx, func() { sum = s.summary() })
	return sum, err
}

// Subscribe returns the session's snapshot and adds sub to its channel in
// the same step.
func (s *Session) Subscribe(ctx context.Context, sub bus.Subscriber) (ahp.Snapshot, error) {
	var snap ahp.Snapshot
	var merr error
	err := s.call(ctx, func() {
		seq := s.cfg.Env.Bus.Subscribe(sub, s.uri)
		raw, err := json.Marshal(s.state)
		if err != nil {
			merr = fmt.Errorf("marshal session %s: %w", s.uri, err)
			return
		}
		snap = ahp.Snapshot{Resource: s.uri, State: json.RawMessage(raw), FromSeq: seq}
	})
	if err != nil {
		return ahp.Snapshot{}, err
	}
	return snap, merr
}

// Chat returns the actor of one of the session's chats, opening it first
// when needed.
func (s *Session) Chat(ctx context.Context, uri string) (*chat.Chat, error) {
	for {
		var c *chat.Chat
		var ending <-chan struct{}
		var oerr error
		err := s.call(ctx, func() { c, ending, oerr = s.tryOpenChat(ctx, uri) })
		if err != nil {
			return nil, err
		}
		if ending == nil {
			return c, oerr
		}
		// The chat's actor is unloading or closing (its agent may take
		// seconds to end): wait here, off the session's actor, so the
		// session's other chats go on meanwhile.
		select {
		case <-ending:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// openChat starts the actor of a chat this session holds, waiting for an
// actor that is ending. Only for the session's own rare needs (a fork's
// source, a worker); Chat waits off the actor.
func (s *Session) openChat(ctx context.Context, uri string) (*chat.Chat, error) {
	for {
		c, ending, err := s.tryOpenChat(ctx, uri)
		if ending == nil {
			return c, err
		}
		select {
		case <-ending:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// tryOpenChat starts the actor of a chat this session holds. When the
// chat's actor is still ending (unloading, closing) it returns that
// actor's Done channel instead, to wait on and try again.
func (s *Session) tryOpenChat(ctx context.Context, uri string) (*chat.Chat, <-chan struct{}, error) {
	e, ok := s.chats[uri]
	if !ok {
		return nil, nil, fmt.Errorf("%w: %s", ahp.ErrResourceNotFound, uri)
	}
	if e.actor != nil {
		if !e.actor.Ending() {
			return e.actor, nil, nil
		}
		select {
		case <-e.actor.Done():
		default:
			return nil, e.actor.Done(), nil
		}
		// Start the new actor from the record the old one left.
		e.actor, e.record = nil, e.actor.LastRecord()
	}
	dirs, err := ahp.LocalPaths(s.chatDirectories(e.record))
	if err != nil {
		return nil, nil, fmt.Errorf("open chat %s: %w", uri, err)
	}
	cfg := chat.Config{
		URI:         uri,
		Session:     s.uri,
		Record:      e.record,
		Directories: dirs,
		Provider:    s.record.Provider,
		Owner:       s.record.Owner,
		Agent:       s.cfg.Agent,
		Settings:    s.cfg.Settings,
		Env:         s.cfg.Env,
		SessionDirectories: func() []string {
			return slices.Clone(*s.dirs.Load())
		},
		SessionConfig: func() map[string]any {
			values := maps.Clone(*s.configValues.Load())
			if s.sandbox != "" {
				// The mode fixed at createSession confines, whatever the
				// values say now.
				if values == nil {
					values = map[string]any{}
				}
				values[sessionconfig.KeySandbox] = s.sandbox
			}
			return values
		},
		HostTools: s.cfg.HostTools,
		Canvases:  s.cfg.Canvases,
		OnTurn:    s.chatTurnHook(uri),
		// A git session's changesets are its own, from the work tree.
		GitChangesets: s.cfg.Changesets != nil,
		OnSummary: func(cs ahp.ChatSummary) {
			s.tell("summary of "+cs.Resource, func() { s.chatSummaryChanged(cs) })
		},
		OnUnload: func(c *chat.Chat, rec store.ChatRecord) {
			s.tell("unload of "+uri, func() {
				// The next open starts from the record the chat left.
				if e := s.chats[uri]; e != nil && e.actor == c {
					e.actor, e.record = nil, rec
				}
			})
		},
	}
	s.workerConfig(&cfg, e.record) // workers.go
	c, err := chat.Open(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	e.actor = c
	return c, nil, nil
}

// chatDirectories are the directories a chat works in: its own subset, or
// the session's.
func (s *Session) chatDirectories(r store.ChatRecord) []string {
	if len(r.WorkingDirectories) > 0 {
		return r.WorkingDirectories
	}
	return s.state.WorkingDirectories
}

// chatSummaryChanged folds a chat's new summary into the catalogue and says
// what changed (session/chatUpdated).
func (s *Session) chatSummaryChanged(cs ahp.ChatSummary) {
	i := slices.IndexFunc(s.state.Chats, func(c ahp.ChatSummary) bool { return c.Resource == cs.Resource })
	if i < 0 {
		return
	}
	old := s.state.Chats[i]
	changes := ahp.DiffChatSummary(old, cs)
	if changes == nil {
		return
	}
	if e := s.chats[cs.Resource]; e != nil {
		e.record.Title = cs.Title
	}
	s.apply(ahp.SessionChatUpdated{Chat: cs.Resource, Changes: *changes}, nil)
	if cs.Resource == s.state.DefaultChat && changes.Title != nil && s.state.Title != cs.Title {
		s.apply(ahp.SessionTitleChanged{Title: cs.Title}, nil)
		s.record.Title = cs.Title
	}
	if cs.ModifiedAt > s.state.ModifiedAt {
		s.state.ModifiedAt = cs.ModifiedAt
		if t, err := time.Parse(time.RFC3339Nano, cs.ModifiedAt); err == nil {
			s.record.ModifiedAt = t
		}
		if s.cfg.OnSummary != nil {
			s.cfg.OnSummary(s.summary())
		}
	}
	// Nothing to write: the chat's own commit stored its summary, and the
	// session's modification time is its newest chat's (stateOf). A title
	// the session took from its default chat was committed by apply.
}

// commitRecord writes the session record and waits until it is committed.
// A failure is logged: the state already moved on.
func (s *Session) commitRecord(what string) {
	ctx, cancel := context.WithTimeout(context.Background(), store.CommitWait)
	defer cancel()
	if err := s.cfg.Env.Store.Commit(ctx, s.recordOp()); err != nil {
		s.log.Error("commit session before telling clients", "what", what, "err", err)
	}
}

func (s *Session) recordOp() store.Op {
	rec := s.record
	rec.Title = s.state.Title
	rec.DefaultChat = s.state.DefaultChat
	rec.WorkingDirectories = s.state.WorkingDirectories
	rec.Flags = int(s.state.Status & (ahp.StatusIsRead | ahp.StatusIsArchived))
	s.record = rec
	if s.state.Config != nil {
		// Written from the state, not kept in s.record (Open).
		if raw, err := json.Marshal(s.state.Config); err == nil {
			rec.Config = raw
		}
	}
	return func(ctx context.Context, st *store.Store) error { return st.PutSession(ctx, rec) }
}

// storedInRecord says whether a changes a field of the session record.
func storedInRecord(a ahp.Action) bool {
	switch a.(type) {
	case ahp.SessionTitleChanged, ahp.SessionIsReadChanged, ahp.SessionIsArchivedChanged,
		ahp.SessionWorkingDirectorySet, ahp.SessionWorkingDirectoryRemoved, ahp.SessionWorkingDirectoryReplaced,
		ahp.SessionDefaultChatChanged, ahp.SessionConfigChanged, ahp.SessionActiveClientSet, ahp.SessionActiveClientRemoved:
		return true
	}
	return false
}

// Dispatch applies a client's session action (session/titleChanged, read
// and archived flags, directories, ...).
func (s *Session) Dispatch(cl chat.Client, clientSeq int64, a ahp.Action) error {
	origin := &ahp.ActionOrigin{ClientID: cl.ID, ClientSeq: clientSeq}
	return s.do(func() { s.onClientAction(cl, origin, a) })
}

func (s *Session) onClientAction(cl chat.Client, origin *ahp.ActionOrigin, a ahp.Action) {
	refuse := func(reason string) { s.cfg.Env.Bus.Refuse(cl.Sub, s.uri, a, origin, reason) }
	if !ahp.IsClientDispatchable(a.ActionType()) {
		refuse("Action is not client-dispatchable.")
		return
	}
	if g := ahp.GrantFor(a.ActionType()); g != "" && cl.Can != nil && !cl.Can(g) {
		refuse(fmt.Sprintf("Permission denied: %s needs the grant %s.", a.ActionType(), g))
		return
	}
	switch a := a.(type) {
	case ahp.SessionTitleChanged:
		// The session alone: a one-chat session's default chat takes the
		// session's title when the first peer chat arrives (addChat), so a
		// rename is one action, as VS Code's host says it (its suite's
		// replay after a rename holds the rename and nothing else).
		s.apply(a, origin)
	case ahp.SessionIsReadChanged, ahp.SessionIsArchivedChanged:
		s.apply(a, origin)
	case ahp.SessionWorkingDirectorySet:
		if reason := s.servedDirectory(a.Directory); reason != "" {
			refuse(reason)
			return
		}
		s.apply(a, origin)
	case ahp.SessionWorkingDirectoryReplaced:
		// The replacement is a directory the session takes on: the same
		// rule as a set.
		if reason := s.servedDirectory(a.Replacement); reason != "" {
			refuse(reason)
			return
		}
		s.apply(a, origin)
	case ahp.SessionConfigChanged:
		if reason := s.sandboxKept(a); reason != "" {
			refuse(reason)
			return
		}
		s.apply(a, origin)
	case ahp.SessionWorkingDirectoryRemoved:
		if !slices.Contains(s.state.WorkingDirectories, a.Directory) {
			// Answered, not dropped: the client rolls its optimistic
			// removal back.
			refuse(fmt.Sprintf("%s is not a working directory of this session.", a.Directory))
			return
		}
		if len(s.state.WorkingDirectories) > 0 && s.state.WorkingDirectories[0] == a.Directory {
			refuse("The session's first working directory cannot be removed; replace it instead.")
			return
		}
		s.apply(a, origin)
	default:
		s.apply(a, origin)
	}
}

// servedDirectory says why dir may not be a working directory of the
// session ("" when it may): it must be an existing directory inside the
// daemon's served paths, symlinks resolved.
func (s *Session) servedDirectory(dir string) string {
	paths, err := ahp.LocalPaths([]string{dir})
	if err != nil {
		return err.Error()
	}
	if fi, err := os.Stat(paths[0]); err != nil || !fi.IsDir() {
		return fmt.Sprintf("%s is not an existing directory.", dir)
	}
	if s.cfg.Served != nil && !s.cfg.Served(paths[0]) {
		return fmt.Sprintf("%s is outside the daemon's served paths.", dir)
	}
	return ""
}

func (s *Session) renameStoredChat(e *chatEntry, title string) {
	e.record.Title = title
	rec := e.record
	ctx, cancel := context.WithTimeout(context.Background(), store.CommitWait)
	defer cancel()
	if err := s.cfg.Env.Store.Commit(ctx, func(ctx context.Context, st *store.Store) error { return st.PutChat(ctx, rec) }); err != nil {
		s.log.Error("commit chat title before telling clients", "chat", rec.URI, "err", err)
	}
	if i := slices.IndexFunc(s.state.Chats, func(c ahp.ChatSummary) bool { return c.Resource == rec.URI }); i >= 0 {
		cs := s.state.Chats[i]
		cs.Title = title
		s.chatSummaryChanged(cs)
	}
}

// chatTurnHook is chat uri's OnTurn: the session's, naming the chat.
func (s *Session) chatTurnHook(uri string) func(turn string, start bool) {
	if s.cfg.OnTurn == nil {
		return nil
	}
	return func(turn string, start bool) { s.cfg.OnTurn(uri, turn, start) }
}

// SetGitState takes what the host computed of a git session: its
// changeset catalogue (session/changesetsChanged when it differs), its git
// state (SessionState._meta.git, VS Code's well-known key: branch,
// upstream, incoming and outgoing commits; session/metaChanged) and the
// summary of its changes (listSessions' changes); a nil git state or
// summary leaves the one the session has. All three are derived from git,
// so none is stored. It never blocks: the session's actor applies it.
func (s *Session) SetGitState(catalogue []ahp.Changeset, git map[string]any, changes *ahp.ChangesSummary) {
	s.tell("git state", func() {
		// The catalogue only grows while the session lives: a refresh
		// computed before the session's first turn began may arrive after
		// that turn's start told the full one, and must not take it back.
		if len(catalogue) >= len(s.state.Changesets) && !reflect.DeepEqual(s.state.Changesets, catalogue) {
			s.apply(ahp.SessionChangesetsChanged{Changesets: catalogue}, nil)
		}
		if git != nil && !reflect.DeepEqual(s.state.Meta["git"], git) {
			meta := maps.Clone(s.state.Meta)
			if meta == nil {
				meta = map[string]any{}
			}
			meta["git"] = git
			s.apply(ahp.SessionMetaChanged{Meta: meta}, nil)
		}
		if changes == nil || reflect.DeepEqual(s.state.Changes, changes) {
			return // nil: not computed this time
		}
		before := s.summary()
		s.state.Changes = changes
		if after := s.summary(); s.cfg.OnSummary != nil && !reflect.DeepEqual(before, after) {
			s.cfg.OnSummary(after)
		}
	})
}

// sandboxKept refuses a config change that names another sandbox mode
// than the session's: the mode is chosen at createSession, where it is
// checked against the kernel and the session's folders, and kept in the
// record (RecordMeta.Sandbox), which is what confines; a client able to
// configure the session must not be told it lifted the confinement of its
// agent (issue 36). A replacing change may drop the value from the
// config: the kept mode still confines. "" lets the change through.
func (s *Session) sandboxKept(a ahp.SessionConfigChanged) string {
	var current any = s.sandbox
	if s.sandbox == "" && s.state.Config != nil {
		current = s.state.Config.Values[sessionconfig.KeySandbox]
	}
	after, named := a.Config[sessionconfig.KeySandbox]
	if !named || after == current {
		return ""
	}
	mode, _ := current.(string)
	if mode == "" {
		mode = "the daemon's default"
	}
	return fmt.Sprintf("The session's sandbox (%s) is chosen when it is created and does not change.", mode)
}
