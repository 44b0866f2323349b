// Package acp is the backend that drives any Agent Client Protocol agent
// (Zed's Claude adapter, Codex's adapter, Gemini CLI, ...) over stdio, as
// the client side of github.com/coder/acp-go-sdk.
//
// Process model: one agent process per chat. A chat's conversation starts
// its process when its first turn is sent (not at Open), keeps it for the
// chat's later turns, and replaces it after a fault (the process exiting
// or writing something that is not JSON-RPC) or a stop the agent did not
// answer in time. One process per chat, rather than one multiplexing every
// chat's sessions, keeps a fault, a hung agent or a stuck cancel to the
// one chat it happened in; it lets the fs/* and terminal/* requests of a
// process be confined to that one chat's directories without trusting the
// sessionId the agent names; and the host already unloads idle chats, so
// idle processes do not pile up.
//
// The agent's session id is the agent's own; the backend keeps which
// session a host conversation id maps to in Options.StateDir, so a chat
// resumed after a daemon restart is loaded with session/load (or
// session/resume) when the agent advertises it.
package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/agentproc"
)

// Options configure one ACP agent: what the daemon config's
// "agents": {"acp": [...]} entry says, plus where the backend keeps its
// session map.
type Options struct {
	// Name is the provider id the agent is listed under.
	Name string `json:"name"`
	// DisplayName is shown in the agents list; empty: Name.
	DisplayName string `json:"displayName,omitempty"`
	// Command is the agent's executable: a path, or a name on PATH.
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	// Env is laid over the daemon's environment: KEY=VALUE entries.
	Env []string `json:"env,omitempty"`
	// DefaultModel is the model a session that names none runs on (the
	// agent is told it when its session starts); empty: the agent's own.
	// It is offered whether or not the agent lists it.
	DefaultModel string `json:"defaultModel,omitempty"`
	// StateDir holds one file per conversation naming the agent's session
	// id. Empty: kept in memory only (a restart starts new sessions).
	StateDir string `json:"-"`
	// Ledger is where each agent's process group (and each terminal's it
	// runs) is written down, for the next start to end what a killed
	// daemon left; the daemon sets it.
	Ledger agentproc.Ledger `json:"-"`
}

// Agent is one configured ACP agent. Build it with New; it starts nothing
// until a turn is sent.
type Agent struct {
	opts Options

	// mu guards learned and sessions (sessions: the in-memory session map
	// when StateDir is empty).
	mu       sync.Mutex
	learned  learned
	sessions map[string]sessionRecord
}

// learned is what the agent said of itself the last time one of its
// processes started a session: shown in the agents list. It is kept in
// StateDir, so a restarted daemon lists the models before a chat runs (an
// ACP agent names them only in session/new or session/load).
type learned struct {
	Models   []agent.Model   `json:"models,omitempty"`
	Modes    []Mode          `json:"modes,omitempty"`
	Commands []agent.Command `json:"commands,omitempty"`
	Info     string          `json:"info,omitempty"`
}

// learnedFile is the file in StateDir that keeps learned; not ending in
// .json, it cannot be a conversation's session map.
const learnedFile = "agent.learned"

// Mode is one session mode an agent offers.
type Mode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// sessionRecord is what the backend keeps of one conversation.
type sessionRecord struct {
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
}

// New checks opts and returns the agent.
func New(opts Options) (*Agent, error) {
	if strings.TrimSpace(opts.Name) == "" {
		return nil, errors.New("acp agent: empty name")
	}
	if strings.ContainsAny(opts.Name, "/\\ \t\n") {
		return nil, fmt.Errorf("acp agent %q: the name may not hold slashes or spaces", opts.Name)
	}
	if strings.TrimSpace(opts.Command) == "" {
		return nil, fmt.Errorf("acp agent %q: empty command", opts.Name)
	}
	for _, kv := range opts.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, fmt.Errorf("acp agent %q: env entry %q is not KEY=VALUE", opts.Name, kv)
		}
	}
	a := &Agent{opts: opts, sessions: make(map[string]sessionRecord)}
	if opts.StateDir != "" {
		// What an earlier run learned; a missing or unreadable file only
		// means the list is empty until a chat runs.
		if b, err := os.ReadFile(filepath.Join(opts.StateDir, learnedFile)); err == nil {
			_ = json.Unmarshal(b, &a.learned)
		}
	}
	return a, nil
}

// Provider is the configured name.
func (a *Agent) Provider() string { return a.opts.Name }

// Info describes the agent. Models, modes and commands are what its last
// session said (none before a chat of it has run: an ACP agent names them
// only in session/new).
func (a *Agent) Info(ctx context.Context) agent.Info {
	info := agent.Info{
		Provider:    a.opts.Name,
		DisplayName: a.opts.DisplayName,
		Description: "ACP agent: " + strings.Join(append([]string{a.opts.Command}, a.opts.Args...), " "),
	}
	if info.DisplayName == "" {
		info.DisplayName = a.opts.Name
	}
	if _, err := a.binary(); err != nil {
		info.Unavailable = err.Error()
	}
	info.SandboxWrite, info.SandboxRead = a.sandboxPaths()
	a.mu.Lock()
	defer a.mu.Unlock()
	info.Models = append([]agent.Model(nil), a.learned.Models...)
	info.DefaultModel = a.opts.DefaultModel
	info.Commands = append([]agent.Command(nil), a.learned.Commands...)
	if a.learned.Info != "" {
		info.Description += " (" + a.learned.Info + ")"
	}
	if len(a.learned.Modes) > 0 {
		// AgentInfo has no field for modes; the description names them,
		// and the session config offers them (resolveSessionConfig).
		var ms []string
		mode := agent.ConfigProperty{Key: ModeKey, Title: "Mode", Description: "The agent's session mode; unset keeps the agent's own."}
		for _, m := range a.learned.Modes {
			ms = append(ms, m.ID)
			name := m.Name
			if name == "" {
				name = m.ID
			}
			mode.Enum, mode.EnumLabels = append(mode.Enum, m.ID), append(mode.EnumLabels, name)
		}
		info.Description += "; modes: " + strings.Join(ms, ", ")
		info.Config = append(info.Config, mode)
	}
	return info
}

// ModeKey is the session config key of an ACP agent's session mode.
const ModeKey = "mode"

// Modes are the session modes the agent's last session offered.
func (a *Agent) Modes() []Mode {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Mode(nil), a.learned.Modes...)
}

// learn updates what the agent said of itself and keeps it in StateDir.
func (a *Agent) learn(f func(*learned)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(&a.learned)
	if a.opts.StateDir == "" {
		return
	}
	b, err := json.Marshal(a.learned)
	if err != nil {
		return
	}
	// A failed write loses only the list shown before the next chat runs.
	_ = writeFileAtomic(filepath.Join(a.opts.StateDir, learnedFile), b)
}

// writeFileAtomic writes b to path through a temporary file and a rename.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Capabilities: one turn at a time, resumable (session/load or
// session/resume where the agent has it; a new session otherwise). ACP has
// no standard way to add words to a running prompt, so no steering; no
// fork, rewind or side chats. Each conversation runs the agent's process.
func (a *Agent) Capabilities() agent.Capabilities {
	return agent.Capabilities{OneTurnAtATime: true, Resume: true, Delete: true, Process: true}
}

// Open returns the chat's conversation; its process starts with the first
// turn.
func (a *Agent) Open(ctx context.Context, p agent.OpenParams) (agent.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("open %s conversation: %w", a.opts.Name, err)
	}
	if p.ConversationID == "" || strings.ContainsAny(p.ConversationID, `/\`) {
		return nil, fmt.Errorf("open %s conversation: bad conversation id %q", a.opts.Name, p.ConversationID)
	}
	if len(p.Directories) == 0 {
		return nil, fmt.Errorf("open %s conversation %s: no directory", a.opts.Name, p.ConversationID)
	}
	switch p.Mode {
	case agent.OpenNew, agent.OpenResume:
	default:
		return nil, fmt.Errorf("open %s conversation %s: %v is not offered", a.opts.Name, p.ConversationID, p.Mode)
	}
	bin, err := a.binary()
	if err != nil {
		return nil, fmt.Errorf("open %s conversation %s: %w", a.opts.Name, p.ConversationID, err)
	}
	if p.Mode == agent.OpenNew {
		// A new conversation under an id used before starts over.
		if err := a.forget(p.ConversationID); err != nil {
			return nil, fmt.Errorf("open %s conversation %s: %w", a.opts.Name, p.ConversationID, err)
		}
	}
	return newConversation(a, bin, p), nil
}

// Delete forgets the conversation's session. The agent keeps its own
// history: ACP's stable methods have no delete.
func (a *Agent) Delete(ctx context.Context, conversationID string, directories []string) error {
	if conversationID == "" || strings.ContainsAny(conversationID, `/\`) {
		return fmt.Errorf("delete %s conversation %q: bad id", a.opts.Name, conversationID)
	}
	if err := a.forget(conversationID); err != nil {
		return fmt.Errorf("delete %s conversation %s: %w", a.opts.Name, conversationID, err)
	}
	return nil
}

// session reads the session a conversation maps to.
func (a *Agent) session(conversationID string) (sessionRecord, bool, error) {
	if a.opts.StateDir == "" {
		a.mu.Lock()
		defer a.mu.Unlock()
		r, ok := a.sessions[conversationID]
		return r, ok, nil
	}
	b, err := os.ReadFile(a.statePath(conversationID))
	if errors.Is(err, fs.ErrNotExist) {
		return sessionRecord{}, false, nil
	}
	if err != nil {
		return sessionRecord{}, false, fmt.Errorf("read session map: %w", err)
	}
	var r sessionRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return sessionRecord{}, false, fmt.Errorf("read session map %s: %w", a.statePath(conversationID), err)
	}
	return r, r.SessionID != "", nil
}

// remember keeps which session a conversation maps to.
func (a *Agent) remember(conversationID string, r sessionRecord) error {
	if a.opts.StateDir == "" {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.sessions[conversationID] = r
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(a.statePath(conversationID), b); err != nil {
		return fmt.Errorf("keep session map: %w", err)
	}
	return nil
}

func (a *Agent) forget(conversationID string) error {
	if a.opts.StateDir == "" {
		a.mu.Lock()
		defer a.mu.Unlock()
		delete(a.sessions, conversationID)
		return nil
	}
	if err := os.Remove(a.statePath(conversationID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("forget session: %w", err)
	}
	return nil
}

func (a *Agent) statePath(conversationID string) string {
	return filepath.Join(a.opts.StateDir, conversationID+".json")
}

// binary resolves the agent's command: a path as it is, a name on PATH.
func (a *Agent) binary() (string, error) {
	cmd := a.opts.Command
	hint := fmt.Sprintf("ACP agent command %q not found; install it, or give its entry the command's path", cmd)
	configured := ""
	if strings.ContainsRune(cmd, os.PathSeparator) {
		configured = cmd
	}
	return agentproc.Locate(configured, cmd, hint)
}

// environ is the daemon's environment with the agent's laid over it.
func (a *Agent) environ() []string {
	return append(os.Environ(), a.opts.Env...)
}

// modelsOf reads the models a session offers: its configOptions' model
// select, else the unstable models state.
func modelsOf(opts []acpsdk.SessionConfigOption, ms *acpsdk.SessionModelState) []agent.Model {
	var out []agent.Model
	for _, o := range opts {
		s := o.Select
		if s == nil || s.Category == nil || *s.Category != acpsdk.SessionConfigOptionCategoryModel {
			continue
		}
		for _, v := range selectValues(s) {
			out = append(out, agent.Model{ID: string(v.Value), Name: v.Name})
		}
		return out
	}
	if ms != nil {
		for _, m := range ms.AvailableModels {
			out = append(out, agent.Model{ID: string(m.ModelId), Name: m.Name})
		}
	}
	return out
}

// modesOf reads the modes a session offers: its modes state, else its
// configOptions' mode select.
func modesOf(opts []acpsdk.SessionConfigOption, ms *acpsdk.SessionModeState) []Mode {
	var out []Mode
	if ms != nil {
		for _, m := range ms.AvailableModes {
			d := ""
			if m.Description != nil {
				d = *m.Description
			}
			out = append(out, Mode{ID: string(m.Id), Name: m.Name, Description: d})
		}
		return out
	}
	for _, o := range opts {
		s := o.Select
		if s == nil || s.Category == nil || *s.Category != acpsdk.SessionConfigOptionCategoryMode {
			continue
		}
		for _, v := range selectValues(s) {
			d := ""
			if v.Description != nil {
				d = *v.Description
			}
			out = append(out, Mode{ID: string(v.Value), Name: v.Name, Description: d})
		}
	}
	return out
}

func selectValues(s *acpsdk.SessionConfigOptionSelect) []acpsdk.SessionConfigSelectOption {
	if u := s.Options.Ungrouped; u != nil {
		return *u
	}
	var out []acpsdk.SessionConfigSelectOption
	if g := s.Options.Grouped; g != nil {
		for _, grp := range *g {
			out = append(out, grp.Options...)
		}
	}
	return out
}

// discardLogger is used when OpenParams carries no logger.
var discardLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

var _ agent.Agent = (*Agent)(nil)
