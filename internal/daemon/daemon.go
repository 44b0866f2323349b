package daemon

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofrs/flock"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/agentproc"
	"github.com/ahpd/ahpd/internal/agent/claude"
	"github.com/ahpd/ahpd/internal/agent/script"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/ahpd/ahpd/internal/env"
	"github.com/ahpd/ahpd/internal/host"
	"github.com/ahpd/ahpd/internal/otlp"
	"github.com/ahpd/ahpd/internal/rpc"
	"github.com/ahpd/ahpd/internal/store"
)

// Version is the daemon's version, set at build time.
var Version = "0.5.0"

// Daemon is one running ahpd: a store, a host and a websocket listener.
type Daemon struct {
	cfg      Config
	log      *slog.Logger
	logs     *otlp.Hub // the OTLP log hub log tees into; Close closes it
	store    *store.Store
	host     *host.Host
	rpc      *rpc.Server
	listener net.Listener
	http     *http.Server
	served   chan error
	// failed receives the host's restore failure (Failed).
	failed chan error
	// lock is the data dir's lock, held until Close.
	lock *flock.Flock
	// closeOnce runs Close's work once; closeErr is what it came to, what
	// every later Close answers.
	closeOnce sync.Once
	closeErr  error

	env       *env.Env
	agents    *agent.Registry
	providers []string
	started   time.Time
	// ready is set once start-up recovery is done (GET /readyz); stopping
	// once a graceful shutdown began.
	ready, stopping atomic.Bool
	metricsHandler  http.Handler
	// toolsCtx ends the agents' host-tool requests (a streamable MCP POST
	// may be held open for as long as the agent lives); stopTools ends it
	// when the daemon stops, so http.Server.Shutdown does not wait on them.
	toolsCtx  context.Context
	stopTools context.CancelFunc

	// localToken is the connection token in the daemon's VS Code local
	// endpoint entries: minted per run, root's grants, "" when the door
	// needs no token (localendpoint.go, docs/DAEMON.md). localEndpoints are
	// the entry files written at start; removeLocal removes them once.
	localToken     string
	localEndpoints []string
	removeLocal    sync.Once
}

// Options are what a caller adds to the configuration: the agents (nil
// means the built-in ones) and a logger.
type Options struct {
	Agents *agent.Registry
	Logger *slog.Logger
	// VSCodeUserData are the VS Code user-data folders to publish the
	// daemon's local endpoint in when the config names none: ahpd serve
	// passes VSCodeUserDataFound(); nil publishes nowhere.
	VSCodeUserData []string
	// Now is the daemon's clock (nil: the wall clock); a test of the
	// automation scheduler moves it instead of waiting.
	Now func() time.Time
	// AutomationTick is how often the scheduler looks for due schedule
	// triggers (0: every 5 seconds).
	AutomationTick time.Duration
}

// BuiltinAgents is the registry ahpd serve offers: the built-in script
// agent, and Claude Code (listed as unavailable, with the reason, when its
// CLI is not installed). Each backend's settings come from the config's
// "agents" key.
func BuiltinAgents(cfg Config) (*agent.Registry, error) {
	var co claude.Options
	if raw := cfg.Agents[claude.Provider]; len(raw) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&co); err != nil {
			return nil, fmt.Errorf("%w: agents.claude: %v", ErrUsage, err)
		}
	}
	switch co.StopEnds {
	case "", claude.StopEndsTurn, claude.StopEndsQuery:
	default:
		return nil, keyErr("agents.claude.stopEnds", "must be %s or %s, not %q", claude.StopEndsTurn, claude.StopEndsQuery, co.StopEnds)
	}
	co.Ledger = agentLedger(cfg)
	agents := []agent.Agent{script.New(script.Options{}), claude.New(co)}
	// Each further backend reads its own settings in a file of its own
	// (agents_<name>.go), so backends are added without touching this one.
	for _, build := range []func(Config) ([]agent.Agent, error){piAgents, acpAgents, cofoldAgents, botAgents} {
		more, err := build(cfg)
		if err != nil {
			return nil, err
		}
		agents = append(agents, more...)
	}
	return agent.NewRegistry(agents...)
}

// agentLedger is where the CLI backends write down their agents' process
// groups (agentproc.Ledger); none without a data dir.
func agentLedger(cfg Config) agentproc.Ledger {
	if cfg.DataDir == "" {
		return agentproc.Ledger{}
	}
	return agentproc.NewLedger(filepath.Join(cfg.DataDir, "agent-groups"))
}

// Start opens the store, restores every session and starts serving.
func Start(ctx context.Context, cfg Config, o Options) (*Daemon, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.SettleToken(); err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	// The OTLP log channel: every record the daemon logs also goes to the
	// clients subscribed to ahp-otlp://logs/{level} at its level (the
	// host serves the channel). A hub with no subscriber holds no
	// goroutine, so the failures below need not close it.
	logs := otlp.NewHub(otlp.Options{ServiceVersion: Version})
	log = slog.New(otlp.NewHandler(log.Handler(), logs))
	reg := o.Agents
	if reg == nil {
		var err error
		if reg, err = BuiltinAgents(cfg); err != nil {
			return nil, err
		}
	}
	if len(cfg.Paths) == 0 {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
		cfg.Paths = []string{wd}
	}
	for i, p := range cfg.Paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("--path %s: %w", p, err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%w: --path %s is not a directory", ErrUsage, p)
		}
		cfg.Paths[i] = abs
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	// Before anything starts: the agents a killed daemon left running
	// would otherwise work on beside the ones this start runs.
	if n, err := agentLedger(cfg).EndLeftovers(log); err != nil {
		log.Warn("end the agents an earlier daemon left", "ended", n, "err", err)
	}
	site, err := sandboxSite(cfg, log)
	if err != nil {
		_ = lock.Unlock()
		return nil, err
	}
	st, err := store.Open(filepath.Join(cfg.DataDir, "ahpd.db"), log)
	if err != nil {
		_ = lock.Unlock()
		return nil, err
	}
	bindStore(reg, st)
	principals := make(map[string]auth.Principal, len(cfg.Tokens))
	for _, t := range cfg.Tokens {
		principals[t.Token] = auth.Principal{Sender: t.Principal, Grants: t.Grants}
	}
	hostName := deploymentName()
	localTarget := localEndpointDirs(cfg, o)
	localToken := ""
	if len(localTarget.dirs) > 0 && (cfg.ConnectionToken != "" || len(cfg.Tokens) > 0) {
		// The door needs a token: the local entry carries one of its own,
		// minted for this run and holding root's grants (docs/DAEMON.md,
		// "How local VS Code windows find ahpd"). With no token configured
		// the door needs none and the entry carries "".
		localToken = newToken()
		principals[localToken] = auth.Root(hostName)
	}
	defaultProvider := "script"
	if provs := reg.Providers(); len(provs) > 0 {
		if _, ok := reg.Get(defaultProvider); !ok {
			defaultProvider = provs[0]
		}
	}
	// One environment, built here, is shared by the host, every session
	// and every chat.
	started := time.Now()
	e := env.New(env.Env{
		Bus:        bus.NewBus(cfg.ReplayLog),
		Store:      st,
		Logger:     log,
		Now:        o.Now,
		AgentSlots: agentSlots(cfg, log),
		Limits: env.Limits{
			TurnsView:    cfg.TurnsView,
			TurnsKept:    cfg.TurnsKept,
			ChatIdle:     time.Duration(cfg.ChatIdleSeconds) * time.Second,
			AgentSilence: time.Duration(cfg.AgentSilenceSeconds) * time.Second,
			AgentIdle:    time.Duration(cfg.AgentIdleSeconds) * time.Second,
		},
		Attachments: env.Attachments{
			Dir:        filepath.Join(cfg.DataDir, "attachments"),
			FetchLimit: cfg.AttachmentFetchLimitBytes,
		},
		Sandbox: site,
	})
	h, err := host.New(ctx, host.Options{
		Env:             e,
		Agents:          reg,
		DefaultProvider: defaultProvider,
		AgentSettings:   cfg.Agents,
		Paths:           cfg.Paths,
		WorktreesDir:    cfg.worktreesDir(),
		ClosedChats:     cfg.ClosedChats,
		Principals:      principals,
		RootToken:       cfg.ConnectionToken,
		HostName:        hostName,
		ServerVersion:   Version,
		Logs:            logs,
		// 0 is the host's default (30 s).
		ClientFileTimeout: time.Duration(cfg.ClientFileTimeoutSeconds) * time.Second,
		AutomationTick:    o.AutomationTick,
	})
	if err != nil {
		st.Close()
		_ = lock.Unlock()
		return nil, err
	}
	h.BindBots(botsDir(cfg)) // agents_bot.go
	srv := rpc.NewServer(rpc.Options{
		Handler:          h,
		Token:            cfg.ConnectionToken,
		ExtraTokens:      append(extraTokens(cfg), nonEmpty(localToken)...),
		Logger:           log,
		OutboxBytes:      cfg.OutboxBytes,
		AllowedOrigins:   cfg.AllowedOrigins,
		AllowedHosts:     cfg.AllowedHosts,
		MaxConnections:   cfg.MaxConnections,
		MaxMessageBytes:  cfg.MaxFrameBytes,
		TotalOutboxBytes: cfg.TotalOutboxBytes,
	})
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		h.Close(ctx)
		st.Close()
		_ = lock.Unlock()
		return nil, fmt.Errorf("listen: %w", err)
	}
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		site.AllowOwnPort(uint16(a.Port)) // its host tools, for sandbox.network models
	}
	d := &Daemon{
		cfg: cfg, log: log, logs: logs, store: st, host: h, rpc: srv, listener: ln,
		served: make(chan error, 1),
		lock:   lock,
		env:    e, agents: reg, providers: reg.Providers(), started: started,
		localToken: localToken,
	}
	d.toolsCtx, d.stopTools = context.WithCancel(context.Background())
	d.metricsHandler = d.newMetrics()
	d.http = &http.Server{Handler: d.withHostTools(d.opsMux(srv)), ReadHeaderTimeout: 10 * time.Second}
	d.failed = make(chan error, 1)
	go func() {
		// The host lists its stored sessions and ends every turn a crash
		// left running while the daemon already listens (requests wait
		// for it on their lanes): recovery is done when it is.
		<-h.Restored()
		if err := h.RestoreErr(); err != nil {
			log.Error("restore the stored sessions; the daemon stops", "err", err)
			d.failed <- err
			return
		}
		d.ready.Store(true)
	}()
	if err := d.writePIDFile(); err != nil {
		log.Warn("write pid file", "err", err)
	}
	go func() {
		// Owned by this goroutine: the HTTP server's accept loop.
		err := d.http.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		d.served <- err
	}()
	d.publishLocalEndpoints(localTarget)
	return d, nil
}

// deploymentName names the deployment in root:<name> senders: the
// machine's host name, else "localhost".
func deploymentName() string {
	if hn, err := os.Hostname(); err == nil && hn != "" {
		return hn
	}
	return "localhost"
}

// nonEmpty is s as a list, empty when s is "".
func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// Failed receives an error when the daemon cannot go on: its stored
// sessions could not be listed after it began to listen. The caller stops
// it (Shutdown) and exits with the error.
func (d *Daemon) Failed() <-chan error { return d.failed }

// Addr is the address the daemon listens on.
func (d *Daemon) Addr() string { return d.listener.Addr().String() }

// URL is the websocket URL clients connect to.
func (d *Daemon) URL() string { return "ws://" + d.Addr() }

// VSCodeEntry is the chat.remoteAgentHosts entry that reaches this daemon,
// as JSON to paste into VS Code's settings: {"address", "name",
// "connectionToken"?}. An unspecified bind address is named by the
// machine's host name, which is what a remote window would dial.
func (d *Daemon) VSCodeEntry() string {
	host, port, _ := net.SplitHostPort(d.Addr())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if hn, err := os.Hostname(); err == nil && hn != "" {
			host = hn
		}
	}
	entry := struct {
		Address         string `json:"address"`
		Name            string `json:"name"`
		ConnectionToken string `json:"connectionToken,omitempty"`
	}{Address: "ws://" + net.JoinHostPort(host, port), Name: "ahpd", ConnectionToken: d.cfg.ConnectionToken}
	b, _ := json.Marshal(entry) // three strings always marshal
	return string(b)
}

// Host is the daemon's protocol host.
func (d *Daemon) Host() *host.Host { return d.host }

// Store is the daemon's store.
func (d *Daemon) Store() *store.Store { return d.store }

// Close stops serving, ends every connection, stops every actor and flushes
// the store. A turn still running is left as a crash leaves it (a restart
// ends it with hostRestarted); Shutdown ends it first. Closing again
// answers what the first Close did (it used to wait forever for the
// server's end, which the first Close had taken).
func (d *Daemon) Close(ctx context.Context) error {
	d.closeOnce.Do(func() { d.closeErr = d.close(ctx) })
	return d.closeErr
}

func (d *Daemon) close(ctx context.Context) error {
	d.RemoveLocalEndpoints()
	d.stopping.Store(true)
	d.stopTools()
	defer d.removePIDFile()
	var errs []error
	if err := d.http.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := d.rpc.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := d.host.Close(ctx); err != nil {
		errs = append(errs, err)
	}
	// The connections are gone, and their log subscriptions with them;
	// this ends any a lane installed late and refuses new ones.
	d.logs.Close()
	if err := d.store.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := <-d.served; err != nil {
		errs = append(errs, err)
	}
	if err := d.lock.Unlock(); err != nil {
		errs = append(errs, fmt.Errorf("unlock data dir: %w", err))
	}
	return errors.Join(errs...)
}

func newToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Stats are the daemon's counters (connections, slow consumers, ...).
type Stats struct {
	RPC   rpc.Stats
	Store store.Stats
	// Logs is the OTLP log channel's: its subscriptions open now and the
	// records a full subscriber lost.
	Logs otlp.Stats
}

// Stats returns the daemon's counters.
func (d *Daemon) Stats() Stats {
	return Stats{RPC: d.rpc.Stats(), Store: d.store.Stats(), Logs: d.logs.Stats()}
}

func extraTokens(cfg Config) []string {
	out := make([]string, 0, len(cfg.Tokens))
	for _, t := range cfg.Tokens {
		out = append(out, t.Token)
	}
	return out
}
