//go:build linux

package daemon_test

// The whole-turn and load figures (issue 37): ahpd against the durable raw
// server (internal/perf/durableraw), a bare gorilla server that keeps the
// same durability rule, and against the bare server (the same frames,
// nothing stored). Each server is its own binary in a process of its own
// (`ahpd serve`, `durableraw`, built here) and the clients run in this
// one, so each server's CPU and peak RSS are read from its own /proc
// entry; the servers take turns in rounds, so a machine busy with other
// work slows each alike.

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/perf/durableraw"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
	"github.com/gorilla/websocket"
)

// The three servers, in the order each round runs them.
const (
	serverAhpd = "ahpd"
	serverRaw  = "durableraw"
	serverBare = "bare"
)

// perfPrompt is the user's text of every measured turn, and of the turn
// recorded for the raw servers.
const perfPrompt = "benchmark turn"

// recordedTurnID is the recorded turn's id; the raw servers put each
// turn's own in its place.
const recordedTurnID = "7ec02d00-turn-0000-0000-recorded0001"

// perfBinaries builds ahpd (./cmd/ahpd) and the durable raw server
// (./internal/perf/durableraw/cmd/durableraw), once per test binary: each
// server runs as the binary it is, without this test binary's weight.
func perfBinaries(b *testing.B) (ahpd, raw string) {
	b.Helper()
	return fakemodel.BuildPackage(b, "./cmd/ahpd"), fakemodel.BuildPackage(b, "./internal/perf/durableraw/cmd/durableraw")
}

// perfServer is a server the benchmark started in a child process.
type perfServer struct {
	kind    string
	url     string
	dataDir string
	cmd     *exec.Cmd
}

// startPerfServer runs bin with args in a child process of its own and
// waits for the `listening ws://…` line both servers print. The child is
// asked to stop (SIGTERM, and its stdin closes) when the benchmark ends,
// and is told by the kernel if the benchmark dies first.
func startPerfServer(b *testing.B, kind, dataDir, bin string, args ...string) *perfServer {
	b.Helper()
	cmd := exec.Command(bin, args...)
	// Only the flags configure the servers: no AHPD_* of this environment,
	// no config file of the user's.
	cmd.Env = []string{"XDG_CONFIG_HOME=" + filepath.Join(dataDir, "xdg"), "HOME=" + dataDir}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AHPD_") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") && !strings.HasPrefix(kv, "HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		exited := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(exited)
		}()
		select {
		case <-exited:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if rest, ok := strings.CutPrefix(lines.Text(), "listening "); ok {
			// The rest of its output is not the benchmark's.
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return &perfServer{kind: kind, url: strings.TrimSpace(rest), dataDir: dataDir, cmd: cmd}
		}
	}
	b.Fatalf("the %s server process ended before it listened: %v", kind, lines.Err())
	return nil
}

// cpu is the user and system CPU the server process has used so far.
func (s *perfServer) cpu(b *testing.B) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name (which may hold spaces): state is
	// field 3, utime 14 and stime 15, in clock ticks (USER_HZ, 100 on Linux).
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		b.Fatalf("/proc/%d/stat: %v", s.cmd.Process.Pid, err)
	}
	return time.Duration(utime+stime) * (time.Second / 100)
}

// peakRSS is the server process's peak resident set (VmHWM), in bytes.
func (s *perfServer) peakRSS(b *testing.B) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				b.Fatalf("VmHWM %q: %v", rest, err)
			}
			return kb * 1024
		}
	}
	b.Fatalf("/proc/%d/status has no VmHWM", s.cmd.Process.Pid)
	return 0
}

// perfClient is one websocket client of the benchmarks. It reads frames
// into one reused buffer and decodes nothing: the clients share the
// machine with the servers and must cost little. Its methods return errors
// rather than fail, so many run on goroutines of their own.
type perfClient struct {
	ws  *websocket.Conn
	buf bytes.Buffer
	seq int // the clientSeq of its next dispatch
}

func dialPerf(url string) (*perfClient, error) {
	d := websocket.Dialer{HandshakeTimeout: time.Minute}
	ws, _, err := d.Dial(url, nil)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	return &perfClient{ws: ws}, nil
}

func (c *perfClient) send(frame string) error {
	return c.ws.WriteMessage(websocket.TextMessage, []byte(frame))
}

// readUntil reads until a frame holds marker and returns that frame (valid
// until the next read); a minute without it is an error.
func (c *perfClient) readUntil(marker string) ([]byte, error) {
	for {
		_ = c.ws.SetReadDeadline(time.Now().Add(time.Minute))
		_, r, err := c.ws.NextReader()
		if err != nil {
			return nil, fmt.Errorf("waiting for %s: %w", marker, err)
		}
		c.buf.Reset()
		if _, err := c.buf.ReadFrom(r); err != nil {
			return nil, fmt.Errorf("waiting for %s: %w", marker, err)
		}
		if bytes.Contains(c.buf.Bytes(), []byte(marker)) {
			return c.buf.Bytes(), nil
		}
	}
}

// call sends a request frame with id and waits for its reply.
func (c *perfClient) call(id int, method, params string) error {
	if err := c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)); err != nil {
		return err
	}
	_, err := c.readUntil(fmt.Sprintf(`"id":%d,`, id))
	return err
}

// join initializes c and subscribes it to chat, as a VS Code window would.
func (c *perfClient) join(clientID, chat string) error {
	if err := c.call(1, "initialize", fmt.Sprintf(`{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":%q}`, clientID)); err != nil {
		return fmt.Errorf("initialize %s: %w", clientID, err)
	}
	if err := c.call(2, "subscribe", fmt.Sprintf(`{"channel":%q}`, chat)); err != nil {
		return fmt.Errorf("subscribe %s to %s: %w", clientID, chat, err)
	}
	return nil
}

// turn dispatches one turn of perfPrompt in chat and waits for its ending.
func (c *perfClient) turn(chat, turnID string) error {
	if err := c.startTurn(chat, turnID, perfPrompt); err != nil {
		return err
	}
	_, err := c.readUntil(`"chat/turnComplete"`)
	return err
}

// startTurn dispatches one turn of prompt in chat.
func (c *perfClient) startTurn(chat, turnID, prompt string) error {
	c.seq++
	return c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":%q,"clientSeq":%d,"action":{"type":"chat/turnStarted","turnId":%q,"startedAt":"2026-12-06T00:00:00Z","message":{"text":%q,"origin":{"kind":"user"}}}}}`, chat, c.seq, turnID, prompt))
}

// readAll reads and drops every frame until the connection closes: a
// watcher, which must never back its connection up.
func (c *perfClient) readAll() {
	for {
		_, r, err := c.ws.NextReader()
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			return
		}
	}
}

// perfChats are chats of one server, each with its clients joined: the
// driver first, then the watchers.
type perfChats struct {
	uris    []string
	clients [][]*perfClient
}

// joinChats creates chats sessions on s (the raw servers answer
// createSession with an empty result) and joins perChat clients to each
// one's default chat, on a few goroutines: setting up thousands of
// clients one after another would take longer than the measurement.
func joinChats(b *testing.B, s *perfServer, name string, chats, perChat int) *perfChats {
	b.Helper()
	pc := &perfChats{uris: make([]string, chats), clients: make([][]*perfClient, chats)}
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	tag := h.Sum32() // each name's sessions their own
	const workers = 8
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				setup, err := dialPerf(s.url)
				if err != nil {
					return err
				}
				defer setup.ws.Close()
				if err := setup.call(1, "initialize", fmt.Sprintf(`{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"setup-%s-%d"}`, name, w)); err != nil {
					return err
				}
				for i := w; i < chats; i += workers {
					sess := fmt.Sprintf("script:/%08x-0000-4000-8000-%012d", tag, i)
					if err := setup.call(i+2, "createSession", fmt.Sprintf(`{"channel":%q,"provider":"script"}`, sess)); err != nil {
						return fmt.Errorf("create session %s: %w", sess, err)
					}
					pc.uris[i] = ahp.DefaultChatURI(sess)
					for j := range perChat {
						c, err := dialPerf(s.url)
						if err != nil {
							return err
						}
						b.Cleanup(func() { _ = c.ws.Close() })
						if err := c.join(fmt.Sprintf("%s-%d-%d", name, i, j), pc.uris[i]); err != nil {
							return err
						}
						pc.clients[i] = append(pc.clients[i], c)
					}
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatalf("join the %s server's chats: %v", s.kind, err)
		}
	}
	return pc
}

// recordTurn runs one turn of perfPrompt through ahpd and records what a
// subscriber of its chat read from the turn's echo to its ending, and the
// turn's body as ahpd stored it: the turn the raw servers replay. It
// returns the file the recording is written to.
func recordTurn(b *testing.B, ahpd *perfServer) string {
	return recordTurnOf(b, ahpd, "rec", perfPrompt)
}

// recordTurnOf is recordTurn for a turn of prompt, in a session of its
// own named after name.
func recordTurnOf(b *testing.B, ahpd *perfServer, name, prompt string) string {
	b.Helper()
	chats := joinChats(b, ahpd, name, 1, 2)
	chat, driver, recorder := chats.uris[0], chats.clients[0][0], chats.clients[0][1]
	rec := durableraw.Recording{TurnID: recordedTurnID, Channel: chat}
	err := driver.startTurn(chat, recordedTurnID, prompt)
	if err == nil {
		_, err = driver.readUntil(`"chat/turnComplete"`)
	}
	if err != nil {
		b.Fatal(err)
	}
	for {
		frame, err := recorder.readUntil("")
		if err != nil {
			b.Fatalf("record the turn: %v", err)
		}
		if len(rec.Frames) == 0 && !bytes.Contains(frame, []byte(recordedTurnID)) {
			continue // before the echo
		}
		rec.Frames = append(rec.Frames, string(frame))
		if bytes.Contains(frame, []byte(`"chat/turnComplete"`)) {
			break
		}
	}
	// Done with: left open and unread, ahpd would close them for not
	// answering its pings, in the middle of the measurement.
	_ = driver.ws.Close()
	_ = recorder.ws.Close()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(ahpd.dataDir, "ahpd.db")+"?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var state string
	if err := db.QueryRow(`SELECT state, body FROM turns WHERE chat = ? AND id = ?`, chat, recordedTurnID).Scan(&state, &rec.EndBody); err != nil {
		b.Fatalf("the recorded turn's stored row: %v", err)
	}
	if state != "complete" {
		b.Fatalf("the recorded turn is stored %s, want complete", state)
	}
	data, err := json.Marshal(rec)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("recorded turn: %d frames, %d bytes", len(rec.Frames), len(data))
	if os.Getenv("AHPD_BENCH_SHOW_RECORDING") != "" {
		b.Logf("the recording the raw servers replay: %s", data)
	}
	path := filepath.Join(b.TempDir(), "recording.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// startPerfAhpd starts `ahpd serve` (the script agent is its default
// provider) on a data dir of its own, taking up to maxConns connections.
func startPerfAhpd(b *testing.B, maxConns int) *perfServer {
	b.Helper()
	ahpdBin, _ := perfBinaries(b)
	dir := b.TempDir()
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		b.Fatal(err)
	}
	config := filepath.Join(dir, "config.json")
	if err := os.WriteFile(config, fmt.Appendf(nil, `{"maxConnections":%d}`, maxConns), 0o600); err != nil {
		b.Fatal(err)
	}
	return startPerfServer(b, serverAhpd, dir, ahpdBin, "serve", "--host", "127.0.0.1", "--port", "0",
		"--data-dir", dir, "--path", work, "--no-local-endpoint", "--log-level", "warn", "--config", config)
}

// startThree starts `ahpd serve` (the script agent is its default
// provider) taking up to maxConns connections, records a turn through it,
// and starts the durable raw and the bare servers replaying that turn.
func startThree(b *testing.B, maxConns int) map[string]*perfServer {
	b.Helper()
	_, rawBin := perfBinaries(b)
	ahpd := startPerfAhpd(b, maxConns)
	rec := recordTurn(b, ahpd)
	rawDir := b.TempDir()
	return map[string]*perfServer{
		serverAhpd: ahpd,
		serverRaw:  startPerfServer(b, serverRaw, rawDir, rawBin, "-recording", rec, "-db", filepath.Join(rawDir, "turns.db")),
		serverBare: startPerfServer(b, serverBare, b.TempDir(), rawBin, "-recording", rec),
	}
}

// serverOrder is the order each round runs the servers in.
var serverOrder = []string{serverAhpd, serverRaw, serverBare}

// perfTally is what the rounds measured of one server.
type perfTally struct {
	turns   int
	elapsed time.Duration
	cpu     time.Duration
	lat     []time.Duration
}

func (t *perfTally) perSecond() float64 { return float64(t.turns) / t.elapsed.Seconds() }

func (t *perfTally) cpuPerTurn() float64 {
	return float64(t.cpu.Nanoseconds()) / 1000 / float64(t.turns)
}

// percentile is the q-th quantile of the turns' latencies.
func (t *perfTally) percentile(q float64) time.Duration {
	slices.Sort(t.lat)
	return t.lat[min(len(t.lat)-1, int(q*float64(len(t.lat))))]
}

// closedLoop runs every chat's driver turn after turn (each waiting for
// its turn's end before the next) until stop, or for turns turns each when
// turns > 0, and adds what it measured to t.
func closedLoop(b *testing.B, s *perfServer, chats *perfChats, prefix string, turns int, d time.Duration, t *perfTally) {
	b.Helper()
	stop := time.Now().Add(d)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failed error
	cpu0, start := s.cpu(b), time.Now()
	for i, clients := range chats.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			var err error
			for n := 0; turns > 0 && n < turns || turns == 0 && time.Now().Before(stop); n++ {
				t0 := time.Now()
				if err = clients[0].turn(chats.uris[i], fmt.Sprintf("%s-%d-%d", prefix, i, n)); err != nil {
					break
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			defer mu.Unlock()
			t.lat = append(t.lat, mine...)
			t.turns += len(mine)
			if err != nil && failed == nil {
				failed = fmt.Errorf("%s server, chat %d: %w", s.kind, i, err)
			}
		}()
	}
	wg.Wait()
	t.elapsed += time.Since(start)
	t.cpu += s.cpu(b) - cpu0
	if failed != nil {
		b.Fatal(failed)
	}
}

// reportAgainst reports a figure of ahpd, the durable raw server and the
// bare server (name-unit each: ahpd-…, raw-…, bare-…) and ahpd's ratio to
// the durable raw server's (key-ratio, or ratio when key is empty).
func reportAgainst(b *testing.B, key, unit string, ahpd, raw, bare float64) {
	prefix, ratio := "", "ratio"
	if key != "" {
		prefix, ratio = key+"-", key+"-ratio"
	}
	b.ReportMetric(ahpd, "ahpd-"+prefix+unit)
	b.ReportMetric(raw, "raw-"+prefix+unit)
	b.ReportMetric(bare, "bare-"+prefix+unit)
	b.ReportMetric(ahpd/raw, ratio)
}

// BenchmarkTurnVsDurableRaw: one chat's turns in a closed loop (a turn,
// wait for its end, the next) on one client, through ahpd with the script
// agent, the durable raw server and the bare server, each in its own
// process; five rounds of 100 turns each, the servers alternating.
// Reported: turns per second (ratio goal ≥ 0.6 of the durable raw
// server's), the p50 (≤ 1.7×) and p99 of a turn, and each server
// process's CPU per turn.
func BenchmarkTurnVsDurableRaw(b *testing.B) {
	const rounds, turnsPerRound, warmUp = 5, 100, 20
	servers := startThree(b, 64)
	chats := map[string]*perfChats{}
	for _, kind := range serverOrder {
		chats[kind] = joinChats(b, servers[kind], "turn", 1, 1)
		closedLoop(b, servers[kind], chats[kind], "warm", warmUp, 0, &perfTally{})
	}
	tally := map[string]*perfTally{}
	for _, kind := range serverOrder {
		tally[kind] = &perfTally{}
	}
	b.ResetTimer()
	for i := range b.N {
		for r := range rounds {
			for _, kind := range serverOrder {
				closedLoop(b, servers[kind], chats[kind], fmt.Sprintf("t%d-%d", i, r), turnsPerRound, 0, tally[kind])
			}
		}
	}
	a, raw, bare := tally[serverAhpd], tally[serverRaw], tally[serverBare]
	reportAgainst(b, "", "turns/s", a.perSecond(), raw.perSecond(), bare.perSecond())
	µs := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	reportAgainst(b, "p50", "µs", µs(a.percentile(0.5)), µs(raw.percentile(0.5)), µs(bare.percentile(0.5)))
	reportAgainst(b, "p99", "µs", µs(a.percentile(0.99)), µs(raw.percentile(0.99)), µs(bare.percentile(0.99)))
	reportAgainst(b, "cpu", "µs/turn", a.cpuPerTurn(), raw.cpuPerTurn(), bare.cpuPerTurn())
}

// loadChats is how many chats BenchmarkLoadVsDurableRaw drives (four
// clients each): AHPD_BENCH_LOAD_CHATS, 1,000 in `make bench`, 50
// otherwise.
func loadChats() int {
	if v := os.Getenv("AHPD_BENCH_LOAD_CHATS"); v != "" {
		var n int
		if _, err := fmt.Sscan(v, &n); err == nil && n > 0 {
			return n
		}
	}
	return 50
}

// BenchmarkLoadVsDurableRaw: chats × 4 clients (one driver running turns
// in a closed loop, three watchers reading everything) on ahpd with the
// script agent, on the durable raw server and on the bare server, each in
// its own process; a turn on every chat first, not counted, then two
// rounds of 4 s each, the servers alternating. Reported: turns per second
// (goal ≥ 0.6 of the durable raw server's), the p99 of a turn (≤ 2×),
// each server process's peak RSS (≤ 2×) and CPU per turn.
func BenchmarkLoadVsDurableRaw(b *testing.B) {
	const rounds, roundFor = 2, 4 * time.Second
	n := loadChats()
	// Each client is a socket on both ends, three servers' worth.
	servers := startThree(b, 4*n+16)
	chats := map[string]*perfChats{}
	tally := map[string]*perfTally{}
	for _, kind := range serverOrder {
		chats[kind] = joinChats(b, servers[kind], "load", n, 4)
		for _, clients := range chats[kind].clients {
			for _, w := range clients[1:] {
				go w.readAll()
			}
		}
		tally[kind] = &perfTally{}
		// A turn on every chat first, not counted: the first turns after
		// the chats were joined, all at once, are a warm-up (the server's
		// heap and stacks growing to the load's), as in the one chat's
		// figure.
		closedLoop(b, servers[kind], chats[kind], "warm", 1, 0, &perfTally{})
	}
	b.ResetTimer()
	for i := range b.N {
		for r := range rounds {
			for _, kind := range serverOrder {
				closedLoop(b, servers[kind], chats[kind], fmt.Sprintf("l%d-%d", i, r), 0, roundFor, tally[kind])
			}
		}
	}
	a, raw, bare := tally[serverAhpd], tally[serverRaw], tally[serverBare]
	reportAgainst(b, "", "turns/s", a.perSecond(), raw.perSecond(), bare.perSecond())
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	reportAgainst(b, "p99", "ms", ms(a.percentile(0.99)), ms(raw.percentile(0.99)), ms(bare.percentile(0.99)))
	mib := func(s *perfServer) float64 { return s.peakRSS(b) / (1 << 20) }
	reportAgainst(b, "rss", "MiB", mib(servers[serverAhpd]), mib(servers[serverRaw]), mib(servers[serverBare]))
	reportAgainst(b, "cpu", "µs/turn", a.cpuPerTurn(), raw.cpuPerTurn(), bare.cpuPerTurn())
}
