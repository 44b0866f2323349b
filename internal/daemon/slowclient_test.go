package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/gorilla/websocket"
)

// TestSlowClientIsCut: a client that stops reading is disconnected when its
// outbox fills, and the client that keeps reading sees every envelope, in
// order, without slowing down.
func TestSlowClientIsCut(t *testing.T) {
	e := newEnv(t, func(c *daemon.Config) { c.OutboxBytes = 512 << 10 })
	fast := e.client("fast")
	sess, chat := e.createSession(fast, "ahp-session:/51015101-0000-4000-8000-000000000001")
	fast.Subscribe(chat)

	// The slow client: subscribed, never reads. Its socket's receive buffer
	// is tiny and its segments small, both set before it connects, so the
	// kernel buffers little on either side: on loopback, with 64 KiB
	// segments, the daemon's send buffer grew to megabytes, and the outbox
	// (2 MiB then) filled only after some 25 turns of 128 KiB, 30 s under
	// -race. Now it is cut after about 8 turns of 32 KiB; the outbox is 16
	// such turns' messages, as before, so the fast client keeps its margin.
	d := websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		nd := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				if serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096); serr == nil {
					serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, 536)
				}
			})
			return errors.Join(err, serr)
		}}
		return nd.DialContext(ctx, network, addr)
	}}
	slow, _, err := d.Dial(e.d.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	send := func(id int, method string, params any) {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if err := slow.WriteMessage(websocket.TextMessage, b); err != nil {
			t.Fatal(err)
		}
	}
	send(1, "initialize", map[string]any{"channel": ahp.RootURI, "protocolVersions": []string{"1.0.0"}, "clientId": "slow"})
	send(2, "subscribe", map[string]any{"channel": chat})
	send(3, "subscribe", map[string]any{"channel": sess})

	big := strings.Repeat("x", 32<<10)
	const turns = 200
	for i := range turns {
		end := sendTurn(t, fast, chat, fmt.Sprintf("t%d", i), big)
		if end.Type() != "chat/turnComplete" {
			t.Fatalf("turn %d ended %s", i, end.Type())
		}
		if e.d.Stats().RPC.SlowConsumers > 0 && i > 5 {
			break
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for e.d.Stats().RPC.SlowConsumers == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the slow client was never cut: %+v", e.d.Stats().RPC)
		}
		sendTurn(t, fast, chat, fmt.Sprintf("more-%d", time.Now().UnixNano()), big)
	}
	// The fast client's stream is complete and ordered.
	all := fast.Envelopes()
	for i := 1; i < len(all); i++ {
		if all[i].ServerSeq <= all[i-1].ServerSeq {
			t.Fatalf("serverSeq %d after %d", all[i].ServerSeq, all[i-1].ServerSeq)
		}
	}
	st, _ := fast.Subscribe(chat)
	if cs := chatState(t, st); cs.ActiveTurn != nil || len(cs.Turns) == 0 {
		t.Fatalf("chat after the slow client was cut: %d turns, active %v", len(cs.Turns), cs.ActiveTurn != nil)
	}
	// The daemon closed its side of the slow connection: only the fast
	// client is still connected.
	for e.d.Stats().RPC.Connections != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("connections = %d after the cut, want 1", e.d.Stats().RPC.Connections)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
