// Package bot is the backend of a bot's chat: a chat whose agent is "bot"
// hands each of its turns to the bot's work session (an ordinary session
// on the bot's agent, in the bot's folder, run as the bot's owner) and
// brings the work session's parts back as the turn's parts.
//
// The backend never touches another actor's state: it reaches the work
// session only through the Host (implemented by internal/host), as a client
// would, subscribing to the work chat and dispatching actions to it as the
// bot's owner. Its conversation's own goroutine does that waiting, never
// the chat actor that calls it.
//
// Steering follows CHATS.md: a steering message goes to the work session
// as a message queued behind its running turn, and the bot's turn stays
// open until the work session has run every message it was handed in it.
package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/store"
)

// Provider is the bot backend's provider id.
const Provider = "bot"

// ConfigKey is the session setting that names the bot a chat talks to.
const ConfigKey = "bot"

// Host is what a bot's chat needs of the daemon's host.
type Host interface {
	// WorkChat returns the chat of bot b's work session that its turns go
	// to, making the work session first (as b's owner, its instructions as
	// its first turn) when b has none.
	WorkChat(ctx context.Context, b store.BotRecord) (string, error)
	// Watch follows chat as owner: it subscribes, then hands every
	// envelope said on the chat from then on to see, in order, from a
	// goroutine see must not block. A refusal of the watch's own actions
	// comes back the same way, with its reason.
	Watch(ctx context.Context, owner, chat string, see func(envelope json.RawMessage)) (Watch, error)
}

// Watch is one subscription of a bot conversation to its work chat, and
// its way to act there as the bot's owner.
type Watch interface {
	// ClientID is who the watch's actions are said by (their origin).
	ClientID() string
	// Queued are the messages the chat's queue held when the watch began.
	Queued() []ahp.PendingMessage
	// Dispatch hands the chat a client action as the owner and returns its
	// clientSeq; a refusal arrives as an envelope with that origin.
	Dispatch(ctx context.Context, a any) (int64, error)
	// Done is closed when the chat's actor ended: nothing more will be
	// said. Disposed then says whether its session was disposed (the turn
	// ends) rather than the daemon stopping (the turn is left to the
	// restart's recovery, as every running turn is).
	Done() <-chan struct{}
	Disposed() bool
	// Stop ends the subscription.
	Stop()
}

// Options configure the bot backend.
type Options struct {
	// Dir is where bots' folders are made by default: <data dir>/bots.
	Dir string
	// BeforeHandOff, for tests, is called on a conversation's goroutine
	// before it sends a steering message to the work session, and what
	// the work session said meanwhile is taken in right after: a test
	// holds a message on its way while the turn ends (C-TURN-98).
	BeforeHandOff func(steeringID string)
}

// Agent is the bot backend. It is usable once UseStore and UseHost bound
// it (the daemon does both before it serves).
type Agent struct {
	opts Options

	// mu guards st and host.
	mu   sync.Mutex
	st   *store.Store
	host Host
}

var _ agent.Agent = (*Agent)(nil)

// New builds the bot backend; it does nothing until opened.
func New(o Options) *Agent { return &Agent{opts: o} }

// UseStore binds the store bots are kept in.
func (a *Agent) UseStore(st *store.Store) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.st = st
}

// UseHost binds the host the work sessions live in.
func (a *Agent) UseHost(h Host) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.host = h
}

// UseDir sets where bots' folders are made by default, when the daemon
// knows its data dir only after the backend was built.
func (a *Agent) UseDir(dir string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.opts.Dir == "" {
		a.opts.Dir = dir
	}
}

func (a *Agent) bound() (*store.Store, Host) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.st, a.host
}

// Store is the store bots are kept in (nil until bound).
func (a *Agent) Store() *store.Store { st, _ := a.bound(); return st }

// DefaultFolder is where bot slug works unless it names a folder.
func (a *Agent) DefaultFolder(slug string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return filepath.Join(a.opts.Dir, slug)
}

func (a *Agent) Provider() string { return Provider }

// Info declares the session setting "bot": the slug of the bot a chat of
// the session talks to. It lists no bots: the slugs and names of other
// owners' bots are theirs, and with no default a session never talks to a
// bot nobody named.
func (a *Agent) Info(context.Context) agent.Info {
	return agent.Info{
		Provider:    Provider,
		DisplayName: "Bot",
		Description: "A named, standing agent: each turn goes to the bot's work session.",
		Config: []agent.ConfigProperty{{Key: ConfigKey, Title: "Bot",
			Description: "The slug of the bot this session talks to (ahpd bot list)"}},
	}
}

// Capabilities: a bot's chat steers (through its work session's queue)
// and runs one turn at a time; the work session keeps the conversation,
// so every open resumes it.
func (a *Agent) Capabilities() agent.Capabilities {
	return agent.Capabilities{Steering: true, OneTurnAtATime: true, Resume: true}
}

// Open starts the conversation of a bot's chat. It does no I/O: which bot,
// and whether the chat may use it, is settled at each turn, since a bot
// can be deleted while its chat is open.
func (a *Agent) Open(ctx context.Context, p agent.OpenParams) (agent.Conversation, error) {
	st, h := a.bound()
	if st == nil || h == nil {
		return nil, errors.New("the bot backend is not bound to a daemon")
	}
	slug := p.Config[ConfigKey]
	if slug == "" {
		return nil, fmt.Errorf("this session names no bot: create it with config {%q: <slug>}", ConfigKey)
	}
	log := p.Logger
	if log == nil {
		log = slog.Default()
	}
	c := newConversation(st, h, slug, p.Owner, log.With("bot", slug), a.opts.BeforeHandOff)
	c.id = p.ConversationID
	return c, nil
}

// Delete: a bot's chat keeps nothing of its own beyond the chat's record.
func (a *Agent) Delete(context.Context, string, []string) error {
	return errors.New("a bot's conversation is its work session; dispose that session instead")
}

var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ValidSlug says why slug cannot name a bot ("" when it can): lower-case
// letters, digits and dashes, at most 63, so it is a folder name and a
// URI segment as it is.
func ValidSlug(slug string) string {
	if !slugPattern.MatchString(slug) {
		return fmt.Sprintf("slug %q: use 1 to 63 lower-case letters, digits and dashes, starting with a letter or digit", slug)
	}
	return ""
}

// MayUse says whether a chat of a session owned by owner may talk to bot
// b: the bot's owner, or the deployment itself (root). The work session is
// its owner's; a chat relays all of it, so nobody else reads it this way.
func MayUse(owner string, b store.BotRecord) bool {
	return owner == b.Owner || IsRoot(owner)
}

// IsRoot says whether a sender reference is the deployment itself.
func IsRoot(sender string) bool { return len(sender) >= 5 && sender[:5] == "root:" }
