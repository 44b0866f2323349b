package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/bot"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/env"
	"github.com/ahpd/ahpd/internal/lockorder"
	"github.com/ahpd/ahpd/internal/sessionconfig"
	"github.com/ahpd/ahpd/internal/store"
	"github.com/google/uuid"
)

// Bots over the protocol: root-channel commands in the x- namespace AHP
// reserves for extensions (AHP.md "x- prefix"), so a client that does not
// know them never meets them. Each takes params.channel "ahp-root://".
const (
	MethodCreateBot = "x-ahpd/createBot"
	MethodListBots  = "x-ahpd/listBots"
	MethodGetBot    = "x-ahpd/getBot"
	MethodDeleteBot = "x-ahpd/deleteBot"
)

// BotInfo is a bot as the bot commands answer it.
type BotInfo struct {
	Slug         string `json:"slug"`
	Name         string `json:"name"`
	Instructions string `json:"instructions,omitempty"`
	Agent        string `json:"agent"`
	Model        string `json:"model,omitempty"`
	Folder       string `json:"folder"`
	Owner        string `json:"owner"`
	Session      string `json:"session,omitempty"`
	Linked       bool   `json:"linked,omitempty"`
	CreatedAt    string `json:"createdAt"`
}

func botInfo(b store.BotRecord) BotInfo {
	return BotInfo{Slug: b.Slug, Name: b.Name, Instructions: b.Instructions, Agent: b.Agent, Model: b.Model,
		Folder: b.Folder, Owner: b.Owner, Session: b.Session, Linked: b.Linked, CreatedAt: b.CreatedAt.UTC().Format(time.RFC3339)}
}

// CreateBotParams are x-ahpd/createBot's params.
type CreateBotParams struct {
	Channel      string `json:"channel"`
	Slug         string `json:"slug"`
	Name         string `json:"name"`
	Instructions string `json:"instructions,omitempty"`
	Agent        string `json:"agent,omitempty"`
	Model        string `json:"model,omitempty"`
	// Folder is a local path inside the served paths; default
	// <data dir>/bots/<slug>.
	Folder string `json:"folder,omitempty"`
	// Session links an existing session of the owner instead of making one.
	Session string `json:"session,omitempty"`
	// Owner: only root may name another owner than itself.
	Owner string `json:"owner,omitempty"`
}

type botSlugParams struct {
	Channel string `json:"channel"`
	Slug    string `json:"slug"`
}

// botDesk answers the bot commands and is the host as the bot backend
// sees it (bot.Host): it makes a bot's work session, an ordinary session
// of the bot's owner, and watches its work chat.
type botDesk struct {
	env             *env.Env
	log             *slog.Logger
	bus             *bus.Bus
	agents          *agent.Registry
	defaultProvider string
	principals      map[string]auth.Principal
	paths           servedPaths
	cat             *catalogue
	sessions        *sessionDesk
	config          *configDesk
	// closing is closed when the host closes.
	closing <-chan struct{}

	// mu (rank lockorder.HostBots) serialises making work sessions, so two
	// chats of one bot starting at once make one. It is held across the
	// store and the work session's start: the catalogue's lock and the
	// bus's are taken inside.
	mu lockorder.Mutex
}

var _ bot.Host = (*botDesk)(nil)

// request answers the bot commands; ok is false for any other method.
func (d *botDesk) request(ctx context.Context, cl *client, method string, params json.RawMessage) (any, bool, error) {
	switch method {
	case MethodCreateBot:
		res, err := d.create(ctx, cl, params)
		return res, true, err
	case MethodListBots:
		res, err := d.list(ctx, cl, params)
		return res, true, err
	case MethodGetBot:
		res, err := d.get(ctx, cl, params)
		return res, true, err
	case MethodDeleteBot:
		res, err := d.delete(ctx, cl, params)
		return res, true, err
	}
	return nil, false, nil
}

// agent is the daemon's bot backend, when it offers one.
func (d *botDesk) agent() (*bot.Agent, error) {
	a, ok := d.agents.Get(bot.Provider)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ahp.ErrProviderNotFound, bot.Provider)
	}
	b, ok := a.(*bot.Agent)
	if !ok || b.Store() == nil {
		return nil, fmt.Errorf("%w: %s is not the bot backend", ahp.ErrProviderNotFound, bot.Provider)
	}
	return b, nil
}

// BindBots binds the daemon's bot backend, if it offers one, to this host
// (its work sessions live here) with dir as the default home of bots'
// folders.
func (h *Host) BindBots(dir string) { h.bots.bind(dir) }

func (d *botDesk) bind(dir string) {
	a, ok := d.agents.Get(bot.Provider)
	if !ok {
		return
	}
	if b, ok := a.(*bot.Agent); ok {
		b.UseDir(dir)
		b.UseStore(d.env.Store)
		b.UseHost(d)
	}
}

func (d *botDesk) create(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
	var p CreateBotParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := requireChannel(p.Channel, true); err != nil {
		return nil, err
	}
	if !cl.principal.Can("session:create") {
		return nil, ahp.Errorf(ahp.ErrPermissionDenied, "creating a bot starts a session: it needs the grant session:create")
	}
	ba, err := d.agent()
	if err != nil {
		return nil, err
	}
	if why := bot.ValidSlug(p.Slug); why != "" {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.slug: %s", why)
	}
	if strings.TrimSpace(p.Name) == "" {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.name: required")
	}
	owner := cl.principal.Sender
	if p.Owner != "" && p.Owner != owner {
		if !bot.IsRoot(owner) {
			return nil, ahp.Errorf(ahp.ErrPermissionDenied, "params.owner: only root may make a bot for somebody else")
		}
		if _, ok := d.principalOf(p.Owner); !ok {
			return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.owner: %s is nobody this daemon knows", p.Owner)
		}
		owner = p.Owner
	}
	rec := store.BotRecord{Slug: p.Slug, Name: p.Name, Instructions: p.Instructions, Agent: p.Agent, Model: p.Model, Owner: owner, CreatedAt: d.env.Now()}
	if p.Session != "" {
		// A linked bot works in an existing session of its owner.
		sum, ok := d.cat.summary(p.Session)
		if !ok {
			return nil, fmt.Errorf("%w: %s", ahp.ErrResourceNotFound, p.Session)
		}
		srec, found, err := d.env.Store.Session(ctx, p.Session)
		if err != nil {
			return nil, err
		}
		if !found || srec.Owner != owner {
			return nil, ahp.Errorf(ahp.ErrPermissionDenied, "params.session: %s is not a session of %s", p.Session, owner)
		}
		if sum.Provider == bot.Provider {
			return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.session: a bot cannot work in another bot's chat")
		}
		rec.Agent, rec.Session, rec.Linked = sum.Provider, p.Session, true
		if dirs := sum.WorkingDirectories; len(dirs) > 0 {
			rec.Folder, _ = ahp.LocalPath(dirs[0])
		}
	} else {
		if rec.Agent == "" {
			rec.Agent = d.defaultProvider
		}
		if rec.Agent == bot.Provider {
			return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.agent: a bot works on an agent, not on another bot")
		}
		if _, ok := d.agents.Get(rec.Agent); !ok {
			return nil, fmt.Errorf("%w: %s", ahp.ErrProviderNotFound, rec.Agent)
		}
		rec.Folder = ba.DefaultFolder(p.Slug)
		if p.Folder != "" {
			// A folder a client names is one it could work in anyway.
			abs, err := filepath.Abs(p.Folder)
			if err != nil || !filepath.IsAbs(p.Folder) {
				return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.folder: %q is not an absolute path", p.Folder)
			}
			if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
				return nil, fmt.Errorf("%w: folder %s", ahp.ErrNotFound, p.Folder)
			}
			if !d.paths.holds(abs) {
				return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.folder: %s is outside the daemon's served paths", p.Folder)
			}
			rec.Folder = abs
		}
	}
	if err := d.env.Store.Bots().Add(ctx, rec); err != nil {
		if errors.Is(err, store.ErrSlugTaken) {
			return nil, fmt.Errorf("%w: bot %s (a slug is never reused)", ahp.ErrAlreadyExists, p.Slug)
		}
		return nil, err
	}
	if !rec.Linked {
		// The work session starts now, its instructions as its first turn.
		uri, err := d.makeWorkSession(ctx, rec)
		if err != nil {
			return nil, fmt.Errorf("create bot %s: %w", rec.Slug, err)
		}
		rec.Session = uri
	}
	return botInfo(rec), nil
}

// mayManage: a bot is its owner's; root manages every bot.
func mayManage(cl *client, b store.BotRecord) bool {
	return bot.MayUse(cl.principal.Sender, b)
}

func (d *botDesk) list(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
	var p botSlugParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := requireChannel(p.Channel, true); err != nil {
		return nil, err
	}
	if !cl.principal.Can(auth.SessionList) {
		return nil, ahp.Errorf(ahp.ErrPermissionDenied, "listing bots needs the grant %s", auth.SessionList)
	}
	if _, err := d.agent(); err != nil {
		return nil, err
	}
	all, err := d.env.Store.Bots().List(ctx)
	if err != nil {
		return nil, err
	}
	out := struct {
		Items []BotInfo `json:"items"`
	}{Items: []BotInfo{}}
	for _, b := range all {
		if mayManage(cl, b) {
			out.Items = append(out.Items, botInfo(b))
		}
	}
	return out, nil
}

// own reads bot slug for a client that may see it: another owner's
// bot is as unknown as a missing one.
func (d *botDesk) own(ctx context.Context, cl *client, params json.RawMessage, grant string) (store.BotRecord, error) {
	var p botSlugParams
	if err := decodeParams(params, &p); err != nil {
		return store.BotRecord{}, err
	}
	if err := requireChannel(p.Channel, true); err != nil {
		return store.BotRecord{}, err
	}
	if !cl.principal.Can(grant) {
		return store.BotRecord{}, ahp.Errorf(ahp.ErrPermissionDenied, "this needs the grant %s", grant)
	}
	if _, err := d.agent(); err != nil {
		return store.BotRecord{}, err
	}
	b, ok, err := d.env.Store.Bots().Get(ctx, p.Slug)
	if err != nil {
		return store.BotRecord{}, err
	}
	if !ok || !mayManage(cl, b) {
		return store.BotRecord{}, fmt.Errorf("%w: bot %s", ahp.ErrResourceNotFound, p.Slug)
	}
	return b, nil
}

func (d *botDesk) get(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
	b, err := d.own(ctx, cl, params, auth.SessionList)
	if err != nil {
		return nil, err
	}
	return botInfo(b), nil
}

// delete leaves the bot's tombstone; its work session stays, an
// ordinary session of its owner with the history it holds.
func (d *botDesk) delete(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
	b, err := d.own(ctx, cl, params, "session:dispose")
	if err != nil {
		return nil, err
	}
	if _, err := d.env.Store.Bots().Delete(ctx, b.Slug); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// principalOf is who sender is: the deployment for a root reference, else
// the principal of a configured token that names it.
func (d *botDesk) principalOf(sender string) (chat.Client, bool) {
	p, ok := principalNamed(d.principals, sender)
	if !ok {
		return chat.Client{}, false
	}
	return chatClientOf(p), true
}

// makeWorkSession makes bot b's work session: an ordinary session on b's
// agent in b's folder, owned by b's owner and titled with b's name, whose
// first turn is b's instructions (none when there are none). The folder is
// the daemon's own (under its data dir) or one the creating client could
// name, so the served-paths check of createSession was done already.
func (d *botDesk) makeWorkSession(ctx context.Context, b store.BotRecord) (string, error) {
	owner, ok := d.principalOf(b.Owner)
	if !ok {
		return "", fmt.Errorf("bot %s: its owner %s is nobody this daemon knows", b.Slug, b.Owner)
	}
	if !owner.Root && !owner.Can("session:create") {
		return "", ahp.Errorf(ahp.ErrPermissionDenied, "bot %s: its owner %s may not create sessions (session:create)", b.Slug, b.Owner)
	}
	if _, ok := d.agents.Get(b.Agent); !ok || b.Agent == bot.Provider {
		return "", fmt.Errorf("%w: %s", ahp.ErrProviderNotFound, b.Agent)
	}
	if err := os.MkdirAll(b.Folder, 0o700); err != nil {
		return "", fmt.Errorf("bot %s: folder: %w", b.Slug, err)
	}
	folder, err := filepath.EvalSymlinks(b.Folder)
	if err != nil {
		return "", fmt.Errorf("bot %s: folder: %w", b.Slug, err)
	}
	id := uuid.NewString()
	uri := "ahp-session:/" + id
	now := d.env.Now()
	values := map[string]any{}
	if b.Model != "" {
		values[sessionconfig.KeyModel] = b.Model
	}
	schema, resolved := d.config.schema(ctx, b.Agent, folder, values)
	cfg, err := json.Marshal(ahp.SessionConfig{Schema: schema, Values: resolved})
	if err != nil {
		return "", fmt.Errorf("bot %s: config: %w", b.Slug, err)
	}
	rec := store.SessionRecord{URI: uri, Provider: b.Agent, Title: b.Name, CreatedAt: now, ModifiedAt: now,
		WorkingDirectories: []string{ahp.FileURI(folder)}, Owner: b.Owner, Config: cfg}
	if err := d.env.Store.PutSession(ctx, rec); err != nil {
		return "", fmt.Errorf("bot %s: work session: %w", b.Slug, err)
	}
	s, err := d.sessions.open(ctx, rec, false)
	if err != nil {
		return "", fmt.Errorf("bot %s: work session: %w", b.Slug, err)
	}
	first := store.ChatRecord{URI: ahp.OpaqueChatURI(uuid.NewString()), Title: b.Name, ConversationID: id, CreatedAt: now, ModifiedAt: now}
	if err := s.AddChat(ctx, first); err != nil {
		return "", fmt.Errorf("bot %s: work session: %w", b.Slug, err)
	}
	sum, err := s.Summary(ctx)
	if err != nil {
		return "", err
	}
	d.sessions.announce(uri, sum)
	if err := d.env.Store.Bots().SetSession(ctx, b.Slug, uri, false); err != nil {
		return "", err
	}
	if strings.TrimSpace(b.Instructions) != "" {
		c, err := s.Chat(ctx, first.URI)
		if err != nil {
			return "", err
		}
		owner.ID = "bot:" + b.Slug
		owner.Sub = refusalLog{log: d.log, id: owner.ID, what: "a bot's instructions"}
		start := ahp.ChatTurnStarted{TurnID: uuid.NewString(), StartedAt: now.UTC().Format("2006-01-02T15:04:05.000Z"),
			Message: ahp.Message{Text: b.Instructions, Origin: ahp.MessageOrigin{Kind: "user"}}}
		if err := c.Dispatch(owner, 0, start); err != nil {
			return "", fmt.Errorf("bot %s: instructions: %w", b.Slug, err)
		}
	}
	return uri, nil
}

// WorkChat is bot b's work chat: its session's default chat, the session
// made first when the bot has none (or its session was disposed).
func (d *botDesk) WorkChat(ctx context.Context, b store.BotRecord) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	// The record may have changed since the caller read it.
	if cur, ok, err := d.env.Store.Bots().Get(ctx, b.Slug); err != nil {
		return "", err
	} else if ok {
		b = cur
	}
	if b.Session != "" {
		if s, ok := d.cat.live(ctx, b.Session); ok {
			def, err := s.DefaultChat(ctx)
			if err != nil {
				return "", err
			}
			if def == "" {
				return "", fmt.Errorf("work session %s has no chat", b.Session)
			}
			return def, nil
		}
		if b.Linked {
			return "", fmt.Errorf("%w: the session %s it is linked to", ahp.ErrResourceNotFound, b.Session)
		}
	}
	uri, err := d.makeWorkSession(ctx, b)
	if err != nil {
		return "", err
	}
	s, ok := d.cat.live(ctx, uri)
	if !ok {
		return "", fmt.Errorf("%w: work session %s", ahp.ErrResourceNotFound, uri)
	}
	return s.DefaultChat(ctx)
}

// Watch subscribes to a work chat as its bot's owner, who must be able to
// read it (chat:turns); the bot's chat relays it to nobody else.
func (d *botDesk) Watch(ctx context.Context, owner, chatURI string, see func(json.RawMessage)) (bot.Watch, error) {
	cl, ok := d.principalOf(owner)
	if !ok {
		return nil, fmt.Errorf("the bot's owner %s is nobody this daemon knows", owner)
	}
	if !cl.Root && !cl.Can(auth.ChatTurns) {
		return nil, ahp.Errorf(ahp.ErrPermissionDenied, "the bot's owner %s may not read its work session (%s)", owner, auth.ChatTurns)
	}
	w := &botWatch{d: d, chat: chatURI, id: "bot-watch:" + uuid.NewString(), see: see}
	cl.ID, cl.Sub = w.id, w
	w.cl = cl
	err := d.sessions.onChat(ctx, chatURI, func(c *chat.Chat) error {
		snap, err := c.Subscribe(ctx, w, nil)
		if err != nil {
			return err
		}
		var st ahp.ChatState
		if raw, ok := snap.State.(json.RawMessage); ok && json.Unmarshal(raw, &st) == nil {
			w.queued = st.QueuedMessages
		}
		w.actor = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// botWatch is a bot conversation's subscription to its work chat: a bus
// subscriber like a connection, whose envelopes go to the conversation.
type botWatch struct {
	d      *botDesk
	chat   string
	id     string
	see    func(json.RawMessage)
	cl     chat.Client
	actor  *chat.Chat
	queued []ahp.PendingMessage
	seq    atomic.Int64
}

func (w *botWatch) Deliver(method string, params json.RawMessage) {
	if method == "action" {
		w.see(params)
	}
}
func (w *botWatch) Knows(string) bool            { return true }
func (w *botWatch) ClientID() string             { return w.id }
func (w *botWatch) Queued() []ahp.PendingMessage { return w.queued }
func (w *botWatch) Done() <-chan struct{} {
	return w.actor.Done()
}
func (w *botWatch) Stop() { w.d.bus.Unsubscribe(w, w.chat) }

// Disposed: the chat's actor ended while the host goes on.
func (w *botWatch) Disposed() bool {
	select {
	case <-w.d.closing:
		return false
	default:
		return true
	}
}

// Dispatch hands the work chat an action as the bot's owner, as a client's
// dispatchAction would reach it.
func (w *botWatch) Dispatch(ctx context.Context, a any) (int64, error) {
	act, ok := a.(ahp.Action)
	if !ok {
		return 0, fmt.Errorf("not an action: %T", a)
	}
	seq := w.seq.Add(1)
	err := w.d.sessions.onChat(ctx, w.chat, func(c *chat.Chat) error { return c.Dispatch(w.cl, seq, act) })
	return seq, err
}

// refusalLog is who the host's own dispatch of a prompt (a bot's
// instructions, a delegated prompt) is from: it subscribes to nothing, and
// a refusal of it is logged.
type refusalLog struct {
	log  *slog.Logger
	id   string
	what string
}

func (r refusalLog) Deliver(method string, params json.RawMessage) {
	r.log.Warn(r.what+" was refused", "from", r.id, "envelope", string(params))
}
func (r refusalLog) Knows(string) bool { return true }
func (r refusalLog) ClientID() string  { return r.id }
