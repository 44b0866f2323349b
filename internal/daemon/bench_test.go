package daemon_test

// Benchmarks read as ratios against a baseline run in the same process:
//
//	go test -run '^$' -bench . -benchmem ./internal/daemon/
//
// BenchmarkTurn runs a whole turn (turnStarted echo, the script agent's
// answer as responsePart + deltas + usage, turnComplete, session/chatUpdated
// envelopes) through the daemon over a websocket on 127.0.0.1;
// BenchmarkRawWebsocketRoundTrip sends the same number of frames through a
// bare gorilla echo server. AHPD_BENCH_DATA=/dev/shm puts the store on
// tmpfs to separate disk from the rest. The measured ratio is in
// docs/ARCHITECTURE.md ("Speed").

import (
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
	c := ahptest.Dial(b, e.d.URL(), "")
	c.Initialize("bench")
	c.MustCall("createSession", map[string]any{"channel": "ahp-session:/be0c4000-0000-4000-8000-000000000001"})
	var st struct {
		DefaultChat string `json:"defaultChat"`
	}
	raw, _ := c.Subscribe("ahp-session:/be0c4000-0000-4000-8000-000000000001")
	if err := jsonUnmarshal(raw, &st); err != nil {
		b.Fatal(err)
	}
	c.Subscribe(st.DefaultChat)
	b.ResetTimer()
	for i := range b.N {
		sendTurn(b, c, st.DefaultChat, fmt.Sprintf("b%d", i), "benchmark turn")
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
