// Package claude is the backend that drives Anthropic's Claude Code CLI
// (`claude -p` over stream-json). Each open conversation is one long-lived
// CLI process whose stdin is the prompt stream: turns and steering messages
// are written to it as user frames, permission asks come back as
// can_use_tool control requests, and a stop is an interrupt control
// request. The CLI keeps the conversation in its own transcript
// (<config dir>/projects/<cwd slug>/<id>.jsonl), which ReadTranscript reads
// back after a restart.
//
// The daemon registers a *Claude in its agent registry; the chat actor's
// turn engine is its only caller. The wire format it relies on was measured
// against claude 2.1.197 (see the backends reference README, section 1).
package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/agentproc"
)

// Provider is the backend's provider id.
const Provider = "claude"

// installHint says how to get the CLI when it is missing.
const installHint = "claude CLI not found; install @anthropic-ai/claude-code, or set agents.claude.binary (`make agents` installs the pinned one under testdata/agents)"

// Stop behaviours (Options.StopEnds).
const (
	// StopEndsTurn: a stop interrupts the running turn; the CLI and its
	// conversation stay (C-TURN-70).
	StopEndsTurn = "turn"
	// StopEndsQuery: a stop ends the CLI process; the next turn goes to a
	// CLI that resumes the conversation (C-TURN-76, C-TURN-77).
	StopEndsQuery = "query"
)

// Options are the backend's daemon settings. OpenParams.Settings, when
// set, is decoded over them for one conversation (Env is appended).
type Options struct {
	// Binary is the claude executable (a path, or a name on PATH). Empty:
	// claude on PATH.
	Binary string `json:"binary,omitempty"`
	// ExtraArgs are appended to every command line.
	ExtraArgs []string `json:"extraArgs,omitempty"`
	// Env entries (KEY=VALUE) are laid over os.Environ().
	Env []string `json:"env,omitempty"`
	// StopEnds is StopEndsTurn (default) or StopEndsQuery.
	StopEnds string `json:"stopEnds,omitempty"`
	// ConfigDir is CLAUDE_CONFIG_DIR; empty inherits it (or ~/.claude).
	ConfigDir string `json:"configDir,omitempty"`
	// Ledger is where each CLI's process group is written down, for the
	// next start to end what a killed daemon left; the daemon sets it.
	Ledger agentproc.Ledger `json:"-"`
}

// Claude is the Claude Code backend. Build it with New; it does no I/O
// until Open.
type Claude struct {
	opts Options

	// commandsMu guards commands: the slash commands the CLI answered its
	// last initialize with (empty until a conversation has started).
	commandsMu sync.Mutex
	commands   []agent.Command
}

func (c *Claude) setCommands(cmds []agent.Command) {
	c.commandsMu.Lock()
	defer c.commandsMu.Unlock()
	c.commands = cmds
}

// New returns the backend. It starts nothing.
func New(opts Options) *Claude {
	return &Claude{opts: opts}
}

// Provider returns "claude".
func (c *Claude) Provider() string { return Provider }

// models are the CLI's model aliases; the CLI resolves them.
var models = []agent.Model{
	{ID: "default", Name: "Default"},
	{ID: "sonnet", Name: "Sonnet"},
	{ID: "opus", Name: "Opus"},
	{ID: "haiku", Name: "Haiku"},
}

// permissionModeProperty is the CLI's --permission-mode, a session setting.
var permissionModeProperty = agent.ConfigProperty{
	Key: PermissionModeKey, Title: "Permission mode",
	Description: "What Claude may do without asking: ask before edits and commands, accept edits, plan only, or bypass every check.",
	Enum:        []string{"default", "acceptEdits", "plan", "bypassPermissions"},
	EnumLabels:  []string{"Ask", "Accept edits", "Plan", "Bypass permissions"},
	Default:     "default",
}

// PermissionModeKey is the session config key of the CLI's permission mode.
const PermissionModeKey = "permissionMode"

// Info describes the backend; Unavailable says why when the CLI is missing.
func (c *Claude) Info(ctx context.Context) agent.Info {
	info := agent.Info{
		Provider:    Provider,
		DisplayName: "Claude Code",
		Description: "Anthropic's Claude Code CLI",
		Models:      append([]agent.Model(nil), models...),
		Config:      []agent.ConfigProperty{permissionModeProperty},
	}
	if _, err := c.opts.binary(); err != nil {
		info.Unavailable = installHint
	}
	info.SandboxWrite, info.SandboxRead = c.opts.sandboxPaths()
	c.commandsMu.Lock()
	info.Commands = append([]agent.Command(nil), c.commands...)
	c.commandsMu.Unlock()
	return info
}

// Capabilities: steering (at the next tool call, C-TURN-60), fork, rewind,
// resume, delete and side chats, one CLI process per conversation. The CLI
// queues prompts itself, so the backend takes a turn sent while another
// runs and hands it over once the CLI has answered the one in front
// (C-TURN-78).
func (c *Claude) Capabilities() agent.Capabilities {
	return agent.Capabilities{
		Steering:       true,
		Withdraw:       false,
		OneTurnAtATime: false,
		Fork:           true,
		Rewind:         true,
		Delete:         true,
		Resume:         true,
		Subagents:      true,
		SideChat:       true,
		Process:        true,
	}
}

// Open starts the conversation's CLI process. Nothing is sent to the model
// until the first Send.
func (c *Claude) Open(ctx context.Context, p agent.OpenParams) (agent.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("open claude conversation: %w", err)
	}
	opts, err := c.opts.with(p.Settings)
	if err != nil {
		return nil, fmt.Errorf("open claude conversation: %w", err)
	}
	if p.ConversationID == "" {
		return nil, errors.New("open claude conversation: empty conversation id")
	}
	switch p.Mode {
	case agent.OpenFork:
		if p.Source == "" {
			return nil, errors.New("open claude conversation: fork without a source")
		}
	case agent.OpenRewind:
		if p.Point == "" {
			return nil, errors.New("open claude conversation: rewind without a point")
		}
	}
	bin, err := opts.binary()
	if err != nil {
		return nil, fmt.Errorf("open claude conversation: %w", err)
	}
	conv := newConversation(opts, bin, p)
	conv.onCommands = c.setCommands
	if err := conv.start(firstLaunch(p)); err != nil {
		_ = conv.Close()
		return nil, fmt.Errorf("open claude conversation %s: %w", p.ConversationID, err)
	}
	return conv, nil
}

// Delete removes the conversation's transcript (and the folder holding its
// subagents' transcripts). A conversation that is not there is no error.
func (c *Claude) Delete(ctx context.Context, conversationID string, directories []string) error {
	if conversationID == "" || strings.ContainsAny(conversationID, `/\`) {
		return fmt.Errorf("delete claude conversation %q: bad id", conversationID)
	}
	cwd := ""
	if len(directories) > 0 {
		cwd = directories[0]
	}
	path, err := findTranscript(c.opts.configDir(), conversationID, cwd)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete claude conversation %s: %w", conversationID, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete claude conversation %s: %w", conversationID, err)
	}
	if err := os.RemoveAll(strings.TrimSuffix(path, ".jsonl")); err != nil {
		return fmt.Errorf("delete claude conversation %s: %w", conversationID, err)
	}
	return nil
}

// with decodes per-conversation settings over the daemon's options.
func (o Options) with(settings json.RawMessage) (Options, error) {
	out := o
	out.ExtraArgs = append([]string(nil), o.ExtraArgs...)
	out.Env = append([]string(nil), o.Env...)
	if len(settings) > 0 && string(settings) != "null" {
		var s Options
		if err := json.Unmarshal(settings, &s); err != nil {
			return o, fmt.Errorf("claude settings: %w", err)
		}
		if s.Binary != "" {
			out.Binary = s.Binary
		}
		if s.StopEnds != "" {
			out.StopEnds = s.StopEnds
		}
		if s.ConfigDir != "" {
			out.ConfigDir = s.ConfigDir
		}
		out.ExtraArgs = append(out.ExtraArgs, s.ExtraArgs...)
		out.Env = append(out.Env, s.Env...)
	}
	switch out.StopEnds {
	case "":
		out.StopEnds = StopEndsTurn
	case StopEndsTurn, StopEndsQuery:
	default:
		return o, fmt.Errorf("claude settings: stopEnds %q: want %q or %q", out.StopEnds, StopEndsTurn, StopEndsQuery)
	}
	return out, nil
}

// binary resolves the claude executable: the configured one, else claude
// on PATH.
func (o Options) binary() (string, error) {
	return agentproc.Locate(o.Binary, "claude", installHint)
}

// environ is os.Environ() with the options' environment laid over it,
// CLAUDE_CONFIG_DIR when ConfigDir is set, and IS_SANDBOX=1 when running as
// root (the CLI refuses some permission modes as root without it).
func (o Options) environ() []string {
	env := os.Environ()
	if os.Geteuid() == 0 {
		env = append(env, "IS_SANDBOX=1")
	}
	env = append(env, o.Env...)
	if o.ConfigDir != "" {
		env = append(env, "CLAUDE_CONFIG_DIR="+o.ConfigDir)
	}
	return env
}

// lookupEnv finds key in the environment the CLI gets (the last entry
// wins, as in exec.Cmd).
func (o Options) lookupEnv(key string) string {
	val := ""
	for _, kv := range o.environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			val = v
		}
	}
	return val
}

// configDir is where the CLI keeps its projects/ folder.
func (o Options) configDir() string {
	if d := o.lookupEnv("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	home := o.lookupEnv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".claude")
}

// discardLogger is used when OpenParams carries no logger.
var discardLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

var _ agent.Agent = (*Claude)(nil)
