// Package cofold is ahpd's own coding agent, run in process: a loop of
// model calls and confined tools against any OpenAI-compatible (chat
// completions) or Anthropic (Messages) endpoint the daemon config names.
//
// A chat's conversation is kept in ahpd's SQLite (Store, bound by the
// daemon), one row per message, so a restart resumes it and a fork or a
// rewind cuts it at the point a turn ended (End.Point: how many messages
// the conversation held then).
package cofold

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/store"
)

// Provider is cofold's provider id.
const Provider = "cofold"

// modelsTimeout bounds the GET /models of every provider together.
const modelsTimeout = 3 * time.Second

// modelsRefresh is how old the providers' model lists may grow before the
// next Info asks again, in the background: a model a provider adds is
// offered within minutes, without a restart and without a turn waiting.
const modelsRefresh = 5 * time.Minute

// Store is where cofold keeps its conversations: ahpd's own SQLite
// (internal/store's Store.Cofold implements it).
type Store interface {
	Messages(ctx context.Context, conversation string) ([]store.CofoldMessage, error)
	Append(ctx context.Context, conversation string, msgs []store.CofoldMessage) error
	Cut(ctx context.Context, conversation string, keep int) error
	Fork(ctx context.Context, from, to string, keep int) error
	Delete(ctx context.Context, conversation string) error
}

// Agent is the cofold backend. Build it with New; it calls no model until
// a turn or the agents list needs one.
type Agent struct {
	settings Settings
	apis     map[string]modelAPI

	// mu guards store, models, listed, listedAt and listing.
	mu    sync.Mutex
	store Store
	// models are the configured models and what each provider's GET
	// /models said last (listed, by provider).
	models []agent.Model
	listed map[string][]string
	// listedAt is when the lists were last asked for (zero: never);
	// listing is true while they are being asked for.
	listedAt time.Time
	listing  bool
	// now is the clock (time.Now; a test moves it).
	now func() time.Time
}

// New builds cofold from its settings (ParseSettings).
func New(s Settings) *Agent {
	a := &Agent{settings: s, apis: make(map[string]modelAPI), store: newMemStore(), listed: map[string][]string{}, now: time.Now}
	for _, p := range s.Providers {
		switch p.API {
		case "anthropic":
			a.apis[p.Name] = newAnthropic(p, s.maxRetries())
		default:
			a.apis[p.Name] = newOpenAI(p, s.maxRetries())
		}
	}
	a.models = configuredModels(s)
	return a
}

// UseStore makes the agent keep its conversations in st (the daemon binds
// ahpd's store once it is open). Until then they are kept in memory.
func (a *Agent) UseStore(st Store) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.store = st
}

func (a *Agent) currentStore() Store {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.store
}

// Provider is "cofold".
func (a *Agent) Provider() string { return Provider }

// Info lists cofold with its models: "<provider>/<model>" for each
// configured model, and what each provider's GET /models lists. The first
// call asks the providers and waits for them (bounded by modelsTimeout:
// the agents list built at start names their models); a later call finding
// the lists older than modelsRefresh asks again in the background and
// answers with what it has, so no turn waits on a provider.
func (a *Agent) Info(ctx context.Context) agent.Info {
	a.mu.Lock()
	first := a.listedAt.IsZero() && !a.listing
	stale := !a.listedAt.IsZero() && !a.listing && a.now().Sub(a.listedAt) >= modelsRefresh
	if first || stale {
		a.listing = true
	}
	a.mu.Unlock()
	switch {
	case first:
		a.listModels(ctx)
	case stale:
		go a.listModels(context.WithoutCancel(ctx))
	}
	a.mu.Lock()
	models := append([]agent.Model(nil), a.models...)
	a.mu.Unlock()
	return agent.Info{
		Provider:     Provider,
		DisplayName:  "cofold",
		Description:  "ahpd's built-in coding agent, on any OpenAI-compatible or Anthropic endpoint",
		Models:       models,
		DefaultModel: a.settings.DefaultModel,
		Config: []agent.ConfigProperty{{
			Key:         PermissionModeKey,
			Title:       "Permission mode",
			Description: "What cofold asks before: default asks before writes and bash, acceptEdits only before bash, plan only reads, bypassPermissions asks nothing.",
			Enum:        []string{ModeDefault, ModeAcceptEdits, ModePlan, ModeBypass},
			EnumLabels:  []string{"Ask before writes and commands", "Accept edits", "Plan (read only)", "Bypass permissions"},
			Default:     a.settings.mode(),
		}},
	}
}

// PermissionModeKey is the session config key of cofold's permission mode;
// a session without it runs the config's permissionMode.
const PermissionModeKey = "permissionMode"

// modeOf is the permission mode a session's config names, else the
// daemon config's.
func (a *Agent) modeOf(config map[string]string) string {
	switch m := config[PermissionModeKey]; m {
	case ModeDefault, ModeAcceptEdits, ModePlan, ModeBypass:
		return m
	}
	return a.settings.mode()
}

// listModels asks every provider for its models (a.listing was set by its
// caller) and rebuilds the list: the configured models, then what each
// provider lists now. A provider whose listing failed keeps what it listed
// before; a model a provider no longer lists is no longer offered.
func (a *Agent) listModels(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, modelsTimeout)
	defer cancel()
	type listing struct {
		provider string
		ids      []string
		err      error
	}
	got := make(chan listing, len(a.settings.Providers))
	for _, p := range a.settings.Providers {
		go func() {
			ids, err := a.apis[p.Name].listModels(ctx)
			got <- listing{p.Name, ids, err}
		}()
	}
	fresh := map[string][]string{}
	failed := map[string]bool{}
	for range a.settings.Providers {
		l := <-got
		fresh[l.provider], failed[l.provider] = l.ids, l.err != nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for name, ids := range fresh {
		if !failed[name] {
			a.listed[name] = ids
		}
	}
	a.models = configuredModels(a.settings)
	seen := map[string]bool{}
	for _, m := range a.models {
		seen[m.ID] = true
	}
	for _, p := range a.settings.Providers {
		for _, id := range a.listed[p.Name] {
			full := p.Name + "/" + id
			if !seen[full] {
				seen[full] = true
				a.models = append(a.models, agent.Model{ID: full, Name: id + " (" + p.Name + ")"})
			}
		}
	}
	a.listedAt, a.listing = a.now(), false
}

func configuredModels(s Settings) []agent.Model {
	var out []agent.Model
	for _, p := range s.Providers {
		for _, m := range p.Models {
			out = append(out, agent.Model{ID: p.Name + "/" + m.ID, Name: m.ID + " (" + p.Name + ")"})
		}
	}
	return out
}

// Capabilities: cofold steers (a message the run holds is still read when
// a client takes it back, C-TURN-93), runs one turn at a time, and forks,
// rewinds, deletes and resumes the conversation it stores.
func (a *Agent) Capabilities() agent.Capabilities {
	return agent.Capabilities{
		Steering:       true,
		Withdraw:       true,
		OneTurnAtATime: true,
		Fork:           true,
		Rewind:         true,
		Delete:         true,
		Resume:         true,
	}
}

// Open opens a chat's conversation; a fork copies the source cut at its
// point, a rewind cuts the conversation back to its point. Both are done
// again on each open until a turn ran, which gives the same result.
func (a *Agent) Open(ctx context.Context, p agent.OpenParams) (agent.Conversation, error) {
	if p.ConversationID == "" {
		return nil, errors.New("open cofold conversation: empty conversation id")
	}
	if len(p.Directories) == 0 {
		return nil, fmt.Errorf("open cofold conversation %s: the chat has no directory", p.ConversationID)
	}
	st := a.currentStore()
	switch p.Mode {
	case agent.OpenFork:
		keep, err := parsePoint(p.Point)
		if err != nil {
			return nil, err
		}
		if err := st.Fork(ctx, p.Source, p.ConversationID, keep); err != nil {
			return nil, err
		}
	case agent.OpenRewind:
		keep, err := parsePoint(p.Point)
		if err != nil {
			return nil, err
		}
		if err := st.Cut(ctx, p.ConversationID, keep); err != nil {
			return nil, err
		}
	}
	fs, err := newConfine(p.Directories)
	if err != nil {
		return nil, fmt.Errorf("open cofold conversation %s: %w", p.ConversationID, err)
	}
	return newConversation(a, st, fs, p), nil
}

// Delete removes a stored conversation.
func (a *Agent) Delete(ctx context.Context, conversationID string, _ []string) error {
	return a.currentStore().Delete(ctx, conversationID)
}

// A point is how many messages the conversation held when a turn ended.
func pointOf(n int) string { return strconv.Itoa(n) }

func parsePoint(p string) (int, error) {
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("cofold point %q is not a message count", p)
	}
	return n, nil
}

// target is the model a turn runs on.
type target struct {
	provider ProviderConfig
	api      modelAPI
	model    string
	window   int
	maxOut   int
}

// errNoProvider is a turn with no model to run on; the message says where
// to configure one.
var errNoProvider = errors.New(`cofold has no model provider: add one to ahpd's config file under "agents": {"cofold": {"providers": [{"name", "api": "openai"|"anthropic", "baseUrl", "apiKeyEnv", "models": [{"id"}]}], "defaultModel": "<provider>/<model>"}} and restart ahpd`)

// resolve finds the model a turn names ("<provider>/<model>", or a model
// id of some provider), else the default model, else the first model of
// the first provider.
func (a *Agent) resolve(want string) (target, error) {
	s := a.settings
	if len(s.Providers) == 0 {
		return target{}, errNoProvider
	}
	pick := func(prov, model string) (target, bool) {
		p, ok := s.provider(prov)
		if !ok || model == "" {
			return target{}, false
		}
		t := target{provider: p, api: a.apis[p.Name], model: model, window: defaultContextWindow, maxOut: defaultMaxTokens}
		for _, m := range p.Models {
			if m.ID == model {
				if m.ContextWindow > 0 {
					t.window = m.ContextWindow
				}
				if m.MaxTokens > 0 {
					t.maxOut = m.MaxTokens
				}
			}
		}
		return t, true
	}
	if want != "" {
		if prov, model, ok := strings.Cut(want, "/"); ok {
			if t, ok := pick(prov, model); ok {
				return t, nil
			}
		}
		for _, p := range s.Providers {
			for _, m := range p.Models {
				if m.ID == want {
					t, _ := pick(p.Name, m.ID)
					return t, nil
				}
			}
		}
	}
	if s.DefaultModel != "" {
		prov, model, _ := strings.Cut(s.DefaultModel, "/")
		if t, ok := pick(prov, model); ok {
			return t, nil
		}
	}
	for _, p := range s.Providers {
		if len(p.Models) > 0 {
			t, _ := pick(p.Name, p.Models[0].ID)
			return t, nil
		}
	}
	a.mu.Lock()
	models := append([]agent.Model(nil), a.models...)
	a.mu.Unlock()
	for _, m := range models {
		prov, model, _ := strings.Cut(m.ID, "/")
		if t, ok := pick(prov, model); ok {
			return t, nil
		}
	}
	return target{}, fmt.Errorf("cofold: provider %q lists no model; name one under its \"models\" or set \"defaultModel\"", s.Providers[0].Name)
}

// memStore keeps conversations in memory, for an agent no daemon bound to
// its store (a test's registry).
type memStore struct {
	// mu guards convs.
	mu    sync.Mutex
	convs map[string][]store.CofoldMessage
}

func newMemStore() *memStore { return &memStore{convs: map[string][]store.CofoldMessage{}} }

func (m *memStore) Messages(_ context.Context, id string) ([]store.CofoldMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]store.CofoldMessage(nil), m.convs[id]...), nil
}

func (m *memStore) Append(_ context.Context, id string, msgs []store.CofoldMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.convs[id] = append(m.convs[id], msgs...)
	return nil
}

func (m *memStore) Cut(_ context.Context, id string, keep int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if keep < len(m.convs[id]) {
		m.convs[id] = m.convs[id][:keep]
	}
	return nil
}

func (m *memStore) Fork(_ context.Context, from, to string, keep int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	src := m.convs[from]
	m.convs[to] = append([]store.CofoldMessage(nil), src[:min(keep, len(src))]...)
	return nil
}

func (m *memStore) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.convs, id)
	return nil
}
