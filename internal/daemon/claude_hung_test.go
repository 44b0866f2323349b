package daemon_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent/claude"
	"github.com/ahpd/ahpd/internal/daemon"
)

// freeze stops (SIGSTOP) every CLI process of this env: the ones whose
// environment names its CLAUDE_CONFIG_DIR. A stopped process reads
// nothing, answers nothing and takes no SIGINT: a hung agent.
func (ce *claudeEnv) freeze() []int {
	ce.t.Helper()
	want := []byte("CLAUDE_CONFIG_DIR=" + ce.configDir + "\x00")
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		if syscall.Kill(pid, syscall.SIGSTOP) == nil {
			pids = append(pids, pid)
		}
	}
	if len(pids) == 0 {
		ce.t.Fatal("no claude process to freeze")
	}
	ce.t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pids
}

// TestClaudeHungAfterStop: a client stops a turn whose CLI is hung (SIGSTOP):
// the turn ends cancelled, the process is killed, and the next turn starts
// answering within 5 s of the stop, in a new CLI that resumes the
// conversation (issue 8 §4).
func TestClaudeHungAfterStop(t *testing.T) {
	t.Parallel()
	ce := newClaudeEnv(t, claude.StopEndsTurn)
	a := ce.client("a")
	def, conv := ce.session(a, "ahp-session:/c1a0de00-0000-4000-8000-0000000000a1")
	a.Subscribe(def)
	if end := sendTurn(t, a, def, "t1", "remember me"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended with %s", end.Type())
	}
	a.Dispatch(def, turnStarted("t2", "talk slowly [slow]"))
	clAwaitAction(t, a, def, "t2", "chat/delta")
	pids := ce.freeze()
	stopped := time.Now()
	a.Dispatch(def, map[string]any{"type": "chat/turnCancelled", "turnId": "t2"})
	if end := awaitEnd(t, a, def, "t2"); end.Type() != "chat/turnCancelled" {
		t.Fatalf("t2 ended with %s", end.Type())
	}
	a.Dispatch(def, turnStarted("t3", "after the hang"))
	clAwaitAction(t, a, def, "t3", "chat/responsePart")
	if took := time.Since(stopped); took > 5*time.Second {
		t.Errorf("the next turn started answering %s after the stop, want within 5 s", took.Round(time.Millisecond))
	}
	if end := awaitEnd(t, a, def, "t3"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t3 ended with %s: %s", end.Type(), end.Action)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil && !zombie(pid) {
			t.Errorf("the hung CLI process %d is still there", pid)
		}
	}
	if hist := ce.history(conv); len(hist) < 2 || hist[0] != "user:remember me" {
		t.Errorf("the new CLI did not resume the conversation: %q", hist)
	}
}

// TestClaudeSilentAgentReplaced: a turn whose CLI says nothing for
// agentSilenceSeconds ends with chat/error naming the silence, the process
// is replaced, and the next turn completes in a new one (issue 8 §4).
func TestClaudeSilentAgentReplaced(t *testing.T) {
	t.Parallel()
	ce := newClaudeEnv(t, claude.StopEndsTurn, func(c *daemon.Config) { c.AgentSilenceSeconds = 2 })
	a := ce.client("a")
	def, _ := ce.session(a, "ahp-session:/c1a0de00-0000-4000-8000-0000000000a2")
	a.Subscribe(def)
	a.Dispatch(def, turnStarted("t1", "talk slowly [slow]"))
	clAwaitAction(t, a, def, "t1", "chat/delta")
	ce.freeze()
	frozen := time.Now()
	end := awaitEnd(t, a, def, "t1")
	if end.Type() != "chat/error" || !strings.Contains(string(end.Action), "agentSilent") || !strings.Contains(string(end.Action), "said nothing for 2s") {
		t.Fatalf("t1 ended with %s, want chat/error naming the silence", end.Raw)
	}
	if took := time.Since(frozen); took < 2*time.Second || took > 5*time.Second {
		t.Errorf("the silent turn ended %s after the agent went quiet, want 2–5 s", took.Round(time.Millisecond))
	}
	if end := sendTurn(t, a, def, "t2", "are you back"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t2 ended with %s: %s", end.Type(), end.Action)
	}
	if n := ce.processes(); n != 2 {
		t.Errorf("%d CLI processes, want the silent one replaced", n)
	}
}

// zombie reports whether pid is reaped-in-waiting (state Z), which still
// answers kill(pid, 0).
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}
