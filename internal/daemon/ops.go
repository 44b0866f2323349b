package daemon

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/console"
	"github.com/ahpd/ahpd/internal/rpc"
	"github.com/ahpd/ahpd/internal/turns"
)

// The daemon answers plain HTTP on its websocket port, for operators:
//
//	GET /healthz  200 once the store and the listener are up (no token)
//	GET /readyz   200 once start-up recovery is done, 503 before and while stopping (no token)
//	GET /metrics  Prometheus text format (the token when one is configured)
//	GET /status   the daemon's status as JSON, for `ahpd status` (the token when one is configured)
//	GET /         the web console (internal/console), its assets under /console/ (no token: the
//	              page asks for one and presents it on its websocket)
//
// Any other request without a websocket upgrade is answered 426 with one
// line saying where to point VS Code. A websocket upgrade goes to the rpc
// server, whose door (token, Origin, Host) is unchanged.

// opsMux routes plain HTTP and hands upgrades to the rpc server.
func (d *Daemon) opsMux(ws http.Handler) http.Handler {
	ui := console.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isUpgrade(r) {
			ws.ServeHTTP(w, r)
			return
		}
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/healthz":
			d.healthz(w)
		case r.Method == http.MethodGet && r.URL.Path == "/readyz":
			d.readyz(w)
		case r.Method == http.MethodGet && r.URL.Path == "/metrics":
			if d.opsAuthorized(w, r) {
				d.metricsHandler.ServeHTTP(w, r)
			}
		case r.Method == http.MethodGet && r.URL.Path == "/status":
			if d.opsAuthorized(w, r) {
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(d.Status(r.Context()))
			}
		case (r.Method == http.MethodGet || r.Method == http.MethodHead) && console.Serves(r.URL.Path):
			ui.ServeHTTP(w, r)
		default:
			w.Header().Set("Upgrade", "websocket")
			w.Header().Set("Connection", "Upgrade")
			http.Error(w, "ahpd speaks the Agent Host Protocol over a websocket: point VS Code's chat.remoteAgentHosts at "+d.URL()+" (see ahpd serve's vscode settings line)", http.StatusUpgradeRequired)
		}
	})
}

func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket") ||
		strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade")
}

func (d *Daemon) healthz(w http.ResponseWriter) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := d.store.Ping(ctx); err != nil {
		http.Error(w, "store: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

func (d *Daemon) readyz(w http.ResponseWriter) {
	switch {
	case d.stopping.Load():
		http.Error(w, "stopping", http.StatusServiceUnavailable)
	case !d.ready.Load():
		http.Error(w, "recovering", http.StatusServiceUnavailable)
	default:
		_, _ = w.Write([]byte("ready\n"))
	}
}

// opsAuthorized lets /metrics and /status through when no token is
// configured (the daemon then serves loopback only, or was told it may
// not need one) and the Host and Origin pass the door policy, or when the request presents any configured token as a
// Bearer header or ?tkn=; it answers 401 otherwise. Counters and session
// counts are not secret the way chats are, but they are no business of
// anybody the websocket would refuse.
func (d *Daemon) opsAuthorized(w http.ResponseWriter, r *http.Request) bool {
	var sums [][sha256.Size]byte
	for _, t := range append([]string{d.cfg.ConnectionToken}, extraTokens(d.cfg)...) {
		if t != "" {
			sums = append(sums, sha256.Sum256([]byte(t)))
		}
	}
	if len(sums) == 0 {
		// No token: the websocket's door rules hold here too, so a page
		// reached through DNS rebinding (a foreign Host) or another site
		// (a foreign Origin) reads nothing.
		door := rpc.DoorPolicy{AllowedOrigins: d.cfg.AllowedOrigins, AllowedHosts: d.cfg.AllowedHosts}
		if v := door.Check(r.Host, r.Header.Get("Origin"), false); v.Status != 0 {
			http.Error(w, "forbidden: "+v.Reason, v.Status)
			return false
		}
		return true
	}
	presented := r.URL.Query().Get("tkn")
	if scheme, tok, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " "); ok && strings.EqualFold(scheme, "Bearer") {
		presented = strings.TrimSpace(tok)
	}
	if presented != "" {
		got := sha256.Sum256([]byte(presented))
		match := 0
		for _, s := range sums {
			match |= subtle.ConstantTimeCompare(got[:], s[:])
		}
		if match == 1 {
			return true
		}
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="ahpd"`)
	http.Error(w, "unauthorized: this ahpd needs a connection token (Authorization: Bearer or ?tkn=)", http.StatusUnauthorized)
	return false
}

// metrics are the daemon's Prometheus collectors.
type metrics struct {
	turnsEnded *prometheus.CounterVec
	turnsStart prometheus.Counter
	deltasSent prometheus.Counter
	commitSecs prometheus.Histogram
}

// turnEndings are the labels of ahpd_turns_ended_total.
var turnEndings = []string{"complete", "cancelled", "error"}

// newMetrics registers every collector on a registry of the daemon's own
// (two daemons in one test process do not share counters) and hooks the
// bus and the store.
func (d *Daemon) newMetrics() http.Handler {
	reg := prometheus.NewRegistry()
	m := &metrics{
		turnsEnded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ahpd_turns_ended_total", Help: "Turns ended, by ending (complete, cancelled, error).",
		}, []string{"ending"}),
		turnsStart: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ahpd_turns_started_total", Help: "Turns started.",
		}),
		deltasSent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ahpd_deltas_sent_total", Help: "chat/delta envelopes queued to connections (one per subscriber).",
		}),
		commitSecs: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "ahpd_store_commit_seconds", Help: "Time from a store Commit to its transaction committed.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
	}
	for _, label := range turnEndings {
		m.turnsEnded.WithLabelValues(label)
	}
	d.env.Bus.Observe(func(channel string, a ahp.Action, delivered int) {
		switch a := a.(type) {
		case ahp.ChatDelta:
			m.deltasSent.Add(float64(delivered))
		case ahp.ChatTurnStarted:
			m.turnsStart.Inc()
			d.log.Info("turn started", "chat", channel, "turn", a.TurnID, "sender", a.Message.Meta[turns.SenderMetaKey])
		case ahp.ChatTurnComplete:
			m.turnsEnded.WithLabelValues("complete").Inc()
			d.log.Info("turn ended", "chat", channel, "turn", a.TurnID, "ending", "complete", "durationMs", a.Duration)
		case ahp.ChatTurnCancelled:
			m.turnsEnded.WithLabelValues("cancelled").Inc()
			d.log.Info("turn ended", "chat", channel, "turn", a.TurnID, "ending", "cancelled", "durationMs", a.Duration)
		case ahp.ChatError:
			m.turnsEnded.WithLabelValues("error").Inc()
			d.log.Info("turn ended", "chat", channel, "turn", a.TurnID, "ending", "error", "durationMs", a.Duration)
		}
	})
	d.store.ObserveCommits(func(took time.Duration) { m.commitSecs.Observe(took.Seconds()) })
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	counter := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f)
	}
	reg.MustRegister(
		m.turnsEnded, m.turnsStart, m.deltasSent, m.commitSecs,
		gauge("ahpd_connections", "Websocket connections open now.", func() float64 { return float64(d.rpc.Stats().Connections) }),
		counter("ahpd_connections_accepted_total", "Websocket upgrades accepted.", func() float64 { return float64(d.rpc.Stats().Accepted) }),
		counter("ahpd_slow_consumer_cuts_total", "Connections cut because they did not read fast enough.", func() float64 { return float64(d.rpc.Stats().SlowConsumers) }),
		gauge("ahpd_sessions", "Sessions the host holds.", func() float64 { return float64(d.host.SessionCount()) }),
		gauge("ahpd_open_chats", "Chat actors loaded now.", func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			return float64(d.host.OpenChats(ctx))
		}),
		gauge("ahpd_replay_log_envelopes", "Envelopes the reconnect replay log holds.", func() float64 { n, _ := d.env.Bus.LogSize(); return float64(n) }),
		gauge("ahpd_replay_log_bytes", "Bytes of the envelopes the replay log holds.", func() float64 { _, b := d.env.Bus.LogSize(); return float64(b) }),
		gauge("ahpd_otlp_log_subscriptions", "OTLP log channel subscriptions open now (ahp-otlp://logs/{level}).", func() float64 { return float64(d.logs.Stats().Subscribers) }),
		counter("ahpd_otlp_log_records_dropped_total", "Log records an OTLP log subscriber lost to its full buffer.", func() float64 { return float64(d.logs.Stats().Dropped) }),
		gauge("ahpd_store_pending_ops", "Store writes queued and not yet done.", func() float64 { return float64(d.store.Stats().Pending) }),
		gauge("ahpd_agent_slots_held", "Agent process slots held (maxAgentProcesses): chats whose agent conversation is open.", func() float64 { n, _ := d.env.AgentSlots.Stats(); return float64(n) }),
		gauge("ahpd_agent_slots_waiting", "Chats whose turn waits for an agent process slot.", func() float64 { _, n := d.env.AgentSlots.Stats(); return float64(n) }),
		&agentProcs{d: d, desc: prometheus.NewDesc("ahpd_agent_processes", "Agent processes running as the daemon's children, by provider.", []string{"provider"}, nil)},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// agentProcs counts the daemon's child processes by provider at scrape
// time, from /proc: every agent backend runs its CLI as a child of the
// daemon. A child is counted under the first provider whose name appears
// in its command line, or "other".
type agentProcs struct {
	d    *Daemon
	desc *prometheus.Desc
}

func (a *agentProcs) Describe(ch chan<- *prometheus.Desc) { ch <- a.desc }

func (a *agentProcs) Collect(ch chan<- prometheus.Metric) {
	counts := map[string]int{}
	providers := a.d.providers
	for _, p := range providers {
		counts[p] = 0
	}
	for _, cmdline := range childCmdlines(os.Getpid()) {
		label := "other"
		for _, p := range providers {
			if strings.Contains(cmdline, p) {
				label = p
				break
			}
		}
		counts[label]++
	}
	for _, p := range sortedKeys(counts) {
		ch <- prometheus.MustNewConstMetric(a.desc, prometheus.GaugeValue, float64(counts[p]), p)
	}
}

// childCmdlines returns the command lines of pid's direct children (Linux
// /proc; none elsewhere).
func childCmdlines(pid int) []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command name is in parentheses and may hold spaces: the
		// fields after the last ')' are state, ppid, ...
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(child), "cmdline"))
		out = append(out, strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return out
}

// StatusInfo is what GET /status and `ahpd status --json` report.
type StatusInfo struct {
	PID           int           `json:"pid"`
	Address       string        `json:"address"`
	URL           string        `json:"url"`
	Version       string        `json:"version"`
	StartedAt     time.Time     `json:"startedAt"`
	UptimeSeconds int64         `json:"uptimeSeconds"`
	Sessions      int           `json:"sessions"`
	OpenChats     int           `json:"openChats"`
	RunningTurns  int           `json:"runningTurns"`
	Connections   int           `json:"connections"`
	Agents        []AgentStatus `json:"agents"`
}

// AgentStatus is one backend and whether it can run here.
type AgentStatus struct {
	Provider    string `json:"provider"`
	Available   bool   `json:"available"`
	Unavailable string `json:"unavailable,omitempty"`
}

// Status reports the daemon's state now.
func (d *Daemon) Status(ctx context.Context) StatusInfo {
	s := StatusInfo{
		PID: os.Getpid(), Address: d.Addr(), URL: d.URL(), Version: VersionString(),
		StartedAt: d.started, UptimeSeconds: int64(time.Since(d.started).Seconds()),
		Sessions: d.host.SessionCount(), OpenChats: d.host.OpenChats(ctx),
		Connections: d.rpc.Stats().Connections,
	}
	if running, err := d.store.RunningTurns(ctx); err == nil {
		s.RunningTurns = len(running)
	}
	for _, p := range d.providers {
		a, _ := d.agents.Get(p)
		info := a.Info(ctx)
		s.Agents = append(s.Agents, AgentStatus{Provider: p, Available: info.Unavailable == "", Unavailable: info.Unavailable})
	}
	sort.Slice(s.Agents, func(i, j int) bool { return s.Agents[i].Provider < s.Agents[j].Provider })
	return s
}

// VersionString is the version with the commit and build date the Go
// toolchain stamped into the binary (runtime/debug.ReadBuildInfo), when
// it did.
func VersionString() string {
	v := Version
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	var rev, when, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += " commit " + rev + dirty
	}
	if when != "" {
		v += " built " + when
	}
	if bi.GoVersion != "" {
		v += " " + bi.GoVersion
	}
	return v
}

// Shutdown is the graceful stop (SIGTERM, SIGINT, `ahpd stop`): it stops
// accepting connections, ends every running turn with chat/turnCancelled
// and a notice that the host is stopping (stored, and sent to every client
// while their connections are still open), then closes the connections,
// stops the actors and flushes the store. ctx bounds it
// (shutdownGraceSeconds); past it, what is left is cut as Close cuts it.
func (d *Daemon) Shutdown(ctx context.Context) error {
	// First, so nobody finds a daemon that is going away.
	d.RemoveLocalEndpoints()
	d.stopping.Store(true)
	d.stopTools()
	// Closing the listener refuses new connections; the websockets already
	// open are hijacked, so this does not wait for them.
	if err := d.http.Shutdown(ctx); err != nil {
		d.log.Warn("stop accepting", "err", err)
	}
	if err := d.host.CancelTurnsForShutdown(ctx); err != nil {
		d.log.Warn("cancel running turns for shutdown", "err", err)
	}
	// Close the connections (after what is queued for them), then end any
	// turn a client started meanwhile the same way: nobody sees that one,
	// but it is stored cancelled rather than left to read back as
	// interrupted.
	if err := d.rpc.Shutdown(ctx); err != nil {
		d.log.Warn("close connections", "err", err)
	}
	if err := d.host.CancelTurnsForShutdown(ctx); err != nil {
		d.log.Warn("cancel running turns for shutdown", "err", err)
	}
	return d.Close(ctx)
}

// PIDFile is <data dir>/ahpd.pid: the running daemon's pid, one line.
func PIDFile(dataDir string) string { return filepath.Join(dataDir, "ahpd.pid") }

// InfoFile is <data dir>/ahpd.json: the running daemon's pid, URL and start
// time, for `ahpd status` and `ahpd stop`.
func InfoFile(dataDir string) string { return filepath.Join(dataDir, "ahpd.json") }

// RunInfo is what InfoFile holds.
type RunInfo struct {
	PID       int       `json:"pid"`
	URL       string    `json:"url"`
	StartedAt time.Time `json:"startedAt"`
	Version   string    `json:"version"`
}

func (d *Daemon) writePIDFile() error {
	info, _ := json.Marshal(RunInfo{PID: os.Getpid(), URL: d.URL(), StartedAt: d.started, Version: Version})
	if err := os.WriteFile(InfoFile(d.cfg.DataDir), append(info, '\n'), 0o600); err != nil {
		return err
	}
	return os.WriteFile(PIDFile(d.cfg.DataDir), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
}

// removePIDFile removes the files once the daemon has stopped, unless
// another process has written its own since.
func (d *Daemon) removePIDFile() {
	if b, err := os.ReadFile(PIDFile(d.cfg.DataDir)); err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(os.Getpid()) {
		_ = os.Remove(PIDFile(d.cfg.DataDir))
		_ = os.Remove(InfoFile(d.cfg.DataDir))
	}
}

// DataDirHeld reports whether a daemon holds dir's lock now. It is how
// status and stop tell a live daemon from a stale pid file whose pid was
// reused by another process: the kernel drops the lock when its holder
// dies, however it dies.
func DataDirHeld(dir string) bool {
	path := filepath.Join(dir, lockName)
	if _, err := os.Stat(path); err != nil {
		return false
	}
	l := flock.New(path)
	ok, err := l.TryLock()
	if err != nil {
		return false
	}
	if ok {
		_ = l.Unlock()
		return false
	}
	return true
}
