package daemon_test

// The figures of docs/PERFORMANCE.md (`make bench`), each against a
// baseline measured in the same run and reported with it: every benchmark
// here reports the ahpd figure, the baseline's and their ratio as metrics,
// which internal/perf/benchtable prints as one table. None is a timed unit
// test: they run under -bench only, and CI runs each once (-benchtime=1x).

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/script"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/store"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/gorilla/websocket"
)

// fanoutDeltas is how many deltas the benchmark turn streams ([burst:N]).
const fanoutDeltas = 2000

// rawWatcher is a websocket client that counts frames and looks for a
// marker, and decodes nothing: the clients must never be what is measured.
type rawWatcher struct {
	ws     *websocket.Conn
	frames int
	done   chan struct{}
}

func dialWatcher(b testing.TB, url string) *rawWatcher {
	b.Helper()
	ws, _, err := ahptest.DialRaw(url, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ws.Close() })
	return &rawWatcher{ws: ws}
}

func (w *rawWatcher) send(b testing.TB, frame string) {
	if err := w.ws.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
		b.Fatal(err)
	}
}

// readUntil reads until a frame holds marker and returns that frame.
// A frame that does not come within a minute fails the read, naming what
// was awaited and the last frames seen: a hung wait is a failure to read,
// never a test binary killed at its timeout.
func (w *rawWatcher) readUntil(b testing.TB, marker string) []byte {
	var last []string
	for {
		_ = w.ws.SetReadDeadline(time.Now().Add(3 * ahptest.Timeout))
		_, data, err := w.ws.ReadMessage()
		if err != nil {
			b.Fatalf("waiting for %s: %v; the last frames: %q", marker, err, last)
		}
		if bytes.Contains(data, []byte(marker)) {
			_ = w.ws.SetReadDeadline(time.Time{})
			return data
		}
		if len(data) > 300 {
			data = data[:300]
		}
		if last = append(last, string(data)); len(last) > 4 {
			last = last[1:]
		}
	}
}

// watch counts frames on a goroutine of its own until one holds marker.
func (w *rawWatcher) watch(marker string) {
	w.frames, w.done = 0, make(chan struct{})
	go func() {
		defer close(w.done)
		for {
			_, r, err := w.ws.NextReader()
			if err != nil {
				return
			}
			var buf bytes.Buffer
			if _, err := buf.ReadFrom(r); err != nil {
				return
			}
			w.frames++
			if bytes.Contains(buf.Bytes(), []byte(marker)) {
				return
			}
		}
	}()
}

// fanoutState is what the fan-out benchmarks read of their session.
type fanoutState struct {
	DefaultChat string `json:"defaultChat"`
}

// fanoutSession starts a daemon with the script agent and creates sess on
// it; the benchmark's turns run in its default chat.
func fanoutSession(b *testing.B, sess string) (*testEnv, fanoutState) {
	b.Helper()
	reg, err := agent.NewRegistry(script.New(script.Options{}))
	if err != nil {
		b.Fatal(err)
	}
	e := benchEnv(b, reg)
	setup := ahptest.Dial(b, e.d.URL(), "")
	setup.Initialize("setup")
	setup.MustCall("createSession", map[string]any{"channel": sess})
	var st fanoutState
	raw, _ := setup.Subscribe(sess)
	if err := json.Unmarshal(raw, &st); err != nil {
		b.Fatal(err)
	}
	return e, st
}

// BenchmarkFanout: one turn streaming fanoutDeltas deltas as fast as the
// script agent can, watched by N clients; against a bare gorilla server
// broadcasting the same number of frames of the same size to N clients.
// Reported: envelopes delivered per second by each, and ahpd's share. Both
// run in this process; issue 37's fan-out goal is BenchmarkFanoutVsRaw's.
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			e, st := fanoutSession(b, "ahp-session:/fa000000-0000-4000-8000-000000000001")
			watchers := make([]*rawWatcher, n)
			for i := range watchers {
				w := dialWatcher(b, e.d.URL())
				w.send(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"w%d"}}`, i))
				w.readUntil(b, `"id":1`)
				w.send(b, `{"jsonrpc":"2.0","id":2,"method":"subscribe","params":{"channel":"`+st.DefaultChat+`"}}`)
				w.readUntil(b, `"id":2`)
				watchers[i] = w
			}
			driver := watchers[0]
			var ahpdRate, rawRate float64
			var frameSize int
			for i := range b.N {
				for _, w := range watchers[1:] {
					w.watch(`"chat/turnComplete"`)
				}
				start := time.Now()
				driver.send(b, fmt.Sprintf(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":%q,"clientSeq":%d,"action":{"type":"chat/turnStarted","turnId":"f%d","startedAt":"2026-12-02T00:00:00Z","message":{"text":"[burst:%d]","origin":{"kind":"user"}}}}}`, st.DefaultChat, i+1, i, fanoutDeltas))
				driver.watch(`"chat/turnComplete"`)
				total := 0
				for _, w := range watchers {
					<-w.done
					total += w.frames
				}
				elapsed := time.Since(start)
				ahpdRate = float64(total) / elapsed.Seconds()
				frameSize = 300 // a delta envelope is about this size
				rawRate = rawBroadcast(b, n, total/n, frameSize)
			}
			b.ReportMetric(ahpdRate, "ahpd-env/s")
			b.ReportMetric(rawRate, "raw-env/s")
			b.ReportMetric(ahpdRate/rawRate, "ratio")
		})
	}
}

// rawBroadcast is the baseline: a bare gorilla server writes frames frames
// of size bytes to each of n clients, one writer goroutine per client, as
// fast as they read; it returns frames delivered per second.
func rawBroadcast(b *testing.B, n, frames, size int) float64 {
	b.Helper()
	url, accepted, stop := rawServer(n)
	defer stop()
	var readers sync.WaitGroup
	for range n {
		ws, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer ws.Close()
		readers.Add(1)
		go func() {
			defer readers.Done()
			for range frames {
				_, r, err := ws.NextReader()
				if err != nil {
					return
				}
				var buf bytes.Buffer
				if _, err := buf.ReadFrom(r); err != nil {
					return
				}
			}
		}()
	}
	server := acceptN(accepted, n)
	start := time.Now()
	writeFrames(server, frames, size, 0, nil)
	readers.Wait()
	rate := float64(n*frames) / time.Since(start).Seconds()
	closeAll(server)
	return rate
}

// rawServer is the bare gorilla server of the baselines: it upgrades every
// request and hands the connection over on accepted (room for n).
func rawServer(n int) (url string, accepted <-chan *websocket.Conn, stop func()) {
	conns := make(chan *websocket.Conn, n)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		conns <- ws
	}))
	return "ws" + strings.TrimPrefix(ts.URL, "http"), conns, ts.Close
}

// acceptN waits for n connections of a rawServer.
func acceptN(accepted <-chan *websocket.Conn, n int) []*websocket.Conn {
	server := make([]*websocket.Conn, 0, n)
	for range n {
		server = append(server, <-accepted)
	}
	return server
}

// writeFrames writes frames frames of size bytes to each connection, one
// writer goroutine each, as fast as they go or, with pace > 0, frame k at
// k×pace; then end, when not nil. It returns once every writer is done.
func writeFrames(server []*websocket.Conn, frames, size int, pace time.Duration, end []byte) {
	frame := bytes.Repeat([]byte("x"), size)
	start := time.Now()
	var writers sync.WaitGroup
	for _, ws := range server {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for k := range frames {
				if pace > 0 {
					time.Sleep(time.Until(start.Add(time.Duration(k) * pace))) // deliberate: the pace
				}
				if err := ws.WriteMessage(websocket.TextMessage, frame); err != nil {
					return
				}
			}
			if end != nil {
				_ = ws.WriteMessage(websocket.TextMessage, end)
			}
		}()
	}
	writers.Wait()
}

func closeAll(conns []*websocket.Conn) {
	for _, ws := range conns {
		_ = ws.Close()
	}
}

// BenchmarkIdleSessionMemory: the heap and goroutine stacks each session
// costs with its chat loaded and idle, and after its chat and the session
// itself unload (chatIdleSeconds 1; goal ≤ 4 KiB and no goroutine per
// session), at 1,000 sessions (AHPD_BENCH_SESSIONS sets another count;
// make bench uses 10,000); against the heap of a bare map holding the same
// sessions' records (the least a host must keep). Reported in bytes and
// goroutines per session.
func BenchmarkIdleSessionMemory(b *testing.B) {
	sessions := 1000
	if v, err := strconv.Atoi(os.Getenv("AHPD_BENCH_SESSIONS")); err == nil && v > 0 {
		sessions = v
	}
	for range b.N {
		loaded, _ := sessionHeap(b, sessions, false)
		unloaded, goroutines := sessionHeap(b, sessions, true)
		baseline := recordBaseline(sessions)
		b.ReportMetric(loaded, "loaded-B/session")
		b.ReportMetric(unloaded, "unloaded-B/session")
		b.ReportMetric(goroutines, "unloaded-goroutines/session")
		b.ReportMetric(baseline, "raw-B/session")
		b.ReportMetric(loaded/baseline, "ratio")
	}
}

// sessionHeap is the heap and stacks, and the goroutines, per session of a
// daemon holding n sessions, each with its chat subscribed once and left;
// with unload, after every chat and session has unloaded.
func sessionHeap(b *testing.B, n int, unload bool) (bytes, goroutines float64) {
	sc := script.New(script.Options{})
	reg, err := agent.NewRegistry(sc)
	if err != nil {
		b.Fatal(err)
	}
	e := benchEnv(b, reg, func(c *daemon.Config) {
		if unload {
			c.ChatIdleSeconds = 1
		}
	})
	// A raw client keeps nothing it reads, so the heap is the daemon's.
	w := dialWatcher(b, e.d.URL())
	w.send(b, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"memory"}}`)
	w.readUntil(b, `"id":0`)
	before, routinesBefore := memInUse(), runtime.NumGoroutine()
	for i := range n {
		sess := fmt.Sprintf("script:/3e300000-0000-4000-8000-%012d", i)
		w.send(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"createSession","params":{"channel":%q,"provider":"script"}}`, 2*i+1, sess))
		w.readUntil(b, fmt.Sprintf(`"id":%d`, 2*i+1))
		def := ahp.DefaultChatURI(sess)
		w.send(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscribe","params":{"channel":%q}}`, 2*i+2, def))
		w.readUntil(b, fmt.Sprintf(`"id":%d`, 2*i+2))
		w.send(b, fmt.Sprintf(`{"jsonrpc":"2.0","method":"unsubscribe","params":{"channel":%q}}`, def))
	}
	ctx := context.Background()
	if unload {
		deadline := time.Now().Add(2 * time.Minute)
		for e.d.Host().OpenChats(ctx) != 0 || e.d.Host().OpenSessions() != 0 {
			if time.Now().After(deadline) {
				b.Fatalf("%d chats and %d sessions never unloaded", e.d.Host().OpenChats(ctx), e.d.Host().OpenSessions())
			}
			time.Sleep(200 * time.Millisecond)
		}
	} else if open := e.d.Host().OpenChats(ctx); open != n {
		b.Fatalf("%d chats loaded, want %d", open, n)
	}
	after, routinesAfter := memInUse(), runtime.NumGoroutine()
	runtime.KeepAlive(e)
	return (float64(after) - float64(before)) / float64(n), float64(routinesAfter-routinesBefore) / float64(n)
}

// recordBaseline is the heap a map of n session-and-chat records takes.
func recordBaseline(n int) float64 {
	type rec struct {
		uri, provider, title, chat, dir string
		created, modified               time.Time
	}
	before := heapInUse()
	m := make(map[string]*rec, n)
	for i := range n {
		uri := fmt.Sprintf("ahp-session:/3e300000-0000-4000-8000-%012d", i)
		m[uri] = &rec{uri: uri, provider: "script", title: "New Chat", chat: "ahp-chat:/" + uri[14:], dir: "file:///srv/work", created: time.Now(), modified: time.Now()}
	}
	after := heapInUse()
	runtime.KeepAlive(m)
	return float64(after-before) / float64(n)
}

// memInUse is the heap and the goroutine stacks in use, after a GC.
func memInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// seedStore writes sessions sessions of turnsEach complete turns each into
// a data dir's store, as a daemon that ran them would have left it.
func seedStore(b testing.TB, dataDir string, sessions, turnsEach int) {
	st, err := store.Open(filepath.Join(dataDir, "ahpd.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	now := time.Now()
	body := json.RawMessage(`{"id":"t","message":{"text":"a stored question","origin":{"kind":"user"}},"responseParts":[{"kind":"markdown","id":"p","content":"a stored answer"}],"state":"complete","startedAt":"2026-12-01T00:00:00Z"}`)
	for i := range sessions {
		sess := fmt.Sprintf("script:/5eed0000-0000-4000-8000-%012d", i)
		chat := ahp.DefaultChatURI(sess)
		if err := st.PutSession(ctx, store.SessionRecord{URI: sess, Provider: "script", Title: fmt.Sprintf("Session %d", i),
			CreatedAt: now, ModifiedAt: now.Add(time.Duration(i) * time.Second), WorkingDirectories: []string{}, DefaultChat: chat}); err != nil {
			b.Fatal(err)
		}
		if err := st.PutChat(ctx, store.ChatRecord{URI: chat, Session: sess, Title: "chat", ConversationID: fmt.Sprintf("conv-%d", i), CreatedAt: now, ModifiedAt: now}); err != nil {
			b.Fatal(err)
		}
		if turnsEach == 0 {
			continue
		}
		ops := make([]store.Op, 0, turnsEach)
		for j := range turnsEach {
			r := store.TurnRecord{Chat: chat, ID: fmt.Sprintf("t%d", j), Seq: j, State: store.TurnComplete, StartedAt: now, Body: body}
			ops = append(ops, func(ctx context.Context, s *store.Store) error { return s.PutTurn(ctx, r) })
		}
		if err := st.CommitAll(ctx, ops...); err != nil {
			b.Fatal(err)
		}
	}
}

// startOn starts a daemon on a data dir and returns how long it took to
// listen (start-up recovery included).
func startOn(b testing.TB, dataDir string) (*daemon.Daemon, time.Duration) {
	sc := script.New(script.Options{})
	reg, err := agent.NewRegistry(sc)
	if err != nil {
		b.Fatal(err)
	}
	cfg := daemon.Defaults()
	cfg.Port = 0
	cfg.DataDir = dataDir
	cfg.Paths = []string{b.TempDir()}
	start := time.Now()
	d, err := daemon.Start(context.Background(), cfg, daemon.Options{Agents: reg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = d.Close(ctx)
	})
	return d, took
}

// BenchmarkColdStart: a daemon starting on 100,000 stored turns in 1,000
// sessions, against one starting on an empty data dir; the median of
// nine starts of each, alternated (goal: listening ≤ 1.5× empty, issue
// 34). ahpd-first-ms is how long a client that connects at once waits for its
// first listSessions answer, which waits for the catalogue (Host.restore):
// the start-up a user sees, beside the listening time the goal counts.
func BenchmarkColdStart(b *testing.B) {
	full, empty := b.TempDir(), b.TempDir()
	seedStore(b, full, 1000, 100)
	start := func(dir string) (listen, first time.Duration) {
		t0 := time.Now()
		d, listen := startOn(b, dir)
		w := dialWatcher(b, d.URL())
		w.send(b, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"cold"}}`)
		w.readUntil(b, `"id":1`)
		w.send(b, `{"jsonrpc":"2.0","id":2,"method":"listSessions","params":{"channel":"ahp-root://","limit":1}}`)
		w.readUntil(b, `"id":2`)
		first = time.Since(t0)
		_ = w.ws.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			b.Fatal(err)
		}
		return listen, first
	}
	median := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	for range b.N {
		var fullListen, fullFirst, emptyListen, emptyFirst []time.Duration
		for range 9 {
			l, f := start(full)
			fullListen, fullFirst = append(fullListen, l), append(fullFirst, f)
			l, f = start(empty)
			emptyListen, emptyFirst = append(emptyListen, l), append(emptyFirst, f)
		}
		took, base := median(fullListen), median(emptyListen)
		b.ReportMetric(float64(took.Microseconds())/1000, "ahpd-ms")
		b.ReportMetric(float64(base.Microseconds())/1000, "empty-ms")
		b.ReportMetric(float64(took)/float64(base), "ratio")
		b.ReportMetric(float64(median(fullFirst).Microseconds())/1000, "ahpd-first-ms")
		b.ReportMetric(float64(median(emptyFirst).Microseconds())/1000, "empty-first-ms")
	}
}

// BenchmarkListSessionsPage: a 500-session page of listSessions at 2,000
// and 10,000 sessions, paged through whole over the websocket once the
// catalogue is restored; against marshalling the same page of summaries
// (goal ≤ 5 ms per page at any size, issue 37).
func BenchmarkListSessionsPage(b *testing.B) {
	for _, n := range []int{2000, 10000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			for range b.N {
				dir := b.TempDir()
				seedStore(b, dir, n, 0)
				d, _ := startOn(b, dir)
				<-d.Host().Restored() // the page's cost, not start-up's
				w := dialWatcher(b, d.URL())
				w.send(b, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"pages"}}`)
				w.readUntil(b, `"id":1`)
				pages, cursor := 0, ""
				var lastPage []byte
				start := time.Now()
				for {
					params := `{"channel":"ahp-root://","limit":500}`
					if cursor != "" {
						params = fmt.Sprintf(`{"channel":"ahp-root://","limit":500,"cursor":%q}`, cursor)
					}
					w.send(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"listSessions","params":%s}`, pages+10, params))
					var res struct {
						Result struct {
							Items      json.RawMessage `json:"items"`
							NextCursor string          `json:"nextCursor"`
						} `json:"result"`
					}
					for {
						_, data, err := w.ws.ReadMessage()
						if err != nil {
							b.Fatal(err)
						}
						if bytes.Contains(data, []byte(fmt.Sprintf(`"id":%d`, pages+10))) {
							if err := json.Unmarshal(data, &res); err != nil {
								b.Fatal(err)
							}
							break
						}
					}
					pages++
					lastPage = res.Result.Items
					cursor = res.Result.NextCursor
					if cursor == "" {
						break
					}
				}
				perPage := time.Since(start) / time.Duration(pages)
				var items []ahp.SessionSummary
				_ = json.Unmarshal(lastPage, &items)
				t0 := time.Now()
				for range 20 {
					if _, err := json.Marshal(items); err != nil {
						b.Fatal(err)
					}
				}
				marshal := time.Since(t0) / 20
				b.ReportMetric(float64(perPage.Microseconds())/1000, "ahpd-ms/page")
				b.ReportMetric(float64(marshal.Microseconds())/1000, "raw-ms/page")
				b.ReportMetric(float64(perPage)/float64(marshal), "ratio")
			}
		})
	}
}

// BenchmarkFirstSubscribe: the first subscribe, with no view, to a chat of
// 5,000 stored turns (the snapshot holds every turn: CHATS.md C-CMD-12);
// against reading the same 5,000 turn bodies from the store's SQLite file
// with a plain query.
func BenchmarkFirstSubscribe(b *testing.B) {
	for range b.N {
		dir := b.TempDir()
		seedStore(b, dir, 1, 5000)
		d, _ := startOn(b, dir)
		w := dialWatcher(b, d.URL())
		w.send(b, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"first"}}`)
		w.readUntil(b, `"id":1`)
		chat := ahp.DefaultChatURI("script:/5eed0000-0000-4000-8000-000000000000")
		start := time.Now()
		w.send(b, `{"jsonrpc":"2.0","id":2,"method":"subscribe","params":{"channel":"`+chat+`"}}`)
		size := 0
		for {
			_, data, err := w.ws.ReadMessage()
			if err != nil {
				b.Fatal(err)
			}
			if bytes.Contains(data, []byte(`"id":2`)) {
				size = len(data)
				break
			}
		}
		took := time.Since(start)
		raw := rawReadTurns(b, filepath.Join(dir, "ahpd.db"), chat)
		b.ReportMetric(float64(took.Microseconds())/1000, "ahpd-ms")
		b.ReportMetric(float64(size)/1e6, "snapshot-MB")
		b.ReportMetric(float64(raw.Microseconds())/1000, "raw-ms")
		b.ReportMetric(float64(took)/float64(raw), "ratio")
	}
}

// rawReadTurns reads a chat's turn bodies with a plain query.
func rawReadTurns(b *testing.B, path, chat string) time.Duration {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	start := time.Now()
	rows, err := db.Query(`SELECT body FROM turns WHERE chat = ? ORDER BY seq`, chat)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			b.Fatal(err)
		}
		n += len(body)
	}
	rows.Close()
	if n == 0 {
		b.Fatal("no turns read")
	}
	return time.Since(start)
}
