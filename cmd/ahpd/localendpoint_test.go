package main

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/localendpoint"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// serveLocal starts `ahpd serve --vscode-user-data ud` and returns the
// process and the entry file it printed (its fourth line).
func serveLocal(t *testing.T, data, ud string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd, lines := startLines(t, 4, append([]string{"--data-dir", data, "--path", t.TempDir(), "--vscode-user-data", ud}, args...)...)
	path, ok := strings.CutPrefix(lines[3], "vscode local endpoint: ")
	if !ok {
		t.Fatalf("fourth line %q, want vscode local endpoint: PATH", lines[3])
	}
	return cmd, path
}

func readEntryFile(t *testing.T, path string) localendpoint.Entry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := localendpoint.Parse(data)
	if !ok {
		t.Fatalf("%s does not parse: %s", path, data)
	}
	return e
}

// waitExit waits for cmd to exit after a signal and returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		if err != nil {
			t.Fatalf("wait: %v", err)
		}
		return 0
	case <-time.After(time.Minute):
		t.Fatal("ahpd did not exit within a minute of the signal")
	}
	return -1
}

// serve publishes its entry, a reader connects with it, and SIGTERM
// removes it; a SIGKILLed daemon's entry is pruned by the next start.
func TestServeLocalEndpointLifecycle(t *testing.T) {
	data, ud := t.TempDir(), t.TempDir()
	cmd, path := serveLocal(t, data, ud, "--connection-token", "s3cret")
	e := readEntryFile(t, path)
	if e.PID != cmd.Process.Pid || e.ConnectionToken == "" || e.ConnectionToken == "s3cret" {
		t.Fatalf("entry %+v: want pid %d and a token of its own", e, cmd.Process.Pid)
	}
	c := ahptest.Dial(t, "ws://"+net.JoinHostPort(e.Endpoint.Host, strconv.Itoa(e.Endpoint.Port)), e.ConnectionToken)
	c.Initialize("vscode-local", ahp.RootURI)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd); code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0", code)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("entry still there after SIGTERM: %v", err)
	}

	// kill -9 leaves the entry of a dead pid; the next start removes it.
	cmd, path = serveLocal(t, data, ud)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExit(t, cmd)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("a SIGKILLed daemon cannot remove its entry, yet it is gone: %v", err)
	}
	cmd, fresh := serveLocal(t, data, ud)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead daemon's entry survived the next start: %v", err)
	}
	des, _ := os.ReadDir(filepath.Dir(fresh))
	if len(des) != 1 || des[0].Name() != filepath.Base(fresh) {
		t.Errorf("registry holds %v, want only %s", des, filepath.Base(fresh))
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	waitExit(t, cmd)
}

// Two signals at once: whichever path runs (the graceful stop, or the
// second signal's exit at once), the entry is gone when ahpd has exited.
func TestServeLocalEndpointRemovedOnSecondSignal(t *testing.T) {
	cmd, path := serveLocal(t, t.TempDir(), t.TempDir())
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, cmd); code != 0 && code != 1 {
		t.Fatalf("exit %d, want 0 or 1", code)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("entry still there after two signals: %v", err)
	}
}

// --no-local-endpoint writes nothing, and prints no endpoint line.
func TestServeNoLocalEndpoint(t *testing.T) {
	ud := t.TempDir()
	cmd := exec.Command(binary, "config", "check", "--no-local-endpoint", "--vscode-user-data", ud)
	cmd.Env = cleanEnv(t)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "noLocalEndpoint") {
		t.Fatalf("both flags: %v %q, want a refusal naming noLocalEndpoint", err, out)
	}
	// ahpd serve with the folder found by discovery: XDG_CONFIG_HOME holds
	// a "Code" folder, and --no-local-endpoint keeps it empty.
	cfgHome := t.TempDir()
	code := filepath.Join(cfgHome, "Code")
	if err := os.Mkdir(code, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, optOut := range []bool{true, false} {
		args := []string{"serve", "--port", "0", "--data-dir", t.TempDir(), "--path", t.TempDir()}
		if optOut {
			args = append(args, "--no-local-endpoint")
		}
		p := exec.Command(binary, args...)
		p.Env = append(os.Environ(), "XDG_CONFIG_HOME="+cfgHome, "HOME="+t.TempDir())
		out, err := p.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4096)
		var got string
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(got, "web console:") && time.Now().Before(deadline) {
			n, err := out.Read(buf)
			got += string(buf[:n])
			if err != nil {
				break
			}
		}
		// Stop it, then read the rest of what it printed.
		_ = p.Process.Signal(syscall.SIGTERM)
		rest := make([]byte, 4096)
		for {
			n, err := out.Read(rest)
			got += string(rest[:n])
			if err != nil {
				break
			}
		}
		waitExit(t, p)
		published := strings.Contains(got, "vscode local endpoint: "+filepath.Join(code, "agent-host"))
		if published == optOut {
			t.Errorf("opt out %v: output %q", optOut, got)
		}
		if optOut {
			if des, _ := os.ReadDir(code); len(des) != 0 {
				t.Errorf("opted out, %s holds %v", code, des)
			}
		}
	}
}
