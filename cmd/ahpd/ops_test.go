package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

// Tests of issue 17 (operators and scripts): every verb runs as the built
// binary; the client verbs talk to a live `ahpd serve` on port 0.

// ahpdRun runs the binary with args in an environment without a user
// config file (XDG_CONFIG_HOME is a fresh dir) plus env, and returns its
// stdout, stderr and exit code.
func ahpdRun(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(cleanEnv(t), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("run ahpd %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// cleanEnv is the test's environment without AHPD_* variables and with
// a config home of its own.
func cleanEnv(t *testing.T) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AHPD_") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "XDG_CONFIG_HOME="+t.TempDir())
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A bad value exits 2 with one line naming the key's full path, where the
// value came from, and why — from the file (unknown keys at every level,
// agents.* included), the environment and the flags.
func TestBadValueExitsTwoNamingKeyAndSource(t *testing.T) {
	cases := []struct {
		name   string
		file   string
		env    []string
		args   []string
		want   []string // in the one stderr line
		verbOK bool     // run serve too (must refuse before listening)
	}{
		{name: "unknown top key", file: `{"prot": 1}`, want: []string{"prot", "unknown key", "file "}},
		{name: "unknown key in agents.claude", file: `{"agents":{"claude":{"binry":"x"}}}`, want: []string{"agents.claude.binry", "unknown key", "file "}},
		{name: "unknown agent", file: `{"agents":{"clod":{}}}`, want: []string{"agents.clod", "unknown agent"}},
		{name: "unknown key in agents.acp item", file: `{"agents":{"acp":[{"name":"a","command":"b","cmd":"c"}]}}`, want: []string{"agents.acp[0].cmd", "unknown key"}},
		{name: "unknown key in agents.pi provider", file: `{"agents":{"pi":{"providers":{"p":{"baseUrl":"http://127.0.0.1:1","api":"x","models":[{"id":"m","colour":1}]}}}}}`, want: []string{"agents.pi.providers.p.models[0].colour", "unknown key"}},
		{name: "unknown key in a token", file: `{"tokens":[{"token":"t","principal":"user:a","grants":[],"admin":true}]}`, want: []string{"tokens[0].admin", "unknown key"}},
		{name: "stopEnds enum", file: `{"agents":{"claude":{"stopEnds":"sometimes"}}}`, want: []string{"agents.claude.stopEnds", "sometimes", "file "}, verbOK: true},
		{name: "a backend's own check", file: `{"agents":{"pi":{"providers":{"p":{"api":"x","models":[{"id":"m"}]}}}}}`, want: []string{"agents.pi", "baseUrl", "file "}, verbOK: true},
		{name: "bogus grant", file: `{"tokens":[{"token":"t","principal":"user:a","grants":["chat:read","chat:fly"]}]}`, want: []string{"tokens[0].grants[1]", "chat:fly", "file "}},
		{name: "negative replayLog", file: `{"replayLog":-1}`, want: []string{"replayLog", "-1", "file "}},
		{name: "negative turnsView", file: `{"turnsView":-3}`, want: []string{"turnsView", "file "}},
		{name: "chatIdleSeconds below -1", file: `{"chatIdleSeconds":-2}`, want: []string{"chatIdleSeconds", "file "}},
		{name: "wrong kind", file: `{"port":"9187"}`, want: []string{"port", "want a whole number", "file "}},
		{name: "closedChats enum", file: `{"closedChats":"sometimes"}`, want: []string{"closedChats", "hidden or delete"}},
		{name: "sandbox.default enum", file: `{"sandbox":{"default":"lax"}}`, want: []string{"sandbox.default", "off, workspace or strict", "lax"}, verbOK: true},
		{name: "unknown key in sandbox.backends", file: `{"sandbox":{"backends":{"claude":{"readwrite":["/x"]}}}}`, want: []string{"sandbox.backends.claude.readwrite", "unknown key"}},
		{name: "relative sandbox path", file: `{"sandbox":{"backends":{"claude":{"readOnly":["x"]}}}}`, want: []string{"sandbox.backends.claude", "not absolute"}},
		{name: "logFormat enum from env", env: []string{"AHPD_LOG_FORMAT=xml"}, want: []string{"logFormat", "env AHPD_LOG_FORMAT", "text or json"}},
		{name: "port from env", env: []string{"AHPD_PORT=abc"}, want: []string{"port", "env AHPD_PORT", "not a whole number"}},
		{name: "port flag abc", args: []string{"--port", "abc"}, want: []string{"port", "flag --port", "not a whole number"}, verbOK: true},
		{name: "port flag range", args: []string{"--port", "70000"}, want: []string{"port", "flag --port", "65535"}, verbOK: true},
		{name: "grace negative", args: []string{"--shutdown-grace-seconds", "-1"}, want: []string{"shutdownGraceSeconds", "flag --shutdown-grace-seconds"}},
		{name: "unknown flag", args: []string{"--colour"}, want: []string{"unknown flag", "--colour"}, verbOK: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			verbs := [][]string{{"config", "check"}}
			if c.verbOK {
				verbs = append(verbs, []string{"serve", "--data-dir", t.TempDir()})
			}
			for _, verb := range verbs {
				args := append([]string{}, verb...)
				if c.file != "" {
					args = append(args, "--config", writeConfig(t, c.file))
				}
				args = append(args, c.args...)
				_, stderr, code := ahpdRun(t, c.env, args...)
				if code != 2 {
					t.Fatalf("%v: exit %d, want 2; stderr %q", args, code, stderr)
				}
				line := strings.TrimSpace(stderr)
				if strings.Count(line, "\n") != 0 {
					t.Errorf("%v: want one line, got %q", args, line)
				}
				for _, w := range c.want {
					if !strings.Contains(line, w) {
						t.Errorf("%v: %q does not name %q", args, line, w)
					}
				}
			}
		})
	}
}

// An unknown verb exits 2.
func TestUnknownVerbExitsTwo(t *testing.T) {
	if _, stderr, code := ahpdRun(t, nil, "frobnicate"); code != 2 || !strings.Contains(stderr, "unknown command") {
		t.Fatalf("exit %d, stderr %q; want 2 and unknown command", code, stderr)
	}
	if _, _, code := ahpdRun(t, nil, "completion", "tcsh"); code != 2 {
		t.Fatalf("completion tcsh: exit %d, want 2", code)
	}
}

type shown struct {
	Config  map[string]json.RawMessage `json:"config"`
	Sources map[string]string          `json:"sources"`
	File    string                     `json:"file"`
}

func configShow(t *testing.T, env []string, args ...string) shown {
	t.Helper()
	out, stderr, code := ahpdRun(t, env, append([]string{"config", "show", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("config show: exit %d: %s", code, stderr)
	}
	var s shown
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("config show: %v\n%s", err, out)
	}
	return s
}

// Layers: defaults, then the file, then AHPD_* variables, then flags; each
// value's source is shown; a key only the file sets survives flags
// (attachmentFetchLimitBytes), and AHPD_CONFIG names the file.
func TestConfigPrecedence(t *testing.T) {
	file := writeConfig(t, `{"port": 1111, "turnsView": 7, "closedChats": "delete", "attachmentFetchLimitBytes": 5, "paths": ["/a"]}`)
	cases := []struct {
		name   string
		env    []string
		args   []string
		key    string
		want   string
		source string
	}{
		{"default", nil, nil, "replayLog", "8192", "default"},
		{"file over default", nil, []string{"--config", file}, "turnsView", "7", "file " + file},
		{"file key without a flag survives flags", nil, []string{"--config", file, "--port", "3"}, "attachmentFetchLimitBytes", "5", "file " + file},
		{"env over file", []string{"AHPD_PORT=2222"}, []string{"--config", file}, "port", "2222", "env AHPD_PORT"},
		{"flag over env", []string{"AHPD_PORT=2222"}, []string{"--config", file, "--port", "3333"}, "port", "3333", "flag --port"},
		{"env list", []string{"AHPD_PATHS=/x,/y"}, []string{"--config", file}, "paths", `["/x","/y"]`, "env AHPD_PATHS"},
		{"flag list over env", []string{"AHPD_PATHS=/x"}, []string{"--path", "/p", "--path", "/q"}, "paths", `["/p","/q"]`, "flag --path"},
		{"AHPD_CONFIG names the file", []string{"AHPD_CONFIG=" + file}, nil, "closedChats", `"delete"`, "file " + file},
		{"env bool", []string{"AHPD_WITHOUT_CONNECTION_TOKEN=true"}, nil, "withoutConnectionToken", "true", "env AHPD_WITHOUT_CONNECTION_TOKEN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := configShow(t, c.env, c.args...)
			var compact bytes.Buffer
			_ = json.Compact(&compact, s.Config[c.key])
			if got := compact.String(); got != c.want {
				t.Errorf("%s = %s, want %s", c.key, got, c.want)
			}
			src := s.Sources[c.key]
			if src == "" {
				// A list's source is its first item's.
				src = s.Sources[c.key+"[0]"]
			}
			if src != c.source {
				t.Errorf("source of %s = %q, want %q", c.key, src, c.source)
			}
		})
	}
	// The text form names the source on the key's line; secrets are <set>.
	out, _, code := ahpdRun(t, nil, "config", "show", "--config", file, "--connection-token", "s3cret")
	if code != 0 || !regexp.MustCompile(`(?m)^turnsView\s+7\s+file `).MatchString(out) || strings.Contains(out, "s3cret") || !strings.Contains(out, `"<set>"`) {
		t.Fatalf("config show text:\n%s", out)
	}
}

// config check has no side effects: a connection token file that does not
// exist is not created (serve creates it).
func TestConfigCheckWritesNothing(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "token")
	_, stderr, code := ahpdRun(t, nil, "config", "check", "--connection-token-file", tok, "--host", "0.0.0.0")
	if code != 0 {
		t.Fatalf("config check: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(tok); !os.IsNotExist(err) {
		t.Fatalf("config check created %s (%v)", tok, err)
	}
}

// serveProc is a running `ahpd serve` binary.
type serveProc struct {
	cmd    *exec.Cmd
	url    string
	stderr *lockedBuf
}

func serveBinary(t *testing.T, data, work string, args ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--port", "0", "--data-dir", data, "--path", work}, args...)...)
	cmd.Env = cleanEnv(t)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errb := &lockedBuf{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	first := make(chan string, 1)
	go func() {
		b := make([]byte, 0, 256)
		one := make([]byte, 1)
		for {
			if _, err := stdout.Read(one); err != nil {
				close(first)
				return
			}
			if one[0] == '\n' {
				first <- string(b)
				_, _ = io.Copy(io.Discard, stdout)
				return
			}
			b = append(b, one[0])
		}
	}()
	select {
	case l, ok := <-first:
		if !ok || !strings.HasPrefix(l, "listening ") {
			t.Fatalf("serve printed %q; stderr %s", l, errb.String())
		}
		return &serveProc{cmd: cmd, url: strings.TrimPrefix(l, "listening "), stderr: errb}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not listen within 30s")
	}
	return nil
}

// lockedBuf is a buffer a process writes while the test reads it.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (p *serveProc) httpURL() string { return "http" + strings.TrimPrefix(p.url, "ws") }

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The acceptance line: `ahpd send 'hello'` against a fresh `ahpd serve`
// prints the script agent's answer and exits 0; then /healthz, /readyz,
// /metrics after that turn, the 426 answer, and `ahpd sessions`.
func TestSendHelloThenHealthMetricsAnd426(t *testing.T) {
	p := serveBinary(t, t.TempDir(), t.TempDir())
	env := []string{"AHPD_URL=" + p.url}
	out, stderr, code := ahpdRun(t, env, "send", "hello")
	if code != 0 || out != "echo: hello\n" {
		t.Fatalf("send hello: exit %d, stdout %q, stderr %q; want echo: hello and 0", code, out, stderr)
	}

	if st, body := get(t, p.httpURL()+"/healthz", ""); st != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", st, body)
	}
	if st, body := get(t, p.httpURL()+"/readyz", ""); st != 200 {
		t.Errorf("/readyz: %d %q", st, body)
	}
	st, metrics := get(t, p.httpURL()+"/metrics", "")
	if st != 200 {
		t.Fatalf("/metrics: %d", st)
	}
	for _, want := range []string{
		`ahpd_turns_ended_total{ending="complete"} 1`,
		`ahpd_turns_ended_total{ending="error"} 0`,
		`ahpd_turns_started_total 1`,
		`ahpd_sessions 1`,
		`ahpd_open_chats 1`,
		`ahpd_slow_consumer_cuts_total 0`,
		`ahpd_otlp_log_subscriptions 0`,
		`ahpd_agent_processes{provider="script"} 0`,
		`ahpd_connections `,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, re := range []string{
		`(?m)^ahpd_deltas_sent_total [1-9]`,
		`(?m)^ahpd_store_commit_seconds_count [1-9]`,
		`(?m)^ahpd_replay_log_envelopes [1-9]`,
		`(?m)^ahpd_replay_log_bytes [1-9]`,
		`(?m)^ahpd_connections_accepted_total [1-9]`,
	} {
		if !regexp.MustCompile(re).MatchString(metrics) {
			t.Errorf("/metrics does not match %s", re)
		}
	}

	// "/" is the web console (internal/console); other plain paths are 426.
	if st, body := get(t, p.httpURL()+"/", ""); st != http.StatusOK || !strings.Contains(body, "ahpd console") {
		t.Errorf("GET /: %d, want 200 with the web console", st)
	}
	for _, path := range []string{"/index.html", "/api"} {
		st, body := get(t, p.httpURL()+path, "")
		if st != http.StatusUpgradeRequired || strings.Count(strings.TrimSpace(body), "\n") != 0 ||
			!strings.Contains(body, "websocket") || !strings.Contains(body, p.url) || !strings.Contains(body, "VS Code") {
			t.Errorf("GET %s: %d %q; want 426 with one line naming the websocket and VS Code", path, st, body)
		}
	}

	// Without a token, /metrics and /status keep the door's Host and
	// Origin rules: a rebound name or a foreign page is refused.
	for _, h := range []struct{ host, origin string }{{"evil.example", ""}, {"", "https://evil.example"}} {
		req, _ := http.NewRequest(http.MethodGet, p.httpURL()+"/status", nil)
		if h.host != "" {
			req.Host = h.host
		}
		if h.origin != "" {
			req.Header.Set("Origin", h.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("/status with Host %q Origin %q: %d, want 403", h.host, h.origin, resp.StatusCode)
		}
	}

	table, _, code := ahpdRun(t, env, "sessions")
	if code != 0 || !strings.Contains(table, "SESSION") || !strings.Contains(table, "script:/") || !strings.Contains(table, "hello") {
		t.Fatalf("sessions: exit %d\n%s", code, table)
	}
	js, _, code := ahpdRun(t, env, "sessions", "--json")
	var list []map[string]any
	if code != 0 || json.Unmarshal([]byte(js), &list) != nil || len(list) != 1 || list[0]["provider"] != "script" {
		t.Fatalf("sessions --json: exit %d %s", code, js)
	}
}

// With a token configured, /metrics and /status need it; /healthz and
// /readyz do not (a probe has no token); the websocket door still answers
// 401 without it.
func TestMetricsNeedTheToken(t *testing.T) {
	p := serveBinary(t, t.TempDir(), t.TempDir(), "--connection-token", "s3cret")
	for _, path := range []string{"/metrics", "/status"} {
		if st, _ := get(t, p.httpURL()+path, ""); st != 401 {
			t.Errorf("%s without token: %d, want 401", path, st)
		}
		if st, _ := get(t, p.httpURL()+path, "wrong"); st != 401 {
			t.Errorf("%s with a wrong token: %d, want 401", path, st)
		}
		if st, _ := get(t, p.httpURL()+path, "s3cret"); st != 200 {
			t.Errorf("%s with the token: %d, want 200", path, st)
		}
	}
	if st, _ := get(t, p.httpURL()+"/healthz", ""); st != 200 {
		t.Errorf("/healthz without token: %d", st)
	}
	if _, resp, err := ahptest.DialRaw(p.url, ""); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("websocket without token: %v %v, want 401", err, resp)
	}
	// send with the token from AHPD_TOKEN, and refused without it.
	if out, stderr, code := ahpdRun(t, []string{"AHPD_URL=" + p.url, "AHPD_TOKEN=s3cret"}, "send", "hi"); code != 0 || out != "echo: hi\n" {
		t.Fatalf("send with AHPD_TOKEN: %d %q %q", code, out, stderr)
	}
	if _, stderr, code := ahpdRun(t, nil, "send", "--url", p.url, "hi"); code != 1 || !strings.Contains(stderr, "401") {
		t.Fatalf("send without token: %d %q, want 1 naming 401", code, stderr)
	}
}

// SIGTERM mid-turn: both clients see the turn end cancelled after a
// notice that the host is stopping; the daemon exits 0; the restarted
// daemon reads the turn back cancelled, with the notice, not as
// hostRestarted.
func TestGracefulShutdownMidTurn(t *testing.T) {
	data, work := t.TempDir(), t.TempDir()
	p := serveBinary(t, data, work, "--shutdown-grace-seconds", "5")
	a := ahptest.Dial(t, p.url, "")
	a.Initialize("a", ahp.RootURI)
	sess := "script:/" + "0b6e0a44-3d1e-4c57-9b3e-4b8f1ad0c001"
	a.MustCall("createSession", map[string]any{"channel": sess, "provider": "script"})
	st, _ := a.Subscribe(sess)
	var ss ahp.SessionState
	if err := json.Unmarshal(st, &ss); err != nil {
		t.Fatal(err)
	}
	chat := ss.DefaultChat
	a.Subscribe(chat)
	b := ahptest.Dial(t, p.url, "")
	b.Initialize("b", ahp.RootURI)
	b.Subscribe(chat)
	a.Dispatch(chat, map[string]any{
		"type": "chat/turnStarted", "turnId": "t1", "startedAt": time.Now().UTC().Format(time.RFC3339Nano),
		"message": map[string]any{"text": "[hold] keep going", "origin": map[string]any{"kind": "user"}},
	})
	for _, c := range []*ahptest.Client{a, b} {
		c.AwaitAction(chat, "chat/responsePart")
	}
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*ahptest.Client{"a": a, "b": b} {
		notice := c.AwaitEnvelope("the stopping notice", func(e ahptest.Envelope) bool {
			var part struct {
				Kind    string `json:"kind"`
				Content string `json:"content"`
			}
			_ = e.Field("part", &part)
			return e.Channel == chat && e.Type() == "chat/responsePart" && part.Kind == "systemNotification" && strings.Contains(part.Content, "stopping")
		})
		end := c.AwaitAction(chat, "chat/turnCancelled")
		if notice.ServerSeq >= end.ServerSeq {
			t.Errorf("client %s: the notice (seq %d) came after the ending (seq %d)", name, notice.ServerSeq, end.ServerSeq)
		}
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("serve exited %v after SIGTERM, want 0; stderr:\n%s", err, p.stderr)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("shutdown took %s, over shutdownGraceSeconds 5", took)
	}

	p2 := serveBinary(t, data, work)
	c := ahptest.Dial(t, p2.url, "")
	c.Initialize("c", ahp.RootURI)
	c.Subscribe(sess)
	raw, _ := c.Subscribe(chat)
	var cs ahp.ChatState
	if err := json.Unmarshal(raw, &cs); err != nil {
		t.Fatal(err)
	}
	if len(cs.Turns) != 1 || cs.ActiveTurn != nil {
		t.Fatalf("after restart: %d turns, active %v: %s", len(cs.Turns), cs.ActiveTurn != nil, raw)
	}
	turn := cs.Turns[0]
	if turn.State != ahp.TurnCancelled {
		t.Fatalf("turn read back as %s, want cancelled (not hostRestarted): %s", turn.State, raw)
	}
	found := false
	for _, part := range turn.ResponseParts {
		if part.Kind == ahp.PartSystemNotification && strings.Contains(part.Content, "stopping") {
			found = true
		}
		if part.Kind == ahp.PartError {
			t.Errorf("read back with an error part: %+v", part)
		}
	}
	if !found {
		t.Errorf("the stopping notice was not stored: %s", raw)
	}
}

// start runs the daemon detached with a pid file and a log in the data
// dir; status reports it (text and --json); stop ends it; status then
// exits 3; restart starts it again.
func TestStartStatusStop(t *testing.T) {
	data, work := t.TempDir(), t.TempDir()
	flags := []string{"--data-dir", data, "--port", "0", "--path", work}
	out, stderr, code := ahpdRun(t, nil, append([]string{"start", "--json"}, flags...)...)
	if code != 0 {
		t.Fatalf("start: exit %d: %s", code, stderr)
	}
	var started struct {
		PID int    `json:"pid"`
		URL string `json:"url"`
		Log string `json:"log"`
	}
	if err := json.Unmarshal([]byte(out), &started); err != nil || started.PID == 0 {
		t.Fatalf("start --json: %q (%v)", out, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(started.PID, syscall.SIGKILL) })
	pidFile, _ := os.ReadFile(filepath.Join(data, "ahpd.pid"))
	if strings.TrimSpace(string(pidFile)) != strconv.Itoa(started.PID) {
		t.Errorf("ahpd.pid = %q, want %d", pidFile, started.PID)
	}
	if started.Log != filepath.Join(data, "ahpd.log") {
		t.Errorf("log = %q", started.Log)
	}
	if _, _, code := ahpdRun(t, nil, append([]string{"start"}, flags...)...); code != 1 {
		t.Errorf("a second start: exit %d, want 1 (already running)", code)
	}
	if _, _, code := ahpdRun(t, []string{"AHPD_URL=" + started.URL}, "send", "one turn"); code != 0 {
		t.Fatalf("send to the started daemon: exit %d", code)
	}
	js, stderr, code := ahpdRun(t, nil, "status", "--json", "--data-dir", data)
	var st struct {
		PID      int    `json:"pid"`
		URL      string `json:"url"`
		Version  string `json:"version"`
		Sessions int    `json:"sessions"`
		Agents   []struct {
			Provider  string `json:"provider"`
			Available bool   `json:"available"`
		} `json:"agents"`
	}
	if code != 0 || json.Unmarshal([]byte(js), &st) != nil {
		t.Fatalf("status --json: exit %d %q %s", code, js, stderr)
	}
	if st.PID != started.PID || st.URL != started.URL || st.Sessions != 1 || !strings.HasPrefix(st.Version, "0.") {
		t.Errorf("status = %+v, want pid %d at %s with 1 session", st, started.PID, started.URL)
	}
	script := false
	for _, a := range st.Agents {
		script = script || (a.Provider == "script" && a.Available)
	}
	if !script {
		t.Errorf("status agents %+v lack an available script agent", st.Agents)
	}
	text, _, code := ahpdRun(t, nil, "status", "--data-dir", data)
	if code != 0 || !strings.Contains(text, "pid "+strconv.Itoa(started.PID)) || !strings.Contains(text, "uptime") || !strings.Contains(text, "agent     script") {
		t.Errorf("status: exit %d\n%s", code, text)
	}

	out, stderr, code = ahpdRun(t, nil, "stop", "--data-dir", data)
	if code != 0 || !strings.Contains(out, "stopped pid "+strconv.Itoa(started.PID)) {
		t.Fatalf("stop: exit %d %q %q", code, out, stderr)
	}
	if syscall.Kill(started.PID, 0) == nil {
		t.Fatalf("pid %d still alive after stop", started.PID)
	}
	if _, err := os.Stat(filepath.Join(data, "ahpd.pid")); !os.IsNotExist(err) {
		t.Errorf("ahpd.pid left behind: %v", err)
	}
	if out, _, code := ahpdRun(t, nil, "status", "--data-dir", data); code != 3 || !strings.Contains(out, "not running") {
		t.Errorf("status after stop: exit %d %q, want 3 not running", code, out)
	}
	if _, _, code := ahpdRun(t, nil, "stop", "--data-dir", data); code != 3 {
		t.Errorf("stop when stopped: exit %d, want 3", code)
	}
	log, _ := os.ReadFile(filepath.Join(data, "ahpd.log"))
	if !strings.Contains(string(log), "listening ws://") || !strings.Contains(string(log), "turn ended") {
		t.Errorf("ahpd.log lacks the listening line or the turn's INFO line:\n%s", log)
	}

	out, stderr, code = ahpdRun(t, nil, append([]string{"restart"}, flags...)...)
	if code != 0 || !strings.HasPrefix(out, "restarted pid ") {
		t.Fatalf("restart: exit %d %q %q", code, out, stderr)
	}
	if _, _, code := ahpdRun(t, nil, "status", "--data-dir", data); code != 0 {
		t.Fatalf("status after restart: exit %d", code)
	}
	if _, _, code := ahpdRun(t, nil, "stop", "--data-dir", data); code != 0 {
		t.Fatalf("stop after restart: exit %d", code)
	}

	// A stale pid file whose pid now names another live process: status
	// says not running and stop signals nothing (the data dir's lock is
	// not held).
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	pid := strconv.Itoa(other.Process.Pid)
	if err := os.WriteFile(filepath.Join(data, "ahpd.pid"), []byte(pid+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "ahpd.json"), []byte(`{"pid":`+pid+`,"url":"ws://127.0.0.1:1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, code := ahpdRun(t, nil, "status", "--data-dir", data); code != 3 {
		t.Errorf("status with a stale pid file: exit %d, want 3", code)
	}
	if _, _, code := ahpdRun(t, nil, "stop", "--data-dir", data); code != 3 {
		t.Errorf("stop with a stale pid file: exit %d, want 3", code)
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("stop signalled the process a stale pid file named: %v", err)
	}
}

// doctor: the claude CLI configured but absent is a problem with its fix
// (exit 1); present, it is found with its version (exit 0; in make check,
// which installs it); the data dir, port, config and store are checked.
func TestDoctorClaudeAbsentAndPresent(t *testing.T) {
	data := t.TempDir()
	// Every agent CLI absent: doctor asks a found one its --version, and
	// outside make check no test runs a real agent CLI (where `make agents`
	// installed them, that took seconds per run).
	absent := writeConfig(t, `{"agents":{"claude":{"binary":"/nonexistent/claude"},"pi":{"binary":"/nonexistent/pi"}}}`)
	out, _, code := ahpdRun(t, nil, "doctor", "--config", absent, "--data-dir", data, "--port", "0")
	if code != 1 || !regexp.MustCompile(`(?m)^FAIL agent claude\s+not found`).MatchString(out) || !strings.Contains(out, "fix: install it, or set agents.claude") {
		t.Fatalf("doctor, claude absent: exit %d\n%s", code, out)
	}
	for _, want := range []string{"ok   config", "ok   data dir", "ok   port", "ok   store"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}

	t.Run("claude present", func(t *testing.T) {
		claude := fakemodel.Agent(t, "claude") // make check only; skips with the install hint
		present := writeConfig(t, `{"agents":{"claude":{"binary":`+strconv.Quote(claude)+`}}}`)
		out, _, code := ahpdRun(t, nil, "doctor", "--json", "--config", present, "--data-dir", data, "--port", "0")
		var rep struct {
			OK     bool `json:"ok"`
			Checks []struct {
				Name   string `json:"name"`
				OK     bool   `json:"ok"`
				Detail string `json:"detail"`
			} `json:"checks"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("doctor --json: %v\n%s", err, out)
		}
		for _, c := range rep.Checks {
			if c.Name == "agent claude" {
				if !c.OK || !strings.Contains(c.Detail, claude) || !regexp.MustCompile(`\(\d+\.\d+\.\d+`).MatchString(c.Detail) {
					t.Errorf("claude check = %+v, want found with its version", c)
				}
			}
		}
		if code != 0 || !rep.OK {
			t.Errorf("doctor with claude present: exit %d %s", code, out)
		}
	})

	// A port another process holds is a problem, with its fix.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	out, _, code = ahpdRun(t, nil, "doctor", "--config", absent, "--data-dir", t.TempDir(), "--port", port)
	if code != 1 || !strings.Contains(out, "FAIL port") || !strings.Contains(out, "fix: stop what listens there") {
		t.Errorf("doctor with the port taken: exit %d\n%s", code, out)
	}

	// A store SQLite cannot read is a problem too.
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "ahpd.db"), bytes.Repeat([]byte("not a database "), 400), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code = ahpdRun(t, nil, "doctor", "--config", absent, "--data-dir", broken, "--port", "0")
	if code != 1 || !strings.Contains(out, "FAIL store") {
		t.Errorf("doctor with a broken store: exit %d\n%s", code, out)
	}
}

// version and completion.
func TestVersionAndCompletion(t *testing.T) {
	out, _, code := ahpdRun(t, nil, "version")
	if code != 0 || !strings.HasPrefix(out, "ahpd 0.") || !strings.Contains(out, "AHP 1.0.0") || !strings.Contains(out, "go1.") {
		t.Fatalf("version: %d %q", code, out)
	}
	js, _, _ := ahpdRun(t, nil, "version", "--json")
	var v map[string]any
	if json.Unmarshal([]byte(js), &v) != nil || v["version"] == nil {
		t.Fatalf("version --json: %q", js)
	}
	for shell, marker := range map[string]string{"bash": "__start_ahpd", "zsh": "#compdef ahpd", "fish": "complete -c ahpd"} {
		out, _, code := ahpdRun(t, nil, "completion", shell)
		if code != 0 || !strings.Contains(out, marker) {
			t.Errorf("completion %s: exit %d, lacks %q", shell, code, marker)
		}
	}
}

// send's modes: --json envelopes; --new PROVIDER; --session; --chat; a
// turn that fails exits 1; Ctrl-C cancels the turn and exits 130; --queue
// waits behind a running turn; --steer goes into it. watch follows a chat
// another client drives.
func TestSendModesAndWatch(t *testing.T) {
	p := serveBinary(t, t.TempDir(), t.TempDir())
	env := []string{"AHPD_URL=" + p.url}

	out, _, code := ahpdRun(t, env, "send", "--json", "--new", "script", "json please")
	if code != 0 {
		t.Fatalf("send --json: exit %d", code)
	}
	var types []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct {
			Channel   string          `json:"channel"`
			Action    json.RawMessage `json:"action"`
			ServerSeq int64           `json:"serverSeq"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.ServerSeq == 0 {
			t.Fatalf("send --json line %q is not an envelope", line)
		}
		var a struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(e.Action, &a)
		types = append(types, a.Type)
	}
	if types[0] != "chat/turnStarted" || types[len(types)-1] != "chat/turnComplete" {
		t.Errorf("send --json types %v", types)
	}

	js, _, _ := ahpdRun(t, env, "sessions", "--json")
	var list []struct {
		Resource    string `json:"resource"`
		DefaultChat string `json:"defaultChat"`
	}
	if err := json.Unmarshal([]byte(js), &list); err != nil || len(list) != 1 {
		t.Fatalf("sessions: %s", js)
	}
	sess, chat := list[0].Resource, list[0].DefaultChat
	if out, _, code := ahpdRun(t, env, "send", "--session", sess, "second"); code != 0 || out != "echo: second\n" {
		t.Errorf("send --session: %d %q", code, out)
	}
	if out, _, code := ahpdRun(t, env, "send", "--chat", chat, "-"); code != 2 {
		t.Errorf("send - with empty stdin: %d %q, want 2", code, out)
	}
	stdin := exec.Command(binary, "send", "--chat", chat, "-")
	stdin.Env = append(cleanEnv(t), env...)
	stdin.Stdin = strings.NewReader("from stdin\n")
	if b, err := stdin.Output(); err != nil || string(b) != "echo: from stdin\n" {
		t.Errorf("send - : %v %q", err, b)
	}
	if _, stderr, code := ahpdRun(t, env, "send", "--chat", chat, "[error] please"); code != 1 || !strings.Contains(stderr, "turn failed") {
		t.Errorf("a failing turn: exit %d %q, want 1", code, stderr)
	}
	if _, _, code := ahpdRun(t, env, "send", "--queue", "--steer", "x"); code != 2 {
		t.Errorf("--queue --steer: exit %d, want 2", code)
	}

	// watch the chat while a held turn runs; Ctrl-C on send cancels it.
	watch := exec.Command(binary, "watch", chat)
	watch.Env = append(cleanEnv(t), env...)
	wout := &lockedBuf{}
	watch.Stdout = wout
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = watch.Process.Kill(); _ = watch.Wait() })
	// watch is subscribed once it shows a turn sent after it started.
	waitFor(t, "watch to show a turn", func() bool {
		if !strings.Contains(wout.String(), "> subscribed?") {
			ahpdRun(t, env, "send", "--chat", chat, "subscribed?")
		}
		return strings.Contains(wout.String(), "> subscribed?")
	})

	held := exec.Command(binary, "send", "--chat", chat, "[hold] held")
	held.Env = append(cleanEnv(t), env...)
	hout := &lockedBuf{}
	held.Stdout = hout
	if err := held.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the held turn's first text", func() bool { return strings.Contains(hout.String(), "echo") })

	if err := held.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := held.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Fatalf("send after Ctrl-C: %v, want exit 130", err)
	}

	// --queue waits behind a running turn (one waiting on a confirmation,
	// driven by a client here) and runs once it completes.
	c := ahptest.Dial(t, p.url, "")
	c.Initialize("driver", ahp.RootURI)
	c.Subscribe(chat)
	c.Dispatch(chat, map[string]any{
		"type": "chat/turnStarted", "turnId": "tc", "startedAt": time.Now().UTC().Format(time.RFC3339Nano),
		"message": map[string]any{"text": "[confirm] wait for me", "origin": map[string]any{"kind": "user"}},
	})
	c.AwaitAction(chat, "chat/toolCallReady")
	queued := exec.Command(binary, "send", "--chat", chat, "--queue", "queued one")
	queued.Env = append(cleanEnv(t), env...)
	qout := &lockedBuf{}
	queued.Stdout = qout
	if err := queued.Start(); err != nil {
		t.Fatal(err)
	}
	c.AwaitAction(chat, "chat/pendingMessageSet")
	// --steer goes into the running turn and follows it to its end.
	steer := exec.Command(binary, "send", "--chat", chat, "--steer", "and also this")
	steer.Env = append(cleanEnv(t), env...)
	sout := &lockedBuf{}
	steer.Stdout = sout
	if err := steer.Start(); err != nil {
		t.Fatal(err)
	}
	c.AwaitEnvelope("the steering message", func(e ahptest.Envelope) bool {
		var kind string
		_ = e.Field("kind", &kind)
		return e.Channel == chat && e.Type() == "chat/pendingMessageSet" && kind == "steering"
	})
	if env := c.AwaitEcho(c.Dispatch(chat, map[string]any{"type": "chat/toolCallConfirmed", "turnId": "tc", "toolCallId": "tc-tool-1", "approved": true})); env.RejectionReason != "" {
		t.Fatalf("confirm refused: %s", env.RejectionReason)
	}
	if err := steer.Wait(); err != nil {
		t.Errorf("send --steer: %v %q", err, sout.String())
	}
	if err := queued.Wait(); err != nil || qout.String() != "echo: queued one\n" {
		t.Errorf("send --queue: %v %q", err, qout.String())
	}
	waitFor(t, "watch to see the cancelled ending and the queued answer", func() bool {
		s := wout.String()
		return strings.Contains(s, "turnCancelled]") && strings.Contains(s, "echo: queued one")
	})
	if !strings.Contains(wout.String(), "> [hold] held") {
		t.Errorf("watch output lacks the held turn's start:\n%s", wout.String())
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond) // polls cond
	}
}
