package daemon_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/script"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// testEnv is one in-process daemon with its own data dir and served dir.
type testEnv struct {
	t       *testing.T
	cfg     daemon.Config
	d       *daemon.Daemon
	agents  *agent.Registry
	script  *script.Script
	workDir string
	// quiet discards the daemon's log instead of keeping it in t.Log.
	quiet bool
	// options are the daemon options besides the agents and the logger
	// (a test's clock, the scheduler's tick).
	options daemon.Options
}

type tlogWriter struct{ t testing.TB }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

func newEnv(t *testing.T, mutate ...func(*daemon.Config)) *testEnv {
	t.Helper()
	return newScriptEnv(t, script.Options{SlowDelay: 20 * time.Millisecond}, false, mutate...)
}

// newScriptEnv starts a daemon whose agent is a script agent with opts;
// quiet discards the daemon's log instead of keeping it in t.Log, for a
// test whose measure the kept log would distort (the soak's heap).
func newScriptEnv(t *testing.T, opts script.Options, quiet bool, mutate ...func(*daemon.Config)) *testEnv {
	t.Helper()
	sc := script.New(opts)
	reg, err := agent.NewRegistry(sc)
	if err != nil {
		t.Fatal(err)
	}
	return startEnv(t, &testEnv{t: t, agents: reg, workDir: t.TempDir(), quiet: quiet, script: sc}, mutate...)
}

// newEnvWith starts a daemon offering the agents of reg.
func newEnvWith(t *testing.T, reg *agent.Registry, mutate ...func(*daemon.Config)) *testEnv {
	t.Helper()
	return startEnv(t, &testEnv{t: t, agents: reg, workDir: t.TempDir()}, mutate...)
}

func startEnv(t *testing.T, e *testEnv, mutate ...func(*daemon.Config)) *testEnv {
	t.Helper()
	e.cfg = daemon.Defaults()
	e.cfg.Port = 0
	e.cfg.DataDir = t.TempDir()
	e.cfg.Paths = []string{e.workDir}
	for _, m := range mutate {
		m(&e.cfg)
	}
	if len(e.cfg.Tokens) > 0 && e.cfg.ConnectionToken == "" {
		// Once any token exists every upgrade needs one; the tests' own
		// clients connect as root with this one.
		e.cfg.ConnectionToken = "root-token"
	}
	e.start()
	t.Cleanup(func() { e.stop() })
	return e
}

func (e *testEnv) logger() *slog.Logger {
	if e.quiet {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(tlogWriter{e.t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (e *testEnv) start() {
	e.t.Helper()
	cfg := e.cfg
	cfg.Paths = append([]string(nil), e.cfg.Paths...)
	if m := os.Getenv("AHPD_TEST_SANDBOX"); m != "" && cfg.Sandbox.Default == "" {
		// The whole suite, real CLIs included, run sandboxed:
		// AHPD_TEST_SANDBOX=workspace (docs/SECURITY.md "Sandbox").
		cfg.Sandbox.Default = m
	}
	o := e.options
	o.Agents, o.Logger = e.agents, e.logger()
	d, err := daemon.Start(context.Background(), cfg, o)
	if err != nil {
		e.t.Fatalf("start daemon: %v", err)
	}
	e.d = d
}

func (e *testEnv) stop() {
	if e.d == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.d.Close(ctx); err != nil {
		e.t.Errorf("close daemon: %v", err)
	}
	e.d = nil
}

// restart stops the daemon and starts a new one on the same data dir.
func (e *testEnv) restart() {
	e.t.Helper()
	e.stop()
	e.start()
}

// client dials and initializes a client subscribed to the root channel.
func (e *testEnv) client(id string) *ahptest.Client {
	e.t.Helper()
	c := ahptest.Dial(e.t, e.d.URL(), e.cfg.ConnectionToken)
	c.Initialize(id, ahp.RootURI)
	return c
}

// createSession creates a session and returns its URI and default chat.
func (e *testEnv) createSession(c *ahptest.Client, uri string) (sessionURI, defaultChat string) {
	e.t.Helper()
	provider := "script"
	if ps := e.agents.Providers(); len(ps) == 1 {
		provider = ps[0]
	}
	c.MustCall("createSession", map[string]any{"channel": uri, "provider": provider})
	st, _ := c.Subscribe(uri)
	var s ahp.SessionState
	if err := json.Unmarshal(st, &s); err != nil {
		e.t.Fatalf("session state: %v", err)
	}
	if s.DefaultChat == "" {
		e.t.Fatalf("session %s has no default chat: %s", uri, st)
	}
	return uri, s.DefaultChat
}

func chatState(t testing.TB, raw json.RawMessage) ahp.ChatState {
	t.Helper()
	var s ahp.ChatState
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("chat state: %v\n%s", err, raw)
	}
	return s
}

func turnStarted(id, text string) map[string]any {
	return map[string]any{
		"type": "chat/turnStarted", "turnId": id, "startedAt": time.Now().UTC().Format(time.RFC3339Nano),
		"message": map[string]any{"text": text, "origin": map[string]any{"kind": "user"}},
	}
}

// sendTurn starts a turn and waits until it ended, returning the ending.
func sendTurn(t testing.TB, c *ahptest.Client, chat, id, text string) ahptest.Envelope {
	t.Helper()
	c.Dispatch(chat, turnStarted(id, text))
	return awaitEnd(t, c, chat, id)
}

func awaitEnd(t testing.TB, c *ahptest.Client, chat, id string) ahptest.Envelope {
	t.Helper()
	return c.AwaitEnvelope("end of turn "+id, func(e ahptest.Envelope) bool {
		if e.Channel != chat {
			return false
		}
		switch e.Type() {
		case "chat/turnComplete", "chat/error", "chat/turnCancelled":
			var tid string
			_ = e.Field("turnId", &tid)
			return tid == id
		}
		return false
	})
}

func sessionList(t testing.TB, c *ahptest.Client) []ahp.SessionSummary {
	t.Helper()
	var res ahp.ListSessionsResult
	if err := json.Unmarshal(c.MustCall("listSessions", map[string]any{"channel": ahp.RootURI}), &res); err != nil {
		t.Fatal(err)
	}
	return res.Items
}

func jsonUnmarshal(raw []byte, v any) error { return json.Unmarshal(raw, v) }

// benchEnv starts a daemon for a benchmark.
func benchEnv(b *testing.B, reg *agent.Registry, mutate ...func(*daemon.Config)) *testEnv {
	b.Helper()
	cfg := daemon.Defaults()
	cfg.Port = 0
	cfg.DataDir = benchDataDir(b)
	cfg.Paths = []string{b.TempDir()}
	for _, m := range mutate {
		m(&cfg)
	}
	d, err := daemon.Start(context.Background(), cfg, daemon.Options{Agents: reg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = d.Close(ctx)
	})
	return &testEnv{d: d, agents: reg}
}

func benchDataDir(b *testing.B) string {
	if d := os.Getenv("AHPD_BENCH_DATA"); d != "" {
		dir, err := os.MkdirTemp(d, "bench")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}
