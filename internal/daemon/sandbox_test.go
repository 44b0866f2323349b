package daemon_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/sandbox"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// requireLandlock skips where the kernel cannot confine: these tests run
// the real launcher on the real kernel.
func requireLandlock(t *testing.T) {
	t.Helper()
	if ok, why := sandbox.NewSite(sandbox.Site{}).Available(sandbox.Workspace); !ok {
		t.Skipf("no sandbox here: %s", why)
	}
}

// createSandboxed creates a script session whose config asks for mode
// and returns its default chat.
func createSandboxed(t *testing.T, e *testEnv, c *ahptest.Client, uri, mode string) string {
	t.Helper()
	c.MustCall("createSession", map[string]any{"channel": uri, "provider": "script", "config": map[string]any{"sandbox": mode}})
	st, _ := c.Subscribe(uri)
	var s ahp.SessionState
	if err := json.Unmarshal(st, &s); err != nil || s.DefaultChat == "" {
		t.Fatalf("session %s: %v %s", uri, err, st)
	}
	c.Subscribe(s.DefaultChat)
	return s.DefaultChat
}

// readFile is a file's content, "" when it does not exist.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

func TestSandboxWorkspaceConfinesBangCommands(t *testing.T) {
	requireLandlock(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.WriteFile(filepath.Join(home, "notes.txt"), []byte("home notes"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	e := newEnv(t)
	c := e.client("c1")
	chat := createSandboxed(t, e, c, "ahp-session:/sandboxed", "workspace")
	w := e.workDir

	sendTurn(t, c, chat, "in", "!echo inside > inside.txt")
	if got := readFile(t, filepath.Join(w, "inside.txt")); got != "inside\n" {
		t.Fatalf("a write inside the session's folder: %q", got)
	}
	sendTurn(t, c, chat, "out", "!echo out 2> out.err > "+filepath.Join(outside, "escape.txt"))
	if _, err := os.Stat(filepath.Join(outside, "escape.txt")); !os.IsNotExist(err) {
		t.Fatalf("a write outside the session's folders left a file (%v)", err)
	}
	if got := readFile(t, filepath.Join(w, "out.err")); !strings.Contains(got, "Permission denied") {
		t.Fatalf("the write outside said %q, want Permission denied (EACCES)", got)
	}
	db := filepath.Join(e.cfg.DataDir, "ahpd.db")
	sendTurn(t, c, chat, "db", "!cat "+db+" > dbcopy 2> db.err")
	if got := readFile(t, filepath.Join(w, "dbcopy")); got != "" {
		t.Fatalf("a ! command read the daemon's store: %d bytes", len(got))
	}
	if got := readFile(t, filepath.Join(w, "db.err")); !strings.Contains(got, "Permission denied") {
		t.Fatalf("reading the data dir said %q, want Permission denied", got)
	}
	// Workspace reads $HOME: the same read strict refuses below works here.
	sendTurn(t, c, chat, "home", "!cat "+filepath.Join(home, "notes.txt")+" > notes.copy")
	if got := readFile(t, filepath.Join(w, "notes.copy")); got != "home notes" {
		t.Fatalf("workspace read of $HOME: %q", got)
	}
	sendTurn(t, c, chat, "tmp", `!echo "$TMPDIR" > tmpdir.txt`)
	if got := strings.TrimSpace(readFile(t, filepath.Join(w, "tmpdir.txt"))); !strings.HasPrefix(got, filepath.Join(e.cfg.DataDir, "tmp")+"/") {
		t.Fatalf("TMPDIR = %q, want the session's own under %s", got, filepath.Join(e.cfg.DataDir, "tmp"))
	}

	strict := createSandboxed(t, e, c, "ahp-session:/strict", "strict")
	sendTurn(t, c, strict, "home", "!cat "+filepath.Join(home, "notes.txt")+" > strict.copy 2> strict.err")
	if got := readFile(t, filepath.Join(w, "strict.copy")); got != "" {
		t.Fatalf("strict read a file of $HOME: %q", got)
	}
	if got := readFile(t, filepath.Join(w, "strict.err")); !strings.Contains(got, "Permission denied") {
		t.Fatalf("strict's read of $HOME said %q, want Permission denied", got)
	}

	// Disposing the session removes its temp dir.
	tmpdir := strings.TrimSpace(readFile(t, filepath.Join(w, "tmpdir.txt")))
	if _, err := os.Stat(tmpdir); err != nil {
		t.Fatalf("the session's temp dir: %v", err)
	}
	c.MustCall("disposeSession", map[string]any{"channel": "ahp-session:/sandboxed"})
	if _, err := os.Stat(tmpdir); !os.IsNotExist(err) {
		t.Fatalf("disposeSession left the session's temp dir %s (%v)", tmpdir, err)
	}

	// A session without the property runs as before: unconfined.
	_, plain := e.createSession(c, "ahp-session:/plain")
	c.Subscribe(plain)
	sendTurn(t, c, plain, "out", "!echo out > "+filepath.Join(outside, "free.txt"))
	if got := readFile(t, filepath.Join(outside, "free.txt")); got != "out\n" {
		t.Fatalf("an unsandboxed session's write: %q", got)
	}
}

func TestSandboxUnavailableRefusesCreateSession(t *testing.T) {
	defer sandbox.SetUnavailableForTest("switched off by the test")()
	e := newEnv(t)
	c := e.client("c1")
	_, rpcErr := c.Call("createSession", map[string]any{"channel": "ahp-session:/refused", "provider": "script", "config": map[string]any{"sandbox": "workspace"}})
	if rpcErr == nil || !strings.Contains(rpcErr.Message, "workspace is unavailable here") || !strings.Contains(rpcErr.Message, "switched off by the test") {
		t.Fatalf("createSession asking for workspace without Landlock: %+v; want a refusal with the reason", rpcErr)
	}
	if got := sessionList(t, c); len(got) != 0 {
		t.Fatalf("the refused session was stored: %+v", got)
	}
	raw := c.MustCall("resolveSessionConfig", map[string]any{"channel": ahp.RootURI, "provider": "script"})
	var res struct {
		Schema struct {
			Properties map[string]struct {
				Default          string   `json:"default"`
				Enum             []string `json:"enum"`
				EnumLabels       []string `json:"enumLabels"`
				EnumDescriptions []string `json:"enumDescriptions"`
			} `json:"properties"`
		} `json:"schema"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	p := res.Schema.Properties["sandbox"]
	if p.Default != "off" || len(p.EnumLabels) != 3 || p.EnumLabels[1] != "Workspace (unavailable)" || !strings.Contains(p.EnumDescriptions[1], "switched off by the test") {
		t.Fatalf("resolveSessionConfig's sandbox property: %+v\n%s", p, raw)
	}
	// Off still runs.
	e.createSession(c, "ahp-session:/off")
}

func TestSandboxRefusesAFolderHoldingTheDataDir(t *testing.T) {
	requireLandlock(t)
	work := t.TempDir()
	e := newEnvWith(t, newEnv(t).agents, func(cfg *daemon.Config) {
		cfg.Paths = []string{work}
		cfg.DataDir = filepath.Join(work, ".ahpd")
	})
	c := e.client("c1")
	_, rpcErr := c.Call("createSession", map[string]any{"channel": "ahp-session:/holds", "provider": "script", "config": map[string]any{"sandbox": "workspace"}})
	if rpcErr == nil || !strings.Contains(rpcErr.Message, "working directory "+work+" holds "+filepath.Join(work, ".ahpd")) {
		t.Fatalf("createSession in a folder holding the data dir: %+v; want the conflict named", rpcErr)
	}
}

func TestSandboxDefaultFromTheRootConfig(t *testing.T) {
	requireLandlock(t)
	outside := t.TempDir()
	e := newEnv(t, func(cfg *daemon.Config) { cfg.Sandbox.Default = "workspace" })
	c := e.client("c1")
	_, chat := e.createSession(c, "ahp-session:/defaulted")
	c.Subscribe(chat)
	sendTurn(t, c, chat, "out", "!echo out > "+filepath.Join(outside, "escape.txt"))
	if _, err := os.Stat(filepath.Join(outside, "escape.txt")); !os.IsNotExist(err) {
		t.Fatalf("a session taking sandbox.default workspace wrote outside (%v)", err)
	}
}

// TestSandboxConfinesTheSessionsTerminals: a terminal a client opens for
// a workspace session runs confined as the session's ! commands do.
func TestSandboxConfinesTheSessionsTerminals(t *testing.T) {
	requireLandlock(t)
	t.Setenv("SHELL", "/bin/sh")
	outside := t.TempDir()
	e := newEnv(t)
	c := e.client("c1")
	const sess = "ahp-session:/terminal-sandboxed"
	createSandboxed(t, e, c, sess, "workspace")
	uri := newTerminalURI()
	c.MustCall("createTerminal", map[string]any{"channel": uri, "claim": map[string]any{"kind": "session", "session": sess}})
	c.Subscribe(uri)
	typeInto(c, uri, `echo in > term-inside.txt; echo out 2> term.err > `+filepath.Join(outside, "escape.txt")+`; echo DONE_"TYPING"`)
	awaitOutput(t, c, uri, "DONE_TYPING")
	if got := readFile(t, filepath.Join(e.workDir, "term-inside.txt")); got != "in\n" {
		t.Fatalf("the terminal's write inside: %q", got)
	}
	if _, err := os.Stat(filepath.Join(outside, "escape.txt")); !os.IsNotExist(err) {
		t.Fatalf("the session's terminal wrote outside its folders (%v)", err)
	}
	if got := readFile(t, filepath.Join(e.workDir, "term.err")); !strings.Contains(got, "Permission denied") {
		t.Fatalf("the terminal's write outside said %q, want Permission denied", got)
	}
}

// TestSandboxModeDoesNotChangeAfterCreate: a client that may configure a
// session cannot lift its sandbox: session/configChanged naming another
// mode is refused, and a replacing change that drops the value (VS Code's
// "session config replacement drops previous values") leaves the mode
// kept at createSession confining.
func TestSandboxModeDoesNotChangeAfterCreate(t *testing.T) {
	requireLandlock(t)
	outside := t.TempDir()
	e := newEnv(t)
	c := e.client("c1")
	const sess = "ahp-session:/kept"
	chat := createSandboxed(t, e, c, sess, "workspace")
	lift := map[string]any{"type": "session/configChanged", "config": map[string]any{"sandbox": "off"}}
	if env := c.AwaitEcho(c.Dispatch(sess, lift)); !strings.Contains(env.RejectionReason, "sandbox (workspace) is chosen when it is created") {
		t.Fatalf("lifting the sandbox: rejection %q, want the sandbox kept", env.RejectionReason)
	}
	drop := map[string]any{"type": "session/configChanged", "config": map[string]any{"custom": "x"}, "replace": true}
	if env := c.AwaitEcho(c.Dispatch(sess, drop)); env.RejectionReason != "" {
		t.Fatalf("a replacing change was refused: %s", env.RejectionReason)
	}
	sendTurn(t, c, chat, "out", "!echo out 2> kept.err > "+filepath.Join(outside, "escape.txt"))
	if _, err := os.Stat(filepath.Join(outside, "escape.txt")); !os.IsNotExist(err) {
		t.Fatalf("after the config dropped the sandbox value, a ! command wrote outside (%v)", err)
	}
	if got := readFile(t, filepath.Join(e.workDir, "kept.err")); !strings.Contains(got, "Permission denied") {
		t.Fatalf("the write outside said %q, want Permission denied", got)
	}
}
