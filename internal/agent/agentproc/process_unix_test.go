//go:build unix

package agentproc

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startShell starts sh -c script through the kit, its stdout read by
// ReadLines into the returned function's lines.
func startShell(t *testing.T, script string, queue int) (*Proc, func() []string) {
	t.Helper()
	p, err := Start(Spec{Name: "sh", Bin: "/bin/sh", Args: []string{"-c", script}, Dir: t.TempDir(), StdinQueue: queue})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	go p.ReadLines(0, func(l []byte) {
		mu.Lock()
		lines = append(lines, string(l))
		mu.Unlock()
	})
	t.Cleanup(p.Kill)
	return p, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}

// firstLine waits for the first stdout line.
func firstLine(t *testing.T, lines func() []string) string {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if l := lines(); len(l) > 0 {
			return l[0]
		}
		time.Sleep(10 * time.Millisecond) // polls for the shell's first line
	}
	t.Fatal("no stdout line within 5s")
	return ""
}

// TestCloseEndsAtStdinEOF: a CLI that exits at stdin EOF is reaped by
// Close without waiting a grace, after the queued lines were written.
func TestCloseEndsAtStdinEOF(t *testing.T) {
	p, lines := startShell(t, `while read l; do echo "got $l"; done`, 8)
	if err := p.WriteLine([]byte("one")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p.Close()
	if d := time.Since(start); d >= Grace {
		t.Errorf("Close took %v, a grace or more", d)
	}
	if !p.Dead() {
		t.Fatal("Close returned before the reap")
	}
	if got := strings.Join(lines(), "|"); got != "got one" {
		t.Fatalf("lines %q", got)
	}
}

// TestCloseInterruptsAfterOneGrace: a CLI that ignores stdin EOF gets the
// interrupt after Grace, and Close returns only once it was reaped.
func TestCloseInterruptsAfterOneGrace(t *testing.T) {
	if testing.Short() {
		t.Skip("waits a grace")
	}
	p, _ := startShell(t, `exec sleep 60`, 0)
	start := time.Now()
	p.Close()
	d := time.Since(start)
	if d < Grace || d >= 2*Grace {
		t.Errorf("Close took %v, want one grace (%v) and the interrupt", d, Grace)
	}
	if !p.Dead() || p.WaitErr() == nil {
		t.Fatalf("dead %v, wait error %v: want reaped by the signal", p.Dead(), p.WaitErr())
	}
}

// TestKillWaitsForTheExit: Kill returns once the process was reaped, with
// what the group left behind killed too.
func TestKillWaitsForTheExit(t *testing.T) {
	p, lines := startShell(t, `trap '' INT TERM; sleep 60 & echo $!; wait`, 0)
	child := firstLine(t, lines)
	p.Kill()
	if !p.Dead() {
		t.Fatal("Kill returned before the reap")
	}
	if alive(child) {
		t.Fatalf("the group's child %q outlived the kill", child)
	}
}

// TestKillStopsReadingAStdoutHeldOpen: when something outside the group
// holds stdout open, Kill stops reading it after KillWait and still
// returns reaped.
func TestKillStopsReadingAStdoutHeldOpen(t *testing.T) {
	if testing.Short() {
		t.Skip("waits KillWait")
	}
	// setsid puts the holder in a session of its own; it says its pid
	// once it is there.
	p, lines := startShell(t, `setsid sh -c 'echo $$; exec sleep 30' & exec sleep 60`, 0)
	holder := firstLine(t, lines)
	t.Cleanup(func() {
		if pid, err := strconv.Atoi(holder); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	start := time.Now()
	p.Kill()
	select {
	case <-p.ReadStopped():
	default:
		t.Error("Kill did not stop reading")
	}
	if d := time.Since(start); d < KillWait {
		t.Errorf("Kill took %v, want KillWait before it stopped reading", d)
	}
	if !p.Dead() {
		t.Fatal("Kill returned before the reap")
	}
}

// TestExitErrorQuotesStderr: the exit error names the CLI, how it ended
// and the end of its stderr.
func TestExitErrorQuotesStderr(t *testing.T) {
	p, _ := startShell(t, `echo broken >&2; exit 3`, 0)
	<-p.Exited()
	err := p.ExitError().Error()
	if !strings.Contains(err, "sh exited: exit status 3") || !strings.Contains(err, "broken") {
		t.Fatalf("exit error %q", err)
	}
}

// TestStartSandboxErrorStartsNothing: a sandbox that refuses fails Start
// with the CLI named.
func TestStartSandboxErrorStartsNothing(t *testing.T) {
	_, err := Start(Spec{Name: "sh", Bin: "/bin/sh", Sandbox: func(*exec.Cmd) error { return errors.New("no sandbox") }})
	if err == nil || !strings.Contains(err.Error(), "start sh: sandbox: no sandbox") {
		t.Fatalf("err %v", err)
	}
}

// TestScriptedQueuesWrites: a Scripted Proc keeps what is written for the
// test and counts as exited once reaped.
func TestScriptedQueuesWrites(t *testing.T) {
	p := Scripted(Spec{Name: "fake"})
	if err := p.WriteLine([]byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if got := p.Written(); len(got) != 1 || string(got[0]) != "{\"a\":1}\n" {
		t.Fatalf("written %q", got)
	}
	p.Reap()
	p.Close()
	if !p.Dead() {
		t.Fatal("not dead after Reap")
	}
}
