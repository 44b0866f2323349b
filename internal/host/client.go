package host

import (
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/lockorder"
	"github.com/ahpd/ahpd/internal/otlp"
	"github.com/ahpd/ahpd/internal/rpc"
)

// client is the host's record of one connection. It is the bus's
// subscriber for that connection.
type client struct {
	conn      *rpc.Conn
	principal auth.Principal

	// mu (rank lockorder.HostClient) guards id and version: they are set
	// by initialize or reconnect on the connection's read loop (a
	// connection has said who it is once id is set)
	// and read by publishers, under the bus's lock (Knows, ClientID). It is
	// taken under Bus, and takes the outbox's (rank Outbox) inside
	// (Subscribed holds the connection's notifications).
	mu      lockorder.Mutex
	id      string
	version string
	// known caches Knows by action type for version (every published
	// action asks it for every subscriber, and comparing versions parses
	// both); guarded by mu, emptied when version changes, bounded by
	// knownMax.
	known map[string]bool

	// awaiting are the snapshots this connection's pending replies will
	// carry, by channel (awaitSnapshot); guarded by mu.
	awaiting map[string][]*snapshotHold

	// logs are the connection's OTLP log subscriptions, one per canonical
	// channel (logs.go), and logsGone says the connection is gone, so
	// none is taken any more; both guarded by mu. A subscription is
	// never closed under mu: Close waits for its sink, which queues on
	// the outbox.
	logs     map[string]*otlp.Subscription
	logsGone bool

	// latency is how long streaming deltas may be held per channel for
	// this connection (subscribe's delivery.maxLatencyMs), held is what is
	// held now and flush sends it when its time is up (coalesce.go); all
	// guarded by mu. coalescing is set while latency holds any channel,
	// so a connection that asked for none delivers without taking mu.
	latency    map[string]time.Duration
	held       *heldDelta
	flush      *time.Timer
	coalescing atomic.Bool

	// fileCalls counts the reverse requests for this client's files that
	// it has not answered (clientfs.go), bounded by maxClientFileCalls.
	fileCalls atomic.Int32
}

func newClient(conn *rpc.Conn, p auth.Principal) *client {
	return &client{conn: conn, principal: p, mu: lockorder.Mutex{Rank: lockorder.HostClient}}
}

// snapshotHold holds a connection's notifications from the moment the bus
// subscribes it to a channel (the owner's snapshot) until the reply that
// carries the snapshot is queued.
type snapshotHold struct {
	release func() // set by Subscribed; nil until then
}

var (
	_ bus.SubscribeWatcher = (*client)(nil)
	_ bus.ActionSubscriber = (*client)(nil)
)

// awaitSnapshot says that a reply this connection is about to get carries
// channel's snapshot. From the moment the owner subscribes it (in the same
// step as its snapshot), the connection's notifications are held; done,
// called once the reply is queued, releases them behind it. So the client
// reads the snapshot before every action after it, in serverSeq order,
// and nothing is held while the owner is still busy or loading.
func (c *client) awaitSnapshot(channel string) (done func()) {
	h := &snapshotHold{}
	c.mu.Lock()
	if c.awaiting == nil {
		c.awaiting = make(map[string][]*snapshotHold)
	}
	c.awaiting[channel] = append(c.awaiting[channel], h)
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		holds := c.awaiting[channel]
		if i := slices.Index(holds, h); i >= 0 {
			holds = slices.Delete(holds, i, i+1)
		}
		if len(holds) == 0 {
			delete(c.awaiting, channel)
		} else {
			c.awaiting[channel] = holds
		}
		release := h.release
		c.mu.Unlock()
		if release != nil {
			release()
		}
	}
}

// Subscribed opens the hold of every reply awaiting channel's snapshot. The
// bus calls it under its lock, as it subscribes the connection.
func (c *client) Subscribed(channel string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.awaiting[channel] {
		if h.release == nil {
			h.release = c.conn.Hold()
		}
	}
}

// Deliver queues a notification on the connection; it never blocks.
func (c *client) Deliver(method string, params json.RawMessage) {
	if c.coalescing.Load() {
		// What is held goes first (coalesce.go).
		c.mu.Lock()
		defer c.mu.Unlock()
		c.flushLocked()
	}
	_ = c.conn.NotifyRaw(method, params)
}

// Knows reports whether the connection's version knows the action type.
func (c *client) Knows(actionType string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version == "" {
		return true
	}
	if k, ok := c.known[actionType]; ok {
		return k
	}
	k := ahp.ActionKnownTo(actionType, c.version)
	if c.known == nil {
		c.known = make(map[string]bool)
	}
	if len(c.known) < knownMax {
		c.known[actionType] = k
	}
	return k
}

// knownMax bounds a client's Knows cache: more than the protocol's action
// types, so only a flood of made-up types goes uncached.
const knownMax = 256

// ClientID is the clientId the connection gave.
func (c *client) ClientID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id
}

// setIdentity says who the connection is; id is never empty (initialize
// names the connection when the client does not).
func (c *client) setIdentity(id, version string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if version != c.version {
		c.known = nil
	}
	c.id, c.version = id, version
}

// ready reports whether the connection has said who it is.
func (c *client) ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id != ""
}

func (c *client) negotiated() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// chatClient is who the connection is to a chat or session actor.
func (c *client) chatClient() chat.Client {
	return chat.Client{Sub: c, ID: c.ClientID(), Sender: c.principal.Sender, Can: c.principal.Can,
		Root: strings.HasPrefix(c.principal.Sender, "root:")}
}

// hasLogs reports whether the connection holds an OTLP log subscription
// on channel (canonical).
func (c *client) hasLogs(channel string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.logs[channel]
	return ok
}

// addLogs keeps sub as the connection's subscription on its channel. It is
// not kept (false) when the connection already holds one there or is gone;
// the caller closes it then.
func (c *client) addLogs(sub *otlp.Subscription) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.logs[sub.Channel()]; ok || c.logsGone {
		return false
	}
	if c.logs == nil {
		c.logs = make(map[string]*otlp.Subscription)
	}
	c.logs[sub.Channel()] = sub
	return true
}

// takeLogs removes and returns the subscription on channel, if any; the
// caller closes it.
func (c *client) takeLogs(channel string) *otlp.Subscription {
	c.mu.Lock()
	defer c.mu.Unlock()
	sub := c.logs[channel]
	delete(c.logs, channel)
	return sub
}

// logsLeft marks the connection gone and returns every subscription it
// held; the caller closes them.
func (c *client) logsLeft() []*otlp.Subscription {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logsGone = true
	subs := make([]*otlp.Subscription, 0, len(c.logs))
	for _, s := range c.logs {
		subs = append(subs, s)
	}
	c.logs = nil
	return subs
}
