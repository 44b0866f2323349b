// Package rpc is ahpd's transport: it serves the Agent Host Protocol as
// JSON-RPC 2.0 over websockets, one message per text frame (AHP.md §1).
//
// cmd/ahpd mounts a Server on its loopback HTTP listener; internal/host
// implements Handler and pushes notifications through Conn.Notify. This
// package holds no protocol state and no business logic: it checks the
// token, frames and validates messages, answers what it cannot hand on
// (parse errors, malformed requests), maps handler errors to JSON-RPC
// errors with ahp.WireError, and keeps one bounded, ordered outbox per
// connection so that no caller ever waits on a client.
//
// Each connection's read loop reads a frame into sourcegraph/jsonrpc2's
// message types (frame.go) and dispatches it (dispatch.go) without
// jsonrpc2's Conn, which avoids its two traps (STYLE.md) and its two
// goroutines a connection: a bad frame is answered and never closes the
// connection, and every write is queued, never made under a lock.
package rpc

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// Handler is the host side of a connection. For one connection its
// methods are never called concurrently: Connected first, then Request and
// Notification in the order the client sent them, then Disconnected once,
// after the last of them has returned.
type Handler interface {
	// Connected is called once, before the first Request or Notification.
	Connected(c *Conn)
	// Request routes a request and answers it through reply, exactly
	// once: at once, or later from another goroutine. It runs on the
	// connection's read loop, which reads nothing else until it returns,
	// so it must not wait: what may wait (an actor, the store, a client)
	// runs on the request's lane and replies from there. ctx is cancelled
	// when the connection starts closing.
	Request(ctx context.Context, c *Conn, method string, params json.RawMessage, reply Reply)
	// Notification handles a client notification (dispatchAction,
	// unsubscribe), in order with requests. It is never answered.
	// attachments holds the data of the inline attachments of a
	// dispatchAction's message, which params carries as "" (attachdata.go);
	// nil when there is none.
	Notification(c *Conn, method string, params json.RawMessage, attachments AttachmentData)
	// Disconnected is called once when the connection is gone.
	Disconnected(c *Conn, reason CloseReason)
}

// Options configure a Server. Zero values take the documented defaults.
type Options struct {
	// Handler receives the connections; required.
	Handler Handler
	// Token and ExtraTokens are the connection tokens. Once any is set,
	// every upgrade must present one, as query "?tkn=<token>", header
	// "Authorization: Bearer <token>" or a token subprotocol (a browser's
	// way, subprotocol.go); otherwise 401.
	Token string
	// ExtraTokens are accepted as well as Token (connection tokens that
	// carry their own grants).
	ExtraTokens []string
	// AllowedOrigins and AllowedHosts widen the door policy (door.go):
	// browser origins let in without a token, and Host names let in when
	// no token is configured.
	AllowedOrigins []string
	AllowedHosts   []string
	// MaxConnections is the most connections open at once; an upgrade over
	// it is answered 503. Default 1024; negative: no cap.
	MaxConnections int
	// TotalOutboxBytes bounds the unsent bytes of all connections together;
	// past it, the connection with the most unsent bytes is cut as a slow
	// consumer. Default 256 MiB.
	TotalOutboxBytes int64
	// Logger receives the transport's logs; each connection logs with the
	// attribute "conn". Default slog.Default().
	Logger *slog.Logger
	// OutboxBytes is the per-connection budget of queued-but-unwritten
	// bytes; a connection that would exceed it is closed with
	// CloseSlowConsumer. Default 16 MiB.
	OutboxBytes int
	// WriteTimeout bounds the write of one frame. Default 10s.
	WriteTimeout time.Duration
	// MaxMessageBytes is the largest frame read; a larger one closes the
	// connection with CloseMessageTooBig. Default 64 MiB.
	MaxMessageBytes int64
	// PingInterval is how often the server pings each client; a client that
	// sends nothing, not even a pong, for 2×PingInterval+WriteTimeout is
	// closed with ClosePingTimeout. Default 30s; negative disables pings.
	PingInterval time.Duration
}

// Defaults for Options.
const (
	DefaultOutboxBytes     = 16 << 20
	DefaultWriteTimeout    = 10 * time.Second
	DefaultMaxMessageBytes = 16 << 20
	DefaultMaxConnections  = 1024
	DefaultTotalOutbox     = 256 << 20
	DefaultPingInterval    = 30 * time.Second
)

// Stats are the server's counters, for `ahpd status`.
type Stats struct {
	Connections   int    // open now
	Accepted      uint64 // upgrades accepted since start
	Unauthorized  uint64 // upgrades refused with 401
	Forbidden     uint64 // upgrades refused with 403 (origin or host)
	OverCapacity  uint64 // upgrades refused with 503 (MaxConnections)
	OutboxBytes   int64  // unsent bytes of all connections now
	SlowConsumers uint64 // connections closed with CloseSlowConsumer
	WriteTimeouts uint64 // connections closed with CloseWriteTimeout
	PingTimeouts  uint64 // connections closed with ClosePingTimeout
	BadFrames     uint64 // frames answered -32700 or -32600 by the transport
	HandlerPanics uint64 // panics recovered from Handler methods
}

// counters are the atomics behind Stats.
type counters struct {
	accepted, unauthorized, forbidden, overCapacity, slowConsumers, writeTimeouts, pingTimeouts, badFrames, panics atomic.Uint64
}

// Server accepts websocket connections and runs them. It is an
// http.Handler: mount it at any path.
type Server struct {
	opts     Options
	log      *slog.Logger
	upgrader websocket.Upgrader
	// tokenSums are sha256 of Token and ExtraTokens, so the comparison is
	// constant-time whatever the length of the token presented.
	tokenSums [][sha256.Size]byte
	door      DoorPolicy
	stats     counters
	// open counts connections admitted (reserved before the upgrade, so
	// MaxConnections holds under a burst); outboxTotal is the unsent bytes
	// of every connection's outbox together.
	open        atomic.Int64
	outboxTotal atomic.Int64

	// mu guards conns, shuttingDown and idleClosed. A connection is in
	// conns from its upgrade until its goroutines have ended.
	mu           sync.Mutex
	conns        map[*Conn]struct{}
	shuttingDown bool
	// idle is closed once shuttingDown is set and conns is empty.
	idle       chan struct{}
	idleClosed bool
}

// readBufferSize is each connection's socket read buffer.
const readBufferSize = 1 << 10

// NewServer returns a Server for o. It panics without a Handler.
func NewServer(o Options) *Server {
	if o.Handler == nil {
		panic("rpc.NewServer: Options.Handler is required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.OutboxBytes <= 0 {
		o.OutboxBytes = DefaultOutboxBytes
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.PingInterval == 0 {
		o.PingInterval = DefaultPingInterval
	}
	if o.MaxConnections == 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.TotalOutboxBytes <= 0 {
		o.TotalOutboxBytes = DefaultTotalOutbox
	}
	s := &Server{
		opts:  o,
		log:   o.Logger,
		conns: make(map[*Conn]struct{}),
		idle:  make(chan struct{}),
		upgrader: websocket.Upgrader{
			// Buffers are borrowed only while a frame is written, so idle
			// connections hold none.
			WriteBufferPool: &sync.Pool{},
			// A connection keeps its read buffer for life. Clients send
			// little (requests, actions); a frame's payload larger than
			// the buffer is read straight into readMessage's chunk, so
			// 1 KiB only costs a read a frame header; net/http's 4 KiB,
			// which gorilla would keep, was 14 MiB of live heap on 4,000
			// connections (issue 37's memory under load).
			ReadBufferSize: readBufferSize,
			// The origin was decided by the door policy before Upgrade.
			CheckOrigin: func(*http.Request) bool { return true },
			// Selected when offered, so a browser may offer its token as a
			// subprotocol (subprotocol.go) and still get a handshake.
			Subprotocols: []string{Subprotocol},
		},
	}
	for _, t := range append([]string{o.Token}, o.ExtraTokens...) {
		if t != "" {
			s.tokenSums = append(s.tokenSums, sha256.Sum256([]byte(t)))
		}
	}
	s.door = DoorPolicy{TokenRequired: len(s.tokenSums) > 0, AllowedOrigins: o.AllowedOrigins, AllowedHosts: o.AllowedHosts}
	return s
}

// ServeHTTP checks the token, upgrades the request to a websocket and
// starts the connection in goroutines of its own (Conn), then returns: the
// hijacked connection needs nothing more of net/http, whose buffers for
// the request (6 KiB and the request itself) would otherwise live as long
// as the connection.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.isShuttingDown() {
		http.Error(w, "ahpd is shutting down", http.StatusServiceUnavailable)
		return
	}
	token, ok := s.authorize(r)
	if !ok {
		s.stats.unauthorized.Add(1)
		s.log.Info("upgrade refused: missing or wrong token", "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="ahpd"`)
		http.Error(w, "unauthorized: this ahpd needs a connection token (?tkn= or Authorization: Bearer)", http.StatusUnauthorized)
		return
	}
	if v := s.door.Check(r.Host, r.Header.Get("Origin"), token != "" && len(s.tokenSums) > 0); v.Status != 0 {
		s.stats.forbidden.Add(1)
		s.log.Warn("upgrade refused", "remote", r.RemoteAddr, "reason", v.Reason)
		http.Error(w, "forbidden: "+v.Reason, v.Status)
		return
	}
	// The slot is taken before the upgrade, so a burst cannot overshoot;
	// it is given back when the connection has ended.
	n := s.open.Add(1)
	running := false
	defer func() {
		if !running {
			s.open.Add(-1)
		}
	}()
	if max := s.opts.MaxConnections; max > 0 && n > int64(max) {
		s.stats.overCapacity.Add(1)
		s.log.Warn("upgrade refused: too many connections", "remote", r.RemoteAddr, "maxConnections", max)
		w.Header().Set("Retry-After", "5")
		http.Error(w, fmt.Sprintf("too many connections (maxConnections %d)", max), http.StatusServiceUnavailable)
		return
	}
	bw := &batchingWriter{ResponseWriter: w}
	ws, err := s.upgrader.Upgrade(bw, r, nil)
	if err != nil {
		// Upgrade has already answered the request.
		s.log.Info("websocket upgrade failed", "remote", r.RemoteAddr, "err", err)
		return
	}
	c := newConn(s, ws, r.RemoteAddr, token)
	c.batch = bw.conn
	if !s.add(c) {
		_ = ws.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseGoingAway, CloseServerShutdown.String()),
			time.Now().Add(time.Second))
		_ = ws.Close()
		return
	}
	s.stats.accepted.Add(1)
	running = true
	go c.serve()
}

// ended forgets a connection whose goroutines have ended and gives its
// slot back.
func (s *Server) ended(c *Conn) {
	s.remove(c)
	s.open.Add(-1)
}

// authorize returns the token the request presents and whether it may
// connect. Once any token is configured, only a configured one may; with
// none configured every request may (the door policy then confines it to
// loopback Hosts), and a presented token is still returned.
func (s *Server) authorize(r *http.Request) (token string, ok bool) {
	bearer := bearerToken(r.Header.Get("Authorization"))
	query := r.URL.Query().Get("tkn")
	sub := subprotocolToken(r)
	if len(s.tokenSums) == 0 {
		presented := query
		if sub != "" {
			presented = sub
		}
		if bearer != "" {
			presented = bearer
		}
		return presented, true
	}
	for _, t := range [...]string{bearer, query, sub} {
		if t == "" {
			continue
		}
		sum := sha256.Sum256([]byte(t))
		match := 0
		for _, want := range s.tokenSums {
			match |= subtle.ConstantTimeCompare(sum[:], want[:])
		}
		if match == 1 {
			return t, true
		}
	}
	return "", false
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header value, or "".
func bearerToken(header string) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

func (s *Server) isShuttingDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shuttingDown
}

// add registers c; it refuses once shutdown has begun.
func (s *Server) add(c *Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shuttingDown {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

// remove unregisters c once its goroutines have ended.
func (s *Server) remove(c *Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	s.closeIdleLocked()
}

// closeIdleLocked closes s.idle when shutdown has begun and no connection
// is left. s.mu must be held.
func (s *Server) closeIdleLocked() {
	if s.shuttingDown && len(s.conns) == 0 && !s.idleClosed {
		s.idleClosed = true
		close(s.idle)
	}
}

// Shutdown refuses new connections, closes every connection with
// CloseServerShutdown (queued frames are still written, within
// WriteTimeout, then a close frame 1001) and waits until every
// connection's goroutines have ended and Disconnected has returned. If ctx
// ends first, the remaining sockets are cut and Shutdown returns an error
// wrapping ctx.Err(); a handler that ignores its ctx may then still be
// running. Shutdown may be called more than once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shuttingDown = true
	conns := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.closeIdleLocked()
	s.mu.Unlock()

	for _, c := range conns {
		c.Close(CloseServerShutdown)
	}
	select {
	case <-s.idle:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	left := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		left = append(left, c)
	}
	s.mu.Unlock()
	for _, c := range left {
		_ = c.ws.Close()
	}
	return fmt.Errorf("rpc shutdown: %d connections still open: %w", len(left), ctx.Err())
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	open := len(s.conns)
	s.mu.Unlock()
	return Stats{
		Connections:   open,
		Accepted:      s.stats.accepted.Load(),
		Unauthorized:  s.stats.unauthorized.Load(),
		Forbidden:     s.stats.forbidden.Load(),
		OverCapacity:  s.stats.overCapacity.Load(),
		OutboxBytes:   s.outboxTotal.Load(),
		SlowConsumers: s.stats.slowConsumers.Load(),
		WriteTimeouts: s.stats.writeTimeouts.Load(),
		PingTimeouts:  s.stats.pingTimeouts.Load(),
		BadFrames:     s.stats.badFrames.Load(),
		HandlerPanics: s.stats.panics.Load(),
	}
}

// overTotalBudget cuts the connection with the most unsent bytes once all
// outboxes together hold more than TotalOutboxBytes: one stuck client
// cannot grow the daemon without bound, and the one cut is the one holding
// the most.
func (s *Server) overTotalBudget() {
	if s.outboxTotal.Load() <= s.opts.TotalOutboxBytes {
		return
	}
	s.mu.Lock()
	var worst *Conn
	most := 0
	for c := range s.conns {
		if n := c.out.pendingBytes(); n > most {
			worst, most = c, n
		}
	}
	s.mu.Unlock()
	if worst == nil {
		return
	}
	worst.closeWith(CloseSlowConsumer, fmt.Errorf("total outbox over %d bytes", s.opts.TotalOutboxBytes), func() {
		s.stats.slowConsumers.Add(1)
		worst.log.Warn("total outbox budget exceeded: closing the connection holding the most",
			"pendingBytes", most, "totalBytes", s.outboxTotal.Load(), "budgetBytes", s.opts.TotalOutboxBytes)
	})
}
