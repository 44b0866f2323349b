package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/ahpd/ahpd/internal/ahp"
)

// A parse error is answered -32700 with a null id, and the connection stays
// up: the next request works (STYLE.md trap 1).
func TestParseErrorKeepsConnectionUp(t *testing.T) {
	h := newTestHandler()
	s, url := startServer(t, h, nil)
	cl := dial(t, url, nil)

	for _, frame := range []string{`{"jsonrpc":"2.0","method":`, `not json`, ``, `   `} {
		cl.send(frame)
		m := cl.read()
		if m.Error == nil || m.Error.Code != ahp.CodeParseError || string(m.ID) != "null" ||
			!strings.HasPrefix(m.Error.Message, "Parse error: ") {
			t.Errorf("frame %q: got %s, want -32700 \"Parse error: ...\" with id null", frame, m.raw)
		}
	}
	if m := cl.call(1, "echo", map[string]int{"n": 1}); string(m.Result) != `{"n":1}` {
		t.Errorf("echo after parse errors: got %s", m.raw)
	}
	if got := s.Stats().BadFrames; got != 4 {
		t.Errorf("Stats.BadFrames = %d, want 4", got)
	}
}

// Valid JSON that is not one JSON-RPC message is answered -32600, with the
// request's id when it can be read, and the connection stays up.
func TestNotARequestIsInvalidRequest(t *testing.T) {
	h := newTestHandler()
	_, url := startServer(t, h, nil)
	cl := dial(t, url, nil)

	tests := []struct {
		name   string
		frame  string
		binary bool
		wantID string
	}{
		{name: "batch of requests", frame: `[{"jsonrpc":"2.0","id":1,"method":"echo"}]`, wantID: "null"},
		{name: "empty batch", frame: `[]`, wantID: "null"},
		{name: "number", frame: `42`, wantID: "null"},
		{name: "string", frame: `"echo"`, wantID: "null"},
		{name: "null", frame: `null`, wantID: "null"},
		{name: "empty object", frame: `{}`, wantID: "null"},
		{name: "no method", frame: `{"jsonrpc":"2.0","id":7}`, wantID: "7"},
		{name: "method not a string", frame: `{"jsonrpc":"2.0","id":8,"method":5}`, wantID: "8"},
		{name: "no jsonrpc member", frame: `{"id":9,"method":"echo"}`, wantID: "9"},
		{name: "jsonrpc 1.0", frame: `{"jsonrpc":"1.0","id":"a","method":"echo"}`, wantID: `"a"`},
		{name: "id is an object", frame: `{"jsonrpc":"2.0","id":{"n":1},"method":"echo"}`, wantID: "null"},
		{name: "id is a boolean", frame: `{"jsonrpc":"2.0","id":true,"method":"echo"}`, wantID: "null"},
		{name: "id is null", frame: `{"jsonrpc":"2.0","id":null,"method":"echo"}`, wantID: "null"},
		{name: "id is fractional", frame: `{"jsonrpc":"2.0","id":1.5,"method":"echo"}`, wantID: "1.5"},
		{name: "id is negative", frame: `{"jsonrpc":"2.0","id":-3,"method":"echo"}`, wantID: "-3"},
		{name: "params is a string", frame: `{"jsonrpc":"2.0","id":10,"method":"echo","params":"x"}`, wantID: "10"},
		{name: "request with result", frame: `{"jsonrpc":"2.0","id":11,"method":"echo","result":1}`, wantID: "11"},
		{name: "member in other case", frame: `{"jsonrpc":"2.0","id":12,"method":"echo","Method":"x"}`, wantID: "12"},
		{name: "member twice", frame: `{"jsonrpc":"2.0","id":13,"method":5,"method":"echo"}`, wantID: "13"},
		{name: "response with a string error", frame: `{"jsonrpc":"2.0","id":14,"error":"boom"}`, wantID: "14"},
		{name: "response with result and error", frame: `{"jsonrpc":"2.0","id":15,"result":1,"error":{"code":1,"message":"x"}}`, wantID: "15"},
		{name: "binary frame", frame: `{"jsonrpc":"2.0","id":16,"method":"echo"}`, binary: true, wantID: "null"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl.t = t
			if tt.binary {
				if err := cl.ws.WriteMessage(websocket.BinaryMessage, []byte(tt.frame)); err != nil {
					t.Fatal(err)
				}
			} else {
				cl.send(tt.frame)
			}
			m := cl.read()
			if m.Error == nil || m.Error.Code != ahp.CodeInvalidRequest || string(m.ID) != tt.wantID {
				t.Errorf("got %s, want -32600 with id %s", m.raw, tt.wantID)
			}
			if !strings.HasPrefix(m.Error.Message, "Invalid request: ") {
				t.Errorf("message %q, want an \"Invalid request: \" prefix", m.Error.Message)
			}
			// The connection is still up.
			if m := cl.call(1000+i, "echo", nil); string(m.Result) != "null" {
				t.Errorf("echo after the bad frame: got %s", m.raw)
			}
		})
	}
}

// A response frame from the client is not answered and does not close the
// connection (server→client requests are future work).
func TestClientResponseIsNotAnswered(t *testing.T) {
	h := newTestHandler()
	_, url := startServer(t, h, nil)
	cl := dial(t, url, nil)

	cl.send(`{"jsonrpc":"2.0","id":99,"result":{"ok":true}}`)
	cl.send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`)
	// The next frame is the echo's reply: nothing answered the responses.
	cl.call(1, "echo", nil)
}

// An unknown method is answered -32601 (the Handler returns
// ahp.ErrMethodNotFound).
func TestUnknownMethodIsMethodNotFound(t *testing.T) {
	h := newTestHandler()
	_, url := startServer(t, h, nil)
	cl := dial(t, url, nil)

	m := cl.call(1, "nope", map[string]string{"channel": "ahp-root://"})
	if m.Error == nil || m.Error.Code != ahp.CodeMethodNotFound || m.Error.Message != "Method not found: nope" {
		t.Errorf("got %s, want -32601 \"Method not found: nope\"", m.raw)
	}
}

// A handler error reaches the wire as code, message and data
// (ahp.WireError); a panic is answered -32603 and the connection stays up.
func TestHandlerErrorReachesWire(t *testing.T) {
	h := newTestHandler()
	s, url := startServer(t, h, nil)
	cl := dial(t, url, nil)

	tests := []struct {
		name                  string
		method                string
		wantCode              int
		wantMessage, wantData string
	}{
		{
			name:        "error with data keeps code, message and data",
			method:      "fail",
			wantCode:    ahp.CodeUnsupportedProtocolVersion,
			wantMessage: "Unsupported protocol version: client offers 9.9.9",
			wantData:    `{"supportedVersions":["1.0.0","0.10.0"]}`,
		},
		{
			name:        "panic is an internal error",
			method:      "boom",
			wantCode:    ahp.CodeInternalError,
			wantMessage: "Internal error: handler for boom failed",
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl.t = t
			m := cl.call(i+1, tt.method, nil)
			if m.Error == nil {
				t.Fatalf("got %s, want an error", m.raw)
			}
			if m.Error.Code != tt.wantCode || m.Error.Message != tt.wantMessage || string(m.Error.Data) != tt.wantData {
				t.Errorf("got %s, want code %d message %q data %s", m.raw, tt.wantCode, tt.wantMessage, tt.wantData)
			}
			if m.Result != nil {
				t.Errorf("error reply carries a result: %s", m.raw)
			}
		})
	}
	cl.t = t
	cl.call(10, "echo", nil)
	if got := s.Stats().HandlerPanics; got != 1 {
		t.Errorf("Stats.HandlerPanics = %d, want 1", got)
	}
}

// Client notifications are never answered, even when the handler fails or
// panics, and they reach the handler in order with requests.
func TestNotificationsAreNeverAnswered(t *testing.T) {
	h := newTestHandler()
	_, url := startServer(t, h, nil)
	cl := dial(t, url, nil)

	for _, method := range []string{"dispatchAction", "unsubscribe", "boom", "nope"} {
		cl.send(`{"jsonrpc":"2.0","method":"` + method + `","params":{"channel":"ahp-root://"}}`)
	}
	cl.call(1, "echo", nil) // the next frame is this reply
	close(h.notifications)
	var got []string
	for m := range h.notifications {
		got = append(got, m)
	}
	if want := "dispatchAction unsubscribe boom nope"; strings.Join(got, " ") != want {
		t.Errorf("notifications handled: %v, want %s", got, want)
	}
}

// The upgrade needs the token as ?tkn= or a Bearer header; otherwise 401.
func TestToken(t *testing.T) {
	const secret = "s3cret"
	tests := []struct {
		name       string
		serverTkn  string
		extra      []string
		query      string
		header     string
		wantStatus int    // 0: upgraded
		wantToken  string // Conn.Token()
	}{
		{name: "missing token is refused", serverTkn: secret, wantStatus: 401},
		{name: "wrong query token is refused", serverTkn: secret, query: "?tkn=nope", wantStatus: 401},
		{name: "wrong bearer token is refused", serverTkn: secret, header: "Bearer nope", wantStatus: 401},
		{name: "token prefix is refused", serverTkn: secret, query: "?tkn=s3cre", wantStatus: 401},
		{name: "other scheme is refused", serverTkn: secret, header: "Basic " + secret, wantStatus: 401},
		{name: "query token is accepted", serverTkn: secret, query: "?tkn=" + secret, wantToken: secret},
		{name: "bearer token is accepted", serverTkn: secret, header: "Bearer " + secret, wantToken: secret},
		{name: "bearer scheme is case-insensitive", serverTkn: secret, header: "bearer " + secret, wantToken: secret},
		{name: "right query beats wrong bearer", serverTkn: secret, query: "?tkn=" + secret, header: "Bearer nope", wantToken: secret},
		{name: "no token configured lets anyone in", wantToken: ""},
		// Once any token is configured every upgrade must present one:
		// grant-carrying tokens alone do not leave a tokenless door open.
		{name: "tokens without a root token still need one", extra: []string{"grant-1"}, wantStatus: 401},
		{name: "a grant token is accepted", extra: []string{"grant-1"}, header: "Bearer grant-1", wantToken: "grant-1"},
		{name: "an unknown token is refused where only grant tokens exist", extra: []string{"grant-1"}, query: "?tkn=nope", wantStatus: 401},
		{name: "no token configured keeps the presented one", header: "Bearer grant-1", wantToken: "grant-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTestHandler()
			s, url := startServer(t, h, func(o *Options) { o.Token, o.ExtraTokens = tt.serverTkn, tt.extra })
			header := http.Header{}
			if tt.header != "" {
				header.Set("Authorization", tt.header)
			}
			ws, resp, err := websocket.DefaultDialer.Dial(url+"/"+tt.query, header)
			if tt.wantStatus != 0 {
				if err == nil {
					_ = ws.Close()
					t.Fatal("upgraded, want a refusal")
				}
				if resp == nil || resp.StatusCode != tt.wantStatus {
					t.Fatalf("dial: %v (response %v), want HTTP %d", err, resp, tt.wantStatus)
				}
				if got := s.Stats().Unauthorized; got != 1 {
					t.Errorf("Stats.Unauthorized = %d, want 1", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer ws.Close()
			if c := h.awaitConn(t); c.Token() != tt.wantToken {
				t.Errorf("Conn.Token() = %q, want %q", c.Token(), tt.wantToken)
			}
		})
	}
}

// Hold: notifications queued while a request holds, from the handler or
// from another goroutine, reach the client after its reply; without it
// they go out first.
func TestHoldDeliversReplyFirst(t *testing.T) {
	tests := []struct {
		name      string
		hold      bool
		wantOrder string // R = the reply, 0..3 = notifications by seq
	}{
		{name: "held notifications follow the reply", hold: true, wantOrder: "R0123"},
		{name: "without hold notifications go first", hold: false, wantOrder: "0123R"},
	}
	h := newTestHandler()
	_, url := startServer(t, h, nil)
	cl := dial(t, url, nil)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl.t = t
			cl.request(i+1, "subscribe", map[string]any{"hold": tt.hold, "notes": 4})
			var order strings.Builder
			for range 5 {
				m := cl.read()
				if m.isReply() {
					if string(m.Result) != `{"snapshot":true}` {
						t.Fatalf("reply %s", m.raw)
					}
					order.WriteString("R")
					continue
				}
				var p struct{ Seq int }
				if err := json.Unmarshal(m.Params, &p); err != nil || m.Method != "action" {
					t.Fatalf("notification %s", m.raw)
				}
				fmt.Fprint(&order, p.Seq)
			}
			if order.String() != tt.wantOrder {
				t.Errorf("client saw %s, want %s", order.String(), tt.wantOrder)
			}
		})
	}
	// A hold ends when it is released: a later request's notifications
	// are not held.
	cl.t = t
	cl.request(10, "subscribe", map[string]any{"hold": false, "notes": 2})
	if m := cl.read(); m.isReply() {
		t.Errorf("first frame of an unheld request is the reply %s", m.raw)
	}
}

// A request answered later, off the read loop, does not hold up the
// requests behind it: they are read and answered while it waits, and it is
// answered when its owner is done.
func TestRequestAnsweredLaterDoesNotHoldUpTheNext(t *testing.T) {
	h := newTestHandler()
	_, url := startServer(t, h, nil)
	cl := dial(t, url, nil)
	cl.request(1, "later", map[string]string{"release": "slow"})
	cl.request(2, "echo", map[string]int{"n": 2})
	cl.request(3, "later", map[string]string{"release": "quick"})
	h.release("quick")
	var order []string
	for range 2 {
		m := cl.read()
		order = append(order, string(m.ID))
	}
	if strings.Join(order, ",") != "2,3" {
		t.Fatalf("replies before the slow one is released: %v, want [2 3]", order)
	}
	h.release("slow")
	if m := cl.read(); string(m.ID) != "1" || string(m.Result) != `{"later":"slow"}` {
		t.Fatalf("the slow request's reply: %s", m.raw)
	}
}

// Every request gets exactly one reply, whatever it is; notifications and
// responses get none. Checked over a mixed stream of 300 frames.
func TestEveryRequestGetsExactlyOneReply(t *testing.T) {
	h := newTestHandler()
	_, url := startServer(t, h, nil)
	cl := dial(t, url, nil)

	want := map[string]int{} // reply id → replies expected
	nullReplies := 0
	for i := range 300 {
		id := fmt.Sprint(i)
		switch i % 10 {
		case 0:
			cl.request(i, "echo", map[string]int{"i": i})
		case 1:
			cl.request(i, "fail", nil)
		case 2:
			cl.request(i, "boom", nil)
		case 3:
			cl.request(i, "nope", nil)
		case 4:
			cl.request(fmt.Sprintf("s%d", i), "echo", nil)
			id = fmt.Sprintf(`"s%d"`, i)
		case 5:
			cl.send(`{"jsonrpc":"2.0","method":"dispatchAction","params":{}}`)
			continue
		case 6:
			cl.send(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`)
			continue
		case 7:
			cl.send(`{"jsonrpc":"2.0","id":` + id + `}`)
		case 8:
			cl.send(`{bad json`)
			nullReplies++
			continue
		case 9:
			cl.send(`[{"jsonrpc":"2.0","id":` + id + `,"method":"echo"}]`)
			nullReplies++
			continue
		}
		want[id]++
	}
	cl.request("end", "echo", nil)
	want[`"end"`]++

	got := map[string]int{}
	gotNull := 0
	for got[`"end"`] == 0 {
		m := cl.read()
		if !m.isReply() {
			t.Fatalf("unexpected notification %s", m.raw)
		}
		if (m.Result == nil) == (m.Error == nil) {
			t.Errorf("reply without exactly one of result/error: %s", m.raw)
		}
		if string(m.ID) == "null" {
			gotNull++
			continue
		}
		got[string(m.ID)]++
	}
	for id, n := range got {
		if n != want[id] {
			t.Errorf("id %s: %d replies, want %d", id, n, want[id])
		}
	}
	for id := range want {
		if got[id] == 0 {
			t.Errorf("id %s: no reply", id)
		}
	}
	if gotNull != nullReplies {
		t.Errorf("%d replies with a null id, want %d", gotNull, nullReplies)
	}
}

// A client that never reads is cut with CloseSlowConsumer once its outbox
// is over budget, and counted; the publisher never waits on it; a reading
// client gets every notification, in order.
func TestSlowConsumerIsCutAndCounted(t *testing.T) {
	h := newTestHandler()
	s, url := startServer(t, h, func(o *Options) {
		o.OutboxBytes = 256 << 10
		o.WriteTimeout = waitFor // only the byte budget may cut the slow client
	})
	dialSlow(t, url) // never reads
	slow := h.awaitConn(t)
	fastClient := dial(t, url, nil)
	fast := h.awaitConn(t)

	// The reading client checks order and reports progress.
	var received atomic.Int64
	progress := make(chan struct{}, 1)
	readErr := make(chan error, 1)
	go func() {
		for want := 0; ; want++ {
			m, err := fastClient.tryRead()
			if err != nil {
				readErr <- err
				return
			}
			var p struct{ Seq int }
			if err := json.Unmarshal(m.Params, &p); err != nil || p.Seq != want {
				readErr <- fmt.Errorf("notification %d: got %.80s", want, m.raw)
				return
			}
			received.Add(1)
			select {
			case progress <- struct{}{}:
			default:
			}
		}
	}()
	deadline := time.After(waitFor)
	awaitReceived := func(n int) {
		for received.Load() < int64(n) {
			select {
			case <-progress:
			case err := <-readErr:
				t.Fatalf("reading client: %v", err)
			case <-deadline:
				t.Fatalf("reading client got %d of %d notifications", received.Load(), n)
			}
		}
	}

	pad := strings.Repeat("x", 4096)
	const maxNotes = 50000
	sent, afterCut := 0, 0
	var slowErr error
	for sent < maxNotes && afterCut < 100 {
		params := json.RawMessage(fmt.Sprintf(`{"seq":%d,"pad":%q}`, sent, pad))
		if err := slow.NotifyRaw("action", params); err != nil && slowErr == nil {
			slowErr = err
		}
		if err := fast.NotifyRaw("action", params); err != nil {
			t.Fatalf("notify the reading client: %v", err)
		}
		sent++
		if slowErr != nil {
			afterCut++
		}
		// Pace the publisher on the reading client only, as a fan-out
		// test harness would; the slow client is never waited on.
		if sent%16 == 0 {
			awaitReceived(sent - 16)
		}
	}
	if !errors.Is(slowErr, ErrSlowConsumer) {
		t.Fatalf("after %d notifications the slow client's Notify returned %v, want ErrSlowConsumer", sent, slowErr)
	}
	if d := h.awaitDisconnect(t); d.conn != slow || d.reason != CloseSlowConsumer {
		t.Errorf("Disconnected(%s, %v), want (%s, slow_consumer)", d.conn.ID(), d.reason, slow.ID())
	}
	if err := slow.Notify("action", nil); !errors.Is(err, ErrConnClosed) {
		t.Errorf("Notify after the cut: %v, want ErrConnClosed", err)
	}
	awaitReceived(sent)
	select {
	case <-fast.Done():
		t.Error("the reading client was closed too")
	default:
	}
	if st := s.Stats(); st.SlowConsumers != 1 || st.Connections != 1 {
		t.Errorf("Stats: %+v, want 1 slow consumer and 1 connection left", st)
	}
	t.Logf("slow client cut after %d notifications of %d bytes", sent-afterCut, len(pad))
}

// Shutdown closes every connection with CloseServerShutdown (a 1001 close
// frame), cancels running requests, waits for Disconnected, refuses new
// connections, and returns.
func TestShutdownClosesEverything(t *testing.T) {
	h := newTestHandler()
	s, url := startServer(t, h, nil)
	clients := []*client{dial(t, url, nil), dial(t, url, nil), dial(t, url, nil)}
	for range clients {
		h.awaitConn(t)
	}
	clients[0].request(1, "block", nil)
	<-h.blocked
	// The clients keep reading, as live ones do, so they answer the close
	// frame at once.
	closeCodes := make(chan int, len(clients))
	for _, cl := range clients {
		go func() {
			for {
				_, err := cl.tryRead()
				var ce *websocket.CloseError
				if errors.As(err, &ce) {
					closeCodes <- ce.Code
					return
				}
				if err != nil {
					closeCodes <- -1
					return
				}
			}
		}()
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-h.unblocked; !errors.Is(err, context.Canceled) {
		t.Errorf("blocked request's ctx: %v, want canceled", err)
	}
	for i := range clients {
		if d := h.awaitDisconnect(t); d.reason != CloseServerShutdown {
			t.Errorf("Disconnected %d: %v, want server_shutdown", i, d.reason)
		}
	}
	for i := range clients {
		if code := <-closeCodes; code != websocket.CloseGoingAway {
			t.Errorf("client %d: close code %d, want 1001", i, code)
		}
	}
	if n := s.Stats().Connections; n != 0 {
		t.Errorf("Stats.Connections = %d after Shutdown", n)
	}
	_, resp, err := websocket.DefaultDialer.Dial(url, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("dial after Shutdown: %v, want HTTP 503", err)
	}
}

// The ctx of a running Request is cancelled when the client hangs up, and
// Disconnected follows the handler's return.
func TestRequestContextCancelledWhenClientHangsUp(t *testing.T) {
	h := newTestHandler()
	_, url := startServer(t, h, nil)
	cl := dial(t, url, nil)
	c := h.awaitConn(t)

	cl.request(1, "block", nil)
	<-h.blocked
	_ = cl.ws.Close()
	select {
	case err := <-h.unblocked:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("ctx.Err() = %v, want canceled", err)
		}
	case <-time.After(waitFor):
		t.Fatal("the handler's ctx was not cancelled")
	}
	if d := h.awaitDisconnect(t); d.conn != c || d.reason != CloseClientClosed {
		t.Errorf("Disconnected(%v), want client_closed", d.reason)
	}
}

// A frame over MaxMessageBytes closes the connection with 1009.
func TestMessageTooBigClosesConnection(t *testing.T) {
	h := newTestHandler()
	_, url := startServer(t, h, func(o *Options) { o.MaxMessageBytes = 1024 })
	cl := dial(t, url, nil)
	h.awaitConn(t)

	cl.call(1, "echo", map[string]string{"fits": strings.Repeat("x", 900)})
	cl.send(`{"jsonrpc":"2.0","id":2,"method":"echo","params":{"big":"` + strings.Repeat("x", 2000) + `"}}`)
	if d := h.awaitDisconnect(t); d.reason != CloseMessageTooBig {
		t.Errorf("Disconnected(%v), want message_too_big", d.reason)
	}
	if ce := cl.awaitClose(); ce.Code != websocket.CloseMessageTooBig {
		t.Errorf("close code %d, want 1009", ce.Code)
	}
}

// The server pings: a client that reads (and so answers pings) stays up
// across many ping intervals; a client that never reads is closed with
// ClosePingTimeout and counted.
func TestPingsDetectSilentClients(t *testing.T) {
	h := newTestHandler()
	s, url := startServer(t, h, func(o *Options) {
		o.PingInterval = 20 * time.Millisecond
		o.WriteTimeout = 200 * time.Millisecond
	})

	// A reading client counts pings (and answers them, as gorilla's default
	// handler does).
	live := dial(t, url, nil)
	liveConn := h.awaitConn(t)
	var pings atomic.Int64
	pinged := make(chan struct{}, 1)
	answer := live.ws.PingHandler()
	live.ws.SetPingHandler(func(data string) error {
		pings.Add(1)
		select {
		case pinged <- struct{}{}:
		default:
		}
		return answer(data)
	})
	replies := make(chan message, 1)
	go func() {
		for {
			m, err := live.tryRead()
			if err != nil {
				return
			}
			replies <- m
		}
	}()

	dialSlow(t, url) // never reads, so never answers a ping
	silentConn := h.awaitConn(t)
	if d := h.awaitDisconnect(t); d.conn != silentConn || d.reason != ClosePingTimeout {
		t.Fatalf("Disconnected(%s, %v), want (%s, ping_timeout)", d.conn.ID(), d.reason, silentConn.ID())
	}

	// By now the silent client's whole pong window has passed; the live
	// one must also have seen pings over more than that window.
	deadline := time.After(waitFor)
	for pings.Load() < 20 {
		select {
		case <-pinged:
		case <-deadline:
			t.Fatalf("live client saw %d pings", pings.Load())
		}
	}
	select {
	case <-liveConn.Done():
		t.Fatal("the reading client was closed")
	default:
	}
	live.request(1, "echo", nil)
	select {
	case m := <-replies:
		if string(m.ID) != "1" {
			t.Errorf("got %s, want the echo reply", m.raw)
		}
	case <-time.After(waitFor):
		t.Fatal("no reply on the live client")
	}
	if got := s.Stats().PingTimeouts; got != 1 {
		t.Errorf("Stats.PingTimeouts = %d, want 1", got)
	}
}

// Conn.Close(CloseHostClosed) delivers what is queued, then a 1000 close
// frame; Notify afterwards returns ErrConnClosed.
func TestHostCloseFlushesQueue(t *testing.T) {
	h := newTestHandler()
	_, url := startServer(t, h, nil)
	cl := dial(t, url, nil)
	c := h.awaitConn(t)

	for i := range 3 {
		if err := c.Notify("action", map[string]int{"seq": i}); err != nil {
			t.Fatal(err)
		}
	}
	c.Close(CloseHostClosed)
	if err := c.Notify("action", nil); !errors.Is(err, ErrConnClosed) {
		t.Errorf("Notify after Close: %v, want ErrConnClosed", err)
	}
	for i := range 3 {
		if m := cl.read(); m.Method != "action" || string(m.Params) != fmt.Sprintf(`{"seq":%d}`, i) {
			t.Errorf("frame %d: %s", i, m.raw)
		}
	}
	if ce := cl.awaitClose(); ce.Code != websocket.CloseNormalClosure {
		t.Errorf("close code %d, want 1000", ce.Code)
	}
	if d := h.awaitDisconnect(t); d.reason != CloseHostClosed {
		t.Errorf("Disconnected(%v), want host_closed", d.reason)
	}
}

// Connection IDs are unique in the process, across servers.
func TestConnIDsAreUniqueAcrossServers(t *testing.T) {
	seen := map[string]bool{}
	for range 2 {
		h := newTestHandler()
		_, url := startServer(t, h, nil)
		for range 2 {
			dial(t, url, nil)
			id := h.awaitConn(t).ID()
			if seen[id] || !strings.HasPrefix(id, "c") {
				t.Errorf("ID %q repeated or malformed", id)
			}
			seen[id] = true
		}
	}
}

// capture is a slog.Handler keeping every record it is handed.
type capture struct {
	level slog.Level
	mu    sync.Mutex
	recs  []slog.Record
}

func (c *capture) Enabled(_ context.Context, l slog.Level) bool { return l >= c.level }
func (c *capture) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recs = append(c.recs, r.Clone())
	return nil
}
func (c *capture) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *capture) WithGroup(string) slog.Handler      { return c }

// TestFailedRequestLoggedAtInfo: a request answered with an error is logged
// at info, with its method and code, before the reply is sent; so a daemon
// logging at info, and a client reading its logs at info (the OTLP log
// channel), see what was refused.
func TestFailedRequestLoggedAtInfo(t *testing.T) {
	logs := &capture{level: slog.LevelInfo}
	_, url := startServer(t, newTestHandler(), func(o *Options) { o.Logger = slog.New(logs) })
	cl := dial(t, url, nil)
	if m := cl.call(1, "fail", nil); m.Error == nil {
		t.Fatalf("fail answered %s", m.raw)
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	for _, r := range logs.recs {
		if r.Message != "request failed" {
			continue
		}
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
		if r.Level != slog.LevelInfo || attrs["method"] != "fail" || attrs["code"] != fmt.Sprint(ahp.CodeUnsupportedProtocolVersion) {
			t.Fatalf("request failed logged at %s with %v", r.Level, attrs)
		}
		return
	}
	t.Fatal("a failed request was not logged at info")
}
