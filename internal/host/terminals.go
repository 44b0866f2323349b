package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/ahpd/ahpd/internal/env"
	"github.com/ahpd/ahpd/internal/resources"
	"github.com/ahpd/ahpd/internal/terminal"
)

// Terminals: createTerminal opens a real pty on a channel the client
// names, disposeTerminal ends it. A terminal belongs to the host
// (internal/terminal), so it outlives the connection that opened it. A
// terminal is a shell with the daemon's rights: only root, or a session's
// owner in that session's folders, may open one (the rule of ! commands).

const (
	methodCreateTerminal  = "createTerminal"
	methodDisposeTerminal = "disposeTerminal"
)

// terminalDesk answers the terminal commands and the terminal channels;
// the terminals are the environment's (internal/terminal).
type terminalDesk struct {
	env   *env.Env
	terms *terminal.Registry
	bus   *bus.Bus
	cat   *catalogue
	files *resources.FS // where a cwd is found
	paths servedPaths
	root  *rootDesk
}

type createTerminalParams struct {
	Channel string             `json:"channel"`
	Claim   *ahp.TerminalClaim `json:"claim"`
	Name    string             `json:"name"`
	Cwd     string             `json:"cwd"`
	Cols    int                `json:"cols"`
	Rows    int                `json:"rows"`
}

// request answers createTerminal and disposeTerminal; handled is
// false for any other method.
func (d *terminalDesk) request(ctx context.Context, cl *client, method string, params json.RawMessage) (any, bool, error) {
	switch method {
	case methodCreateTerminal:
		res, err := d.create(ctx, cl, params)
		return res, true, err
	case methodDisposeTerminal:
		var p struct {
			Channel string `json:"channel"`
		}
		if err := decodeParams(params, &p); err != nil {
			return nil, true, err
		}
		if err := requireChannel(p.Channel, false); err != nil {
			return nil, true, err
		}
		t, ok := d.terms.Get(p.Channel)
		if !ok {
			return nil, true, fmt.Errorf("%w: %s", ahp.ErrResourceNotFound, p.Channel)
		}
		if !d.mayWrite(cl, t) {
			return nil, true, ahp.Errorf(ahp.ErrPermissionDenied, "only root or the terminal's opener may dispose %s", p.Channel)
		}
		return struct{}{}, true, d.terms.Dispose(p.Channel)
	}
	return nil, false, nil
}

func (d *terminalDesk) create(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
	var p createTerminalParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := requireChannel(p.Channel, false); err != nil {
		return nil, err
	}
	if err := d.freeURI(p.Channel); err != nil {
		return nil, err
	}
	if !cl.principal.Can(auth.TerminalWrite) {
		return nil, ahp.WithData(ahp.Errorf(ahp.ErrPermissionDenied, "createTerminal needs the grant %s", auth.TerminalWrite), map[string]any{"grant": auth.TerminalWrite})
	}
	if p.Claim == nil || (p.Claim.Kind != "client" && p.Claim.Kind != "session") {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.claim: required, of kind client or session")
	}
	if p.Claim.Kind == "session" {
		if !d.cat.known(p.Claim.Session) {
			return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.claim.session: no session %s", p.Claim.Session)
		}
	}
	if p.Cols < 0 || p.Rows < 0 || p.Cols > 0xffff || p.Rows > 0xffff {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.cols, rows: %dx%d is not a size", p.Cols, p.Rows)
	}
	dir, err := d.startDir(ctx, p)
	if err != nil {
		return nil, err
	}
	allowedBy, ok := d.mayOpen(ctx, cl, p.Claim, dir)
	if !ok {
		return nil, ahp.Errorf(ahp.ErrPermissionDenied, "a terminal runs a shell on the host, which only root or the owner of a session working in %s may open", dir)
	}
	// A session's terminal, and one a session's owner may open only as
	// that owner, is confined as the session's processes are (sandbox.go).
	confinedBy := allowedBy
	if p.Claim.Kind == "session" {
		confinedBy = p.Claim.Session
	}
	wrap, err := sessionSandbox(ctx, d.env, confinedBy)
	if err != nil {
		return nil, ahp.Errorf(ahp.ErrInvalidRequest, "terminal in %s: %v", dir, err)
	}
	title := p.Name
	if title == "" {
		title = "Terminal"
	}
	_, err = d.terms.Open(terminal.Spec{URI: p.Channel, Title: title, Claim: *p.Claim, Dir: dir,
		Cols: p.Cols, Rows: p.Rows, Opener: cl.principal.Sender, Wrap: wrap})
	switch {
	case errors.Is(err, terminal.ErrExists):
		return nil, ahp.Errorf(ahp.ErrAlreadyExists, "terminal %s exists", p.Channel)
	case errors.Is(err, terminal.ErrFull):
		return nil, ahp.Errorf(ahp.ErrInvalidRequest, "%v", err)
	case err != nil:
		return nil, err
	}
	return struct{}{}, nil
}

// freeURI checks a client-chosen terminal URI names nothing else.
func (d *terminalDesk) freeURI(uri string) error {
	u, err := url.Parse(uri)
	switch {
	case err != nil || u.Scheme == "":
		return ahp.Errorf(ahp.ErrInvalidParams, "params.channel: %s is not a URI", uri)
	case ahp.IsRootURI(uri), ahp.IsChatURI(uri), isAnnotations(uri), isResourceWatch(uri), u.Scheme == "file":
		return ahp.Errorf(ahp.ErrInvalidParams, "params.channel: %s is not a terminal URI", uri)
	}
	if _, ok := d.terms.Get(uri); ok {
		return ahp.Errorf(ahp.ErrAlreadyExists, "terminal %s exists", uri)
	}
	if d.cat.known(uri) {
		return ahp.Errorf(ahp.ErrInvalidParams, "params.channel: %s is a session", uri)
	}
	return nil
}

// startDir is where a terminal starts: the cwd asked for (an existing
// directory inside the served paths), else the claiming session's first
// directory, else the first served path.
func (d *terminalDesk) startDir(ctx context.Context, p createTerminalParams) (string, error) {
	if p.Cwd != "" {
		path, err := localPath("cwd", p.Cwd)
		if err != nil {
			return "", err
		}
		real, st, err := d.files.Locate(path)
		if err != nil {
			return "", err
		}
		if !st.IsDir() {
			return "", ahp.Errorf(ahp.ErrInvalidParams, "params.cwd: %s is not a directory", p.Cwd)
		}
		return real, nil
	}
	if p.Claim.Kind == "session" {
		if s, ok := d.cat.live(ctx, p.Claim.Session); ok {
			if dirs, err := s.Directories(ctx); err == nil && len(dirs) > 0 {
				if path, err := ahp.LocalPath(dirs[0]); err == nil {
					return path, nil
				}
			}
		}
	}
	if len(d.paths) == 0 {
		return "", ahp.Errorf(ahp.ErrInvalidParams, "params.cwd: required (the daemon serves no path)")
	}
	return d.paths[0], nil
}

// mayOpen: root, or the owner of a session whose folders hold dir
// (and, for a session claim, that session).
//
// allowedBy is the session whose ownership lets a non-root client in.
func (d *terminalDesk) mayOpen(ctx context.Context, cl *client, claim *ahp.TerminalClaim, dir string) (allowedBy string, ok bool) {
	if strings.HasPrefix(cl.principal.Sender, "root:") {
		return "", true
	}
	candidates := d.cat.workingIn(dir, func(uri string) bool { return claim.Kind != "session" || uri == claim.Session })
	for _, uri := range candidates {
		rec, ok, err := d.env.Store.Session(ctx, uri)
		if err == nil && ok && rec.Owner != "" && rec.Owner == cl.principal.Sender {
			return uri, true
		}
	}
	return "", false
}

// mayWrite: root or the terminal's opener types into it.
func (d *terminalDesk) mayWrite(cl *client, t *terminal.Terminal) bool {
	return strings.HasPrefix(cl.principal.Sender, "root:") || (t.Opener() != "" && t.Opener() == cl.principal.Sender)
}

// mayRead: terminal:read, and root, the opener, or — for a
// terminal a session holds (a ! command's) — whoever may read that session.
func (d *terminalDesk) mayRead(cl *client, t *terminal.Terminal) bool {
	if !cl.principal.Can(auth.TerminalRead) {
		return false
	}
	if d.mayWrite(cl, t) {
		return true
	}
	claim := t.Claim()
	return claim.Kind == "session" && cl.principal.Can(auth.SessionState)
}

// subscribe subscribes cl to terminal t.
func (d *terminalDesk) subscribe(cl *client, t *terminal.Terminal) (ahp.Snapshot, error) {
	if !d.mayRead(cl, t) {
		return ahp.Snapshot{}, ahp.WithData(ahp.Errorf(ahp.ErrPermissionDenied, "reading %s needs the grant %s and to be root or its opener", t.URI(), auth.TerminalRead),
			map[string]any{"grant": auth.TerminalRead})
	}
	return t.Snapshot(cl)
}

// dispatch carries out a client's action on terminal t.
func (d *terminalDesk) dispatch(cl *client, t *terminal.Terminal, a ahp.Action, origin *ahp.ActionOrigin) {
	refuse := func(reason string) { d.bus.Refuse(cl, t.URI(), a, origin, reason) }
	if !strings.HasPrefix(a.ActionType(), "terminal/") {
		refuse(fmt.Sprintf("%s is not an action of channel %s.", a.ActionType(), t.URI()))
		return
	}
	if !ahp.IsClientDispatchable(a.ActionType()) {
		refuse("Action is not client-dispatchable.")
		return
	}
	if g := ahp.GrantFor(a.ActionType()); g != "" && !cl.principal.Can(g) {
		refuse(fmt.Sprintf("Permission denied: %s needs the grant %s.", a.ActionType(), g))
		return
	}
	if !d.mayWrite(cl, t) {
		refuse("Permission denied: only root or the terminal's opener may act on it.")
		return
	}
	if err := t.Dispatch(a, origin); err != nil {
		refuse(err.Error())
	}
}

// changed tells root watchers the terminals now open.
func (d *terminalDesk) changed() {
	d.root.apply(ahp.RootTerminalsChanged{Terminals: d.terms.Infos()}, nil)
}

// ownChannels route the channels the host itself serves: a terminal
// (terminals.go) or a resource watch (resources.go).
type ownChannels struct {
	terms *terminalDesk
	res   *resourceDesk
}

// subscribe subscribes cl to a terminal or a watch; handled is false for
// any other channel.
func (o ownChannels) subscribe(cl *client, channel string) (snap ahp.Snapshot, handled bool, err error) {
	if t, ok := o.terms.terms.Get(channel); ok {
		snap, err = o.terms.subscribe(cl, t)
		return snap, true, err
	}
	if isResourceWatch(channel) {
		snap, err = o.res.subscribeWatch(cl, channel)
		return snap, true, err
	}
	return ahp.Snapshot{}, false, nil
}

// dispatch routes a client action on a terminal or a watch;
// false for any other channel.
func (o ownChannels) dispatch(cl *client, channel string, a ahp.Action, origin *ahp.ActionOrigin) bool {
	if t, ok := o.terms.terms.Get(channel); ok {
		o.terms.dispatch(cl, t, a, origin)
		return true
	}
	if isResourceWatch(channel) {
		o.terms.bus.Refuse(cl, channel, a, origin, fmt.Sprintf("%s is not an action a client sends a resource watch.", a.ActionType()))
		return true
	}
	return false
}

// exists reports whether channel is a live terminal or watch
// (handled false: neither kind).
func (o ownChannels) exists(channel string) (exists, handled bool) {
	if _, ok := o.terms.terms.Get(channel); ok {
		return true, true
	}
	if isResourceWatch(channel) {
		return o.res.watchExists(channel), true
	}
	return false, false
}

// mayRead says whether cl may read channel, for reconnect: a terminal or
// watch by its own rule, any other by readGrant.
func (o ownChannels) mayRead(cl *client, channel string) bool {
	if t, ok := o.terms.terms.Get(channel); ok {
		return o.terms.mayRead(cl, t)
	}
	if isResourceWatch(channel) {
		return cl.principal.Can(auth.ResourceRead)
	}
	return cl.principal.Can(readGrant(channel))
}
