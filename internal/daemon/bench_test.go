package daemon_test

// Benchmarks read as ratios against a baseline run in the same process:
//
//	go test -run '^$' -bench . -benchmem ./internal/daemon/
//
// BenchmarkTurn runs a whole turn (turnStarted echo, the script agent's
// answer as responsePart + deltas + usage, turnComplete, the stored turn)
// through the daemon over a websocket on 127.0.0.1, with a client that only
// looks for each turn's end; BenchmarkRawWebsocketRoundTrip echoes one
// frame through a bare gorilla server. AHPD_BENCH_DATA=/dev/shm puts the
// store on tmpfs. The measured ratio is in docs/ARCHITECTURE.md ("Speed").

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/script"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/gorilla/websocket"
)

func BenchmarkTurn(b *testing.B) {
	sc := script.New(script.Options{})
	reg, err := agent.NewRegistry(sc)
	if err != nil {
		b.Fatal(err)
	}
	e := benchEnv(b, reg)
	// Set up through the harness, then drive turns over a bare socket that
	// only looks for each turn's end, so the client costs next to nothing.
	c := ahptest.Dial(b, e.d.URL(), e.cfg.ConnectionToken)
	c.Initialize("setup")
	const sess = "ahp-session:/be0c4000-0000-4000-8000-000000000001"
	c.MustCall("createSession", map[string]any{"channel": sess})
	var st struct {
		DefaultChat string `json:"defaultChat"`
	}
	raw, _ := c.Subscribe(sess)
	if err := jsonUnmarshal(raw, &st); err != nil {
		b.Fatal(err)
	}
	ws, _, err := ahptest.DialRaw(e.d.URL(), "")
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	call := func(frame string) {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
			b.Fatal(err)
		}
	}
	readUntil := func(marker string) {
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				b.Fatal(err)
			}
			if bytes.Contains(data, []byte(marker)) {
				return
			}
		}
	}
	call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"bench"}}`)
	readUntil(`"id":1`)
	call(`{"jsonrpc":"2.0","id":2,"method":"subscribe","params":{"channel":"` + st.DefaultChat + `"}}`)
	readUntil(`"id":2`)
	b.ResetTimer()
	for i := range b.N {
		call(fmt.Sprintf(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":%q,"clientSeq":%d,"action":{"type":"chat/turnStarted","turnId":"b%d","startedAt":"2026-12-02T00:00:00Z","message":{"text":"benchmark turn","origin":{"kind":"user"}}}}}`, st.DefaultChat, i+1, i))
		readUntil(`"chat/turnComplete"`)
	}
}

func BenchmarkRawWebsocketRoundTrip(b *testing.B) {
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		for {
			mt, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			if err := ws.WriteMessage(mt, data); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	frame := []byte(`{"jsonrpc":"2.0","method":"action","params":{"channel":"ahp-chat:/x","action":{"type":"chat/delta","turnId":"t","partId":"p","content":"benchmark turn"},"serverSeq":1}}`)
	b.ResetTimer()
	for range b.N {
		if err := ws.WriteMessage(websocket.TextMessage, frame); err != nil {
			b.Fatal(err)
		}
		if _, _, err := ws.ReadMessage(); err != nil {
			b.Fatal(err)
		}
	}
}
