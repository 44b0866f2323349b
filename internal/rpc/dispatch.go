package rpc

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime/debug"
	"sync/atomic"

	"github.com/gorilla/websocket"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/ahpd/ahpd/internal/ahp"
)

// dispatch hands one frame to the Handler, on the read loop, in the order
// the client sent it: a request or notification to the Handler (which
// routes it and returns), a response to the Call waiting for it. A frame
// that is not one valid JSON-RPC message is answered here and never closes
// the connection (STYLE.md trap 1). Replies are queued, never written under
// a lock (STYLE.md trap 2).
//
// The read loop is the connection's dispatcher: sourcegraph/jsonrpc2's Conn
// would add two goroutines a connection (its reader, fed one frame at a
// time, and a watcher of its context), two stacks of four on 4,000
// connections (issue 37's memory under load); its message types remain the
// envelope (parseFrame).
func (c *Conn) dispatch(f inFrame) {
	if f.messageType != websocket.TextMessage {
		c.badFrame(invalidRequest(nil, "binary frames are not supported"), f.size)
		return
	}
	env, ferr := parseFrame(f.data)
	if ferr != nil {
		c.badFrame(ferr, len(f.data))
		return
	}
	switch env.kind {
	case frameResponse:
		c.answer(&env)
	case frameNotification:
		c.safely("Notification "+env.req.Method, func() {
			c.srv.opts.Handler.Notification(c, env.req.Method, paramsOf(&env.req), f.attachments)
		})
	case frameRequest:
		c.handleRequest(&env.req)
	}
}

// badFrame answers a frame the transport refuses and counts it.
func (c *Conn) badFrame(ferr *frameError, size int) {
	c.srv.stats.badFrames.Add(1)
	c.log.Debug("bad frame", "bytes", size, "err", ferr.err)
	_ = c.enqueue(ferr.frame(), true)
}

// Reply answers one request with result, or with err mapped by
// ahp.WireError (ahp.ErrMethodNotFound answers -32601). A Handler calls it
// exactly once, from any goroutine: on the read loop for what it answers at
// once, or later from the lane that ran the request. It never blocks.
type Reply func(result any, err error)

// handleRequest calls the Handler with the request's one Reply.
func (c *Conn) handleRequest(req *jsonrpc2.Request) {
	var answered atomic.Bool
	reply := func(result any, err error) {
		if !answered.CompareAndSwap(false, true) {
			c.bug("a request was answered twice", "method", req.Method, "id", req.ID.String())
			return
		}
		var frame []byte
		if err == nil {
			var ok bool
			if frame, ok = c.resultFrame(req, result); !ok {
				err = ahp.Errorf(ahp.ErrInternal, "encode result of %s", req.Method)
			}
		}
		if err != nil {
			b, mErr := json.Marshal(c.errorResponse(req, err))
			if mErr != nil {
				c.log.Error("encode error reply", "method", req.Method, "id", req.ID.String(), "err", mErr)
				return
			}
			frame = b
		}
		if err := c.enqueue(frame, true); err != nil {
			c.log.Debug("reply not sent", "method", req.Method, "id", req.ID.String(), "err", err)
		}
	}
	c.request(req.Method, paramsOf(req), reply, &answered)
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
func (c *Conn) request(method string, params json.RawMessage, reply Reply, answered *atomic.Bool) {
	defer func() {
		if p := recover(); p != nil {
			c.srv.stats.panics.Add(1)
			c.log.Error("handler panic", "in", "Request", "method", method, "panic", p, "stack", string(debug.Stack()))
			if !answered.Load() {
				reply(nil, ahp.Errorf(ahp.ErrInternal, "handler for %s failed", method))
			}
		}
	}()
	c.srv.opts.Handler.Request(c.ctx, c, method, params, reply)
}

// isNilPointer reports whether v is a nil pointer, which json.Marshal
// writes as null and its MarshalJSON may not survive.
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// elemType is v's type, or the type it points to.
func elemType(v any) reflect.Type {
	t := reflect.TypeOf(v)
	if t.Kind() == reflect.Pointer {
		return t.Elem()
	}
	return t
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
	if m, ok := result.(json.Marshaler); ok && !isNilPointer(result) {
		body, err = m.MarshalJSON()
		// The protocol's own results marshal through json.Marshal; any
		// other Marshaler's bytes are checked before they reach a client.
		if err == nil && elemType(result).PkgPath() != ahpPackage && !json.Valid(body) {
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
