package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// CloseReason says why a connection closed.
type CloseReason int

const (
	// CloseClientClosed: the client sent a close frame or hung up.
	CloseClientClosed CloseReason = iota + 1
	// CloseSlowConsumer: the outbox would have exceeded Options.OutboxBytes.
	CloseSlowConsumer
	// CloseWriteTimeout: a frame could not be written within WriteTimeout.
	CloseWriteTimeout
	// CloseWriteError: writing to the socket failed.
	CloseWriteError
	// CloseReadError: reading from the socket failed (broken connection or
	// websocket protocol violation).
	CloseReadError
	// CloseMessageTooBig: the client sent a frame over MaxMessageBytes.
	CloseMessageTooBig
	// ClosePingTimeout: the client sent nothing, not even a pong, in time.
	ClosePingTimeout
	// CloseServerShutdown: Server.Shutdown.
	CloseServerShutdown
	// CloseHostClosed: the host called Conn.Close for its own reasons.
	CloseHostClosed
	// CloseInternalError: Handler.Connected panicked.
	CloseInternalError
)

var closeReasonNames = [...]string{
	CloseClientClosed:   "client_closed",
	CloseSlowConsumer:   "slow_consumer",
	CloseWriteTimeout:   "write_timeout",
	CloseWriteError:     "write_error",
	CloseReadError:      "read_error",
	CloseMessageTooBig:  "message_too_big",
	ClosePingTimeout:    "ping_timeout",
	CloseServerShutdown: "server_shutdown",
	CloseHostClosed:     "host_closed",
	CloseInternalError:  "internal_error",
}

func (r CloseReason) String() string {
	if r > 0 && int(r) < len(closeReasonNames) {
		return closeReasonNames[r]
	}
	return "CloseReason(" + strconv.Itoa(int(r)) + ")"
}

// closeCode returns the websocket close code sent for a graceful close and
// whether the close is graceful: queued frames are written first, then a
// close frame. Every other reason cuts the socket at once, because it is
// either already broken or held by a client that does not read.
func (r CloseReason) closeCode() (code int, graceful bool) {
	switch r {
	case CloseServerShutdown:
		return websocket.CloseGoingAway, true
	case CloseHostClosed:
		return websocket.CloseNormalClosure, true
	case CloseInternalError:
		return websocket.CloseInternalServerErr, true
	}
	return 0, false
}

// closeGrace bounds the wait for the client's answer to our close frame.
const closeGrace = time.Second

// connSeq numbers connections for their IDs, process-wide.
var connSeq atomic.Uint64

// Conn is one client connection. Its methods are safe for concurrent use.
//
// Goroutines: one for as long as the connection lives, the others only
// while they have work, so an idle connection holds one stack, as a bare
// websocket server's would (issue 37's memory under load). ServeHTTP
// returns once the connection runs, so net/http's buffers for the request
// are not kept either.
//   - serve runs readLoop, the only socket reader (gorilla answers pings
//     and close frames from inside its reads) and the dispatcher: it hands
//     each message to the Handler before it reads the next;
//   - writeLoop, the only writer of data frames, runs while the outbox has
//     frames (outbox.start) and stops when it is empty;
//   - a ping, on its timer, writes one control frame (gorilla's
//     WriteControl may run beside the writer);
//   - finish, started by the first close, waits for the writer to stop,
//     finishes the writes, waits for readLoop and calls Disconnected.
type Conn struct {
	srv        *Server
	ws         *websocket.Conn
	log        *slog.Logger
	id         string
	remoteAddr string
	token      string
	out        *outbox

	// ctx is cancelled when the connection starts closing; the ctx of
	// every Request derives from it, and Done returns ctx.Done().
	ctx    context.Context
	cancel context.CancelFunc

	// closeOnce makes the first close win: it sets reason and closeErr,
	// then cancels ctx, so both may be read by anyone who saw ctx.Done().
	closeOnce sync.Once
	reason    CloseReason
	closeErr  error

	// readLoopDone is closed when readLoop returns: the last handler has
	// returned and nothing more is read.
	readLoopDone chan struct{}
	// pinger pings the client every PingInterval (nil when pings are off);
	// finish stops it.
	pinger atomic.Pointer[time.Timer]

	// calls are the requests made to the client (Call) that wait for
	// their answers.
	calls calls

	// batch is the socket under ws (batch.go); nil when the connection
	// was not upgraded through it. Owned by the writer goroutine.
	batch *batchConn
}

// inFrame is one websocket message as read: a text frame without the
// contents of its inline attachments' data (attachdata.go), which are in
// attachments; a binary frame's size.
type inFrame struct {
	messageType int
	data        []byte
	attachments AttachmentData
	size        int
}

func newConn(s *Server, ws *websocket.Conn, remoteAddr, token string) *Conn {
	id := "c" + strconv.FormatUint(connSeq.Add(1), 10)
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{
		srv:          s,
		ws:           ws,
		log:          s.log.With("conn", id),
		id:           id,
		remoteAddr:   remoteAddr,
		token:        token,
		ctx:          ctx,
		cancel:       cancel,
		readLoopDone: make(chan struct{}),
	}
	c.out = newOutbox(s.opts.OutboxBytes, func() { go c.writeLoop() })
	return c
}

// ID returns the connection's process-unique id ("c1", "c2", ...).
func (c *Conn) ID() string { return c.id }

// RemoteAddr returns the client's address as seen by the HTTP server.
func (c *Conn) RemoteAddr() string { return c.remoteAddr }

// Token returns the token the client presented, "" if none. When
// Options.Token is set it is that token.
func (c *Conn) Token() string { return c.token }

// Done is closed when the connection starts closing. From then on Notify
// returns ErrConnClosed; Disconnected follows once the handlers returned.
func (c *Conn) Done() <-chan struct{} { return c.ctx.Done() }

// Close closes the connection with reason; the first reason wins. It never
// blocks. CloseServerShutdown, CloseHostClosed and CloseInternalError
// write what is already queued (within WriteTimeout) and a close frame;
// any other reason cuts the socket at once.
func (c *Conn) Close(reason CloseReason) {
	c.closeWith(reason, nil, nil)
}

// closeWith closes the connection; the first call wins. The winner runs
// announce (if not nil) first, so the line that explains a close is logged
// before the connection's own "connection closed".
func (c *Conn) closeWith(reason CloseReason, err error, announce func()) {
	won := false
	c.closeOnce.Do(func() {
		won = true
		if announce != nil {
			announce()
		}
		c.reason = reason
		c.closeErr = err
		c.out.close()
		c.cancel()
		go c.finish()
	})
	if won {
		// A frame over the limit leaves the client's bytes unread: the
		// socket closes once they are drained (finishWrites).
		if _, graceful := reason.closeCode(); !graceful && reason != CloseMessageTooBig {
			// Unblocks a write stuck on a client that does not read, and
			// the reader. Safe from any goroutine (gorilla: Close may be
			// called concurrently with all other methods).
			_ = c.ws.Close()
		}
	}
}

// Notify queues a notification with params marshalled to JSON (nil params:
// no "params" member). It never blocks. It returns ErrConnClosed once the
// connection is closing, and ErrSlowConsumer when this frame overflowed the
// outbox (the connection is then closed).
func (c *Conn) Notify(method string, params any) error {
	if c.ctx.Err() != nil {
		return ErrConnClosed
	}
	var raw json.RawMessage
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return fmt.Errorf("notify %s: encode params: %w", method, err)
		}
		raw = b
	}
	return c.NotifyRaw(method, raw)
}

// NotifyRaw is Notify with params already marshalled, so a fan-out to many
// connections marshals once. params must be valid JSON (an object, for
// AHP); it is not checked. It is copied into the frame, so the caller may
// reuse it.
func (c *Conn) NotifyRaw(method string, params json.RawMessage) error {
	if c.ctx.Err() != nil {
		return ErrConnClosed
	}
	return c.enqueue(notificationFrame(method, params), false)
}

// NotifyFrame queues a whole notification frame built by the caller, once
// for every connection it goes to (the bus's action frames): the frame is
// shared and never modified here.
func (c *Conn) NotifyFrame(frame []byte) error {
	if c.ctx.Err() != nil {
		return ErrConnClosed
	}
	return c.enqueue(frame, false)
}

// Hold holds every notification queued on this connection from now on,
// until release is called; replies are never held. A request that
// subscribes opens a hold when its snapshot is taken and releases it
// after its reply is queued, so the client reads the snapshot before the
// actions that follow it, and every envelope still arrives in serverSeq
// order. Holds may overlap; what they held goes out when the last ends.
// release may be called more than once, from any goroutine. A hold never
// released is cut by the outbox budget like any client that does not read.
func (c *Conn) Hold() (release func()) {
	c.out.hold()
	var once sync.Once
	return func() { once.Do(c.out.unhold) }
}

// enqueue queues an encoded frame for the writer. Replies are never held.
func (c *Conn) enqueue(frame []byte, isReply bool) error {
	// The total counts the frame before the writer can see it: counted
	// after the push, the writer's subtraction could come first and the
	// total dip below zero.
	total := c.srv.outboxTotal.Add(int64(len(frame)))
	err := c.out.push(frame, isReply)
	if err != nil {
		c.srv.outboxTotal.Add(-int64(len(frame)))
	}
	var over *overBudgetError
	if errors.As(err, &over) {
		c.closeWith(CloseSlowConsumer, err, func() {
			c.srv.stats.slowConsumers.Add(1)
			c.log.Warn("slow consumer: closing connection",
				"pendingBytes", over.pending, "frameBytes", over.frame, "budgetBytes", over.budget)
		})
		return ErrSlowConsumer
	}
	if err == nil && total > c.srv.opts.TotalOutboxBytes {
		c.srv.overTotalBudget()
	}
	return err
}

// notificationFrame encodes {"jsonrpc":"2.0","method":method,"params":params}.
func notificationFrame(method string, params json.RawMessage) []byte {
	const head, mid = `{"jsonrpc":"2.0","method":`, `,"params":`
	b := make([]byte, 0, len(head)+len(method)+2+len(mid)+len(params)+1)
	b = append(b, head...)
	b = appendJSONString(b, method)
	if len(params) > 0 {
		b = append(b, mid...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string, quoting plain ASCII names
// (all AHP methods) without going through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if ch := s[i]; ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\' || ch == '<' || ch == '>' || ch == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// serve runs the connection in the goroutine ServeHTTP started: it calls
// Connected, starts the pings and reads until the connection closes. The
// first close starts finish, which ends the connection.
func (c *Conn) serve() {
	c.log.Debug("connection opened", "remote", c.remoteAddr)
	c.ws.SetReadLimit(c.srv.opts.MaxMessageBytes)
	if c.srv.opts.PingInterval > 0 {
		c.ws.SetPongHandler(func(string) error {
			c.extendReadDeadline()
			return nil
		})
	}
	// The pings start before Connected, so a close from Connected finds
	// their timer to stop.
	if interval := c.srv.opts.PingInterval; interval > 0 {
		c.pinger.Store(time.AfterFunc(interval, c.ping))
	}
	if !c.safely("Connected", func() { c.srv.opts.Handler.Connected(c) }) {
		c.Close(CloseInternalError)
	}
	c.readLoop()
}

// finish ends the connection once it started closing: it waits for the
// writer to stop, finishes the writes, waits for readLoop (and so for the
// last handler), calls Disconnected and gives the connection's slot back.
func (c *Conn) finish() {
	if t := c.pinger.Load(); t != nil {
		t.Stop()
	}
	c.out.writer.Wait()
	c.finishWrites()
	<-c.readLoopDone
	// What was queued and never written leaves the total with the
	// connection (the outbox refuses pushes once closed).
	c.srv.outboxTotal.Add(-int64(c.out.pendingBytes()))

	c.safely("Disconnected", func() { c.srv.opts.Handler.Disconnected(c, c.reason) })
	attrs := []any{"reason", c.reason}
	if c.closeErr != nil {
		attrs = append(attrs, "err", c.closeErr)
	}
	c.log.Debug("connection closed", attrs...)
	c.srv.ended(c)
}

// ping writes one ping and sets the next; a failed ping closes the
// connection. It runs on its timer's goroutine.
func (c *Conn) ping() {
	if c.ctx.Err() != nil {
		return
	}
	if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.srv.opts.WriteTimeout)); err != nil {
		c.writeFailed(err)
		return
	}
	if t := c.pinger.Load(); t != nil && c.ctx.Err() == nil {
		t.Reset(c.srv.opts.PingInterval)
	}
}

// readLoop is the connection's only socket reader; serve runs it, and
// finish waits for it (readLoopDone). It dispatches each
// message before it reads the next, so replies (error replies to bad
// frames included) and the Handler's calls keep the client's order; the
// Handler routes and returns (it never waits on an actor), so a hang-up is
// seen at once. It returns on the first read error or when the connection
// closes.
func (c *Conn) readLoop() {
	defer close(c.readLoopDone)
	for {
		c.extendReadDeadline()
		f, err := c.readMessage()
		if err != nil {
			c.readFailed(err)
			return
		}
		if c.ctx.Err() != nil {
			return
		}
		c.dispatch(f)
	}
}

// readChunk is how much of a message readLoop reads at a time.
const readChunk = 16 << 10

// readBuffers lend readMessage its scratch chunk while a message is read:
// a connection waiting for its next message holds none (4,000 connections
// held 16 KiB each; issue 37's memory under load). What readFrame returns
// never aliases the chunk.
var readBuffers = sync.Pool{New: func() any { b := make([]byte, readChunk); return &b }}

// readMessage reads the next message: a text frame through readFrame,
// which keeps the inline attachments' data out of it (attachdata.go); a
// binary frame is only counted, since it is refused.
func (c *Conn) readMessage() (inFrame, error) {
	messageType, r, err := c.ws.NextReader()
	if err != nil {
		return inFrame{}, err
	}
	bp := readBuffers.Get().(*[]byte)
	defer readBuffers.Put(bp)
	buf := *bp
	if messageType != websocket.TextMessage {
		n, err := io.CopyBuffer(io.Discard, r, buf)
		return inFrame{messageType: messageType, size: int(n)}, err
	}
	data, attachments, err := readFrame(r, buf)
	return inFrame{messageType: messageType, data: data, attachments: attachments, size: len(data)}, err
}

// pongWait is how long the reader waits for any frame, pongs included.
func (c *Conn) pongWait() time.Duration {
	return 2*c.srv.opts.PingInterval + c.srv.opts.WriteTimeout
}

// extendReadDeadline pushes the read deadline when pings are on. It is
// called by readLoop and by the pong handler, which runs inside readLoop's
// reads.
func (c *Conn) extendReadDeadline() {
	if c.srv.opts.PingInterval > 0 {
		_ = c.ws.SetReadDeadline(time.Now().Add(c.pongWait()))
	}
}

// readFailed closes the connection after a read error.
func (c *Conn) readFailed(err error) {
	reason := CloseReadError
	var closeErr *websocket.CloseError
	var netErr net.Error
	switch {
	case errors.As(err, &closeErr):
		reason = CloseClientClosed
	case errors.Is(err, websocket.ErrReadLimit):
		reason = CloseMessageTooBig
	case c.srv.opts.PingInterval > 0 && errors.As(err, &netErr) && netErr.Timeout():
		reason = ClosePingTimeout
	}
	c.closeWith(reason, err, func() {
		switch reason {
		case CloseMessageTooBig:
			c.log.Warn("frame over the read limit: closing connection", "limitBytes", c.srv.opts.MaxMessageBytes)
		case ClosePingTimeout:
			c.srv.stats.pingTimeouts.Add(1)
			c.log.Warn("client silent, no pong: closing connection", "waited", c.pongWait())
		}
	})
}

// writeLoop is the connection's only writer of data frames; the outbox
// starts it when a frame is queued and none runs. It drains the outbox in
// order, one frame per text message, each under a WriteTimeout deadline,
// and stops when the outbox is empty or closed, or a write fails.
func (c *Conn) writeLoop() {
	defer c.out.writer.Done()
	var batch [][]byte
	for {
		batch = c.out.next(batch)
		if batch == nil {
			return
		}
		if !c.writeFrames(batch, time.Time{}) {
			// The failed write closed the connection (writeFailed), and a
			// closed outbox starts no writer.
			return
		}
	}
}

// writeFrames writes frames in order, each under a WriteTimeout deadline,
// or under deadline when it is not zero. It reports false after a failed
// write, which closes the connection.
func (c *Conn) writeFrames(frames [][]byte, deadline time.Time) bool {
	if c.batch != nil && len(frames) > 1 {
		// The batch goes out in as few writes as its size needs (batch.go).
		c.batch.begin()
	}
	written := 0
	for _, f := range frames {
		// Each frame has WriteTimeout to go (a full buffer is written as
		// a frame is added), so a slow client that keeps reading is not
		// cut for the size of a batch.
		d := deadline
		if d.IsZero() {
			d = time.Now().Add(c.srv.opts.WriteTimeout)
		}
		_ = c.ws.SetWriteDeadline(d)
		if err := c.ws.WriteMessage(websocket.TextMessage, f); err != nil {
			if c.batch != nil {
				_ = c.batch.end()
			}
			c.writeFailed(err)
			return false
		}
		written += len(f)
	}
	if c.batch != nil {
		if err := c.batch.end(); err != nil {
			c.writeFailed(err)
			return false
		}
	}
	for _, f := range frames {
		c.out.written(len(f))
	}
	c.srv.outboxTotal.Add(-int64(written))
	return true
}

// writeFailed closes the connection after a write error.
func (c *Conn) writeFailed(err error) {
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		c.closeWith(CloseWriteTimeout, err, func() {
			c.srv.stats.writeTimeouts.Add(1)
			c.log.Warn("write timeout: closing connection",
				"timeout", c.srv.opts.WriteTimeout, "pendingBytes", c.out.pendingBytes())
		})
		return
	}
	c.closeWith(CloseWriteError, err, nil)
}

// finishWrites ends the write side once the connection is closing. A
// graceful close writes what is still queued, all within one WriteTimeout,
// sends a close frame and waits up to closeGrace for the client's answer;
// any other close drops the queue. Every close ends with the socket closed.
func (c *Conn) finishWrites() {
	defer c.ws.Close()
	if c.reason == CloseMessageTooBig {
		// gorilla sent the 1009 close frame as it refused the frame.
		c.drainUnread()
		return
	}
	frames := c.out.take(nil)
	code, graceful := c.reason.closeCode()
	if !graceful || !c.writeFrames(frames, time.Now().Add(c.srv.opts.WriteTimeout)) {
		return
	}
	msg := websocket.FormatCloseMessage(code, c.reason.String())
	if c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(closeGrace)) != nil {
		return
	}
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-c.readLoopDone:
	case <-t.C:
	}
}

// drainUnreadMax bounds what drainUnread throws away.
const drainUnreadMax = 4 << 20

// drainUnread reads and discards what the client sent after the frame that
// was over the limit (the rest of that frame, at least), for up to
// closeGrace and drainUnreadMax bytes, so the close that follows is a FIN:
// closing a socket with unread bytes makes the kernel answer with a reset,
// and a client still writing its big frame would then lose the 1009 close
// frame sent before it. It reads once the read loop has returned.
func (c *Conn) drainUnread() {
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-c.readLoopDone:
	case <-t.C:
		return
	}
	nc := c.ws.UnderlyingConn()
	if tc, ok := nc.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite() // the close frame is out; tell the client nothing follows
	}
	_ = nc.SetReadDeadline(time.Now().Add(closeGrace))
	_, _ = io.CopyN(io.Discard, nc, drainUnreadMax)
}

// panicOnBugs makes bug panic; this package's tests set it
// (gopls internal/util/bug.PanicOnBugs).
var panicOnBugs = false

// bug reports a broken invariant: loudly in the log, and as a panic under
// test so no test can miss it.
func (c *Conn) bug(msg string, args ...any) {
	c.log.Error("bug: "+msg, args...)
	if panicOnBugs {
		panic("rpc: bug: " + msg)
	}
}

// safely runs a Handler method, recovering and logging a panic. It reports
// false after a panic.
func (c *Conn) safely(what string, f func()) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			c.srv.stats.panics.Add(1)
			c.log.Error("handler panic", "in", what, "panic", p, "stack", string(debug.Stack()))
			ok = false
		}
	}()
	f()
	return true
}
