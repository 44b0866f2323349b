package daemon_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/agent/claude"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/sandbox"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// requireNetworkLandlock skips where the kernel has no Landlock TCP rules.
func requireNetworkLandlock(t *testing.T) {
	t.Helper()
	if abi, _ := sandbox.NewSite(sandbox.Site{}).ABI(); abi < sandbox.NetworkMinABI {
		t.Skipf("Landlock ABI %d: sandbox.network models needs %d", abi, sandbox.NetworkMinABI)
	}
}

// confirmedBash runs turn t1 of def, whose one Bash call it confirms, and
// returns the call's completion once the turn completed.
func confirmedBash(t *testing.T, a *ahptest.Client, def, text string) ahptest.Envelope {
	t.Helper()
	a.Dispatch(def, turnStarted("t1", text))
	call := clAwaitAsk(t, a, def, "t1")
	confirm := map[string]any{"type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": call, "approved": true}
	if env := a.AwaitEcho(a.Dispatch(def, confirm)); env.RejectionReason != "" {
		t.Fatalf("confirmation refused: %s", env.RejectionReason)
	}
	done := clAwaitAction(t, a, def, "t1", "chat/toolCallComplete")
	if end := awaitEnd(t, a, def, "t1"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended with %s: %s", end.Type(), end.Action)
	}
	return done
}

// TestSandboxClaudeBashWritesOnlyTheSessionFolders drives the real
// claude CLI in a workspace session: the fake model asks for a Bash call
// that writes inside the working directory and outside it; the kernel
// lets the first through and refuses the second (EACCES), and reading
// the daemon's store fails too.
func TestSandboxClaudeBashWritesOnlyTheSessionFolders(t *testing.T) {
	requireLandlock(t)
	ce := newClaudeEnv(t, claude.StopEndsTurn)
	outside := t.TempDir()
	a := ce.client("a")
	const sess = "ahp-session:/5a4db0c5-0000-4000-8000-000000000036"
	a.MustCall("createSession", map[string]any{"channel": sess, "provider": claude.Provider, "config": map[string]any{"sandbox": "workspace"}})
	def := sessionState(t, a, sess).DefaultChat
	a.Subscribe(def)

	escape := filepath.Join(outside, "escape.txt")
	db := filepath.Join(ce.cfg.DataDir, "ahpd.db")
	cmd := "touch inside.txt; echo out > " + escape + "; cat " + db + " > dbcopy"
	done := confirmedBash(t, a, def, "write around [bash:"+cmd+"]")
	var res ahp.ToolCallResult
	_ = done.Field("result", &res)
	if !clExists(filepath.Join(ce.workDir, "inside.txt")) {
		t.Fatalf("the write inside the working directory did not happen; tool result %s", done.Action)
	}
	if _, err := os.Stat(escape); !os.IsNotExist(err) {
		t.Fatalf("the Bash call wrote outside the session's folders (%v)", err)
	}
	if !strings.Contains(string(done.Action), "Permission denied") {
		t.Errorf("the tool result does not say Permission denied: %s", done.Action)
	}
	if b, _ := os.ReadFile(filepath.Join(ce.workDir, "dbcopy")); len(b) != 0 {
		t.Fatalf("the Bash call read the daemon's store: %d bytes", len(b))
	}
}

// TestSandboxNetworkModelsClaude drives the real claude CLI under
// sandbox.network models: it reaches its model endpoint (the fake model's
// port, named in allowPorts as an operator names an endpoint the agents'
// settings do not) and the host tools on the daemon's own port, and a Bash
// call's connection to any other port is refused by the kernel.
func TestSandboxNetworkModelsClaude(t *testing.T) {
	requireLandlock(t)
	requireNetworkLandlock(t)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed (apt-get install bash)")
	}
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	reached := make(chan struct{}, 1)
	go func() {
		if c, err := other.Accept(); err == nil {
			c.Close()
			reached <- struct{}{}
		}
	}()
	ce := newClaudeEnv(t, claude.StopEndsTurn, func(c *daemon.Config) {
		c.Sandbox.Default, c.Sandbox.Network = "workspace", "models"
	})
	// The fake model's port is known once it runs: the daemon restarts
	// with it allowed.
	_, fakePort, _ := net.SplitHostPort(ce.fake.Addr)
	p, _ := strconv.Atoi(fakePort)
	ce.cfg.Sandbox.AllowPorts = []uint16{uint16(p)}
	ce.restart()
	a := ce.client("a")
	const sess = "ahp-session:/5a4db0c5-0000-4000-8000-000000000037"
	a.MustCall("createSession", map[string]any{"channel": sess, "provider": claude.Provider})
	def := sessionState(t, a, sess).DefaultChat
	a.Subscribe(def)

	port := other.Addr().(*net.TCPAddr).Port
	cmd := "bash -c 'echo hi > /dev/tcp/127.0.0.1/" + strconv.Itoa(port) + "' 2>&1; echo exit=$?"
	done := confirmedBash(t, a, def, "connect [bash:"+cmd+"]")
	if !strings.Contains(strings.ToLower(string(done.Action)), "permission denied") {
		t.Errorf("the tool result does not say permission denied: %s", done.Action)
	}
	select {
	case <-reached:
		t.Fatal("a sandboxed Bash call connected to a port sandbox.network models does not allow")
	default:
	}
}
