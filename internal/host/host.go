// Package host is the protocol's front desk: it owns the root state, the
// catalogue of sessions and the index of their chats, and routes every
// request and action to the owner of its channel (host for root, session
// and chat actors for theirs). It implements rpc.Handler.
//
// Host is split by job, one file per part: the root desk (root.go), the
// sessions catalogue (catalogue.go), the sessions desk (sessions.go), the
// connections (conns.go), the lanes (lanes.go), the action router
// (dispatch.go), and a small type for each request family (resources,
// terminals, changesets, canvases, bots, completions, session config,
// host tools, attachments).
package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/ahpd/ahpd/internal/confine"
	"github.com/ahpd/ahpd/internal/env"
	"github.com/ahpd/ahpd/internal/hosttools"
	"github.com/ahpd/ahpd/internal/lockorder"
	"github.com/ahpd/ahpd/internal/otlp"
	"github.com/ahpd/ahpd/internal/session"
)

// Options configure a host.
type Options struct {
	// Env is what every actor of the daemon shares: the bus, the store,
	// the logger, the clock and the limits (internal/env).
	Env    *env.Env
	Agents *agent.Registry
	// DefaultProvider is used by createSession when the client names none.
	DefaultProvider string
	// AgentSettings are each backend's settings by provider.
	AgentSettings map[string]json.RawMessage
	// Paths are the served directories (local paths); the first is the
	// default directory.
	Paths []string
	// WorktreesDir is where sessions asked for isolation "worktree" get
	// their git worktrees (gitsessions.go); it is served beside Paths, so
	// a session, its terminals and its files work there. Empty: no
	// worktree isolation.
	WorktreesDir string
	// ClosedChats: "hidden" | "delete".
	ClosedChats string
	// Principals maps connection tokens to who they are and what they may
	// do. A connection with no token, or with RootToken, is the deployment
	// itself and holds every grant.
	Principals map[string]auth.Principal
	RootToken  string
	// HostName names the deployment in root:<host> senders.
	HostName      string
	ServerVersion string
	// AutomationTick is how often the scheduler looks for due schedule
	// triggers (0: every 5 seconds); a test makes it short and moves
	// Env.Now instead of waiting for the wall clock.
	AutomationTick time.Duration
	// Logs is the daemon's OTLP log hub (its logger tees into it): the
	// ahp-otlp://logs/{level} channel is served from it and initialize
	// advertises it. Nil serves no OTLP channel. The daemon closes it.
	Logs *otlp.Hub
	// ClientFileTimeout bounds the wait for a client's answer about its
	// own files (vscode-agent-client URIs, clientfs.go); 0 is 30 s.
	ClientFileTimeout time.Duration
}

// Host is the protocol host. It answers the connections itself (the
// handshake, subscribe, reconnect and the routing of requests, router.go)
// and hands every channel and request family to the part that owns it;
// each part holds only the other parts it uses, and each lock has one
// owner among them (internal/lockorder ranks them).
type Host struct {
	opts Options
	log  *slog.Logger
	bus  *bus.Bus

	// conns are the connections' client records (conns.go).
	conns *conns
	// lanes run requests and routed actions off the read loops, one lane
	// per channel (lanes.go).
	lanes *lanes
	// actions routes the clients' actions (dispatch.go).
	actions *dispatcher

	// root owns the root channel (root.go).
	root *rootDesk
	// cat is the sessions catalogue: the sessions, their summaries and
	// the chat index, under its one lock (catalogue.go).
	cat *catalogue
	// sessions opens the sessions, finds their chats and answers the
	// session commands (sessions.go).
	sessions *sessionDesk

	// The request and channel families, each a small type of its own.
	config     *configDesk     // resolveSessionConfig, sessionConfigCompletions (sessionconfig.go)
	completer  *completer      // completions (completions.go)
	res        *resourceDesk   // resource commands and watches (resources.go)
	terms      *terminalDesk   // terminals (terminals.go)
	own        ownChannels     // the terminal and watch channels (terminals.go)
	changesets *changesetDesk  // changesets (changesets.go)
	git        *gitDesk        // sessions in git, their worktrees and changesets (gitsessions.go)
	canv       *canvasKit      // canvases and show_page (canvases.go)
	bots       *botDesk        // bot commands and the bot backend's host (bots.go)
	diag       *diagnostics    // the window's network diagnostics (diagnostics.go)
	tools      *toolDesk       // the host's tools for agents (hosttools.go)
	logs       *logDesk        // the OTLP log channel (logs.go)
	autos      *automationDesk // the automation catalogue, its runs and scheduler (automations.go)
	search     *searchDesk     // x-ahpd/search (search.go)

	closing chan struct{}
	// restored is closed when restore has ended; restoreErr is written
	// before it closes and read after.
	restored   chan struct{}
	restoreErr error
}

// New builds a host and starts restoring every stored session in the
// background (restore): a turn left running by a process that died is
// ended with an error (C-TURN-10) before any client is answered.
func New(ctx context.Context, opts Options) (*Host, error) {
	if opts.HostName == "" {
		opts.HostName, _ = os.Hostname()
		if opts.HostName == "" {
			opts.HostName = "localhost"
		}
	}
	e, log := opts.Env, opts.Env.Logger
	h := &Host{
		opts:    opts,
		log:     log,
		bus:     e.Bus,
		conns:   newConns(opts.HostName, opts.RootToken, opts.Principals),
		lanes:   newLanes(log),
		cat:     newCatalogue(),
		closing: make(chan struct{}),
		logs:    &logDesk{hub: opts.Logs, log: log},
	}
	paths := servedPaths(opts.Paths)
	if opts.WorktreesDir != "" {
		root, err := worktreesRoot(opts.WorktreesDir)
		if err != nil {
			return nil, err
		}
		opts.WorktreesDir = root
		paths = append(slices.Clone(paths), root)
	}
	actors := newActors()
	h.git = newGitDesk(e, log, h.bus, h.lanes, h.cat, opts.WorktreesDir)
	h.root = newRootDesk(ctx, h.bus, opts.Agents)
	h.config = &configDesk{log: log, agents: opts.Agents, defaultProvider: opts.DefaultProvider, paths: paths, sandbox: e.Sandbox,
		repositories: h.git.repositoryCapabilities}
	h.sessions = &sessionDesk{env: e, log: log, bus: h.bus, agents: opts.Agents, settings: opts.AgentSettings,
		defaultProvider: opts.DefaultProvider, closedChats: opts.ClosedChats, paths: paths,
		tell: lockorder.Mutex{Rank: lockorder.HostTell}, cat: h.cat, actors: actors, root: h.root, config: h.config, git: h.git}
	h.tools = &toolDesk{env: e, log: log, cat: h.cat, sessions: h.sessions, principals: opts.Principals,
		spawnMu: lockorder.Mutex{Rank: lockorder.HostSpawns}, spawned: map[string]int{}}
	h.tools.server = hosttools.New(h, log)
	h.canv = newCanvasKit(h.sessions, h.tools.origin)
	h.sessions.tools, h.sessions.canvases = h.tools, h.canv.plugins
	h.changesets = &changesetDesk{env: e, sessions: h.sessions, git: h.git}
	h.completer = &completer{env: e, agents: opts.Agents, sessions: h.sessions, files: newFileIndex()}
	h.diag = newDiagnostics(opts.ServerVersion, opts.Agents, h.tools)
	h.search = &searchDesk{env: e, cat: h.cat}
	h.bots = &botDesk{env: e, log: log, bus: h.bus, agents: opts.Agents, defaultProvider: opts.DefaultProvider,
		principals: opts.Principals, paths: paths, cat: h.cat, sessions: h.sessions, config: h.config, closing: h.closing,
		mu: lockorder.Mutex{Rank: lockorder.HostBots}}
	h.res = newResourceDesk(paths, h.bus, h.changesets)
	h.res.clients = &clientFiles{conns: h.conns, log: log, timeout: opts.ClientFileTimeout}
	h.terms = &terminalDesk{env: e, terms: e.Terminals, bus: h.bus, cat: h.cat, files: h.res.files, paths: paths, root: h.root}
	h.own = ownChannels{terms: h.terms, res: h.res}
	if t := e.Terminals; t != nil {
		t.OnChange(h.terms.changed)
	}
	tick := opts.AutomationTick
	if tick <= 0 {
		tick = 5 * time.Second
	}
	autos, err := newAutomationDesk(ctx, &automationDesk{env: e, log: log, bus: h.bus, lanes: h.lanes, root: h.root,
		sessions: h.sessions, config: h.config, agents: opts.Agents, principals: opts.Principals,
		defaultProvider: opts.DefaultProvider, paths: paths, closing: h.closing, tick: tick})
	if err != nil {
		return nil, err
	}
	h.autos = autos
	h.actions = &dispatcher{autos: autos, log: log, bus: h.bus, lanes: h.lanes, actors: actors, root: h.root, cat: h.cat,
		sessions: h.sessions, attach: &attacher{env: e, log: log, sessions: h.sessions, files: h.res.clients}, own: h.own, git: h.git}
	h.cat.load = h.sessions.load
	h.restored = make(chan struct{})
	go h.restore(context.WithoutCancel(ctx))
	return h, nil
}

// restore lists the stored sessions and ends the turns a crash left
// running, after New has returned: the daemon listens at once, whatever
// its history (issue 34), and until the catalogue is whole every request
// and routed action waits on its lane (lanes.opened), never on a read
// loop. The automations start after it, since their runs start sessions.
func (h *Host) restore(ctx context.Context) {
	defer close(h.restored)
	defer h.lanes.open()
	if err := h.sessions.restore(ctx); err != nil {
		h.restoreErr = err
		return
	}
	if err := h.sessions.recoverRunningTurns(ctx); err != nil {
		h.restoreErr = err
		return
	}
	h.autos.start()
}

// Restored is closed once the stored sessions are listed and the turns a
// crash left running are ended; RestoreErr then says whether that failed
// (the daemon stops: Daemon.Failed).
func (h *Host) Restored() <-chan struct{} { return h.restored }

// RestoreErr is restore's failure, read after Restored is closed.
func (h *Host) RestoreErr() error {
	<-h.restored
	return h.restoreErr
}

// afterRestore serves next once the catalogue is whole (an HTTP entry
// point that does not pass a lane).
func (h *Host) afterRestore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.awaitRestored(r.Context()); err != nil {
			http.Error(w, "the host is starting", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// awaitRestored waits for the catalogue, for the host's entry points
// that do not pass a lane.
func (h *Host) awaitRestored(ctx context.Context) error {
	select {
	case <-h.restored:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops every session (and so every chat) and waits for them.
func (h *Host) Close(ctx context.Context) error {
	select {
	case <-h.closing:
		return nil
	default:
		close(h.closing)
	}
	// A restore still listing would open sessions behind the loop below.
	<-h.restored
	h.res.close()
	h.autos.close()
	if t := h.opts.Env.Terminals; t != nil {
		t.Close()
	}
	all := h.cat.all()
	var errs []error
	for _, s := range all {
		if err := s.Close(ctx); err != nil && !errors.Is(err, session.ErrClosed) {
			errs = append(errs, err)
		}
	}
	// The chats' last turn ends queued refreshes of git sessions: their
	// git calls end before the daemon does.
	if err := h.git.close(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// OpenChats counts the chat actors loaded now (for status and tests).
func (h *Host) OpenChats(ctx context.Context) int {
	if h.awaitRestored(ctx) != nil {
		return 0
	}
	all := h.cat.all()
	n := 0
	for _, s := range all {
		if k, err := s.OpenChats(ctx); err == nil {
			n += k
		}
	}
	return n
}

// worktreesRoot makes the worktrees folder (private to the daemon's user)
// and returns it absolute, its symlinks resolved.
func worktreesRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("worktrees folder %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fmt.Errorf("worktrees folder: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("worktrees folder: %w", err)
	}
	return real, nil
}

// servedPaths are the daemon's served directories (local paths); the first
// is the default directory.
type servedPaths []string

// holds reports whether dir, with its symlinks resolved, is one of the
// served paths or inside one: a client may not point an agent at / or at
// another user's home by naming it.
func (p servedPaths) holds(dir string) bool {
	_, err := confine.Resolve(dir, p)
	return err == nil
}
