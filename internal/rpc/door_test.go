package rpc

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// The door policy, case by case (issue: VS Code gets in, nobody else does).
func TestDoorPolicy(t *testing.T) {
	open := DoorPolicy{}
	configured := DoorPolicy{AllowedOrigins: []string{"https://console.example.com"}, AllowedHosts: []string{"box.lan"}}
	tokens := DoorPolicy{TokenRequired: true}
	tests := []struct {
		name   string
		p      DoorPolicy
		host   string
		origin string
		token  bool
		allow  bool
	}{
		{"no Origin: scripts, CLIs, Node clients", open, "127.0.0.1:9187", "", false, true},
		{"VS Code desktop renderer", open, "127.0.0.1:9187", "vscode-file://vscode-app", false, true},
		{"VS Code origin is case-insensitive", open, "localhost:9187", "VSCODE-FILE://vscode-app", false, true},
		{"the daemon's own page (http)", open, "127.0.0.1:9187", "http://127.0.0.1:9187", false, true},
		{"the daemon's own page on localhost", open, "localhost:9187", "http://localhost:9187", false, true},
		{"own host but another port is foreign", open, "127.0.0.1:9187", "http://127.0.0.1:8080", false, false},
		{"a foreign page", open, "127.0.0.1:9187", "https://evil.example", false, false},
		{"a foreign page with a valid token", tokens, "127.0.0.1:9187", "https://evil.example", true, true},
		{"a foreign page without a token where tokens exist", tokens, "127.0.0.1:9187", "https://evil.example", false, false},
		{"a configured origin", configured, "127.0.0.1:9187", "https://console.example.com", false, true},
		{"a configured origin, trailing slash", configured, "127.0.0.1:9187", "https://console.example.com/", false, true},
		{"null origin (sandboxed frame) is foreign", open, "127.0.0.1:9187", "null", false, false},
		{"DNS rebinding: foreign Host with matching Origin", open, "rebind.example:9187", "http://rebind.example:9187", false, false},
		{"DNS rebinding: foreign Host, no Origin", open, "rebind.example:9187", "", false, false},
		{"loopback [::1]", open, "[::1]:9187", "", false, true},
		{"loopback 127.0.0.2", open, "127.0.0.2:9187", "", false, true},
		{"loopback without port", open, "localhost", "", false, true},
		{"a *.localhost name", open, "app.localhost:1", "", false, true},
		{"an empty Host", open, "", "", false, false},
		{"a configured Host", configured, "box.lan:9187", "", false, true},
		{"a configured Host, other case", configured, "BOX.LAN:9187", "", false, true},
		{"a LAN address is not loopback", open, "192.168.1.10:9187", "", false, false},
		{"any Host once tokens prove each upgrade", tokens, "box.lan:9187", "", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.p.Check(tt.host, tt.origin, tt.token)
			if got := v.Status == 0; got != tt.allow {
				t.Errorf("Check(%q, %q, %v) = %+v, want allowed=%v", tt.host, tt.origin, tt.token, v, tt.allow)
			}
			if !tt.allow && (v.Status != http.StatusForbidden || v.Reason == "") {
				t.Errorf("refusal %+v, want 403 with a reason", v)
			}
		})
	}
}

// At the door, over a real websocket: VS Code's Origin connects, a foreign
// Origin and a rebinding Host are refused with 403, and a token makes a
// foreign Origin acceptable.
func TestDoorOverTheWire(t *testing.T) {
	const secret = "s3cret"
	tests := []struct {
		name   string
		token  string // server token
		header map[string]string
		host   string
		query  string
		status int // 0: upgraded
	}{
		{name: "VS Code's window", header: map[string]string{"Origin": "vscode-file://vscode-app"}},
		{name: "no Origin", header: nil},
		{name: "foreign Origin", header: map[string]string{"Origin": "https://evil.example"}, status: 403},
		{name: "rebinding Host", host: "rebind.example", header: map[string]string{"Origin": "http://rebind.example"}, status: 403},
		{name: "foreign Origin with the token", token: secret, query: "?tkn=" + secret, header: map[string]string{"Origin": "https://evil.example"}},
		{name: "foreign Origin without the token", token: secret, header: map[string]string{"Origin": "https://evil.example"}, status: 401},
		{name: "VS Code with the token and a foreign Host", token: secret, query: "?tkn=" + secret, host: "box.lan", header: map[string]string{"Origin": "vscode-file://vscode-app"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTestHandler()
			s, url := startServer(t, h, func(o *Options) { o.Token = tt.token })
			hdr := http.Header{}
			for k, v := range tt.header {
				hdr.Set(k, v)
			}
			if tt.host != "" {
				// Keep the port so only the name is foreign.
				_, port, _ := strings.Cut(strings.TrimPrefix(url, "ws://"), ":")
				hdr.Set("Host", tt.host+":"+port)
			}
			ws, resp, err := websocket.DefaultDialer.Dial(url+"/"+tt.query, hdr)
			if tt.status == 0 {
				if err != nil {
					t.Fatalf("dial: %v (%v), want upgraded", err, resp)
				}
				defer ws.Close()
				h.awaitConn(t)
				return
			}
			if err == nil {
				ws.Close()
				t.Fatalf("upgraded, want HTTP %d", tt.status)
			}
			if resp == nil || resp.StatusCode != tt.status {
				t.Fatalf("dial: %v (%v), want HTTP %d", err, resp, tt.status)
			}
			if tt.status == 403 && s.Stats().Forbidden != 1 {
				t.Errorf("Stats.Forbidden = %d, want 1", s.Stats().Forbidden)
			}
		})
	}
}

// Past MaxConnections an upgrade is answered 503; a slot frees when a
// connection ends.
func TestMaxConnectionsAnswers503(t *testing.T) {
	h := newTestHandler()
	s, url := startServer(t, h, func(o *Options) { o.MaxConnections = 2 })
	a := dial(t, url, nil)
	dial(t, url, nil)
	h.awaitConn(t)
	h.awaitConn(t)
	ws, resp, err := websocket.DefaultDialer.Dial(url, nil)
	if err == nil {
		ws.Close()
		t.Fatal("third connection upgraded, want 503")
	}
	if resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third dial: %v (%v), want 503", err, resp)
	}
	if s.Stats().OverCapacity != 1 {
		t.Errorf("Stats.OverCapacity = %d, want 1", s.Stats().OverCapacity)
	}
	_ = a.ws.Close()
	h.awaitDisconnect(t)
	deadline := time.Now().Add(waitFor)
	for {
		ws, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err == nil {
			ws.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no slot after a connection ended: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Past the total outbox budget the connection holding the most unsent
// bytes is cut, and the one that reads is not.
func TestTotalOutboxBudgetCutsTheLargest(t *testing.T) {
	h := newTestHandler()
	s, url := startServer(t, h, func(o *Options) {
		o.OutboxBytes = 64 << 20 // each alone may hold a lot
		o.TotalOutboxBytes = 1 << 20
		o.WriteTimeout = waitFor
	})
	dialSlow(t, url)
	slow := h.awaitConn(t)
	reader := dial(t, url, nil)
	fast := h.awaitConn(t)
	var got atomic.Int64
	go func() {
		for {
			if _, err := reader.tryRead(); err != nil {
				return
			}
			got.Add(1)
		}
	}()
	pad := `{"pad":"` + strings.Repeat("x", 8192) + `"}`
	var cut error
	for i := 0; i < 2000 && cut == nil; i++ {
		cut = slow.NotifyRaw("action", []byte(pad))
		if err := fast.NotifyRaw("action", []byte(pad)); err != nil {
			t.Fatalf("the reading client was refused: %v", err)
		}
		if i%32 == 0 {
			for got.Load() < int64(i) {
				time.Sleep(time.Millisecond)
			}
		}
	}
	if cut == nil {
		t.Fatal("the stuck client was never cut")
	}
	if d := h.awaitDisconnect(t); d.conn != slow || d.reason != CloseSlowConsumer {
		t.Errorf("Disconnected(%s, %v), want the stuck client, slow_consumer", d.conn.ID(), d.reason)
	}
	select {
	case <-fast.Done():
		t.Error("the reading client was cut too")
	default:
	}
	if total := s.Stats().OutboxBytes; total > 1<<20 {
		t.Errorf("total outbox %d after the cut, want within budget", total)
	}
}
