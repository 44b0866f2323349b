package rpc

import (
	"runtime"
	"testing"
	"time"
)

// TestAnIdleConnectionHoldsOneGoroutine: a connection that was answered
// and is idle holds one goroutine, its reader, as a bare websocket server's
// would: ServeHTTP has returned, the writer runs only while its outbox
// holds frames, and no jsonrpc2 Conn runs beside the reader (issue 37,
// memory under load: four goroutines a connection were 30% of the
// daemon's peak RSS at 4,000 connections).
func TestAnIdleConnectionHoldsOneGoroutine(t *testing.T) {
	h := newTestHandler()
	_, url := startServer(t, h, nil)
	// At most the test handler's 16 buffered Disconnected calls.
	const conns = 12
	runtime.GC()
	before := runtime.NumGoroutine()
	for i := range conns {
		cl := dial(t, url, nil)
		h.awaitConn(t)
		if m := cl.call(i, "echo", map[string]int{"i": i}); m.Error != nil {
			t.Fatalf("echo: %v", m.Error)
		}
		// A notification too, so the writer has run for one as well.
		cl.send(`{"jsonrpc":"2.0","method":"ping-note"}`)
	}
	// The writers stop once their outboxes are empty; wait for them.
	deadline := time.Now().Add(waitFor)
	for {
		held := runtime.NumGoroutine() - before
		if held <= conns {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d idle connections hold %d goroutines, want at most one each\n%s",
				conns, held, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
