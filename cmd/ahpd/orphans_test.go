//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

// procRuns says whether pid runs: it exists and is not a zombie (a killed
// orphan waits as one until init reaps it).
func procRuns(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] != 'Z'
}

// waitPID reads the pid a shell wrote to path, waiting for it to appear.
func waitPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 1 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s after 20 s", path)
		}
		time.Sleep(20 * time.Millisecond) // polls for the agent's shell to write it
	}
}

// TestKillNineLeavesNoAgentProcess: the daemon is killed with SIGKILL while
// an ACP agent runs a turn that left a process in the agent's group and
// another in a terminal it asked for. The kernel ends the agent itself
// (its parent-death signal), the two sleeps outlive the daemon (the check
// that this test can fail), and once the next start is listening none of
// them runs: it ended the groups the old daemon wrote down before it
// started anything (issue 34 §6).
func TestKillNineLeavesNoAgentProcess(t *testing.T) {
	bin := fakemodel.Build(t, "acpagent")
	data, work, pids := t.TempDir(), t.TempDir(), t.TempDir()
	pidFile := func(name string) string { return filepath.Join(pids, name) }
	agentCmd := "echo $$ > " + pidFile("agent") + "; sleep 600 & echo $! > " + pidFile("agent-child") + "; exec " + bin
	cfg, _ := json.Marshal(map[string]any{"agents": map[string]any{"acp": []map[string]any{
		{"name": "fake-acp", "command": "/bin/sh", "args": []string{"-c", agentCmd}},
	}}})
	cfgPath := filepath.Join(t.TempDir(), "ahpd.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}

	cmd, url := serve(t, data, work, "--config", cfgPath)
	c := ahptest.Dial(t, url, "")
	c.Initialize("orphans", ahp.RootURI)
	sess := "ahp-session:/99999999-0000-4000-8000-000000000034"
	c.MustCall("createSession", map[string]any{"channel": sess, "provider": "fake-acp"})
	st, _ := c.Subscribe(sess)
	var ss ahp.SessionState
	if err := json.Unmarshal(st, &ss); err != nil {
		t.Fatal(err)
	}
	c.Subscribe(ss.DefaultChat)
	text := "[term:|sleep 600 & echo $! > " + pidFile("terminal-child") + "; wait]"
	c.Dispatch(ss.DefaultChat, map[string]any{"type": "chat/turnStarted", "turnId": "t1", "startedAt": time.Now().UTC().Format(time.RFC3339Nano),
		"message": map[string]any{"text": text, "origin": map[string]any{"kind": "user"}}})
	agent, agentChild, termChild := waitPID(t, pidFile("agent")), waitPID(t, pidFile("agent-child")), waitPID(t, pidFile("terminal-child"))
	for _, pid := range []int{agent, agentChild, termChild} {
		if !procRuns(pid) {
			t.Fatalf("pid %d is not running before the kill", pid)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The parent-death signal ends the agent; what it and its terminal
	// started is in groups of their own and lives on until the next start.
	deadline := time.Now().Add(5 * time.Second)
	for procRuns(agent) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polls for the kernel's kill to land
	}
	if procRuns(agent) {
		t.Errorf("the agent %d outlived its daemon: no parent-death signal", agent)
	}
	if !procRuns(agentChild) || !procRuns(termChild) {
		t.Fatalf("the agent's sleeps ended with the daemon (%v, %v): this test no longer sees what the next start ends", procRuns(agentChild), procRuns(termChild))
	}

	serve(t, data, work, "--config", cfgPath)
	// Listening now; the kills were sent before. A killed process leaves
	// the run queue at once, but give the kernel a moment to take it.
	deadline = time.Now().Add(2 * time.Second)
	for (procRuns(agentChild) || procRuns(termChild)) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polls for the kills to land
	}
	for name, pid := range map[string]int{"the agent's sleep": agentChild, "the terminal's sleep": termChild} {
		if procRuns(pid) {
			t.Errorf("%s (pid %d) runs after the next start is listening", name, pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if des, err := os.ReadDir(filepath.Join(data, "agent-groups")); err != nil || len(des) != 0 {
		t.Errorf("the agent ledger after the start: %d entries, %v; want it empty", len(des), err)
	}
}
