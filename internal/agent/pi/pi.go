// Package pi is the backend that drives the pi coding agent
// (@mariozechner/pi-coding-agent) in its RPC mode: `pi --mode rpc`, JSON
// lines over stdio (pi's docs/rpc.md). One pi process runs per chat; it is
// started by the chat's first turn, kept for the later ones, and replaced
// after it exits or is stopped past its grace.
//
// pi keeps each conversation in a session file of its own (JSONL, a tree
// of entries linked by id/parentId, pi's docs/session-format.md) under
// <agent dir>/sessions/--<cwd>--/. The backend names the file of a
// conversation it starts <timestamp>_<conversation id>.jsonl and hands it
// to pi with --session, so the conversation id alone finds it again after a
// restart; a file pi wrote on its own is named by pi's session id the same
// way, which is how the catalogue finds it.
//
// The wire format it relies on was measured against pi 0.73.1 (the
// backends reference README, section 2).
package pi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/agentproc"
)

// Provider is the backend's provider id.
const Provider = "pi"

// installHint says how to get the CLI when it is missing.
const installHint = "pi CLI not found; install @mariozechner/pi-coding-agent, or set agents.pi.binary (`make agents` installs the pinned one under testdata/agents)"

// Options are the backend's daemon settings: the config's "agents": {"pi": {...}}.
type Options struct {
	// Binary is the pi executable (a path, or a name on PATH). Empty: pi on
	// PATH.
	Binary string `json:"binary,omitempty"`
	// AgentDir is pi's PI_CODING_AGENT_DIR (its models.json, settings and
	// sessions). Empty: <data dir>/pi/agent, set by the daemon.
	AgentDir string `json:"agentDir,omitempty"`
	// Providers are written to <AgentDir>/models.json in pi's shape. None:
	// the agent dir's own models.json is left as it is.
	Providers map[string]ProviderConfig `json:"providers,omitempty"`
	// DefaultModel is "<provider>/<model>", the model a turn that names
	// none runs on. Empty: the first configured model, else pi's default.
	DefaultModel string `json:"defaultModel,omitempty"`
	// ExtraArgs are appended to every command line.
	ExtraArgs []string `json:"extraArgs,omitempty"`
	// Env entries (KEY=VALUE) are laid over os.Environ().
	Env []string `json:"env,omitempty"`
	// Ledger is where each CLI's process group is written down, for the
	// next start to end what a killed daemon left; the daemon sets it.
	Ledger agentproc.Ledger `json:"-"`
}

// ProviderConfig is one provider of pi's models.json.
type ProviderConfig struct {
	BaseURL string `json:"baseUrl"`
	// API is pi's API style: "openai-completions", "anthropic-messages", ...
	API string `json:"api"`
	// APIKey is a literal, the name of an environment variable, or "!cmd"
	// (pi's rules).
	APIKey  string            `json:"apiKey,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Compat is pi's compatibility switches, passed through.
	Compat json.RawMessage `json:"compat,omitempty"`
	Models []ModelConfig   `json:"models"`
}

// ModelConfig is one model of a provider.
type ModelConfig struct {
	ID            string          `json:"id"`
	Name          string          `json:"name,omitempty"`
	ContextWindow int             `json:"contextWindow,omitempty"`
	MaxTokens     int             `json:"maxTokens,omitempty"`
	Reasoning     *bool           `json:"reasoning,omitempty"`
	Input         []string        `json:"input,omitempty"`
	Cost          json.RawMessage `json:"cost,omitempty"`
	Compat        json.RawMessage `json:"compat,omitempty"`
}

// Decode reads the config's agents.pi strictly: an unknown key is an error.
func Decode(raw json.RawMessage) (Options, error) {
	var o Options
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return o, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return o, err
	}
	return o, o.check()
}

// check refuses settings pi would trip over later.
func (o Options) check() error {
	for name, p := range o.Providers {
		if name == "" || strings.ContainsAny(name, "/ \t\n") {
			return fmt.Errorf("provider %q: the name may not be empty or hold slashes or spaces", name)
		}
		if p.BaseURL == "" || p.API == "" {
			return fmt.Errorf("provider %q: baseUrl and api are required", name)
		}
		if len(p.Models) == 0 {
			return fmt.Errorf("provider %q: no models", name)
		}
		for i, m := range p.Models {
			if m.ID == "" {
				return fmt.Errorf("provider %q: models[%d]: empty id", name, i)
			}
		}
	}
	if o.DefaultModel != "" {
		prov, model, ok := strings.Cut(o.DefaultModel, "/")
		if !ok || prov == "" || model == "" {
			return fmt.Errorf("defaultModel %q: want <provider>/<model>", o.DefaultModel)
		}
		if len(o.Providers) > 0 && !o.hasModel(prov, model) {
			return fmt.Errorf("defaultModel %q: no such configured model", o.DefaultModel)
		}
	}
	for _, kv := range o.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("env entry %q is not KEY=VALUE", kv)
		}
	}
	return nil
}

func (o Options) hasModel(prov, model string) bool {
	for _, m := range o.Providers[prov].Models {
		if m.ID == model {
			return true
		}
	}
	return false
}

// Pi is the pi backend. Build it with New; it does no I/O until Open.
type Pi struct {
	opts Options
	// modelsMu serializes writes of models.json.
	modelsMu sync.Mutex
}

// New returns the backend. It starts nothing.
func New(opts Options) *Pi { return &Pi{opts: opts} }

// Provider returns "pi".
func (p *Pi) Provider() string { return Provider }

// models lists the configured models as "<provider>/<model>", the default
// first.
func (o Options) models() []agent.Model {
	var out []agent.Model
	names := make([]string, 0, len(o.Providers))
	for n := range o.Providers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, m := range o.Providers[n].Models {
			name := m.Name
			if name == "" {
				name = m.ID
			}
			out = append(out, agent.Model{ID: n + "/" + m.ID, Name: name + " (" + n + ")"})
		}
	}
	if d := o.defaultModel(); d != "" {
		for i, m := range out {
			if m.ID == d && i > 0 {
				out[0], out[i] = out[i], out[0]
			}
		}
	}
	return out
}

// defaultModel is the model a turn that names none runs on.
func (o Options) defaultModel() string {
	if o.DefaultModel != "" {
		return o.DefaultModel
	}
	if ms := o.modelsSorted(); len(ms) > 0 {
		return ms[0]
	}
	return ""
}

func (o Options) modelsSorted() []string {
	var out []string
	for n, p := range o.Providers {
		for _, m := range p.Models {
			out = append(out, n+"/"+m.ID)
		}
	}
	sort.Strings(out)
	return out
}

// Info describes the backend; Unavailable says why when the CLI is missing.
func (p *Pi) Info(ctx context.Context) agent.Info {
	info := agent.Info{
		Provider:     Provider,
		DisplayName:  "pi",
		Description:  "the pi coding agent (pi --mode rpc)",
		Models:       p.opts.models(),
		DefaultModel: p.opts.DefaultModel,
	}
	if _, err := p.opts.binary(); err != nil {
		info.Unavailable = err.Error()
	}
	info.SandboxWrite, info.SandboxRead = p.opts.sandboxPaths()
	return info
}

// Capabilities: steering into the running turn before the model's next
// call (C-TURN-80), one turn at a time (C-TURN-103), fork and rewind at a
// turn's last session entry, resume and delete of its session file, and
// side chats (the host's words go into the prompt, C-TURN-111); one
// process per conversation. pi's RPC cannot take a steering message back.
func (p *Pi) Capabilities() agent.Capabilities {
	return agent.Capabilities{
		Steering:       true,
		OneTurnAtATime: true,
		Fork:           true,
		Rewind:         true,
		Delete:         true,
		Resume:         true,
		SideChat:       true,
		Process:        true,
	}
}

// Open prepares the conversation's session file (a fork's or rewind's cut
// is written now); pi itself starts with the first turn.
func (p *Pi) Open(ctx context.Context, op agent.OpenParams) (agent.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("open pi conversation: %w", err)
	}
	if !validID(op.ConversationID) {
		return nil, fmt.Errorf("open pi conversation: bad conversation id %q", op.ConversationID)
	}
	if len(op.Directories) == 0 {
		return nil, fmt.Errorf("open pi conversation %s: no directory", op.ConversationID)
	}
	bin, err := p.opts.binary()
	if err != nil {
		return nil, fmt.Errorf("open pi conversation %s: %w", op.ConversationID, err)
	}
	cwd := op.Directories[0]
	store := p.sessions()
	var path string
	switch op.Mode {
	case agent.OpenNew:
		path = store.newPath(cwd, op.ConversationID)
	case agent.OpenResume:
		path, err = store.find(op.ConversationID)
		if errors.Is(err, os.ErrNotExist) {
			// Nothing was kept (pi writes its file with the first answer).
			path, err = store.newPath(cwd, op.ConversationID), nil
		}
	case agent.OpenFork:
		var src string
		if src, err = store.find(op.Source); err == nil {
			path, err = store.cut(src, op.Point, cwd, op.ConversationID)
		}
	case agent.OpenRewind:
		var src string
		if src, err = store.find(op.ConversationID); err == nil {
			path, err = store.cut(src, op.Point, cwd, op.ConversationID)
		}
	default:
		err = fmt.Errorf("open mode %v", op.Mode)
	}
	if err != nil {
		return nil, fmt.Errorf("open pi conversation %s (%s): %w", op.ConversationID, op.Mode, err)
	}
	return newConversation(p, bin, op, path), nil
}

// Delete removes the conversation's session files. One that is not there
// is no error.
func (p *Pi) Delete(ctx context.Context, conversationID string, directories []string) error {
	if !validID(conversationID) {
		return fmt.Errorf("delete pi conversation %q: bad id", conversationID)
	}
	files, err := p.sessions().all(conversationID)
	if err != nil {
		return fmt.Errorf("delete pi conversation %s: %w", conversationID, err)
	}
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("delete pi conversation %s: %w", conversationID, err)
		}
	}
	return nil
}

// validID accepts what a session file name can carry: no separators, no
// dots, no glob characters.
func validID(id string) bool {
	if id == "" || len(id) > 200 {
		return false
	}
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
		default:
			return false
		}
	}
	return true
}

// agentDir is PI_CODING_AGENT_DIR as pi will see it.
func (o Options) agentDir() string {
	if o.AgentDir != "" {
		return o.AgentDir
	}
	if d := o.lookupEnv("PI_CODING_AGENT_DIR"); d != "" {
		return d
	}
	home := o.lookupEnv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".pi", "agent")
}

func (p *Pi) sessions() sessionStore {
	return sessionStore{root: filepath.Join(p.opts.agentDir(), "sessions")}
}

// writeModels writes the configured providers to <agent dir>/models.json
// when they differ from what is there.
func (p *Pi) writeModels() error {
	if len(p.opts.Providers) == 0 {
		return nil
	}
	p.modelsMu.Lock()
	defer p.modelsMu.Unlock()
	dir := p.opts.agentDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("pi agent dir: %w", err)
	}
	body, err := json.MarshalIndent(map[string]any{"providers": p.opts.Providers}, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "models.json")
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, body) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, body, 0o600); err != nil {
		return fmt.Errorf("write pi models.json: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write pi models.json: %w", err)
	}
	return nil
}

// binary resolves the pi executable: the configured one, else pi on PATH.
func (o Options) binary() (string, error) {
	return agentproc.Locate(o.Binary, "pi", installHint)
}

// environ is what pi runs with: os.Environ(), pi kept off the network for
// its own start-up checks (PI_OFFLINE) and telemetry, the options' Env
// over it, and PI_CODING_AGENT_DIR.
func (o Options) environ() []string {
	env := append(os.Environ(), "PI_OFFLINE=1", "PI_TELEMETRY=0")
	env = append(env, o.Env...)
	return append(env, "PI_CODING_AGENT_DIR="+o.agentDir())
}

// lookupEnv finds key in o.Env, then in the process environment.
func (o Options) lookupEnv(key string) string {
	val, found := "", false
	for _, kv := range o.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			val, found = v, true
		}
	}
	if found {
		return val
	}
	return os.Getenv(key)
}

// discardLogger is used when OpenParams carries no logger.
var discardLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

var _ agent.Agent = (*Pi)(nil)
