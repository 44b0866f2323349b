// Package chat is the chat actor: one goroutine per open chat owns its
// ChatState, its pending messages, its agent conversation and the turn
// engine. Clients, the session, timers and the agent reach it only through
// its mailbox (or, for agent events, the conversation's event channel the
// loop selects on). Nothing else reads or writes a chat's state.
//
// The host's router calls Subscribe, Dispatch, FetchTurns and Close; the
// session actor opens chats and receives their summaries through
// Config.OnSummary.
package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/attach"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/ahpd/ahpd/internal/canvas"
	"github.com/ahpd/ahpd/internal/env"
	"github.com/ahpd/ahpd/internal/mailbox"
	"github.com/ahpd/ahpd/internal/reduce"
	"github.com/ahpd/ahpd/internal/store"
	"github.com/ahpd/ahpd/internal/turns"
	"github.com/google/uuid"
)

// SenderMetaKey is the _meta key of a message that names who sent it, as a
// typed reference: "user:<id>" or "root:<host>" (C-TURN-04..07).
const SenderMetaKey = turns.SenderMetaKey

// ErrClosed is returned by a chat that has been closed.
var ErrClosed = errors.New("chat closed")

// Client is who sent an action or a request.
type Client struct {
	Sub bus.Subscriber
	// ID is the client's clientId.
	ID string
	// Sender is the typed reference turns sent by this client name.
	Sender string
	// Root: the client is the deployment itself (the root token).
	Root bool
	// Can reports whether the client holds a grant; nil holds all.
	Can func(grant string) bool
	// ChatAttachments are the chat attachments of the message the action
	// carries, resolved by the host before the action reached this actor,
	// so a chat never waits on another to read its transcript (C-ATT-22..34).
	ChatAttachments []attach.Resolved
}

func (cl Client) can(grant string) bool { return cl.Can == nil || cl.Can(grant) }

// Config is what a chat actor needs.
type Config struct {
	URI     string
	Session string
	// Record is the chat's stored record; its turns are read from Store.
	Record store.ChatRecord
	// Directories are the chat's working directories as local paths.
	Directories []string
	// Provider names the agent; Agent is nil when the provider is unknown
	// here (a turn then ends in an error saying so).
	Provider string
	// Owner is the session owner's sender reference: who besides root may
	// run ! commands.
	Owner    string
	Agent    agent.Agent
	Settings json.RawMessage
	// Env is what every actor of the daemon shares: bus, store, logger,
	// clock, limits and attachment settings.
	Env *env.Env
	// OnSummary receives the chat's summary whenever it changes. It is
	// called from the actor's goroutine and must not block.
	OnSummary func(ahp.ChatSummary)
	// OnUnload is told, from the actor's goroutine, that the actor ended
	// because the chat was idle, with the chat's record as it left it; it
	// must not block.
	OnUnload func(*Chat, store.ChatRecord)
	// SessionDirectories returns the session's directories (URIs) as they
	// are now; a chat works in them or a subset (C-FIRST-25).
	SessionDirectories func() []string
	// SessionConfig returns the session's config values as they are now
	// (SessionState.config.values); nil takes none.
	SessionConfig func() map[string]any
	// HostTools hands the chat's conversations the host's tools: the
	// endpoint with a credential of this chat's, and its revocation. nil
	// offers none.
	HostTools func(chat string) (*agent.HostTools, func(), error)
	// Canvases are the host's canvas plugins, asked what a stored canvas
	// shows when the chat opens (canvases.go); nil: none is served.
	Canvases canvas.Keeper
	// Worker is set for a worker chat: the chat whose conversation runs
	// the worker, and its spawning call (worker.go).
	Worker *WorkerLink
	// WorkerURI mints the URI of the worker a call of this chat's
	// conversation spawns (C-SUB-02..04).
	WorkerURI func(toolCallID string) string
	// OpenWorker asks the session to open a worker chat, and Relay to run
	// fn on another chat's actor (opening it if needed), on behalf of from:
	// the session then tells from which actor it reached (Relayed). Both
	// only push into the session's mailbox: a chat never waits on its
	// session.
	OpenWorker func(WorkerOpen)
	Relay      func(from *Chat, uri string, fn func(*Chat))
	// GitChangesets: the chat's session works in git, and its changesets,
	// computed from the work tree, hold what the chat's turns changed;
	// the chat keeps none of its own from its edit tool calls.
	GitChangesets bool
	// OnTurn is told that a turn starts (start) or ended, on the actor's
	// goroutine, before the action is stored and published: a git
	// session's host snapshots the work tree there, before the turn's
	// backend is handed anything and after it is done. nil for none.
	OnTurn func(turn string, start bool)
}

// Chat is one chat actor.
type Chat struct {
	cfg   Config
	log   *slog.Logger
	inbox *mailbox.Inbox
	// stopping is closed by Close to end the loop.
	stopping  chan struct{}
	closeOnce sync.Once

	// Everything below is owned by run; only it reads or writes them.
	// eng is the turn engine (internal/turns): the one copy of the chat's
	// state, what runs and what waits. The actor is its Host (host.go).
	eng         *turns.Engine
	lastSummary ahp.ChatSummary
	record      store.ChatRecord
	// meta is record.Meta parsed, for the readers on every turn (fork.go).
	meta metaCache
	// points are the backend's fork/rewind points of the turns the state
	// holds, by turn id; the store keeps every turn's.
	points map[string]string

	// The actor's jobs, one component each: a struct holding its own state
	// and a back-pointer to the actor, which runs only on the actor's
	// goroutine (run, or a func the mailbox hands it). They are wired once
	// in Open.
	//
	// backends are the conversations the chat's turns run on: its agent's,
	// its ! shell, its host commands (conversation.go).
	backends backends
	// durable commits and writes the chat's record and turns (durable.go).
	durable durable
	// pages are the watchers' pages of turns (paging.go).
	pages pager
	// workers is the worker bookkeeping (worker.go).
	workers workers
	// canvases are the chat's canvases in opening order (canvases.go).
	canvases canvases
	// changesets is the changeset bookkeeping (changesets.go).
	changesets changesets
	// silence is the agent silence watchdog (silence.go).
	silence silence
	// idle unloads the chat when it is idle (idle.go).
	idle idler
	// slot is the chat's place among the agent process slots (slots.go).
	slot agentSlot
	// rewind cuts the chat back at a client's truncation (truncate.go).
	rewind rewind
	// attachments writes a message's attachments (attachments.go).
	attachments attachments
	// directories changes the chat's directories (directories.go).
	directories directories
	// window keeps the turns in memory bounded; the store holds the
	// transcript (window.go).
	window window
}

// st is the chat's state, owned by the turn engine.
func (c *Chat) st() *ahp.ChatState { return c.eng.State() }

// Open builds the chat's state from the store and starts its actor.
func Open(ctx context.Context, cfg Config) (*Chat, error) {
	c := &Chat{
		cfg:      cfg,
		log:      cfg.Env.Logger.With("chat", cfg.URI),
		inbox:    mailbox.NewInbox(4096, ErrClosed, "chat "+cfg.URI),
		stopping: make(chan struct{}),
		record:   cfg.Record,
		points:   make(map[string]string),
	}
	c.backends = backends{c: c}
	c.durable = durable{c: c}
	// No watcher holds a page yet: fetchTurns without a cursor has
	// nothing older to load (C-CMD-12).
	c.pages = pager{c: c, loadedFrom: -1}
	c.workers = workers{c: c}
	c.canvases = canvases{c: c}
	c.changesets = changesets{c: c}
	c.silence = silence{c: c}
	c.idle = idler{c: c}
	c.slot = agentSlot{c: c}
	c.rewind = rewind{c: c}
	c.attachments = attachments{c: c}
	c.directories = directories{c: c}
	c.window = window{c: c, sizes: make(map[string]int)}
	if cfg.Agent != nil {
		c.backends.caps = cfg.Agent.Capabilities()
	}
	c.slot.join()
	// The window (window.go): the running turn, if one was left, and the
	// newest ended turns; the store answers for the rest.
	recs, err := cfg.Env.Store.LastTurns(ctx, cfg.URI, c.window.kept()+1)
	if err != nil {
		return nil, fmt.Errorf("open chat %s: %w", cfg.URI, err)
	}
	if len(recs) == 0 && !ParseRecordMeta(c.record.Meta).Cleared {
		// Nothing stored: a conversation the backend kept on its own reads
		// back from its transcript, with the points to fork or rewind at.
		// A chat a client cleared keeps its backend conversation when the
		// backend could not delete it (Cleared): its turns stay gone.
		recs = c.backends.readBack(ctx)
	}
	st := c.initialState()
	c.canvases.restore(&st)
	if err := c.changesets.restore(ctx, &st); err != nil {
		return nil, fmt.Errorf("open chat %s: %w", cfg.URI, err)
	}
	var crashed *store.TurnRecord
	var ended []store.TurnRecord
	for i := range recs {
		if recs[i].State == store.TurnRunning {
			crashed = &recs[i]
			continue
		}
		ended = append(ended, recs[i])
	}
	if n := c.window.kept(); len(ended) > n {
		ended = ended[len(ended)-n:]
	}
	older := 0
	switch {
	case len(ended) > 0:
		older = ended[0].Seq
	case crashed != nil:
		older = crashed.Seq
	}
	for _, r := range ended {
		t, err := storedTurn(r)
		if err != nil {
			return nil, fmt.Errorf("open chat %s: %w", cfg.URI, err)
		}
		st.Turns = append(st.Turns, t)
		c.window.sizes[r.ID] = len(r.Body)
	}
	if crashed != nil {
		var at ahp.ActiveTurn
		if err := json.Unmarshal(crashed.Body, &at); err != nil {
			return nil, fmt.Errorf("open chat %s: running turn %s: %w", cfg.URI, crashed.ID, err)
		}
		st.ActiveTurn = &at
		st.Status = st.Status.WithActivity(ahp.StatusInProgress)
	}
	c.eng = turns.New(engineHost{c}, st, turns.Options{HasAgent: cfg.Agent != nil, Caps: c.backends.caps, Older: older})
	for _, r := range ended {
		c.remember(r)
	}
	if crashed != nil {
		c.remember(*crashed)
	}
	// A window read back from a transcript may hold more bytes than it
	// keeps: trimmed before the first step.
	c.window.ended = true
	c.durable.restorePending()
	c.lastSummary = reduce.ChatSummaryOf(c.st())
	go c.run(crashed)
	return c, nil
}

func (c *Chat) remember(r store.TurnRecord) {
	if r.Point != "" {
		c.points[r.ID] = r.Point
	}
	c.eng.Remember(r.ID, recordInfo(r))
}

func (c *Chat) initialState() ahp.ChatState {
	r := c.record
	s := ahp.ChatState{
		Resource:           c.cfg.URI,
		Title:              r.Title,
		Status:             ahp.StatusIdle | ahp.SessionStatus(r.Flags),
		ModifiedAt:         isoTime(r.ModifiedAt),
		Interactivity:      r.Interactivity,
		WorkingDirectories: r.WorkingDirectories,
		Turns:              []ahp.Turn{},
	}
	if len(r.Origin) > 0 {
		var o ahp.ChatOrigin
		if json.Unmarshal(r.Origin, &o) == nil {
			s.Origin = &o
		}
	}
	if len(r.Draft) > 0 && string(r.Draft) != "null" {
		var m ahp.Message
		if json.Unmarshal(r.Draft, &m) == nil {
			s.Draft = &m
		}
	}
	return s
}

// URI is the chat's URI.
func (c *Chat) URI() string { return c.cfg.URI }

// Done is closed when the actor has stopped.
func (c *Chat) Done() <-chan struct{} { return c.inbox.Done() }

// AfterDone runs f once the actor has stopped (on its goroutine as it
// stops, or at once), so whoever keeps the actor by name forgets it
// without a goroutine parked on Done for each loaded chat.
func (c *Chat) AfterDone(f func()) { c.inbox.AfterStopped(f) }

// do runs fn on the actor's goroutine without waiting for it. fn runs once
// the chat's commits in flight landed and what waited for them is told
// (durable.drain): whatever asks the actor sees only what is stored, and
// everything it says goes out after what the chat said before.
func (c *Chat) do(fn func()) error {
	return c.inbox.Do(func() {
		c.durable.drain()
		fn()
	})
}

// call runs fn on the actor's goroutine, like do, and waits for it. fn's
// step is not pipelined, so what it said is stored and told when call
// returns (durable.submit).
func (c *Chat) call(ctx context.Context, fn func()) error {
	return c.inbox.Call(ctx, func() {
		c.durable.drain()
		fn()
	})
}

// run is the chat actor's loop; only it touches the fields documented as
// owned by run.
func (c *Chat) run(crashed *store.TurnRecord) {
	defer c.inbox.Stopped()
	defer c.backends.revokeTools()
	if crashed != nil {
		// C-TURN-10: a turn that was running when the process died ends
		// once, with an error saying so.
		c.eng.Recover()
	}
	l := newLoop(c)
	defer l.timers.stop()
	for {
		l.settle()
		if l.handle(l.await()) {
			return
		}
	}
}

// Close stops the actor. With deleteConversation the backend's
// conversation is deleted too (closedChats "delete").
func (c *Chat) Close(ctx context.Context, deleteConversation bool) error {
	var err error
	if deleteConversation {
		err = c.call(ctx, func() { c.backends.deleteConversation(ctx) })
	}
	c.closeOnce.Do(func() {
		c.inbox.Close()
		close(c.stopping)
	})
	select {
	case <-c.inbox.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	return err
}

func (c *Chat) shutdown() {
	// What the chat said is stored and told before it stops.
	c.durable.drain()
	if c.eng.Active() != nil {
		c.durable.persistRunning()
	}
	c.canvases.release()
	c.backends.closeAll()
}

// apply runs a's reducer on the chat's state (through the turn engine,
// which owns it) and tells it.
func (c *Chat) apply(a ahp.Action, origin *ahp.ActionOrigin) { c.eng.Apply(a, origin) }

// tell commits what an action, already reduced into the state, makes
// durable, and only then publishes it: a client is never shown a turn
// start, ending, draft or pending message a kill -9 could lose (durable.go).
func (c *Chat) tell(a ahp.Action, origin *ahp.ActionOrigin) {
	if c.st().ActiveTurn != nil {
		// Whatever the running turn streamed is written at least every
		// second (runningEvery); a start or an ending is committed below.
		c.durable.streamed()
	}
	switch a.(type) {
	case ahp.ChatDelta, ahp.ChatReasoning, ahp.ChatToolCallDelta, ahp.ChatUsage:
		// The streaming hot path changes no summary field.
		c.durable.tellStreamed(a, origin)
		return
	}
	turnHook(c.cfg.OnTurn, a)
	c.durable.tell(a, origin)
}

// turnHook tells onTurn (the chat's Config.OnTurn) of a turn's start and
// end.
func turnHook(onTurn func(turn string, start bool), a ahp.Action) {
	if onTurn == nil {
		return
	}
	switch a := a.(type) {
	case ahp.ChatTurnStarted:
		onTurn(a.TurnID, true)
	case ahp.ChatTurnComplete:
		onTurn(a.TurnID, false)
	case ahp.ChatTurnCancelled:
		onTurn(a.TurnID, false)
	case ahp.ChatError:
		if a.TurnID != "" {
			onTurn(a.TurnID, false)
		}
	}
}

// refuse answers a client's action with a refusal, to that client alone,
// after what was published before it.
func (c *Chat) refuse(cl Client, origin *ahp.ActionOrigin, a ahp.Action, reason string) {
	c.durable.flush()
	c.cfg.Env.Bus.Refuse(cl.Sub, c.cfg.URI, a, origin, reason)
}

func summaryEqual(a, b ahp.ChatSummary) bool { return reflect.DeepEqual(a, b) }

// Subscribe returns the chat's snapshot for a new watcher and adds it to
// the channel in the same step (C-CMD-03, C-CMD-04). A view with Turns
// holds only the newest turns and a cursor to fetch older ones. Turns older
// than the window are read from the store by the caller's goroutine (a
// request's lane) and put into the snapshot there; what the actor marshals
// is bounded by the window.
func (c *Chat) Subscribe(ctx context.Context, sub bus.Subscriber, view *ahp.SubscribeView) (ahp.Snapshot, error) {
	var snap ahp.Snapshot
	var older []ahp.Turn
	var placeholder []byte
	err := c.withOlder(ctx, &olderTurns{}, func(o *olderTurns) bool {
		from, base := c.pages.viewFrom(view), c.eng.Window().Older()
		if !o.has(from, base) {
			o.want(from, base)
			return false
		}
		_, older = o.span(from, base)
		seq := c.cfg.Env.Bus.Subscribe(sub, c.cfg.URI)
		st := *c.st()
		if !sub.Knows(ahp.ActionChatCanvasesChanged) {
			st.Canvases = nil // a connection below 0.10.0 knows no canvas (C-CANV-12)
		}
		c.pages.view(&st, view, from, older)
		if len(older) > 0 {
			placeholder, st.Turns = withPlaceholder(st.Turns)
		}
		raw, err := json.Marshal(st)
		if err != nil {
			c.log.Error("marshal chat snapshot", "err", err)
			return true
		}
		snap = ahp.Snapshot{Resource: c.cfg.URI, State: json.RawMessage(raw), FromSeq: seq}
		return true
	})
	if err != nil {
		return ahp.Snapshot{}, err
	}
	if snap.State == nil {
		return ahp.Snapshot{}, fmt.Errorf("snapshot chat %s: marshal failed", c.cfg.URI)
	}
	if len(older) > 0 {
		raw, err := putOlder(snap.State.(json.RawMessage), placeholder, older)
		if err != nil {
			return ahp.Snapshot{}, fmt.Errorf("snapshot chat %s: %w", c.cfg.URI, err)
		}
		snap.State = raw
	}
	return snap, nil
}

// withPlaceholder returns ts behind a turn of a fresh random id, and that
// turn as marshalled: where a snapshot's stored older turns go (putOlder).
func withPlaceholder(ts []ahp.Turn) ([]byte, []ahp.Turn) {
	p := ahp.Turn{ID: "ahpd-older-turns-" + uuid.NewString()}
	raw, _ := json.Marshal(p)
	return raw, append([]ahp.Turn{p}, ts...)
}

// putOlder replaces the placeholder turn in a marshalled chat state with
// the older turns, marshalled here, off the actor.
func putOlder(state json.RawMessage, placeholder []byte, older []ahp.Turn) (json.RawMessage, error) {
	at := bytes.Index(state, placeholder)
	if at < 0 {
		return nil, errors.New("the older turns' place is missing from the snapshot")
	}
	list, err := json.Marshal(older)
	if err != nil {
		return nil, fmt.Errorf("marshal older turns: %w", err)
	}
	inner := list[1 : len(list)-1] // without the brackets
	out := make([]byte, 0, len(state)-len(placeholder)+len(inner))
	out = append(out, state[:at]...)
	out = append(out, inner...)
	out = append(out, state[at+len(placeholder):]...)
	return out, nil
}

// State returns a copy of the chat's state, every turn in it (for chat
// attachments, completions and tests); the turns older than the window are
// read from the store by the caller's goroutine.
func (c *Chat) State(ctx context.Context) (ahp.ChatState, error) {
	var raw []byte
	var older []ahp.Turn
	err := c.withOlder(ctx, &olderTurns{}, func(o *olderTurns) bool {
		base := c.eng.Window().Older()
		if !o.has(0, base) {
			o.want(0, base)
			return false
		}
		_, older = o.span(0, base)
		raw, _ = json.Marshal(c.st())
		return true
	})
	if err != nil {
		return ahp.ChatState{}, err
	}
	var st ahp.ChatState
	if err := json.Unmarshal(raw, &st); err != nil {
		return ahp.ChatState{}, fmt.Errorf("copy chat state: %w", err)
	}
	if len(older) > 0 {
		st.Turns = append(older, st.Turns...)
	}
	return st, nil
}

// Dispatch hands a client's action to the actor. It never blocks; an error
// means the action was not taken (the chat is closed or overloaded).
func (c *Chat) Dispatch(cl Client, clientSeq int64, a ahp.Action) error {
	origin := &ahp.ActionOrigin{ClientID: cl.ID, ClientSeq: clientSeq}
	return c.inbox.Do(func() {
		if !pipelinable(a) {
			c.durable.drain()
			c.onClientAction(cl, origin, a)
			return
		}
		c.durable.pipelined(func() { c.onClientAction(cl, origin, a) })
	})
}

// pipelinable reports whether a client's action a may be handled while
// the chat's commits are in flight (durable.go): it reaches no backend
// but through engineHost.Open, which waits for them, and what it says
// goes out behind them. A turn sent (behind the running one, or started),
// the draft, the read and archived flags.
func pipelinable(a ahp.Action) bool {
	switch a.(type) {
	case ahp.ChatTurnStarted, ahp.ChatDraftChanged, ahp.ChatIsReadChanged, ahp.ChatIsArchivedChanged:
		return true
	}
	return false
}

func parseISO(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func isoTime(t time.Time) string { return turns.ISOTime(t) }
