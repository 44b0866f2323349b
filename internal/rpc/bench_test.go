package rpc

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gorilla/websocket"
)

// Compare BenchmarkNotify with BenchmarkRawWebsocketWrite: both push the
// same action envelope to one reading client on loopback, in the same
// process, so ns/op of the first over the second is the cost of the
// transport (frame building, outbox, writer goroutine) as a ratio:
//
//	go test -run '^$' -bench 'Notify|RawWebsocketWrite' ./internal/rpc/

// benchParams is a typical action envelope.
var benchParams = json.RawMessage(`{"channel":"ahp-chat:/0b6c1f0e-6c53-4b0e-9d1e-3f1a2b3c4d5e","serverSeq":1234,` +
	`"action":{"type":"chat/responsePart","turnId":"t-42","part":{"kind":"markdown","value":"` +
	strings.Repeat("lorem ipsum ", 12) + `"}}}`)

// benchWindow is how many frames may be in flight to the reader; it keeps
// the outbox far below its budget, as a live client does.
const benchWindow = 1024

// benchReader reads and counts frames on cl until it fails.
type benchReader struct {
	received atomic.Int64
	progress chan struct{}
}

func startBenchReader(ws *websocket.Conn) *benchReader {
	r := &benchReader{progress: make(chan struct{}, 1)}
	go func() {
		for {
			_, msg, err := ws.NextReader()
			if err != nil {
				return
			}
			if _, err := io.Copy(io.Discard, msg); err != nil {
				return
			}
			r.received.Add(1)
			select {
			case r.progress <- struct{}{}:
			default:
			}
		}
	}()
	return r
}

// await waits until the reader has n frames.
func (r *benchReader) await(n int) {
	for r.received.Load() < int64(n) {
		<-r.progress
	}
}

// benchDial connects a reading client to url.
func benchDial(b *testing.B, url string) *benchReader {
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ws.Close() })
	return startBenchReader(ws)
}

func BenchmarkNotify(b *testing.B) {
	h := newTestHandler()
	s := NewServer(Options{
		Handler:      h,
		Logger:       slog.New(slog.DiscardHandler),
		PingInterval: -1,
	})
	ts := httptest.NewServer(s)
	b.Cleanup(ts.Close)
	b.Cleanup(func() { _ = s.Shutdown(b.Context()) })
	reader := benchDial(b, "ws"+strings.TrimPrefix(ts.URL, "http"))
	c := h.awaitConn(b)

	b.SetBytes(int64(len(notificationFrame("action", benchParams))))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := c.NotifyRaw("action", benchParams); err != nil {
			b.Fatal(err)
		}
		if i%benchWindow == 0 {
			reader.await(i - benchWindow)
		}
	}
	reader.await(b.N)
}

func BenchmarkRawWebsocketWrite(b *testing.B) {
	conns := make(chan *websocket.Conn, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		conns <- ws
	}))
	b.Cleanup(ts.Close)
	reader := benchDial(b, "ws"+strings.TrimPrefix(ts.URL, "http"))
	ws := <-conns
	b.Cleanup(func() { _ = ws.Close() })

	frame := notificationFrame("action", benchParams)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := ws.WriteMessage(websocket.TextMessage, frame); err != nil {
			b.Fatal(err)
		}
		if i%benchWindow == 0 {
			reader.await(i - benchWindow)
		}
	}
	reader.await(b.N)
}
