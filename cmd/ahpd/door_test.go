package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// startLines starts `ahpd serve` and returns its process and the first n
// lines it printed on stdout.
func startLines(t *testing.T, n int, args ...string) (*exec.Cmd, []string) {
	t.Helper()
	return startLinesOf(t, binary, n, args...)
}

// startLinesOf is startLines for the ahpd binary bin (an earlier build, in
// the upgrade test).
func startLinesOf(t *testing.T, bin string, n int, args ...string) (*exec.Cmd, []string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--port", "0"}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var got []string
	for len(got) < n {
		select {
		case l := <-lines:
			got = append(got, l)
		case <-time.After(30 * time.Second):
			t.Fatalf("ahpd printed %q, want %d lines", got, n)
		}
	}
	return cmd, got
}

// serve prints, beside its listening line, the chat.remoteAgentHosts entry
// to paste: an object with address, name and the token when one is set.
func TestServePrintsVSCodeEntry(t *testing.T) {
	_, lines := startLines(t, 2, "--data-dir", t.TempDir(), "--path", t.TempDir(), "--connection-token", "s3cret")
	url := strings.TrimPrefix(lines[0], "listening ")
	const prefix = `vscode settings: "chat.remoteAgentHosts": [`
	if !strings.HasPrefix(lines[1], prefix) || !strings.HasSuffix(lines[1], "]") {
		t.Fatalf("second line %q, want %s{...}]", lines[1], prefix)
	}
	var entry struct{ Address, Name, ConnectionToken string }
	if err := json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimPrefix(lines[1], prefix), "]")), &entry); err != nil {
		t.Fatalf("entry: %v in %q", err, lines[1])
	}
	if entry.Address != url || entry.Name == "" || entry.ConnectionToken != "s3cret" {
		t.Fatalf("entry %+v, want address %s and the token", entry, url)
	}
	// The entry works: VS Code appends the token as ?tkn=.
	c := ahptest.Dial(t, entry.Address, entry.ConnectionToken)
	c.Initialize("vscode", ahp.RootURI)
}

// Two daemons on one data dir: the second exits 1 with one line naming the
// first one's pid.
func TestSecondDaemonOnOneDataDirExits(t *testing.T) {
	data := t.TempDir()
	first, _ := startLines(t, 1, "--data-dir", data, "--path", t.TempDir())
	cmd := exec.Command(binary, "serve", "--port", "0", "--data-dir", data, "--path", t.TempDir())
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("second daemon: %v, want exit 1; output %q", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "pid "+strconv.Itoa(first.Process.Pid)) {
		t.Fatalf("want one line naming pid %d, got %q", first.Process.Pid, out)
	}
	// A kill -9 leaves no stale lock: the kernel drops it with the process.
	_ = first.Process.Kill()
	_, _ = first.Process.Wait()
	startLines(t, 1, "--data-dir", data, "--path", t.TempDir())
}

// Every key of the config file reaches the daemon, not only those that
// have a flag (attachmentFetchLimitBytes was once dropped), and a flag
// still wins over the file.
func TestConfigFileKeysSurviveFlags(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, []byte(`{"closedChats":"delete","maxConnections":1,"attachmentFetchLimitBytes":7}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, lines := startLines(t, 1, "--config", path, "--data-dir", t.TempDir(), "--path", t.TempDir())
	url := strings.TrimPrefix(lines[0], "listening ")
	c := ahptest.Dial(t, url, "")
	c.Initialize("one", ahp.RootURI)
	// maxConnections 1 came from the file: a second client is refused 503.
	if _, resp, err := ahptest.DialRaw(url, ""); err == nil || resp == nil || resp.StatusCode != 503 {
		t.Fatalf("second connection: err %v resp %v, want 503 from the file's maxConnections", err, resp)
	}
}

// config check refuses negative bounds and bad origins with exit 2.
func TestConfigCheckRefusesBadBounds(t *testing.T) {
	for _, body := range []string{
		`{"replayLog":-1}`, `{"turnsView":-5}`, `{"chatIdleSeconds":-2}`, `{"agentSilenceSeconds":-2}`, `{"maxAgentProcesses":-2}`, `{"maxConnections":-1}`,
		`{"maxFrameBytes":-1}`, `{"allowedOrigins":["evil.example"]}`,
		`{"allowedHosts":["a b"]}`,
		`{"tokens":[{"token":"t","principal":"root:evil","grants":["*"]}]}`,
	} {
		path := filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(binary, "config", "check", "--config", path).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("config check %s: %v (%q), want exit 2", body, err, out)
		}
	}
}
