package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/ahpd/ahpd/internal/ahp"
)

func init() { panicOnBugs = true }

// waitFor bounds every wait in these tests. Nothing sleeps: tests wait on
// frames, channels or counters, and fail after waitFor.
const waitFor = 20 * time.Second

// testHandler is a Handler scripted by method name:
//
//	echo       returns its params
//	fail       returns -32005 with data {"supportedVersions":[...]}
//	boom       panics
//	subscribe  {"hold":bool,"notes":n}: optionally Hold, then Notify
//	           "action" {"seq":i} n times (half of them from another
//	           goroutine), reply {"snapshot":true} and release the hold
//	block      waits off the read loop for ctx to end, reports it on
//	           unblocked, and answers with ctx's error
//	later      {"release":name}: answered {"later":name} from another
//	           goroutine once release(name) is called
//	anything else: ahp.ErrMethodNotFound
type testHandler struct {
	connected     chan *Conn
	disconnected  chan closed
	notifications chan string
	// attachments receives the AttachmentData of every "attach"
	// notification, with its params.
	attachments chan notified
	blocked     chan struct{}
	unblocked   chan error

	// laterMu guards later: the gates of "later" requests by name.
	laterMu sync.Mutex
	later   map[string]chan struct{}
}

// gate returns the gate a "later" request named name waits on.
func (h *testHandler) gate(name string) chan struct{} {
	h.laterMu.Lock()
	defer h.laterMu.Unlock()
	if h.later == nil {
		h.later = make(map[string]chan struct{})
	}
	g := h.later[name]
	if g == nil {
		g = make(chan struct{})
		h.later[name] = g
	}
	return g
}

// release lets the "later" request named name be answered.
func (h *testHandler) release(name string) { close(h.gate(name)) }

// notified is one "attach" notification as the handler got it.
type notified struct {
	params json.RawMessage
	data   AttachmentData
}

// closed is one Disconnected call.
type closed struct {
	conn   *Conn
	reason CloseReason
}

func newTestHandler() *testHandler {
	return &testHandler{
		connected:     make(chan *Conn, 16),
		disconnected:  make(chan closed, 16),
		notifications: make(chan string, 1024),
		attachments:   make(chan notified, 16),
		blocked:       make(chan struct{}, 16),
		unblocked:     make(chan error, 16),
	}
}

func (h *testHandler) Connected(c *Conn) { h.connected <- c }

func (h *testHandler) Disconnected(c *Conn, reason CloseReason) {
	h.disconnected <- closed{c, reason}
}

func (h *testHandler) Notification(c *Conn, method string, params json.RawMessage, data AttachmentData) {
	h.notifications <- method
	switch method {
	case "boom":
		panic("boom in a notification")
	case "attach":
		h.attachments <- notified{params, data}
	}
}

func (h *testHandler) Request(ctx context.Context, c *Conn, method string, params json.RawMessage, reply Reply) {
	switch method {
	case "echo":
		reply(params, nil)
	case "fail":
		reply(nil, ahp.WithData(
			ahp.Errorf(ahp.ErrUnsupportedProtocolVersion, "client offers %s", "9.9.9"),
			map[string]any{"supportedVersions": []string{"1.0.0", "0.10.0"}}))
	case "boom":
		panic("boom in a request")
	case "subscribe":
		var p struct {
			Hold  bool `json:"hold"`
			Notes int  `json:"notes"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			reply(nil, ahp.Errorf(ahp.ErrInvalidParams, "%v", err))
			return
		}
		release := func() {}
		if p.Hold {
			release = c.Hold()
		}
		half := p.Notes / 2
		for i := range half {
			_ = c.Notify("action", map[string]int{"seq": i})
		}
		var wg sync.WaitGroup
		wg.Go(func() { // an actor's fan-out, on its own goroutine
			for i := half; i < p.Notes; i++ {
				_ = c.Notify("action", map[string]int{"seq": i})
			}
		})
		wg.Wait()
		reply(map[string]bool{"snapshot": true}, nil)
		release()
	case "block":
		go func() { // a lane's wait, off the read loop
			h.blocked <- struct{}{}
			<-ctx.Done()
			h.unblocked <- ctx.Err()
			reply(nil, ctx.Err())
		}()
	case "later":
		var p struct {
			Release string `json:"release"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			reply(nil, ahp.Errorf(ahp.ErrInvalidParams, "%v", err))
			return
		}
		g := h.gate(p.Release)
		go func() {
			select {
			case <-g:
				reply(map[string]string{"later": p.Release}, nil)
			case <-ctx.Done():
				reply(nil, ctx.Err())
			}
		}()
	default:
		reply(nil, ahp.Errorf(ahp.ErrMethodNotFound, "%s", method))
	}
}

// awaitDisconnect returns the next Disconnected call.
func (h *testHandler) awaitDisconnect(t testing.TB) closed {
	t.Helper()
	select {
	case d := <-h.disconnected:
		return d
	case <-time.After(waitFor):
		t.Fatal("no Disconnected call")
		return closed{}
	}
}

// awaitConn returns the next connection the server accepted.
func (h *testHandler) awaitConn(t testing.TB) *Conn {
	t.Helper()
	select {
	case c := <-h.connected:
		return c
	case <-time.After(waitFor):
		t.Fatal("no Connected call")
		return nil
	}
}

// testLogger logs to the test's output.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// startServer serves h on 127.0.0.1 and returns the server and its ws:// URL.
// Cleanup shuts it down and checks that Shutdown returns.
func startServer(t testing.TB, h Handler, edit func(*Options)) (*Server, string) {
	t.Helper()
	o := Options{Handler: h, Logger: testLogger(t)}
	if edit != nil {
		edit(&o)
	}
	s := NewServer(o)
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		ts.Close()
	})
	return s, "ws" + strings.TrimPrefix(ts.URL, "http")
}

// client is a raw websocket client speaking JSON-RPC by hand.
type client struct {
	t  testing.TB
	ws *websocket.Conn
}

// dial connects to url; it fails the test on any error.
func dial(t testing.TB, url string, header http.Header) *client {
	t.Helper()
	ws, resp, err := websocket.DefaultDialer.Dial(url, header)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s: %v (HTTP %d)", url, err, status)
	}
	t.Cleanup(func() { _ = ws.Close() })
	return &client{t: t, ws: ws}
}

// dialSlow connects with a tiny socket receive buffer, so a client that
// never reads fills up quickly.
func dialSlow(t testing.TB, url string) *client {
	t.Helper()
	d := websocket.Dialer{
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err == nil {
				_ = conn.(*net.TCPConn).SetReadBuffer(4096)
			}
			return conn, err
		},
	}
	ws, _, err := d.Dial(url, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	return &client{t: t, ws: ws}
}

func (cl *client) send(frame string) {
	cl.t.Helper()
	if err := cl.ws.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
		cl.t.Fatalf("send %s: %v", frame, err)
	}
}

func (cl *client) request(id any, method string, params any) {
	cl.t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	b, err := json.Marshal(msg)
	if err != nil {
		cl.t.Fatal(err)
	}
	cl.send(string(b))
}

// message is any frame the server sends.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	raw string
}

func (m message) isReply() bool { return m.Method == "" }

// read returns the next frame, failing the test after waitFor.
func (cl *client) read() message {
	cl.t.Helper()
	m, err := cl.tryRead()
	if err != nil {
		cl.t.Fatalf("read: %v", err)
	}
	return m
}

func (cl *client) tryRead() (message, error) {
	_ = cl.ws.SetReadDeadline(time.Now().Add(waitFor))
	typ, data, err := cl.ws.ReadMessage()
	if err != nil {
		return message{}, err
	}
	if typ != websocket.TextMessage {
		return message{}, fmt.Errorf("got a frame of type %d, want text", typ)
	}
	var m message
	if err := json.Unmarshal(data, &m); err != nil {
		return message{}, fmt.Errorf("server sent bad JSON %q: %v", data, err)
	}
	if m.JSONRPC != "2.0" {
		return message{}, fmt.Errorf("server sent %q without jsonrpc 2.0", data)
	}
	m.raw = string(data)
	return m, nil
}

// call sends a request and returns the next frame, which must be its reply.
func (cl *client) call(id int, method string, params any) message {
	cl.t.Helper()
	cl.request(id, method, params)
	m := cl.read()
	if !m.isReply() || string(m.ID) != fmt.Sprint(id) {
		cl.t.Fatalf("call %s #%d: got %s, want its reply", method, id, m.raw)
	}
	return m
}

// awaitClose reads until the server closes and returns the close error.
func (cl *client) awaitClose() *websocket.CloseError {
	cl.t.Helper()
	for {
		_, err := cl.tryRead()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return ce
		}
		cl.t.Fatalf("read: %v, want a close frame", err)
	}
}
