//go:build unix

package daemon_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/gorilla/websocket"
)

// The watchers of BenchmarkFanoutCPU run in a process of their own (this
// test binary again, TestFanoutWatchersProcess), so the benchmark process's
// CPU is the server's alone: ahpd's, then a bare gorilla server's.
const (
	envWatchURL   = "AHPD_FANOUT_WATCH_URL"
	envWatchChat  = "AHPD_FANOUT_WATCH_CHAT" // empty: the bare server
	envWatchCount = "AHPD_FANOUT_WATCH_N"
	watchLine     = "fanout-watchers:"
	rawEndFrame   = "END"
)

// BenchmarkFanoutCPU: the server CPU (user+system) per frame delivered to
// 100 watchers, ahpd streaming a [burst:N] turn against a bare gorilla
// server writing the same number of frames of the same size. The watchers
// are another process, so neither figure holds the clients' CPU.
func BenchmarkFanoutCPU(b *testing.B) {
	const n = 100
	e, st := fanoutSession(b, "ahp-session:/fa000000-0000-4000-8000-0000000000c0")
	driver := dialWatcher(b, e.d.URL())
	driver.send(b, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"driver"}}`)
	driver.readUntil(b, `"id":1`)

	var ahpdCPU, rawCPU, spread, rawSpread time.Duration
	var frames, rawFrames int
	for i := range b.N {
		w := startWatchers(b, e.d.URL(), st.DefaultChat, n)
		before := processCPU(b)
		start := time.Now()
		driver.send(b, fmt.Sprintf(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":%q,"clientSeq":%d,"action":{"type":"chat/turnStarted","turnId":"c%d","startedAt":"2026-12-02T00:00:00Z","message":{"text":"[burst:%d]","origin":{"kind":"user"}}}}}`, st.DefaultChat, i+1, i, fanoutDeltas))
		frames, spread = w.done(b)
		ahpdCPU = processCPU(b) - before
		elapsed := time.Since(start)
		// A delta envelope is about 300 bytes.
		rawCPU, rawFrames, _ = rawBroadcastFrom(b, n, frames/n, 300, 0)
		// The same frames paced as ahpd sent them, for the spread.
		_, _, rawSpread = rawBroadcastFrom(b, n, frames/n, 300, elapsed/time.Duration(frames/n))
	}
	ahpd := float64(ahpdCPU.Nanoseconds()) / 1000 / float64(frames)
	base := float64(rawCPU.Nanoseconds()) / 1000 / float64(rawFrames)
	b.ReportMetric(ahpd, "ahpd-µs/frame")
	b.ReportMetric(base, "raw-µs/frame")
	b.ReportMetric(ahpd/base, "ratio")
	b.ReportMetric(float64(spread.Microseconds())/1000, "ahpd-spread-p99-ms")
	b.ReportMetric(float64(rawSpread.Microseconds())/1000, "raw-paced-spread-p99-ms")
}

// processCPU is the user and system CPU this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// watchers is the child process holding the watching connections.
type watchers struct {
	cmd   *exec.Cmd
	lines *bufio.Scanner
}

// startWatchers starts n watchers in a child process, subscribed to chat
// (or, with chat empty, connected to a bare server), and waits until every
// one is ready.
func startWatchers(b *testing.B, url, chat string, n int) *watchers {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFanoutWatchersProcess$", "-test.bench=^$", "-test.count=1")
	cmd.Env = append(os.Environ(), envWatchURL+"="+url, envWatchChat+"="+chat, envWatchCount+"="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	w := &watchers{cmd: cmd, lines: bufio.NewScanner(out)}
	if got := w.next(b); got != "ready" {
		b.Fatalf("watchers: %q, want ready", got)
	}
	return w
}

// next is the child's next line of its own (the test binary's lines are
// skipped).
func (w *watchers) next(b *testing.B) string {
	for w.lines.Scan() {
		if rest, ok := strings.CutPrefix(w.lines.Text(), watchLine); ok {
			return strings.TrimSpace(rest)
		}
	}
	b.Fatalf("the watchers process ended: %v", w.lines.Err())
	return ""
}

// done waits until every watcher has seen the end and returns the frames
// they read in all and the 99th percentile of a frame's spread (how far
// apart the first and the last watcher read it).
func (w *watchers) done(b *testing.B) (int, time.Duration) {
	line := w.next(b)
	var total int
	var p99 int64
	if _, err := fmt.Sscanf(line, "done %d %d", &total, &p99); err != nil {
		b.Fatalf("watchers: %q: %v", line, err)
	}
	_ = w.cmd.Wait()
	return total, time.Duration(p99)
}

// TestFanoutWatchersProcess is BenchmarkFanoutCPU's child: it runs only
// when the benchmark starts it, with the URL, chat and count in its
// environment.
func TestFanoutWatchersProcess(t *testing.T) {
	t.Parallel()
	url := os.Getenv(envWatchURL)
	if url == "" {
		t.Skip("BenchmarkFanoutCPU's watcher process; run by it")
	}
	chat := os.Getenv(envWatchChat)
	n, _ := strconv.Atoi(os.Getenv(envWatchCount))
	conns := make([]*websocket.Conn, n)
	for i := range conns {
		ws, _, err := ahptest.DialRaw(url, "")
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		conns[i] = ws
		if chat == "" {
			continue
		}
		frames := []string{
			fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"cpu%d"}}`, i),
			`{"jsonrpc":"2.0","id":2,"method":"subscribe","params":{"channel":"` + chat + `"}}`,
		}
		for j, f := range frames {
			if err := ws.WriteMessage(websocket.TextMessage, []byte(f)); err != nil {
				t.Fatal(err)
			}
			for {
				_, data, err := ws.ReadMessage()
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(data, fmt.Appendf(nil, `"id":%d`, j+1)) {
					break
				}
			}
		}
	}
	marker := []byte(`"chat/turnComplete"`)
	if chat == "" {
		marker = []byte(rawEndFrame)
	}
	fmt.Println(watchLine, "ready")
	// seen[i][k] is when watcher i read its k-th frame: every watcher reads
	// the same frames in the same order, so frame k's spread is how far
	// apart the watchers got it.
	seen := make([][]time.Time, n)
	var wg sync.WaitGroup
	for i, ws := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			for {
				_, r, err := ws.NextReader()
				if err != nil {
					return
				}
				buf.Reset()
				if _, err := io.Copy(&buf, r); err != nil {
					return
				}
				seen[i] = append(seen[i], time.Now())
				if bytes.Contains(buf.Bytes(), marker) {
					return
				}
			}
		}()
	}
	wg.Wait()
	total, frames := 0, -1
	for _, s := range seen {
		total += len(s)
		if frames < 0 || len(s) < frames {
			frames = len(s)
		}
	}
	spreads := make([]time.Duration, 0, frames)
	for k := range frames {
		first, last := seen[0][k], seen[0][k]
		for _, s := range seen[1:] {
			if s[k].Before(first) {
				first = s[k]
			}
			if s[k].After(last) {
				last = s[k]
			}
		}
		spreads = append(spreads, last.Sub(first))
	}
	slices.Sort(spreads)
	var p99 time.Duration
	if len(spreads) > 0 {
		p99 = spreads[len(spreads)*99/100]
	}
	fmt.Println(watchLine, "done", total, int64(p99))
}

// rawBroadcastFrom is the baseline: a bare gorilla server, in this process,
// writes frames frames of size bytes and an end frame to each of n
// watchers in the child process, one writer goroutine per connection, as
// fast as they go or, with pace > 0, frame k at k×pace. It returns the CPU
// this process spent from the first write until every watcher read the
// end, the frames they read, and the spread's 99th percentile.
func rawBroadcastFrom(b *testing.B, n, frames, size int, pace time.Duration) (time.Duration, int, time.Duration) {
	b.Helper()
	url, accepted, stop := rawServer(n)
	defer stop()
	w := startWatchers(b, url, "", n)
	server := acceptN(accepted, n)
	before := processCPU(b)
	writeFrames(server, frames, size, pace, []byte(rawEndFrame))
	total, spread := w.done(b)
	took := processCPU(b) - before
	closeAll(server)
	return took, total, spread
}
