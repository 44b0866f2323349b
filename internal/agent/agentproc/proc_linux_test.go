package agentproc

import (
	"bytes"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStatStart: the start time is field 22 counted after the command
// name's last ")", whatever the name holds.
func TestStatStart(t *testing.T) {
	tail := " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 424242 20 21"
	tests := []struct {
		name, stat string
		want       uint64
		ok         bool
	}{
		{"plain name", "77 (sleep)" + tail, 424242, true},
		{"name with spaces and parens", "77 (a) b (c))" + tail, 424242, true},
		{"truncated", "77 (sleep) S 1 2", 0, false},
		{"no name", "77 sleep S", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := statStart(tc.stat)
			if got != tc.want || ok != tc.ok {
				t.Errorf("statStart = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	if _, ok := processStart(os.Getpid()); !ok {
		t.Error("processStart of this test process is not known")
	}
}

// startLeftover starts sh in a group of its own, as a backend would
// through the ledger, with a sleep it leaves in its group; it returns the
// shell and the sleep's pid.
func startLeftover(t *testing.T, l Ledger) (*exec.Cmd, func(), string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "sleep 60 & echo $!; exec sleep 60")
	SetGroup(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	end, err := l.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	return cmd, end, strings.TrimSpace(string(buf[:n]))
}

// TestLedgerEndsWhatAKilledDaemonLeft: a group written down and never
// crossed out (its daemon was killed) is killed whole by EndLeftovers,
// leader and the sleep it left, and the ledger is empty after.
func TestLedgerEndsWhatAKilledDaemonLeft(t *testing.T) {
	l := NewLedger(filepath.Join(t.TempDir(), "agents"))
	cmd, _, sleeper := startLeftover(t, l)
	if _, err := os.Stat(filepath.Join(l.Dir(), strconv.Itoa(cmd.Process.Pid))); err != nil {
		t.Fatalf("the group is not written down: %v", err)
	}
	var logs bytes.Buffer
	n, err := NewLedger(l.Dir()).EndLeftovers(slog.New(slog.NewTextHandler(&logs, nil)))
	if n != 1 || err != nil {
		t.Fatalf("EndLeftovers = %d, %v; want 1 group ended", n, err)
	}
	_ = cmd.Wait()
	if alive(sleeper) {
		t.Errorf("the sleep %s the agent left runs on", sleeper)
	}
	if des, _ := os.ReadDir(l.Dir()); len(des) != 0 {
		t.Errorf("the ledger still lists %d groups", len(des))
	}
	if !strings.Contains(logs.String(), "pgid="+strconv.Itoa(cmd.Process.Pid)) {
		t.Errorf("the kill is not logged: %s", logs.String())
	}
}

// TestLedgerEndOfAnAgent: end, called once the agent was waited for,
// kills what the agent left in its group and crosses the group out.
func TestLedgerEndOfAnAgent(t *testing.T) {
	l := NewLedger(filepath.Join(t.TempDir(), "agents"))
	cmd, end, sleeper := startLeftover(t, l)
	SignalGroup(cmd, os.Interrupt) // the leader goes; its sleep is in the group too, and goes as well
	_ = cmd.Wait()
	end()
	if alive(sleeper) {
		t.Errorf("the sleep %s runs on after the agent's end", sleeper)
	}
	if des, _ := os.ReadDir(l.Dir()); len(des) != 0 {
		t.Errorf("the ledger still lists %d groups", len(des))
	}
}

// TestLedgerLeavesAStranger: a pid written down that a later process now
// holds (another start time) is not killed, and the entry is dropped; an
// entry that is not a ledger file is reported, not acted on.
func TestLedgerLeavesAStranger(t *testing.T) {
	dir := t.TempDir()
	stranger := exec.Command("sleep", "60")
	SetGroup(stranger)
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stranger.Process.Kill(); _ = stranger.Wait() }()
	pid := stranger.Process.Pid
	start, _ := processStart(pid)
	if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(pid)), []byte(entry{pid, start + 1}.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "junk"), []byte("1 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := NewLedger(dir).EndLeftovers(slog.New(slog.DiscardHandler))
	if n != 0 || err == nil || !strings.Contains(err.Error(), "junk") {
		t.Errorf("EndLeftovers = %d, %v; want nothing ended and the junk entry reported", n, err)
	}
	// alive watches a second for a wrong kill to land.
	if !alive(strconv.Itoa(pid)) {
		t.Error("a stranger holding a recorded pid was killed")
	}
	if des, _ := os.ReadDir(dir); len(des) != 0 {
		t.Errorf("the ledger still lists %d entries", len(des))
	}
}

// TestDeathSignalSet: an agent started by SetGroup dies with its parent
// (Pdeathsig), which a group of its own would otherwise escape.
func TestDeathSignalSet(t *testing.T) {
	cmd := exec.Command("true")
	SetGroup(cmd)
	if cmd.SysProcAttr.Pdeathsig == 0 || !cmd.SysProcAttr.Setpgid {
		t.Errorf("SysProcAttr = %+v; want a group of its own and a parent-death signal", cmd.SysProcAttr)
	}
}
