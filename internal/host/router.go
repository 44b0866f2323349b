package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/canvas"
	"github.com/ahpd/ahpd/internal/changeset"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/otlp"
	"github.com/ahpd/ahpd/internal/rpc"
	"github.com/ahpd/ahpd/internal/session"
)

var _ rpc.Handler = (*Host)(nil)

// Connected registers a new connection. Its principal comes from the token
// it presented: none (loopback) or the root token is the deployment
// itself.
func (h *Host) Connected(c *rpc.Conn) { h.conns.connected(c) }

// Disconnected forgets a connection and its subscriptions.
func (h *Host) Disconnected(c *rpc.Conn, reason rpc.CloseReason) {
	if cl := h.conns.disconnected(c); cl != nil {
		h.bus.DropSubscriber(cl)
		h.res.watchesLeft(cl) // a watch dies with its connection
		h.logs.left(cl)       // and its OTLP log subscriptions
		cl.stopCoalescing()   // and any deltas it held (coalesce.go)
	}
}

// decodeParams reads params into v; a missing or mistyped field is -32602
// naming it.
func decodeParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return ahp.Errorf(ahp.ErrInvalidParams, "params: required")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if field == "" {
				return ahp.Errorf(ahp.ErrInvalidParams, "params: expected an object")
			}
			return ahp.Errorf(ahp.ErrInvalidParams, "params.%s: expected %s, got %s", field, te.Type, te.Value)
		}
		return ahp.Errorf(ahp.ErrInvalidParams, "params: %v", err)
	}
	return nil
}

// requireChannel checks params.channel is present (and, for connection
// level commands, the root channel).
func requireChannel(ch string, root bool) error {
	switch {
	case ch == "":
		return ahp.Errorf(ahp.ErrInvalidParams, "params.channel: required")
	case root && !ahp.IsRootURI(ch):
		return ahp.Errorf(ahp.ErrInvalidParams, "params.channel: must be %s", ahp.RootURI)
	}
	return nil
}

// Request routes a client request; it runs on the connection's read loop
// and never waits there (docs/ARCHITECTURE.md, "Routing"). A ping and what
// a request's own params get wrong are answered at once; every other
// request runs on the lane of its channel (the same lane the channel's
// actions take, so a connection's requests and actions on one channel keep
// their order) and is answered from there. A request on the root channel
// takes its connection's lane. A slow or stalled channel holds up only its
// own lane: the connection's pings, and its requests on other channels,
// are answered meanwhile.
func (h *Host) Request(ctx context.Context, c *rpc.Conn, method string, params json.RawMessage, reply rpc.Reply) {
	cl := h.conns.client(c)
	if method != ahp.MethodInitialize && method != ahp.MethodPing && method != ahp.MethodReconnect && !cl.ready() {
		reply(nil, ahp.Errorf(ahp.ErrMethodNotFound, "%s before initialize: a connection says who it is first", method))
		return
	}
	switch method {
	case ahp.MethodPing:
		// Liveness has no payload: the answer is null (VS Code's "ping
		// answers before the client initializes").
		reply(nil, nil)
		return
	case ahp.MethodInitialize:
		h.initialize(ctx, cl, params, reply)
		return
	case ahp.MethodReconnect:
		h.reconnect(ctx, cl, params, reply)
		return
	}
	lane := requestLane(cl, params)
	h.onLane(cl, lane, method, reply, func(reply rpc.Reply) {
		if method == ahp.MethodSubscribe {
			h.subscribeRequest(ctx, cl, params, reply)
			return
		}
		reply(h.request(ctx, cl, method, params))
	})
}

// requestLane is the lane a request runs on: its params.channel's, or its
// connection's for the root channel or none (the request's own checks then
// answer what is wrong with it).
func requestLane(cl *client, params json.RawMessage) string {
	var p struct {
		Channel string `json:"channel"`
	}
	if json.Unmarshal(params, &p) != nil || p.Channel == "" || ahp.IsRootURI(p.Channel) {
		return connLane(cl)
	}
	return p.Channel
}

// connLane names a connection's own lane; no channel URI has its form.
func connLane(cl *client) string { return "conn " + cl.conn.ID() }

// onLane runs a request on lane, which answers it through reply, or
// refuses it when the lanes are full. A panic is answered as an internal
// error and reported (bug.Recover, around every lane's work). A connection
// that closed while its request ran loses what the request subscribed it
// to (Disconnected already dropped the rest).
func (h *Host) onLane(cl *client, lane, method string, reply rpc.Reply, run func(rpc.Reply)) {
	ok := h.lanes.push(lane, func() {
		replied := false
		once := func(res any, err error) {
			replied = true
			reply(res, err)
		}
		defer func() {
			if p := recover(); p != nil {
				if !replied {
					reply(nil, ahp.Errorf(ahp.ErrInternal, "handler for %s failed", method))
				}
				panic(p)
			}
		}()
		defer h.forgetIfGone(cl)
		run(once)
	})
	if !ok {
		h.log.Warn("request lanes full; refusing", "channel", lane, "conn", cl.conn.ID(), "method", method)
		reply(nil, ahp.Errorf(ahp.ErrInternal, "too many requests wait for %s; send it again later", lane))
	}
}

// handshake runs initialize's or reconnect's answer on the connection's
// lane with every notification held from now until its reply is queued,
// so what follows its snapshots or replay comes after it.
func (h *Host) handshake(cl *client, method string, reply rpc.Reply, answer func() (any, error)) {
	release := cl.conn.Hold()
	h.onLane(cl, connLane(cl), method, func(res any, err error) {
		reply(res, err)
		release()
	}, func(reply rpc.Reply) { reply(answer()) })
}

// forgetIfGone drops cl's subscriptions when its connection has closed: a
// request that ran on a lane may have subscribed it after Disconnected.
func (h *Host) forgetIfGone(cl *client) {
	select {
	case <-cl.conn.Done():
		h.bus.DropSubscriber(cl)
	default:
	}
}

// subscribeRequest answers subscribe. The reply is queued before any action
// after its snapshot (client.awaitSnapshot).
func (h *Host) subscribeRequest(ctx context.Context, cl *client, params json.RawMessage, reply rpc.Reply) {
	var p ahp.SubscribeParams
	if err := decodeParams(params, &p); err != nil {
		reply(nil, err)
		return
	}
	if err := requireChannel(p.Channel, false); err != nil {
		reply(nil, err)
		return
	}
	if otlp.IsChannel(p.Channel) {
		// Stateless: {} and no snapshot, whether a level was installed
		// or the URI named none (logs.go).
		if err := h.logs.subscribe(cl, p.Channel); err != nil {
			reply(nil, err)
			return
		}
		reply(ahp.SubscribeResult{}, nil)
		return
	}
	var latency time.Duration
	if p.Delivery != nil && p.Delivery.MaxLatencyMs != nil {
		ms := *p.Delivery.MaxLatencyMs
		if ms < 0 {
			reply(nil, ahp.Errorf(ahp.ErrInvalidParams, "params.delivery.maxLatencyMs: must be 0 or more, not %d", ms))
			return
		}
		latency = time.Duration(min(ms, int64(maxCoalesceLatency/time.Millisecond))) * time.Millisecond
	}
	// Before the subscription: the first deltas after the snapshot may
	// merge too. A subscribe without delivery asks for every delta again.
	cl.setLatency(p.Channel, latency)
	done := cl.awaitSnapshot(p.Channel)
	defer done()
	snap, err := h.subscribe(ctx, cl, p.Channel, p.View)
	if err != nil {
		cl.setLatency(p.Channel, 0)
		reply(nil, err)
		return
	}
	reply(ahp.SubscribeResult{Snapshot: &snap}, nil)
}

// request answers every request but ping, initialize, reconnect and
// subscribe, on its lane.
func (h *Host) request(ctx context.Context, cl *client, method string, params json.RawMessage) (any, error) {
	switch method {
	case ahp.MethodListSessions:
		return h.sessions.listSessions(ctx, cl, params)
	case ahp.MethodCreateSession:
		return h.sessions.createSession(ctx, cl, params)
	case ahp.MethodDisposeSession:
		return h.sessions.disposeSession(ctx, cl, params)
	case ahp.MethodCreateChat:
		return h.sessions.createChat(ctx, cl, params)
	case ahp.MethodDisposeChat:
		return h.sessions.disposeChat(ctx, cl, params)
	case ahp.MethodFetchTurns:
		return h.sessions.fetchTurns(ctx, cl, params)
	case ahp.MethodCompletions:
		return h.completer.completions(ctx, cl, params)
	case ahp.MethodResolveSessionConfig:
		return h.config.resolve(ctx, cl, params)
	case ahp.MethodSessionConfigCompletions:
		return h.config.completions(ctx, cl, params)
	}
	if res, ok, err := h.autos.request(ctx, cl, method, params); ok { // automations.go
		return res, err
	}
	if res, ok, err := h.res.request(ctx, cl, method, params); ok {
		return res, err
	}
	if res, ok, err := h.terms.request(ctx, cl, method, params); ok {
		return res, err
	}
	if res, ok, err := h.changesets.request(ctx, cl, method, params); ok {
		return res, err
	}
	if res, ok, err := h.git.request(ctx, cl, method, params); ok { // gitworktrees.go
		return res, err
	}
	if res, ok, err := h.bots.request(ctx, cl, method, params); ok {
		return res, err
	}
	if res, ok, err := h.diag.request(ctx, cl, method, params); ok { // diagnostics.go
		return res, err
	}
	if res, ok, err := h.search.request(ctx, cl, method, params); ok { // search.go
		return res, err
	}
	return nil, fmt.Errorf("%w: %s", ahp.ErrMethodNotFound, method)
}

// Notification handles a client notification.
func (h *Host) Notification(c *rpc.Conn, method string, params json.RawMessage, attachments rpc.AttachmentData) {
	cl := h.conns.client(c)
	switch method {
	case ahp.MethodDispatchAction:
		h.actions.dispatch(cl, params, attachments)
	case ahp.MethodUnsubscribe:
		var p ahp.UnsubscribeParams
		if err := decodeParams(params, &p); err != nil || p.Channel == "" {
			h.log.Debug("bad unsubscribe", "conn", c.ID(), "err", err)
			return
		}
		unsubscribe := func() {
			if otlp.IsChannel(p.Channel) {
				h.logs.unsubscribe(cl, p.Channel)
				return
			}
			h.bus.Unsubscribe(cl, p.Channel)
			cl.setLatency(p.Channel, 0)
			if isResourceWatch(p.Channel) {
				h.res.watchesLeft(nil) // its last subscriber may have gone
			}
		}
		// Behind a subscribe to the same channel still on its lane, in the
		// order the client sent them.
		if h.lanes.idle(p.Channel) || !h.lanes.push(p.Channel, unsubscribe) {
			unsubscribe()
		}
	default:
		h.log.Debug("unknown notification", "conn", c.ID(), "method", method)
	}
}

// initialize negotiates the version and answers with snapshots of the
// initial subscriptions. The connection says who it is on the read loop,
// so the requests it sends right behind initialize are taken; the
// snapshots are taken on its lane.
func (h *Host) initialize(ctx context.Context, cl *client, params json.RawMessage, reply rpc.Reply) {
	var p ahp.InitializeParams
	if err := decodeParams(params, &p); err != nil {
		reply(nil, err)
		return
	}
	if err := requireChannel(p.Channel, true); err != nil {
		reply(nil, err)
		return
	}
	if cl.ready() {
		// A connection says who it is once: a second handshake would
		// change the client id its pending actions are echoed under.
		reply(nil, ahp.Errorf(ahp.ErrMethodNotFound, "initialize: this connection is already initialized"))
		return
	}
	// An empty list offers no version this host speaks: the same answer
	// as an unsupported one, with the versions it does.
	version, ok := ahp.Negotiate(p.ProtocolVersions)
	if !ok {
		err := ahp.Errorf(ahp.ErrUnsupportedProtocolVersion, "none of %v is supported", p.ProtocolVersions)
		reply(nil, ahp.WithData(err, ahp.UnsupportedVersionData{SupportedVersions: ahp.SupportedVersions}))
		return
	}
	id := p.ClientID
	if id == "" {
		id = cl.conn.ID()
	}
	cl.setIdentity(id, version)
	h.conns.remember(id, version)
	seq := h.bus.Seq()
	h.handshake(cl, ahp.MethodInitialize, reply, func() (any, error) {
		res := ahp.InitializeResult{
			ProtocolVersion:             version,
			ServerSeq:                   seq,
			ServerInfo:                  &ahp.Implementation{Name: "ahpd", Version: h.opts.ServerVersion},
			CompletionTriggerCharacters: []string{"@", "#", "/"}, // the order VS Code's host says them
			TerminalCommandPrefix:       "!",
			Telemetry:                   h.logs.capabilities(),
			Automations:                 h.autos.capabilities(),
			RepositoryPreparation:       h.git.repositoryCapabilities(),
		}
		if len(h.opts.Paths) > 0 {
			res.DefaultDirectory = ahp.FileURI(h.opts.Paths[0])
		}
		for _, ch := range p.InitialSubscriptions {
			if otlp.IsChannel(ch) {
				// Installed without a snapshot; a URI naming no level
				// is ignored (logs.go).
				if err := h.logs.subscribe(cl, ch); err != nil {
					return nil, fmt.Errorf("initialSubscriptions %s: %w", ch, err)
				}
				continue
			}
			snap, err := h.subscribe(ctx, cl, ch, nil)
			if err != nil {
				return nil, fmt.Errorf("initialSubscriptions %s: %w", ch, err)
			}
			res.Snapshots = append(res.Snapshots, snap)
		}
		return res, nil
	})
}

// subscribe routes a subscription to the owner of the channel.
func (h *Host) subscribe(ctx context.Context, cl *client, channel string, view *ahp.SubscribeView) (ahp.Snapshot, error) {
	if ahp.IsRootURI(channel) {
		return h.root.snapshot(cl)
	}
	if snap, ok, err := h.own.subscribe(cl, channel); ok { // a terminal or a resource watch
		return snap, err
	}
	if changeset.IsChannel(channel) {
		return h.changesets.subscribe(ctx, cl, channel)
	}
	if isAutomationChannel(channel) {
		return h.autos.subscribe(cl, channel)
	}
	if ch, ok := changeset.ParseSessionChannel(channel); ok {
		return h.git.subscribe(ctx, cl, channel, ch) // gitchangesets.go
	}
	if grant := readGrant(channel); !cl.principal.Can(grant) {
		return ahp.Snapshot{}, ahp.WithData(ahp.Errorf(ahp.ErrPermissionDenied, "reading %s needs the grant %s", channel, grant), map[string]any{"grant": grant})
	}
	if sess, ok := ahp.AnnotationsSession(channel); ok {
		if _, ok := h.sessions.orCatalogue(ctx, sess); !ok {
			return ahp.Snapshot{}, fmt.Errorf("%w: %s", ahp.ErrResourceNotFound, channel)
		}
		var snap ahp.Snapshot
		found, err := h.cat.onSession(ctx, sess, func(s *session.Session) (err error) {
			snap, err = s.SubscribeAnnotations(ctx, cl)
			return err
		})
		if !found {
			return ahp.Snapshot{}, fmt.Errorf("%w: %s", ahp.ErrResourceNotFound, channel)
		}
		return snap, err
	}
	switch {
	case canvas.Is(channel):
		return h.canv.subscribe(ctx, cl, channel)
	case ahp.IsChatURI(channel):
		if view != nil && view.Turns != nil && *view.Turns < 0 {
			return ahp.Snapshot{}, ahp.Errorf(ahp.ErrInvalidParams, "params.view.turns: must be 0 or more, not %d", *view.Turns)
		}
		var snap ahp.Snapshot
		err := h.sessions.onChat(ctx, channel, func(c *chat.Chat) (err error) {
			snap, err = c.Subscribe(ctx, cl, view)
			return err
		})
		return snap, err
	default:
		// orCatalogue registers a session a backend's catalogue holds;
		// onSession opens it, again if it unloads meanwhile.
		if _, ok := h.sessions.orCatalogue(ctx, channel); !ok {
			return ahp.Snapshot{}, fmt.Errorf("%w: %s", ahp.ErrResourceNotFound, channel)
		}
		var snap ahp.Snapshot
		found, err := h.cat.onSession(ctx, channel, func(s *session.Session) (err error) {
			snap, err = s.Subscribe(ctx, cl)
			return err
		})
		if !found {
			return ahp.Snapshot{}, fmt.Errorf("%w: %s", ahp.ErrResourceNotFound, channel)
		}
		return snap, err
	}
}

// reconnect replays what a returning client missed, or answers with fresh
// snapshots when the replay log no longer reaches back. The connection
// takes its identity on the read loop; the replay or the snapshots are
// taken on its lane.
func (h *Host) reconnect(ctx context.Context, cl *client, params json.RawMessage, reply rpc.Reply) {
	var p ahp.ReconnectParams
	if err := decodeParams(params, &p); err != nil {
		reply(nil, err)
		return
	}
	if err := requireChannel(p.Channel, true); err != nil {
		reply(nil, err)
		return
	}
	if p.ClientID == "" {
		reply(nil, ahp.Errorf(ahp.ErrInvalidParams, "params.clientId: required"))
		return
	}
	version, known := h.conns.knows(p.ClientID)
	if !known {
		// Nothing to resume: the client never said who it is here (or
		// the host restarted since). It initializes afresh.
		reply(nil, ahp.Errorf(ahp.ErrNotFound, "reconnect: client %s is unknown to this host; initialize instead", p.ClientID))
		return
	}
	if v := cl.negotiated(); v != "" {
		version = v
	}
	cl.setIdentity(p.ClientID, version)
	h.handshake(cl, ahp.MethodReconnect, reply, func() (any, error) { return h.replay(ctx, cl, p) })
}

// replay is reconnect's answer.
func (h *Host) replay(ctx context.Context, cl *client, p ahp.ReconnectParams) (any, error) {
	var live, missing []string
	for _, ch := range p.Subscriptions {
		if otlp.IsChannel(ch) {
			// An OTLP log subscription is installed again from the live
			// edge: nothing of it is replayed (logs.go).
			if !h.logs.restore(cl, ch) {
				missing = append(missing, ch)
			}
			continue
		}
		// A replay restores subscriptions without subscribe's checks, so
		// each passes the same grant here; one the client may not read is
		// answered missing, never replayed.
		if !ahp.IsRootURI(ch) && !h.own.mayRead(cl, ch) {
			missing = append(missing, ch)
			continue
		}
		if h.channelExists(ctx, ch) {
			live = append(live, ch)
		} else {
			missing = append(missing, ch)
		}
	}
	if envs, ok := h.bus.Replay(cl, p.LastSeenServerSeq, live); ok {
		if envs == nil {
			envs = []json.RawMessage{}
		}
		if missing == nil {
			missing = []string{} // present when nothing is missing (AHP-1.0.md §R)
		}
		return replayResult{Type: ahp.ReconnectReplay, Actions: envs, Missing: missing}, nil
	}
	res := ahp.ReconnectResult{Type: ahp.ReconnectSnapshot, Missing: missing}
	for _, ch := range live {
		snap, err := h.subscribe(ctx, cl, ch, nil)
		if err != nil {
			res.Missing = append(res.Missing, ch)
			continue
		}
		res.Snapshots = append(res.Snapshots, snap)
	}
	return res, nil
}

// replayResult is ReconnectResult's replay form with envelopes kept as the
// bytes that were sent the first time.
type replayResult struct {
	Type    string            `json:"type"`
	Actions []json.RawMessage `json:"actions"`
	Missing []string          `json:"missing"`
}

func (h *Host) channelExists(ctx context.Context, ch string) bool {
	if exists, ok := h.own.exists(ch); ok { // a terminal or a resource watch
		return exists
	}
	switch {
	case ahp.IsRootURI(ch):
		return true
	case isAutomationChannel(ch):
		return h.autos.exists(ch)
	case canvas.Is(ch):
		return h.canv.exists(ctx, ch)
	case changeset.IsChannel(ch):
		return h.changesets.exists(ctx, ch)
	case changeset.IsSessionChannel(ch):
		sc, _ := changeset.ParseSessionChannel(ch)
		return h.git.exists(ctx, sc)
	case ahp.IsChatURI(ch):
		_, _, err := h.sessions.resolveChat(ctx, ch)
		return err == nil
	default:
		return h.cat.known(ch)
	}
}

func isAutomationChannel(channel string) bool {
	return ahp.IsAutomationsURI(channel) || ahp.IsAutomationRunURI(channel)
}

func isAnnotations(channel string) bool { _, ok := ahp.AnnotationsSession(channel); return ok }

// readGrant names the grant that reading a non-root channel needs:
// chat:turns for a chat, session:state for a session, automation:read
// for the automation catalogue and its runs. subscribe and
// reconnect both ask it, so a restored subscription passes the same check.
func readGrant(channel string) string {
	if isAutomationChannel(channel) {
		return auth.AutomationRead
	}
	if ahp.IsChatURI(channel) || canvas.Is(channel) || changeset.IsChannel(channel) || changeset.IsSessionChannel(channel) {
		return auth.ChatTurns // a canvas or a changeset is its chat's
	}
	return auth.SessionState
}
