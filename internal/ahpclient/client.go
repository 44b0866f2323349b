// Package ahpclient is a small Agent Host Protocol client for scripts and
// tools written in Go: it dials an ahpd websocket, does the handshake, and
// offers the few operations a script needs — list sessions, create one,
// send a message to a chat and stream the answer, follow a channel.
//
// The protocol facts it encodes, so a script need not dig them out:
//   - initialize names the client and the protocol versions it speaks;
//   - the client mints a new session's URI (<provider>:/<uuid>) and reads
//     the session's defaultChat from its state after subscribing;
//   - a client subscribes to a chat before it dispatches to it, so it sees
//     every action of the turn it starts;
//   - a turn's first text arrives in chat/responsePart, the rest in
//     chat/delta; it ends with exactly one of chat/turnComplete,
//     chat/error or chat/turnCancelled.
//
// A Client is safe for concurrent use. Every frame the daemon pushes
// (action envelopes and notifications) is handed to Events in order; the
// caller must keep reading it while it waits on a Call, or the connection
// stalls (and the daemon cuts it as a slow consumer).
//
//	c, err := ahpclient.Dial(ctx, "ws://127.0.0.1:9187", token)
//	sess, chat, err := c.CreateSession(ctx, "script", nil)
//	res, err := c.Send(ctx, chat, "hello", ahpclient.SendOptions{OnText: func(s string) { fmt.Print(s) }})
package ahpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
)

// ProtocolVersions are the AHP versions this client offers, preferred first.
var ProtocolVersions = []string{"1.0.0", "0.10.0"}

// Frame is one message the daemon pushed: an action envelope (Method
// "action") or another notification (root/sessionAdded, root/progress, ...).
type Frame struct {
	Method string
	Params json.RawMessage
}

// Envelope is the decoded params of an "action" frame.
type Envelope struct {
	Channel         string          `json:"channel"`
	Action          json.RawMessage `json:"action"`
	ServerSeq       int64           `json:"serverSeq"`
	Origin          *Origin         `json:"origin,omitempty"`
	RejectionReason string          `json:"rejectionReason,omitempty"`
}

// Origin names the client action an envelope answers.
type Origin struct {
	ClientID  string `json:"clientId"`
	ClientSeq int64  `json:"clientSeq"`
}

// Type is the envelope's action type ("chat/delta", ...).
func (e Envelope) Type() string {
	var a struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(e.Action, &a)
	return a.Type
}

// Error is a JSON-RPC error the daemon answered.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// Client is one connection to an ahpd.
type Client struct {
	ws       *websocket.Conn
	clientID string
	events   chan Frame

	writeMu sync.Mutex

	mu        sync.Mutex
	nextID    int64
	clientSeq int64
	pending   map[int64]chan response
	err       error
	done      chan struct{}
}

type response struct {
	result json.RawMessage
	err    *Error
}

// EventBuffer is how many pushed frames wait for the reader of Events
// before the connection stops reading (and the daemon's outbox fills).
const EventBuffer = 4096

// Dial connects to url (ws://host:port), presenting token when it is not
// empty, and performs the handshake. The client's id is a fresh
// "ahpclient-<uuid>".
func Dial(ctx context.Context, rawURL, token string) (*Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") {
		return nil, fmt.Errorf("ahp url %q: want ws://host:port", rawURL)
	}
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	ws, resp, err := d.DialContext(ctx, u.String(), h)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("connect %s: HTTP %d %s", rawURL, resp.StatusCode, http.StatusText(resp.StatusCode))
		}
		return nil, fmt.Errorf("connect %s: %w", rawURL, err)
	}
	c := &Client{
		ws: ws, clientID: "ahpclient-" + uuid.NewString(),
		events:  make(chan Frame, EventBuffer),
		pending: map[int64]chan response{},
		done:    make(chan struct{}),
	}
	go c.read()
	if err := c.Call(ctx, "initialize", map[string]any{
		"channel": "ahp-root://", "protocolVersions": ProtocolVersions, "clientId": c.clientID,
		"clientInfo": map[string]any{"name": "ahpclient"},
	}, nil); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return c, nil
}

// ClientID is the id this client gave in initialize.
func (c *Client) ClientID() string { return c.clientID }

// Events delivers every frame the daemon pushes, in order. It is closed
// when the connection ends.
func (c *Client) Events() <-chan Frame { return c.events }

// Done is closed when the connection has ended; Err then says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the connection ended (nil while it is open).
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the connection.
func (c *Client) Close() error {
	c.writeMu.Lock()
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	c.writeMu.Unlock()
	return c.ws.Close()
}

func (c *Client) read() {
	defer close(c.events)
	defer close(c.done)
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			c.fail(fmt.Errorf("connection closed: %w", err))
			return
		}
		var m struct {
			ID     *int64          `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *Error          `json:"error"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			continue
		}
		if m.Method != "" {
			if m.ID != nil {
				// A request from the host (resource reads): this client
				// holds no resources.
				c.write(map[string]any{"jsonrpc": "2.0", "id": *m.ID, "error": map[string]any{"code": -32601, "message": "ahpclient serves no requests"}})
				continue
			}
			c.events <- Frame{Method: m.Method, Params: m.Params}
			continue
		}
		if m.ID == nil {
			continue
		}
		c.mu.Lock()
		ch := c.pending[*m.ID]
		delete(c.pending, *m.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- response{result: m.Result, err: m.Error}
		}
	}
}

func (c *Client) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
	for id, ch := range c.pending {
		ch <- response{err: &Error{Code: -1, Message: err.Error()}}
		delete(c.pending, id)
	}
}

func (c *Client) write(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return c.ws.WriteMessage(websocket.TextMessage, data)
}

// Call sends a request and decodes its result into result (when not nil).
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	ch := make(chan response, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return fmt.Errorf("%s: %w", method, r.err)
		}
		if result != nil && len(r.result) > 0 {
			if err := json.Unmarshal(r.result, result); err != nil {
				return fmt.Errorf("%s: decode result: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// Dispatch sends a client action on channel and returns its clientSeq (the
// echo's, or the refusal's, origin.clientSeq).
func (c *Client) Dispatch(channel string, action any) (int64, error) {
	c.mu.Lock()
	c.clientSeq++
	seq := c.clientSeq
	c.mu.Unlock()
	err := c.write(map[string]any{"jsonrpc": "2.0", "method": "dispatchAction",
		"params": map[string]any{"channel": channel, "clientSeq": seq, "action": action}})
	if err != nil {
		return 0, fmt.Errorf("dispatch %s: %w", channel, err)
	}
	return seq, nil
}

// Subscribe subscribes to channel and returns its snapshot's state.
func (c *Client) Subscribe(ctx context.Context, channel string) (json.RawMessage, error) {
	var r struct {
		Snapshot struct {
			State json.RawMessage `json:"state"`
		} `json:"snapshot"`
	}
	if err := c.Call(ctx, "subscribe", map[string]any{"channel": channel}, &r); err != nil {
		return nil, err
	}
	return r.Snapshot.State, nil
}

// Session is one row of ListSessions.
type Session struct {
	Resource    string `json:"resource"`
	Provider    string `json:"provider"`
	Title       string `json:"title"`
	Status      int    `json:"status"`
	Activity    string `json:"activity,omitempty"`
	CreatedAt   string `json:"createdAt"`
	ModifiedAt  string `json:"modifiedAt"`
	DefaultChat string `json:"defaultChat,omitempty"`
}

// ListSessions returns every session the daemon lists, following cursors.
func (c *Client) ListSessions(ctx context.Context) ([]Session, error) {
	var out []Session
	cursor := ""
	for {
		params := map[string]any{"channel": "ahp-root://"}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var r struct {
			Items      []Session `json:"items"`
			NextCursor string    `json:"nextCursor"`
		}
		if err := c.Call(ctx, "listSessions", params, &r); err != nil {
			return nil, err
		}
		out = append(out, r.Items...)
		if r.NextCursor == "" || len(r.Items) == 0 {
			return out, nil
		}
		cursor = r.NextCursor
	}
}

// Progress is one root/progress notification of a createSession.
type Progress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// CreateSession creates a session of provider in the daemon's default
// directory and returns its URI and default chat. The session's URI is
// minted here (<provider>:/<uuid>), as the protocol has clients do.
func (c *Client) CreateSession(ctx context.Context, provider string, config map[string]any) (session, defaultChat string, err error) {
	session = provider + ":/" + uuid.NewString()
	params := map[string]any{"channel": session, "provider": provider, "progressToken": "ahpclient-" + uuid.NewString()}
	if len(config) > 0 {
		params["config"] = config
	}
	if err := c.Call(ctx, "createSession", params, nil); err != nil {
		return "", "", err
	}
	chat, err := c.DefaultChat(ctx, session)
	return session, chat, err
}

// DefaultChat subscribes to session and returns its default chat.
func (c *Client) DefaultChat(ctx context.Context, session string) (string, error) {
	st, err := c.Subscribe(ctx, session)
	if err != nil {
		return "", err
	}
	var s struct {
		DefaultChat string `json:"defaultChat"`
	}
	if err := json.Unmarshal(st, &s); err != nil {
		return "", fmt.Errorf("session %s state: %w", session, err)
	}
	if s.DefaultChat == "" {
		return "", fmt.Errorf("session %s has no default chat", session)
	}
	return s.DefaultChat, nil
}

// ErrRefused is a dispatched action the daemon refused.
var ErrRefused = errors.New("refused")

// IsChatURI reports whether uri names a chat (ahp-chat:...) rather than a
// session.
func IsChatURI(uri string) bool { return strings.HasPrefix(uri, "ahp-chat:") }
