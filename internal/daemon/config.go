// Package daemon assembles ahpd: it reads the configuration, opens the
// store, builds the agent registry, and serves the host over a websocket
// listener. cmd/ahpd calls it; tests start one in-process per test.
package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/ahpd/ahpd/internal/attach"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/sandbox"
)

// Config is the daemon's configuration: embedded defaults, then a config
// file, then flags.
type Config struct {
	// Host and Port are where the websocket listens. Port 0 picks a free one.
	Host string `json:"host,omitempty"`
	Port int    `json:"port,omitempty"`
	// DataDir holds ahpd.db.
	DataDir string `json:"dataDir,omitempty"`
	// Paths are the served directories; the first is the default directory.
	Paths []string `json:"paths,omitempty"`
	// WorktreesDir is where a session asked for isolation "worktree" gets
	// its git worktree (one folder per session); empty means
	// <dataDir>/worktrees. It is served to the sessions working there.
	WorktreesDir string `json:"worktreesDir,omitempty"`

	ConnectionToken        string `json:"connectionToken,omitempty"`
	ConnectionTokenFile    string `json:"connectionTokenFile,omitempty"`
	WithoutConnectionToken bool   `json:"withoutConnectionToken,omitempty"`

	// ClosedChats is what a closed chat leaves of its backend conversation:
	// "hidden" (default) keeps it, "delete" removes it (C-FIRST-20..24).
	ClosedChats string `json:"closedChats,omitempty"`

	// Tokens are extra connection tokens, each with the grants it carries.
	Tokens []TokenConfig `json:"tokens,omitempty"`

	// ReplayLog is how many envelopes reconnect can replay.
	ReplayLog int `json:"replayLog,omitempty"`
	// OutboxBytes is each connection's budget of unsent bytes.
	OutboxBytes int `json:"outboxBytes,omitempty"`
	// TurnsView is how many turns a chat snapshot holds when a subscribe
	// names a view without a count, and the fetchTurns page size.
	TurnsView int `json:"turnsView,omitempty"`
	// TurnsKept is how many ended turns a loaded chat keeps in memory
	// beside its running turn and what waits; older turns are read from
	// the store when a client asks for them. 0 means 4.
	TurnsKept int `json:"turnsKept,omitempty"`
	// ChatIdleSeconds is how long an open chat nobody watches and nothing
	// runs in stays loaded before its actor (and its agent process) is
	// unloaded; it loads again, resumed, when named. 0 means 600; -1 never.
	ChatIdleSeconds int `json:"chatIdleSeconds,omitempty"`
	// AgentSilenceSeconds is how long a running turn's agent may say
	// nothing (no text, tool call or any other event) before the turn ends
	// with chat/error naming the silence and the agent's process is
	// replaced. A turn waiting on a client's answer is not silent. 0 means
	// 600; -1 never.
	AgentSilenceSeconds int `json:"agentSilenceSeconds,omitempty"`
	// AgentIdleSeconds is how long a chat's agent may have no work (no
	// turn running or waiting, nothing it holds) before its process, and
	// everything in its process group, is ended, whether or not anyone
	// watches the chat; the chat stays loaded and its next turn resumes
	// the conversation. Only agents that can resume are ended. 0 means
	// 600; -1 never.
	AgentIdleSeconds int `json:"agentIdleSeconds,omitempty"`
	// MaxAgentProcesses is how many agent processes (claude, pi, acp
	// conversations; not script, cofold, bot or ! commands) run at once.
	// Past it the least recently used idle agent is ended first (its chat
	// resumes it on its next turn), and a turn that finds every one busy
	// waits, saying so in the turn, until one is free. 0 means the
	// machine's default (DefaultMaxAgentProcesses); -1 no limit.
	MaxAgentProcesses int `json:"maxAgentProcesses,omitempty"`

	// AttachmentFetchLimitBytes is the largest resource only a client holds
	// that the host asks that client for; one whose size hint is over it is
	// left where it is. 0 asks for any size (C-ATT-14..16).
	AttachmentFetchLimitBytes int64 `json:"attachmentFetchLimitBytes"`
	// ClientFileTimeoutSeconds bounds the wait for a client's answer when
	// the host asks it for one of its own files (a vscode-agent-client URI).
	// 0 means 30.
	ClientFileTimeoutSeconds int `json:"clientFileTimeoutSeconds,omitempty"`

	// AllowedOrigins are browser origins ("https://console.example.com")
	// let in without a token, beside VS Code's and the daemon's own.
	AllowedOrigins []string `json:"allowedOrigins,omitempty"`
	// AllowedHosts are Host names let in when no token is configured,
	// beside the loopback names (DNS rebinding defence).
	AllowedHosts []string `json:"allowedHosts,omitempty"`
	// MaxConnections caps open connections (503 over it). 0 means 1024.
	MaxConnections int `json:"maxConnections,omitempty"`
	// MaxFrameBytes is the largest frame a client may send. 0 means 16 MiB.
	MaxFrameBytes int64 `json:"maxFrameBytes,omitempty"`
	// TotalOutboxBytes bounds every connection's unsent bytes together.
	// 0 means 256 MiB.
	TotalOutboxBytes int64 `json:"totalOutboxBytes,omitempty"`

	// LogLevel is debug, info (default), warn or error; LogFormat is text
	// (default) or json. Logs go to stderr (the log file under start).
	LogLevel  string `json:"logLevel,omitempty"`
	LogFormat string `json:"logFormat,omitempty"`
	// ShutdownGraceSeconds bounds a graceful shutdown: running turns are
	// cancelled, clients told, the store flushed, within it. 0 means 10.
	ShutdownGraceSeconds int `json:"shutdownGraceSeconds,omitempty"`

	// NoLocalEndpoint keeps ahpd out of VS Code's local agent-host endpoint
	// registry (docs/DAEMON.md, "How local VS Code windows find ahpd").
	NoLocalEndpoint bool `json:"noLocalEndpoint,omitempty"`
	// VSCodeUserData are the VS Code user-data directories whose registry
	// gets ahpd's entry (made when missing). None means every existing
	// folder of the known VS Code builds that ahpd serve finds.
	VSCodeUserData []string `json:"vscodeUserData,omitempty"`

	// Agents holds each backend's settings, by provider.
	Agents map[string]json.RawMessage `json:"agents,omitempty"`

	// Sandbox is how sessions' processes are confined (sandbox.go,
	// docs/SECURITY.md "Sandbox").
	Sandbox SandboxConfig `json:"sandbox,omitempty"`
	// ConfigFile is the config file this configuration was read from
	// (cmd/ahpd sets it): a sandboxed agent may never read it.
	ConfigFile string `json:"-"`
}

// SandboxConfig is the root config's "sandbox" key.
type SandboxConfig struct {
	// Default is the mode of a session that names none: off (default),
	// workspace or strict. An operator chooses it; it is never raised or
	// lowered behind their back.
	Default string `json:"default,omitempty"`
	// Backends adds paths a backend's CLI may write or read when
	// sandboxed, by provider ("claude", "pi", "acp:<name>").
	Backends map[string]sandbox.Paths `json:"backends,omitempty"`
	// Network is how sandboxed sessions may use the network: open
	// (default) or models, TCP connections only to the model endpoints'
	// ports (every http(s) URL the agents' settings name, 443 for the
	// hosted APIs, 53 for DNS over TCP), the daemon's own port and
	// AllowPorts (Landlock ABI 4).
	Network    string   `json:"network,omitempty"`
	AllowPorts []uint16 `json:"allowPorts,omitempty"`
}

// TokenConfig is one connection token and the grants it carries.
type TokenConfig struct {
	Token string `json:"token"`
	// Principal is the typed reference turns sent with this token name,
	// e.g. "user:alice".
	Principal string   `json:"principal"`
	Grants    []string `json:"grants"`
}

// Defaults returns the embedded defaults.
func Defaults() Config {
	return Config{
		Host:        "127.0.0.1",
		Port:        9187,
		DataDir:     defaultDataDir(),
		ClosedChats: "hidden",
		ReplayLog:   8192,
		OutboxBytes: 16 << 20,
		TurnsView:   50,
		LogLevel:    "info",
		LogFormat:   "text",
		// Under systemd's default TimeoutStopSec (90s).
		ShutdownGraceSeconds: 10,
		// C-ATT-15: 32 MiB unless the config says otherwise.
		AttachmentFetchLimitBytes: attach.DefaultFetchLimit,
	}
}

// worktreesDir is WorktreesDir, or <dataDir>/worktrees.
func (c Config) worktreesDir() string {
	if c.WorktreesDir != "" {
		return c.WorktreesDir
	}
	return filepath.Join(c.DataDir, "worktrees")
}

func defaultDataDir() string {
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "ahpd")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "ahpd")
	}
	return filepath.Join(os.TempDir(), "ahpd")
}

// DefaultConfigFile is $XDG_CONFIG_HOME/ahpd/config.json (or
// ~/.config/ahpd/config.json).
func DefaultConfigFile() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "ahpd", "config.json")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".config", "ahpd", "config.json")
	}
	return ""
}

// LoadFile lays the JSON config file at path over c. A missing file is no
// error when optional is true. Unknown keys are an error naming the file.
func (c *Config) LoadFile(path string, optional bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		if optional && errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("read config %s: %w", path, err)
	}
	if _, err := readFileLayer(path, optional); err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	return nil
}

// ErrUsage marks a configuration the daemon refuses to start with; the
// command exits 2.
var ErrUsage = errors.New("usage")

// Validate checks the configuration's ranges, enums and grants. It has no
// side effects: a connection token file is read when it exists, never
// created (Start does that). An error is a *KeyError naming the key.
func (c *Config) Validate() error {
	if c.Port < 0 || c.Port > 65535 {
		return keyErr("port", "must be 0..65535 (0 picks a free port), not %d", c.Port)
	}
	switch c.ClosedChats {
	case "", "hidden", "delete":
	default:
		return keyErr("closedChats", "must be hidden or delete, not %q", c.ClosedChats)
	}
	switch strings.ToLower(c.LogLevel) {
	case "", "debug", "info", "warn", "error":
	default:
		return keyErr("logLevel", "must be debug, info, warn or error, not %q", c.LogLevel)
	}
	switch c.LogFormat {
	case "", "text", "json":
	default:
		return keyErr("logFormat", "must be text or json, not %q", c.LogFormat)
	}
	if _, err := sandbox.ParseMode(c.Sandbox.Default); err != nil {
		return keyErr("sandbox.default", "must be off, workspace or strict, not %q", c.Sandbox.Default)
	}
	for provider, paths := range c.Sandbox.Backends {
		for i, path := range append(append([]string(nil), paths.ReadWrite...), paths.ReadOnly...) {
			if !filepath.IsAbs(path) {
				return keyErr(fmt.Sprintf("sandbox.backends.%s", provider), "path %d (%q) is not absolute", i, path)
			}
		}
	}
	if c.AttachmentFetchLimitBytes < 0 {
		return keyErr("attachmentFetchLimitBytes", "must be 0 (any size) or more, not %d", c.AttachmentFetchLimitBytes)
	}
	for _, n := range []struct {
		name string
		v    int64
		min  int64
	}{
		{"replayLog", int64(c.ReplayLog), 0},
		{"outboxBytes", int64(c.OutboxBytes), 0},
		{"turnsView", int64(c.TurnsView), 0},
		{"turnsKept", int64(c.TurnsKept), 0},
		{"chatIdleSeconds", int64(c.ChatIdleSeconds), -1},
		{"agentSilenceSeconds", int64(c.AgentSilenceSeconds), -1},
		{"agentIdleSeconds", int64(c.AgentIdleSeconds), -1},
		{"clientFileTimeoutSeconds", int64(c.ClientFileTimeoutSeconds), 0},
		{"maxAgentProcesses", int64(c.MaxAgentProcesses), -1},
		{"maxConnections", int64(c.MaxConnections), 0},
		{"maxFrameBytes", c.MaxFrameBytes, 0},
		{"totalOutboxBytes", c.TotalOutboxBytes, 0},
		{"shutdownGraceSeconds", int64(c.ShutdownGraceSeconds), 0},
	} {
		if n.v < n.min {
			return keyErr(n.name, "must be %d or more, not %d", n.min, n.v)
		}
	}
	for i, p := range c.Paths {
		if strings.TrimSpace(p) == "" {
			return keyErr(fmt.Sprintf("paths[%d]", i), "empty path")
		}
	}
	if strings.TrimSpace(c.DataDir) == "" {
		return keyErr("dataDir", "empty")
	}
	for i, o := range c.AllowedOrigins {
		if u, err := url.Parse(o); err != nil || u.Scheme == "" || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return keyErr(fmt.Sprintf("allowedOrigins[%d]", i), "%q is not scheme://host[:port]", o)
		}
	}
	for i, h := range c.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/ ") {
			return keyErr(fmt.Sprintf("allowedHosts[%d]", i), "%q is not a host name", h)
		}
	}
	for i, p := range c.VSCodeUserData {
		if strings.TrimSpace(p) == "" {
			return keyErr(fmt.Sprintf("vscodeUserData[%d]", i), "empty path")
		}
	}
	if c.NoLocalEndpoint && len(c.VSCodeUserData) > 0 {
		return keyErr("noLocalEndpoint", "excludes vscodeUserData: choose one")
	}
	if c.ConnectionToken != "" && c.WithoutConnectionToken {
		return keyErr("withoutConnectionToken", "excludes connectionToken: choose one")
	}
	rootToken := c.ConnectionToken
	if c.ConnectionTokenFile != "" && rootToken == "" {
		tok, exists, err := readToken(c.ConnectionTokenFile)
		if err != nil {
			return err
		}
		if exists {
			rootToken = tok
		}
	}
	// Once any token is configured every upgrade must present one (rpc),
	// so a non-loopback bind is safe with grant tokens alone.
	if !isLoopback(c.Host) && c.ConnectionToken == "" && c.ConnectionTokenFile == "" && !c.WithoutConnectionToken && len(c.Tokens) == 0 {
		return keyErr("host", "%s is not loopback: choose --connection-token, --connection-token-file or --without-connection-token", c.Host)
	}
	for i, t := range c.Tokens {
		key := fmt.Sprintf("tokens[%d]", i)
		if t.Token == "" {
			return keyErr(key+".token", "empty token")
		}
		// "root:" names the deployment itself (chat.Client.Root): a token
		// may not claim it.
		if strings.HasPrefix(t.Principal, "root:") {
			return keyErr(key+".principal", "%q is reserved for the deployment", t.Principal)
		}
		if kind, id, ok := strings.Cut(t.Principal, ":"); !ok || kind == "" || id == "" {
			return keyErr(key+".principal", "want a typed reference such as user:<id>, not %q", t.Principal)
		}
		if t.Token == rootToken {
			return keyErr(key+".token", "is the connection token: it would carry root's grants")
		}
		for j, g := range t.Grants {
			if !auth.Known(g) {
				return keyErr(fmt.Sprintf("%s.grants[%d]", key, j), "unknown grant %q (known: %s)", g, strings.Join(auth.KnownGrants(), ", "))
			}
		}
	}
	return nil
}

// SettleToken reads ConnectionTokenFile into ConnectionToken, creating the
// file with a fresh token (mode 0600) when it is absent. Start calls it;
// config check does not.
func (c *Config) SettleToken() error {
	if c.ConnectionTokenFile == "" || c.ConnectionToken != "" {
		return nil
	}
	tok, err := readOrCreateToken(c.ConnectionTokenFile)
	if err != nil {
		return err
	}
	c.ConnectionToken = tok
	for i, t := range c.Tokens {
		if t.Token == tok {
			return keyErr(fmt.Sprintf("tokens[%d].token", i), "is the connection token: it would carry root's grants")
		}
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// readToken reads a token file: exists is false when there is none.
func readToken(path string) (tok string, exists bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, keyErr("connectionTokenFile", "read %s: %v", path, err)
	}
	tok = strings.TrimSpace(string(data))
	if tok == "" {
		return "", true, keyErr("connectionTokenFile", "%s is empty", path)
	}
	return tok, true, nil
}

func readOrCreateToken(path string) (string, error) {
	tok, exists, err := readToken(path)
	if err != nil || exists {
		return tok, err
	}
	tok = newToken()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create connection token file: %w", err)
	}
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("create connection token file: %w", err)
	}
	return tok, nil
}

// ClientToken is the root token a local client (ahpd status, stop, send)
// presents: connectionToken, or the token file's content when it exists.
// It never creates the file.
func (c Config) ClientToken() string {
	if c.ConnectionToken != "" {
		return c.ConnectionToken
	}
	if c.ConnectionTokenFile != "" {
		if tok, ok, err := readToken(c.ConnectionTokenFile); err == nil && ok {
			return tok
		}
	}
	return ""
}
