// Package ahptest is a wire harness for tests: a real websocket client that
// speaks AHP to a daemon on 127.0.0.1, records every envelope and
// notification it receives, and offers waits with deadlines so tests read
// as scripts (like gopls's integration.Env). Helpers call t.Fatal.
package ahptest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Timeout bounds every wait.
var Timeout = 20 * time.Second

// Envelope is one action envelope as received.
type Envelope struct {
	Channel         string          `json:"channel"`
	Action          json.RawMessage `json:"action"`
	ServerSeq       int64           `json:"serverSeq"`
	Origin          *Origin         `json:"origin,omitempty"`
	RejectionReason string          `json:"rejectionReason,omitempty"`
	// Raw is the envelope as it arrived.
	Raw json.RawMessage `json:"-"`

	// typ and fields are the action decoded once, on arrival, so waits
	// that scan every envelope stay cheap.
	typ    string
	fields map[string]json.RawMessage
}

func (e *Envelope) decode() {
	_ = json.Unmarshal(e.Action, &e.fields)
	if t, ok := e.fields["type"]; ok {
		_ = json.Unmarshal(t, &e.typ)
	}
}

// Origin is an envelope's origin.
type Origin struct {
	ClientID  string `json:"clientId"`
	ClientSeq int64  `json:"clientSeq"`
}

// Type is the action's type.
func (e Envelope) Type() string {
	if e.fields == nil {
		e.decode()
	}
	return e.typ
}

// Field decodes one field of the action into v.
func (e Envelope) Field(name string, v any) error {
	if e.fields == nil {
		e.decode()
	}
	raw, ok := e.fields[name]
	if !ok {
		return fmt.Errorf("action %s has no field %q", e.Type(), name)
	}
	return json.Unmarshal(raw, v)
}

// Notification is a non-action notification (root/sessionAdded, ...).
type Notification struct {
	Method string
	Params json.RawMessage
}

// RPCError is a JSON-RPC error answer.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// Frame is any frame the client received, in order.
type Frame struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *RPCError       `json:"error,omitempty"`
	Raw    json.RawMessage `json:"-"`
}

// Client is one test connection.
type Client struct {
	t  testing.TB
	ws *websocket.Conn
	// ID is the clientId given at initialize.
	ID string

	writeMu sync.Mutex

	// mu guards everything below; cond signals a new frame or the end.
	mu        sync.Mutex
	cond      *sync.Cond
	nextID    int64
	clientSeq int64
	frames    []Frame
	replies   map[string]Frame
	envs      []Envelope
	notes     []Notification
	closed    error
	// answer answers the server's requests to this client (OnRequest).
	answer func(method string, params json.RawMessage) (any, *RPCError)
}

// OnRequest sets how the client answers the server's requests (a
// server→client resourceRead, ...): fn runs on a goroutine of its own, so
// it may take its time; a nil result with a nil error answers null.
// Without it a request is only recorded, as a notification is.
func (c *Client) OnRequest(fn func(method string, params json.RawMessage) (any, *RPCError)) {
	c.mu.Lock()
	c.answer = fn
	c.mu.Unlock()
}

// reply writes the answer to a server request.
func (c *Client) reply(id json.RawMessage, result any, rerr *RPCError) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if rerr != nil {
		msg["error"] = map[string]any{"code": rerr.Code, "message": rerr.Message}
	} else {
		msg["result"] = result
	}
	data, err := json.Marshal(msg)
	if err != nil {
		return
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_ = c.ws.WriteMessage(websocket.TextMessage, data)
}

// Dial connects to url (ws://127.0.0.1:port), with an optional token.
func Dial(t testing.TB, url, token string) *Client {
	t.Helper()
	c, resp, err := DialRaw(url, token)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s: %v (HTTP %d)", url, err, status)
	}
	cl := &Client{t: t, ws: c, replies: make(map[string]Frame)}
	cl.cond = sync.NewCond(&cl.mu)
	go cl.read()
	t.Cleanup(func() { cl.Close() })
	return cl
}

// DialRaw opens a websocket without the harness.
func DialRaw(url, token string) (*websocket.Conn, *http.Response, error) {
	if token != "" {
		url += "?tkn=" + token
	}
	d := websocket.Dialer{HandshakeTimeout: Timeout}
	return d.Dial(url, nil)
}

// read is the client's reader goroutine; it owns ws reads.
func (c *Client) read() {
	for {
		_, data, err := c.ws.ReadMessage()
		c.mu.Lock()
		if err != nil {
			c.closed = err
			c.cond.Broadcast()
			c.mu.Unlock()
			return
		}
		var f Frame
		if jerr := json.Unmarshal(data, &f); jerr == nil {
			f.Raw = append(json.RawMessage(nil), data...)
			c.frames = append(c.frames, f)
			switch {
			case f.Method == "action":
				var e Envelope
				if json.Unmarshal(f.Params, &e) == nil {
					e.Raw = f.Params
					e.decode()
					c.envs = append(c.envs, e)
				}
			case f.Method != "":
				c.notes = append(c.notes, Notification{Method: f.Method, Params: f.Params})
				if answer := c.answer; answer != nil && len(f.ID) > 0 {
					id, method, params := f.ID, f.Method, f.Params
					go func() {
						res, rerr := answer(method, params)
						c.reply(id, res, rerr)
					}()
				}
			case len(f.ID) > 0:
				c.replies[string(f.ID)] = f
			}
		}
		c.cond.Broadcast()
		c.mu.Unlock()
	}
}

// Close closes the socket.
func (c *Client) Close() { _ = c.ws.Close() }

// Closed reports whether the server has closed the connection.
func (c *Client) Closed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// SendRaw writes one text frame as is.
func (c *Client) SendRaw(frame string) {
	c.t.Helper()
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if err := c.ws.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
		c.t.Fatalf("write frame: %v", err)
	}
}

// Request sends a request and returns its id without waiting.
func (c *Client) Request(method string, params any) string {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		c.t.Fatalf("marshal %s: %v", method, err)
	}
	c.SendRaw(string(msg))
	return fmt.Sprint(id)
}

// Await waits for the reply to request id.
func (c *Client) Await(id string) Frame {
	c.t.Helper()
	var f Frame
	c.WaitFor(fmt.Sprintf("reply to request %s", id), func() bool {
		var ok bool
		f, ok = c.replies[id]
		return ok
	})
	return f
}

// Call sends a request and waits for its answer.
func (c *Client) Call(method string, params any) (json.RawMessage, *RPCError) {
	c.t.Helper()
	f := c.Await(c.Request(method, params))
	return f.Result, f.Error
}

// MustCall is Call that fails the test on an error answer.
func (c *Client) MustCall(method string, params any) json.RawMessage {
	c.t.Helper()
	res, err := c.Call(method, params)
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	return res
}

// Notify sends a notification.
func (c *Client) Notify(method string, params any) {
	c.t.Helper()
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	if err != nil {
		c.t.Fatalf("marshal %s: %v", method, err)
	}
	c.SendRaw(string(msg))
}

// Initialize performs the handshake as clientID, subscribing to subs.
func (c *Client) Initialize(clientID string, subs ...string) json.RawMessage {
	c.t.Helper()
	c.ID = clientID
	if subs == nil {
		subs = []string{}
	}
	return c.MustCall("initialize", map[string]any{
		"channel": "ahp-root://", "protocolVersions": []string{"1.0.0"}, "clientId": clientID,
		"initialSubscriptions": subs,
	})
}

// Subscribe subscribes to channel and returns the snapshot's state.
func (c *Client) Subscribe(channel string) (state json.RawMessage, fromSeq int64) {
	c.t.Helper()
	return c.SubscribeWith(channel, nil)
}

// SubscribeWith is Subscribe with more params beside channel (view,
// delivery).
func (c *Client) SubscribeWith(channel string, extra map[string]any) (state json.RawMessage, fromSeq int64) {
	c.t.Helper()
	params := map[string]any{"channel": channel}
	for k, v := range extra {
		params[k] = v
	}
	res := c.MustCall("subscribe", params)
	var r struct {
		Snapshot struct {
			State   json.RawMessage `json:"state"`
			FromSeq int64           `json:"fromSeq"`
		} `json:"snapshot"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		c.t.Fatalf("subscribe %s: %v", channel, err)
	}
	return r.Snapshot.State, r.Snapshot.FromSeq
}

// Dispatch sends an action on channel and returns its clientSeq.
func (c *Client) Dispatch(channel string, action any) int64 {
	c.t.Helper()
	c.mu.Lock()
	c.clientSeq++
	seq := c.clientSeq
	c.mu.Unlock()
	c.Notify("dispatchAction", map[string]any{"channel": channel, "clientSeq": seq, "action": action})
	return seq
}

// WaitFor waits until cond (called with the client's lock held) is true.
func (c *Client) WaitFor(what string, cond func() bool) {
	c.t.Helper()
	c.WaitForWithin(what, Timeout, cond)
}

// WaitForWithin is WaitFor with its own bound, for a wait known to take
// longer than Timeout (a real agent CLI's first start).
func (c *Client) WaitForWithin(what string, within time.Duration, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	timer := time.AfterFunc(within, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for !cond() {
		if c.closed != nil {
			c.t.Fatalf("waiting for %s: connection closed: %v", what, c.closed)
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("waiting for %s: timed out after %s", what, within)
		}
		c.cond.Wait()
	}
}

// AwaitEnvelope waits for an envelope matching match, among those received
// so far or later, and returns the first.
func (c *Client) AwaitEnvelope(what string, match func(Envelope) bool) Envelope {
	c.t.Helper()
	return c.AwaitEnvelopeWithin(what, Timeout, match)
}

// AwaitEnvelopeWithin is AwaitEnvelope with its own bound (WaitForWithin).
func (c *Client) AwaitEnvelopeWithin(what string, within time.Duration, match func(Envelope) bool) Envelope {
	c.t.Helper()
	var got Envelope
	c.WaitForWithin(what, within, func() bool {
		for _, e := range c.envs {
			if match(e) {
				got = e
				return true
			}
		}
		return false
	})
	return got
}

// AwaitAction waits for an action of type typ on channel.
func (c *Client) AwaitAction(channel, typ string) Envelope {
	c.t.Helper()
	return c.AwaitEnvelope(typ+" on "+channel, func(e Envelope) bool { return e.Channel == channel && e.Type() == typ })
}

// AwaitEcho waits for the echo of this client's action clientSeq.
func (c *Client) AwaitEcho(clientSeq int64) Envelope {
	c.t.Helper()
	return c.AwaitEnvelope(fmt.Sprintf("echo of clientSeq %d", clientSeq), func(e Envelope) bool {
		return e.Origin != nil && e.Origin.ClientID == c.ID && e.Origin.ClientSeq == clientSeq
	})
}

// AwaitNotification waits for a notification of method.
func (c *Client) AwaitNotification(method string) Notification {
	c.t.Helper()
	var got Notification
	c.WaitFor(method, func() bool {
		for _, n := range c.notes {
			if n.Method == method {
				got = n
				return true
			}
		}
		return false
	})
	return got
}

// Envelopes returns a copy of every envelope received so far.
func (c *Client) Envelopes() []Envelope {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Envelope(nil), c.envs...)
}

// Frames returns a copy of every frame received so far.
func (c *Client) Frames() []Frame {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Frame(nil), c.frames...)
}

// AwaitFrame waits for a frame, among those after the first n received,
// that matches match.
func (c *Client) AwaitFrame(what string, n int, match func(Frame) bool) Frame {
	c.t.Helper()
	var got Frame
	c.WaitFor(what, func() bool {
		for _, f := range c.frames[min(n, len(c.frames)):] {
			if match(f) {
				got = f
				return true
			}
		}
		return false
	})
	return got
}

// AwaitNotificationWhere waits for a notification of method whose params
// satisfy match.
func (c *Client) AwaitNotificationWhere(method string, match func(params json.RawMessage) bool) Notification {
	c.t.Helper()
	var got Notification
	c.WaitFor(method, func() bool {
		for _, n := range c.notes {
			if n.Method == method && match(n.Params) {
				got = n
				return true
			}
		}
		return false
	})
	return got
}

// Since returns the envelopes received after the first n, waiting up to
// wait for one when there are none yet. It never fails the test: err is the
// connection's end, for a test that kills the server on purpose.
func (c *Client) Since(n int, wait time.Duration) (envs []Envelope, err error) {
	timer := time.AfterFunc(wait, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer timer.Stop()
	deadline := time.Now().Add(wait)
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.envs) <= n && c.closed == nil && time.Now().Before(deadline) {
		c.cond.Wait()
	}
	return append([]Envelope(nil), c.envs[min(n, len(c.envs)):]...), c.closed
}
