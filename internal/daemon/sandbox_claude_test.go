package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/agent/claude"
	"github.com/ahpd/ahpd/internal/ahp"
)

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
	a.Dispatch(def, turnStarted("t1", "write around [bash:"+cmd+"]"))
	call := clAwaitAsk(t, a, def, "t1")
	confirm := map[string]any{"type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": call, "approved": true}
	if env := a.AwaitEcho(a.Dispatch(def, confirm)); env.RejectionReason != "" {
		t.Fatalf("confirmation refused: %s", env.RejectionReason)
	}
	done := clAwaitAction(t, a, def, "t1", "chat/toolCallComplete")
	if end := awaitEnd(t, a, def, "t1"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended with %s: %s", end.Type(), end.Action)
	}
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
