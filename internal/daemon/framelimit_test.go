package daemon_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/gorilla/websocket"
)

// TestMaxFrameBytes: the daemon's maxFrameBytes reaches the door. A frame
// over it closes that connection with 1009 (message too big); other
// connections and what is stored are untouched (issue 8 §4).
func TestMaxFrameBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *daemon.Config) { c.MaxFrameBytes = 4096 })
	keep := e.client("keep")
	_, def := e.createSession(keep, "ahp-session:/f4a3e000-0000-4000-8000-000000000001")
	keep.Subscribe(def)
	sendTurn(t, keep, def, "t1", "before")

	ws, _, err := ahptest.DialRaw(e.d.URL(), e.cfg.ConnectionToken)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"channel":"ahp-root://","pad":"` + strings.Repeat("x", 8192) + `"}}`
	if err := ws.WriteMessage(websocket.TextMessage, []byte(big)); err != nil {
		t.Fatal(err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(ahptest.Timeout))
	_, _, err = ws.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Fatalf("after a frame over maxFrameBytes: %v, want close 1009", err)
	}
	if end := sendTurn(t, keep, def, "t2", "after"); end.Type() != "chat/turnComplete" {
		t.Fatalf("the other connection's turn ended %s", end.Raw)
	}
	if cs := chatOf(t, keep, def); len(cs.Turns) != 2 {
		t.Fatalf("%d turns after the oversized frame", len(cs.Turns))
	}
}
