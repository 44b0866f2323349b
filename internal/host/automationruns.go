package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/sessionconfig"
	"github.com/ahpd/ahpd/internal/store"
	"github.com/google/uuid"
)

func newID() string { return uuid.NewString() }

// runPrincipal is who an automation's runs act as: its owner, the
// deployment for a root reference, else the principal of a configured
// token that names it. An owner whose token was removed runs nothing.
func (d *automationDesk) runPrincipal(owner string) (chat.Client, error) {
	p, ok := principalNamed(d.principals, owner)
	if !ok {
		return chat.Client{}, fmt.Errorf("the automation's owner %s is nobody this daemon knows", owner)
	}
	return chatClientOf(p), nil
}

// begin makes a run's session from the automation's template, as its
// owner, and starts its first turn with the automation's message. The
// session is an ordinary one, listed and open to every client that may
// read it; the run watches its chat for the turn's end.
func (d *automationDesk) begin(ctx context.Context, r runItem, def ahp.AutomationDefinition) (session, chatURI, turn string, err error) {
	owner, err := d.runPrincipal(r.owner)
	if err != nil {
		return "", "", "", err
	}
	if !owner.Root && !owner.Can("session:create") {
		return "", "", "", fmt.Errorf("the automation's owner %s may not create sessions (session:create)", r.owner)
	}
	tpl := def.Session
	provider := tpl.Provider
	if provider == "" {
		provider = d.defaultProvider
	}
	if _, ok := d.agents.Get(provider); !ok {
		return "", "", "", fmt.Errorf("%w: %s", ahp.ErrProviderNotFound, provider)
	}
	dir, err := d.runDirectory(tpl.WorkingDirectories)
	if err != nil {
		return "", "", "", err
	}
	values := map[string]any{}
	for k, v := range tpl.Config {
		values[k] = v
	}
	if tpl.Model != nil && tpl.Model.ID != "" {
		values[sessionconfig.KeyModel] = tpl.Model.ID
	}
	schema, resolved := d.config.schema(ctx, provider, dir, values)
	cfg, err := json.Marshal(ahp.SessionConfig{Schema: schema, Values: resolved})
	if err != nil {
		return "", "", "", fmt.Errorf("session config: %w", err)
	}
	id := newID()
	session = "ahp-session:/" + id
	now := d.env.Now()
	rec := store.SessionRecord{URI: session, Provider: provider, Title: def.Title, CreatedAt: now, ModifiedAt: now,
		WorkingDirectories: []string{ahp.FileURI(dir)}, Owner: r.owner, Config: cfg}
	if err := d.env.Store.PutSession(ctx, rec); err != nil {
		return "", "", "", fmt.Errorf("run session: %w", err)
	}
	s, err := d.sessions.open(ctx, rec, false)
	if err != nil {
		return "", "", "", fmt.Errorf("run session: %w", err)
	}
	// An automation's session is made for no VS Code window: its first
	// chat has an opaque URI (C-FIRST-02).
	first := store.ChatRecord{URI: ahp.OpaqueChatURI(newID()), Title: def.Title, ConversationID: id, CreatedAt: now, ModifiedAt: now}
	if err := s.AddChat(ctx, first); err != nil {
		return "", "", "", fmt.Errorf("run session: %w", err)
	}
	sum, err := s.Summary(ctx)
	if err != nil {
		return "", "", "", err
	}
	d.sessions.announce(session, sum)
	c, err := s.Chat(ctx, first.URI)
	if err != nil {
		return "", "", "", err
	}
	w := &runWatch{id: "automation-run:" + r.state.Resource, run: r.state.Resource, end: make(chan runEnd, 1)}
	turn = newID()
	w.turn = turn
	if _, err := c.Subscribe(ctx, w, nil); err != nil {
		return "", "", "", fmt.Errorf("watch the run's chat: %w", err)
	}
	d.watch(w, first.URI)
	owner.ID, owner.Sub = w.id, w
	msg := def.Message
	msg.Origin = ahp.MessageOrigin{Kind: ahp.MessageFromAutomation}
	start := ahp.ChatTurnStarted{TurnID: turn, StartedAt: isoTime(now), Message: msg}
	if err := c.Dispatch(owner, 0, start); err != nil {
		w.deliverEnd(runEnd{ahp.RunFailed, err.Error()}) // the watch ends, the run is failed below
		return "", "", "", fmt.Errorf("start the run's turn: %w", err)
	}
	return session, first.URI, turn, nil
}

// runDirectory is where a run's session works: the template's first
// working directory, which must be a directory under the served paths, or
// the first served path when the template names none.
func (d *automationDesk) runDirectory(dirs []string) (string, error) {
	if len(dirs) == 0 {
		if len(d.paths) == 0 {
			return "", fmt.Errorf("the daemon serves no path to run in")
		}
		return d.paths[0], nil
	}
	path, err := ahp.LocalPath(dirs[0])
	if err != nil {
		return "", fmt.Errorf("session.workingDirectories[0]: %w", err)
	}
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("session.workingDirectories[0]: %s is no directory", dirs[0])
	}
	if !d.paths.holds(path) {
		return "", fmt.Errorf("session.workingDirectories[0]: %s is outside the daemon's served paths", dirs[0])
	}
	return path, nil
}

// stopTurn cancels a run's turn as the automation's owner.
func (d *automationDesk) stopTurn(ctx context.Context, owner, chatURI, turn string) error {
	cl, err := d.runPrincipal(owner)
	if err != nil {
		return err
	}
	cl.ID, cl.Sub = "automation-cancel:"+chatURI, refusalLog{log: d.log, id: "automation-cancel:" + chatURI}
	return d.sessions.onChat(ctx, chatURI, func(c *chat.Chat) error {
		return c.Dispatch(cl, 0, ahp.ChatTurnCancelled{TurnID: turn})
	})
}

// runEnd is how a run's turn ended.
type runEnd struct {
	status, reason string
}

// runWatch is a run's subscription to its chat: a bus subscriber that
// waits for the end of the run's turn (complete, cancelled, an error, or
// the turn refused). Deliver runs under the bus's lock, so it only hands
// the first end to the watch's goroutine (watch), never waits.
type runWatch struct {
	id, run, turn string
	end           chan runEnd // buffered 1: the first end is kept
}

func (w *runWatch) Deliver(method string, params json.RawMessage) {
	if method != "action" {
		return
	}
	var env struct {
		Action struct {
			Type   string `json:"type"`
			TurnID string `json:"turnId"`
			Part   struct {
				Error *ahp.ErrorInfo `json:"error"`
			} `json:"part"`
		} `json:"action"`
		RejectionReason string `json:"rejectionReason"`
	}
	if json.Unmarshal(params, &env) != nil || env.Action.TurnID != w.turn {
		return
	}
	var e runEnd
	switch {
	case env.RejectionReason != "":
		e = runEnd{ahp.RunFailed, "the run's turn was refused: " + env.RejectionReason}
	case env.Action.Type == ahp.ActionChatTurnComplete:
		e = runEnd{status: ahp.RunCompleted}
	case env.Action.Type == ahp.ActionChatTurnCancelled:
		e = runEnd{status: ahp.RunCancelled}
	case env.Action.Type == ahp.ActionChatError:
		e = runEnd{ahp.RunFailed, "the run's turn ended with an error"}
		if pe := env.Action.Part.Error; pe != nil && pe.Message != "" {
			e.reason = pe.Message
		}
	default:
		return
	}
	w.deliverEnd(e)
}

// deliverEnd keeps the first end; it never waits.
func (w *runWatch) deliverEnd(e runEnd) {
	select {
	case w.end <- e:
	default: // an end is kept already
	}
}
func (w *runWatch) Knows(string) bool { return true }
func (w *runWatch) ClientID() string  { return w.id }

// watch waits, on a goroutine of its own, for the run's turn to end, then
// ends the run on the catalogue's lane and drops the subscription. It
// gives up when the host closes (a restart ends the run as failed).
func (d *automationDesk) watch(w *runWatch, chatURI string) {
	d.watching.Add(1)
	go func() {
		defer d.watching.Done()
		defer d.bus.Unsubscribe(w, chatURI)
		select {
		case <-d.closing:
		case e := <-w.end:
			for !d.lanes.push(ahp.AutomationsURI, func() { d.finish(context.Background(), w.run, e.status, e.reason) }) {
				// The lanes are full: the end is not dropped, it waits.
				select {
				case <-d.closing:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}
	}()
}
