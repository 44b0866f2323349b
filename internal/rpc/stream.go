package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime/debug"
	"sync/atomic"

	"github.com/gorilla/websocket"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/ahpd/ahpd/internal/ahp"
)

// stream is the jsonrpc2.ObjectStream of one connection.
//
// ReadObject is called only by jsonrpc2's read loop; it validates every
// frame and answers the bad ones itself, because jsonrpc2 closes the whole
// connection on the first decode error (STYLE.md trap 1).
//
// WriteObject only queues: jsonrpc2 writes under its own mutex from the
// caller's goroutine, so a direct socket write would let one slow client
// stall every reply (STYLE.md trap 2).
type stream struct{ c *Conn }

var _ jsonrpc2.ObjectStream = (*stream)(nil)

// ReadObject returns the next valid frame decoded into v. It returns
// io.EOF (which jsonrpc2 does not log) once the connection is closing; the
// real cause is the connection's CloseReason.
func (s *stream) ReadObject(v any) error {
	c := s.c
	for {
		var f inFrame
		select {
		case f = <-c.frames:
		case <-c.ctx.Done():
		}
		if c.ctx.Err() != nil {
			c.dispatchDoneOnce.Do(func() { close(c.dispatchDone) })
			return io.EOF
		}
		c.attachments = nil
		if f.messageType != websocket.TextMessage {
			c.badFrame(invalidRequest(nil, "binary frames are not supported"), f.size)
			continue
		}
		kind, ferr := checkFrame(f.data)
		if ferr != nil {
			c.badFrame(ferr, len(f.data))
			continue
		}
		if err := decodeInto(v, f.data); err != nil {
			// checkFrame admits only what jsonrpc2 decodes (FuzzFrame
			// checks it); answer rather than hand jsonrpc2 a half-decoded
			// message.
			c.bug("frame passed checkFrame but jsonrpc2 cannot decode it", "err", err)
			c.badFrame(invalidRequest(nil, "%v", err), len(f.data))
			continue
		}
		if kind == frameNotification {
			c.attachments = f.attachments
		}
		return nil
	}
}

// decodeInto decodes data into a fresh value of v's type and stores it in
// v only on success, so a failed decode leaves v as it was.
func decodeInto(v any, data []byte) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("decode frame: want a non-nil pointer, got %T", v)
	}
	fresh := reflect.New(rv.Elem().Type())
	if err := json.Unmarshal(data, fresh.Interface()); err != nil {
		return err
	}
	rv.Elem().Set(fresh.Elem())
	return nil
}

// badFrame answers a frame the transport refuses and counts it.
func (c *Conn) badFrame(ferr *frameError, size int) {
	c.srv.stats.badFrames.Add(1)
	c.log.Debug("bad frame", "bytes", size, "err", ferr.err)
	_ = c.enqueue(ferr.frame(), true)
}

// WriteObject encodes obj (a jsonrpc2 reply) and queues it. It never
// blocks.
func (s *stream) WriteObject(obj any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return s.c.enqueue(b, true)
}

// Close is called by jsonrpc2 when its Conn closes, which happens only
// after the connection has started closing; the socket itself is closed by
// serve.
func (s *stream) Close() error {
	s.c.closeWith(CloseReadError, errors.New("jsonrpc2 closed the stream"), nil)
	return nil
}

// dispatcher is the jsonrpc2.Handler of one connection. Handle runs on
// jsonrpc2's read loop, one message at a time, so a connection's requests
// and notifications reach the Handler in the order they were sent; the
// Handler routes them and returns, and answers a request through its Reply
// whenever the request's owner has done it (docs/ARCHITECTURE.md,
// "Routing"). It is never wrapped in jsonrpc2.AsyncHandler, which would
// lose the order in which requests are routed.
type dispatcher struct{ c *Conn }

// Reply answers one request with result, or with err mapped by
// ahp.WireError (ahp.ErrMethodNotFound answers -32601). A Handler calls it
// exactly once, from any goroutine: on the read loop for what it answers at
// once, or later from the lane that ran the request. It never blocks.
type Reply func(result any, err error)

// Handle calls the Handler and, for a request, hands it the request's one
// Reply.
func (d dispatcher) Handle(ctx context.Context, jc *jsonrpc2.Conn, req *jsonrpc2.Request) {
	c := d.c
	params := paramsOf(req)
	// Set by ReadObject for this very message (both run on jsonrpc2's read
	// loop, one message at a time); taken so it goes nowhere else.
	attachments := c.attachments
	c.attachments = nil
	if req.Notif {
		c.safely("Notification "+req.Method, func() {
			c.srv.opts.Handler.Notification(c, req.Method, params, attachments)
		})
		return
	}
	var answered atomic.Bool
	reply := func(result any, err error) {
		if !answered.CompareAndSwap(false, true) {
			c.bug("a request was answered twice", "method", req.Method, "id", req.ID.String())
			return
		}
		if err == nil {
			if frame, ok := c.resultFrame(req, result); ok {
				if err := c.enqueue(frame, true); err != nil {
					c.log.Debug("reply not sent", "method", req.Method, "id", req.ID.String(), "err", err)
				}
				return
			}
			err = ahp.Errorf(ahp.ErrInternal, "encode result of %s", req.Method)
		}
		resp := c.errorResponse(req, err)
		// SendResponse only queues (stream.WriteObject), so it is safe and
		// quick from any goroutine.
		if err := jc.SendResponse(context.Background(), resp); err != nil {
			c.log.Debug("reply not sent", "method", req.Method, "id", req.ID.String(), "err", err)
		}
	}
	c.request(ctx, req.Method, params, reply, &answered)
}

// paramsOf returns the request's params, nil when absent or null.
func paramsOf(req *jsonrpc2.Request) json.RawMessage {
	if req.Params == nil || string(*req.Params) == "null" {
		return nil
	}
	return *req.Params
}

// request calls Handler.Request; a panic before the request was answered
// answers it with an internal error.
func (c *Conn) request(ctx context.Context, method string, params json.RawMessage, reply Reply, answered *atomic.Bool) {
	defer func() {
		if p := recover(); p != nil {
			c.srv.stats.panics.Add(1)
			c.log.Error("handler panic", "in", "Request", "method", method, "panic", p, "stack", string(debug.Stack()))
			if !answered.Load() {
				reply(nil, ahp.Errorf(ahp.ErrInternal, "handler for %s failed", method))
			}
		}
	}()
	c.srv.opts.Handler.Request(ctx, c, method, params, reply)
}

// ahpPackage is the wire types' package, whose results resultFrame trusts
// to marshal valid JSON.
var ahpPackage = reflect.TypeFor[ahp.ListSessionsResult]().PkgPath()

// resultFrame encodes a successful reply to req in one pass: the result is
// marshalled once and framed here, where jsonrpc2's SendResponse would
// marshal its Response and message wrappers around it, and encoding/json
// would compact and copy the whole result again at each of those levels
// (issue 37: three passes over a 500-session listSessions page were most
// of its cost). A result that is itself a json.Marshaler is asked
// directly, skipping the compaction json.Marshal adds around one. false:
// the result does not encode (logged; the caller answers an internal
// error).
func (c *Conn) resultFrame(req *jsonrpc2.Request, result any) ([]byte, bool) {
	var body []byte
	var err error
	if m, ok := result.(json.Marshaler); ok && result != nil {
		body, err = m.MarshalJSON()
		// The protocol's own results marshal through json.Marshal; any
		// other Marshaler's bytes are checked before they reach a client.
		if err == nil && reflect.TypeOf(result).PkgPath() != ahpPackage && !json.Valid(body) {
			err = fmt.Errorf("%T.MarshalJSON wrote invalid JSON", result)
		}
	} else {
		body, err = json.Marshal(result)
	}
	if err != nil {
		c.log.Error("encode result", "method", req.Method, "err", err)
		return nil, false
	}
	id, err := json.Marshal(req.ID)
	if err != nil {
		c.log.Error("encode reply id", "method", req.Method, "err", err)
		return nil, false
	}
	frame := make([]byte, 0, len(body)+len(id)+32)
	frame = append(frame, `{"jsonrpc":"2.0","id":`...)
	frame = append(frame, id...)
	frame = append(frame, `,"result":`...)
	frame = append(frame, body...)
	frame = append(frame, '}')
	return frame, true
}

// errorResponse builds the error reply to req: err mapped by ahp.WireError
// (a successful reply is framed by resultFrame).
func (c *Conn) errorResponse(req *jsonrpc2.Request, err error) *jsonrpc2.Response {
	resp := &jsonrpc2.Response{ID: req.ID}
	code, message, data := ahp.WireError(err)
	wire := &jsonrpc2.Error{Code: int64(code), Message: message}
	if data != nil {
		b, mErr := json.Marshal(data)
		if mErr == nil {
			raw := json.RawMessage(b)
			wire.Data = &raw
		} else {
			c.log.Error("encode error data", "method", req.Method, "err", mErr)
		}
	}
	resp.Error = wire
	// At info: what a client was refused is what an operator looks for
	// first, and a window's log view subscribes at info (the OTLP log
	// channel, internal/otlp).
	c.log.Info("request failed", "method", req.Method, "code", code, "err", err)
	return resp
}
