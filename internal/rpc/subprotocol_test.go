package rpc

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// TestTokenSubprotocol: a browser page presents its token as a subprotocol
// (it can set no Authorization header, and ?tkn= would put the token in a
// URL). At the door over a real websocket: the right token gets in and the
// handshake selects only "ahpd", never echoing the token; a wrong or
// malformed one is 401; the daemon's own page origin gets in without a
// token when none is configured, and a foreign origin is still 403.
func TestTokenSubprotocol(t *testing.T) {
	const secret = "s3cret with spaces/and+symbols="
	tests := []struct {
		name      string
		token     string // the server's
		protocols []string
		origin    string // "" none; "self" the server's own http origin
		status    int    // 0: upgraded
	}{
		{name: "token as subprotocol", token: secret, protocols: []string{Subprotocol, TokenSubprotocol(secret)}, origin: "self"},
		{name: "token as subprotocol, foreign page", token: secret, protocols: []string{Subprotocol, TokenSubprotocol(secret)}, origin: "https://evil.example"},
		{name: "wrong token", token: secret, protocols: []string{Subprotocol, TokenSubprotocol("guess")}, origin: "self", status: 401},
		{name: "malformed token", token: secret, protocols: []string{Subprotocol, TokenSubprotocolPrefix + "%%%"}, origin: "self", status: 401},
		{name: "no token where one is needed", token: secret, protocols: []string{Subprotocol}, origin: "self", status: 401},
		{name: "own page without tokens", protocols: []string{Subprotocol}, origin: "self"},
		{name: "foreign page without tokens", protocols: []string{Subprotocol}, origin: "https://evil.example", status: 403},
		{name: "own host, other port", protocols: []string{Subprotocol}, origin: "http://127.0.0.1:1", status: 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTestHandler()
			_, url := startServer(t, h, func(o *Options) { o.Token = tt.token })
			hdr := http.Header{}
			switch tt.origin {
			case "":
			case "self":
				hdr.Set("Origin", "http://"+strings.TrimPrefix(url, "ws://"))
			default:
				hdr.Set("Origin", tt.origin)
			}
			d := websocket.Dialer{Subprotocols: tt.protocols}
			ws, resp, err := d.Dial(url+"/", hdr)
			if tt.status != 0 {
				if err == nil {
					ws.Close()
					t.Fatalf("upgraded, want HTTP %d", tt.status)
				}
				if resp == nil || resp.StatusCode != tt.status {
					t.Fatalf("dial: %v (%v), want HTTP %d", err, resp, tt.status)
				}
				return
			}
			if err != nil {
				t.Fatalf("dial: %v (%v), want upgraded", err, resp)
			}
			defer ws.Close()
			if got := ws.Subprotocol(); got != Subprotocol {
				t.Errorf("selected subprotocol %q, want %q", got, Subprotocol)
			}
			if got := resp.Header.Get("Sec-WebSocket-Protocol"); strings.Contains(got, "token") {
				t.Errorf("the handshake echoed the token: %q", got)
			}
			h.awaitConn(t)
		})
	}
}
