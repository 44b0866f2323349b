package main

import (
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ahpd-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "ahpd")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		panic("build ahpd: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// serve starts the binary and returns its websocket URL once it printed
// its listening line.
func serve(t *testing.T, dataDir, workDir string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd, lines := startLines(t, 1, append([]string{"--data-dir", dataDir, "--path", workDir}, args...)...)
	if !strings.HasPrefix(lines[0], "listening ") {
		t.Fatalf("first line %q, want listening ws://...", lines[0])
	}
	return cmd, strings.TrimPrefix(lines[0], "listening ")
}

// TestServeRefusesNonLoopbackWithoutToken: exit 2 with a one-line reason.
func TestServeRefusesNonLoopbackWithoutToken(t *testing.T) {
	cmd := exec.Command(binary, "serve", "--host", "0.0.0.0", "--port", "0", "--data-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("exit = %v, want 2; output %q", err, out)
	}
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "token") {
		t.Fatalf("want one line naming the token choice, got %q", out)
	}
}

// TestServeChecksToken: with a token, a wrong one gets HTTP 401 and the
// right one connects (as ?tkn= or a Bearer header).
func TestServeChecksToken(t *testing.T) {
	_, url := serve(t, t.TempDir(), t.TempDir(), "--connection-token", "s3cret")
	if _, resp, err := ahptest.DialRaw(url, "wrong"); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("wrong token: err %v, resp %v; want 401", err, resp)
	}
	if _, resp, err := ahptest.DialRaw(url, ""); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("no token: err %v; want 401", err)
	}
	c := ahptest.Dial(t, url, "s3cret")
	c.Initialize("tok", ahp.RootURI)
}

// TestKillNineMidTurn: the process is killed with SIGKILL while a turn
// streams; the next process ends that turn with chat/error and keeps
// everything else, with what the turn had streamed a second before (C-TURN-10,
// C-TURN-12, issue 8 §3).
func TestKillNineMidTurn(t *testing.T) {
	data, work := t.TempDir(), t.TempDir()
	cmd, url := serve(t, data, work)
	c := ahptest.Dial(t, url, "")
	c.Initialize("k", ahp.RootURI)
	sess := "ahp-session:/99999999-0000-4000-8000-000000000001"
	c.MustCall("createSession", map[string]any{"channel": sess, "provider": "script"})
	st, _ := c.Subscribe(sess)
	var ss ahp.SessionState
	if err := json.Unmarshal(st, &ss); err != nil {
		t.Fatal(err)
	}
	chat := ss.DefaultChat
	c.Subscribe(chat)
	start := func(id, text string) {
		c.Dispatch(chat, map[string]any{"type": "chat/turnStarted", "turnId": id, "startedAt": time.Now().UTC().Format(time.RFC3339Nano),
			"message": map[string]any{"text": text, "origin": map[string]any{"kind": "user"}}})
	}
	start("t1", "done before the kill")
	c.AwaitAction(chat, "chat/turnComplete")
	start("t2", "[hold] mid-stream")
	c.AwaitEnvelope("t2 streaming", func(e ahptest.Envelope) bool {
		var id string
		_ = e.Field("turnId", &id)
		return e.Type() == "chat/responsePart" && id == "t2"
	})
	// The running turn was stored before its first part was said, and its
	// answer so far is written at least every second: kill once the store
	// holds some of it.
	awaitStoredAnswer(t, data, "t2")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	_, url2 := serve(t, data, work)
	c2 := ahptest.Dial(t, url2, "")
	c2.Initialize("k2", ahp.RootURI)
	cst, _ := c2.Subscribe(chat)
	var cs ahp.ChatState
	if err := json.Unmarshal(cst, &cs); err != nil {
		t.Fatal(err)
	}
	if len(cs.Turns) != 2 || cs.Turns[0].State != ahp.TurnComplete || cs.Turns[1].ID != "t2" || cs.Turns[1].State != ahp.TurnError {
		t.Fatalf("after kill -9: %s", cst)
	}
	var answer string
	for _, p := range cs.Turns[1].ResponseParts {
		if p.Kind == ahp.PartMarkdown {
			answer += p.Content
		}
	}
	if answer == "" || !strings.HasPrefix("echo: [hold] mid-stream", answer) {
		t.Fatalf("after kill -9 the interrupted turn kept %q, want what it had streamed", answer)
	}
}

// TestNoChatCommand: ahpd has no chat command; a chat is driven over the
// protocol (C-CMD-01).
func TestNoChatCommand(t *testing.T) {
	for _, c := range newRoot().Commands() {
		if c.Name() == "chat" {
			t.Fatal("ahpd has a chat command")
		}
	}
	out, err := exec.Command(binary, "chat").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "unknown command") {
		t.Fatalf("ahpd chat: %v %s", err, out)
	}
}

// awaitStoredAnswer waits until the store in dataDir holds some of turn
// id's answer, read as another process would, while the daemon runs.
func awaitStoredAnswer(t *testing.T, dataDir, id string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dataDir, "ahpd.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(ahptest.Timeout)
	for {
		var n int
		err := db.QueryRow(`SELECT count(*) FROM turns WHERE id = ? AND instr(body, 'echo:') > 0`, id).Scan(&n)
		if err == nil && n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("turn %s's answer was never stored (last error %v)", id, err)
		}
		time.Sleep(20 * time.Millisecond) // polls the store
	}
}
