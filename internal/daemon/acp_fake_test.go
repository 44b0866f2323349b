package daemon_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

// TestACPFakeAgentWire drives the in-repo fake ACP agent (testdata/acpagent)
// through the daemon's websocket: text streams; a permission is asked and
// confirmed by a second client; a read outside the chat's directories is
// refused; a stop ends the turn cancelled; after a restart the turns are
// there and the next turn's process loaded the session.
func TestACPFakeAgentWire(t *testing.T) {
	root, err := fakemodel.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "acpagent")
	if out, err := exec.Command("go", "build", "-C", root, "-o", bin, "./testdata/acpagent").CombinedOutput(); err != nil {
		t.Fatalf("build the fake acp agent: %v\n%s", err, out)
	}
	entry, _ := json.Marshal([]map[string]any{{"name": "fake-acp", "command": bin, "args": []string{"-state", t.TempDir()}}})
	cfg := daemon.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.Agents = map[string]json.RawMessage{"acp": entry}
	reg, err := daemon.BuiltinAgents(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, reg, func(c *daemon.Config) {
		c.DataDir, c.Agents = cfg.DataDir, cfg.Agents
	})
	a := e.client("a")
	const sess = "ahp-session:/acc0de00-0000-4000-8000-0000000000fa"
	a.MustCall("createSession", map[string]any{"channel": sess, "provider": "fake-acp"})
	def := sessionState(t, a, sess).DefaultChat
	a.Subscribe(def)
	b := e.client("b")
	b.Subscribe(def)

	if end := sendTurn(t, a, def, "t1", "hello"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended with %s: %s", end.Type(), end.Action)
	}
	if got := clMarkdown(chatOf(t, a, def).Turns[0]); got != "fake acp: hello" {
		t.Errorf("t1 answered %q", got)
	}

	a.Dispatch(def, turnStarted("t2", "[perm]"))
	call := clAwaitAsk(t, b, def, "t2")
	if env := b.AwaitEcho(b.Dispatch(def, map[string]any{"type": "chat/toolCallConfirmed", "turnId": "t2", "toolCallId": call, "approved": true})); env.RejectionReason != "" {
		t.Fatalf("confirmation refused: %s", env.RejectionReason)
	}
	if end := awaitEnd(t, a, def, "t2"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t2 ended with %s", end.Type())
	}
	if got := clMarkdown(chatOf(t, a, def).Turns[1]); !strings.Contains(got, "picked allow") {
		t.Errorf("t2 answered %q", got)
	}

	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if end := sendTurn(t, a, def, "t3", "[read:"+secret+"]"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t3 ended with %s", end.Type())
	}
	if got := clMarkdown(chatOf(t, a, def).Turns[2]); !strings.HasPrefix(got, "read refused:") || strings.Contains(got, "read: secret") {
		t.Errorf("t3 answered %q", got)
	}

	a.Dispatch(def, turnStarted("t4", "[slow]"))
	clAwaitAction(t, a, def, "t4", "chat/delta")
	a.AwaitEcho(a.Dispatch(def, map[string]any{"type": "chat/turnCancelled", "turnId": "t4"}))
	if end := awaitEnd(t, a, def, "t4"); end.Type() != "chat/turnCancelled" {
		t.Fatalf("t4 ended with %s", end.Type())
	}

	e.restart()
	a = e.client("a2")
	if turns := chatOf(t, a, def).Turns; len(turns) != 4 || turns[0].Message.Text != "hello" {
		t.Fatalf("after the restart: %d turns", len(turns))
	}
	a.Subscribe(def)
	if end := sendTurn(t, a, def, "t5", "after"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t5 ended with %s: %s", end.Type(), end.Action)
	}
}
