// Package host is the protocol's front desk: it owns the root state, the
// catalogue of sessions and the index of their chats, and routes every
// request and action to the owner of its channel (host for root, session
// and chat actors for theirs). It implements rpc.Handler.
package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/ahpd/ahpd/internal/confine"
	"github.com/ahpd/ahpd/internal/env"
	"github.com/ahpd/ahpd/internal/hosttools"
	"github.com/ahpd/ahpd/internal/lockorder"
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
}

// Host is the protocol host.
type Host struct {
	opts Options
	log  *slog.Logger
	bus  *bus.Bus

	// root is the root channel's owner (root.go).
	root *rootDesk

	// tools serves the host's tools to agents (hosttools.go).
	tools *toolDesk

	// paths are the served directories (Options.Paths).
	paths servedPaths
	// config answers what a new session's config holds (sessionconfig.go).
	config *configDesk

	// cat is the sessions catalogue: sessions, their summaries and the
	// chat index, under its one lock (catalogue.go).
	cat *catalogue
	// sessions opens the sessions, finds their chats and answers the
	// session commands (sessions.go).
	sessions *sessionDesk

	// conns are the connections' client records (conns.go).
	conns *conns

	// lanes route dispatched actions off the read loops; actors are the
	// chat actors a dispatch can reach directly (lanes.go).
	lanes  *lanes
	actors *actors
	// actions routes the clients' actions (dispatch.go).
	actions *dispatcher

	// res answers the resource commands and keeps the watches
	// (resources.go); terms answers the terminals (terminals.go); own
	// routes both kinds of channel.
	res   *resourceDesk
	terms *terminalDesk
	own   ownChannels

	// completer answers completions (completions.go).
	completer *completer
	// attach reads what a message attaches (attachments.go).
	attach *attacher
	// bots answers the bot commands and serves the bot backend (bots.go).
	bots *botDesk
	// changesets answers the changeset channels and commands (changesets.go).
	changesets *changesetDesk

	// canv is the host's canvas plugins and file server (canvases.go).
	canv *canvasKit

	closing chan struct{}
}

// New builds a host, restoring every stored session. A turn left running
// by a process that died is ended with an error (C-TURN-10).
func New(ctx context.Context, opts Options) (*Host, error) {
	if opts.HostName == "" {
		opts.HostName, _ = os.Hostname()
		if opts.HostName == "" {
			opts.HostName = "localhost"
		}
	}
	h := &Host{
		opts:    opts,
		log:     opts.Env.Logger,
		bus:     opts.Env.Bus,
		cat:     newCatalogue(),
		lanes:   newLanes(opts.Env.Logger),
		actors:  newActors(),
		conns:   newConns(opts.HostName, opts.RootToken, opts.Principals),
		closing: make(chan struct{}),
	}
	h.paths = servedPaths(opts.Paths)
	h.config = &configDesk{log: h.log, agents: opts.Agents, defaultProvider: opts.DefaultProvider, paths: h.paths}
	h.root = newRootDesk(ctx, h.bus, opts.Agents)
	h.sessions = &sessionDesk{env: opts.Env, log: h.log, bus: h.bus, agents: opts.Agents, settings: opts.AgentSettings,
		defaultProvider: opts.DefaultProvider, closedChats: opts.ClosedChats, paths: h.paths,
		cat: h.cat, actors: h.actors, root: h.root, config: h.config}
	h.tools = &toolDesk{env: opts.Env, cat: h.cat, sessions: h.sessions}
	h.tools.server = hosttools.New(h, opts.Env.Logger)
	h.sessions.tools = h.tools
	h.canv = newCanvasKit(h.sessions, h.tools.origin)
	h.changesets = &changesetDesk{env: opts.Env, sessions: h.sessions}
	h.sessions.canvases = h.canv.plugins
	h.completer = &completer{env: opts.Env, agents: opts.Agents, sessions: h.sessions, files: newFileIndex()}
	h.attach = &attacher{env: opts.Env, log: h.log, sessions: h.sessions}
	h.bots = &botDesk{env: opts.Env, log: h.log, bus: h.bus, agents: opts.Agents, defaultProvider: opts.DefaultProvider,
		principals: opts.Principals, paths: h.paths, cat: h.cat, sessions: h.sessions, config: h.config, closing: h.closing,
		mu: lockorder.Mutex{Rank: lockorder.HostBots}}
	h.res = newResourceDesk(h.paths, h.bus, h.changesets)
	h.terms = &terminalDesk{env: opts.Env, terms: opts.Env.Terminals, bus: h.bus, cat: h.cat, files: h.res.files, paths: h.paths, root: h.root}
	h.own = ownChannels{terms: h.terms, res: h.res}
	if t := opts.Env.Terminals; t != nil {
		t.OnChange(h.terms.changed)
	}
	h.actions = &dispatcher{log: h.log, bus: h.bus, lanes: h.lanes, actors: h.actors, root: h.root, cat: h.cat,
		sessions: h.sessions, attach: h.attach, own: h.own}
	recs, err := opts.Env.Store.Sessions(ctx)
	if err != nil {
		return nil, fmt.Errorf("restore sessions: %w", err)
	}
	for _, r := range recs {
		if _, err := h.sessions.open(ctx, r); err != nil {
			h.log.Error("restore session", "session", r.URI, "err", err)
		}
	}
	if err := h.sessions.recoverRunningTurns(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// Close stops every session (and so every chat) and waits for them.
func (h *Host) Close(ctx context.Context) error {
	select {
	case <-h.closing:
		return nil
	default:
		close(h.closing)
	}
	h.res.close()
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
	return errors.Join(errs...)
}

// OpenChats counts the chat actors loaded now (for status and tests).
func (h *Host) OpenChats(ctx context.Context) int {
	all := h.cat.all()
	n := 0
	for _, s := range all {
		if k, err := s.OpenChats(ctx); err == nil {
			n += k
		}
	}
	return n
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
