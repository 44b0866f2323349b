package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// TestPiSteeringRefused: a steering message pi would not take is taken out
// at once with chat/pendingMessageRemoved, and the turn goes on (C-TURN-85).
// pi refuses to steer with an extension's command ("Extension commands are
// not allowed", docs/rpc.md), so the agent dir carries an extension that
// registers one, and the steering message names it.
func TestPiSteeringRefused(t *testing.T) {
	t.Parallel()
	pe := newPiEnv(t, piOpenAI)
	ext := filepath.Join(pe.agentDir, "extensions", "refuse.ts")
	if err := os.MkdirAll(filepath.Dir(ext), 0o755); err != nil {
		t.Fatal(err)
	}
	src := "export default function (pi: any) {\n\tpi.registerCommand(\"refused\", { description: \"a command pi will not steer with\", handler: async () => {} });\n}\n"
	if err := os.WriteFile(ext, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	a := pe.client("a")
	def := pe.session(a, "ahp-session:/9100de00-0000-4000-8000-0000000000f5")
	a.Dispatch(def, turnStarted("t1", "slow tool [bash:sleep 2; echo slept]"))
	clAwaitAction(t, a, def, "t1", "chat/toolCallReady")
	awaitAccepted(t, a, a.Dispatch(def, clPending(ahp.PendingSteering, "r1", "/refused please")))
	removed := hostRemoval(t, a, def, "r1")
	end := awaitEnd(t, a, def, "t1")
	if end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended with %s: %s", end.Type(), end.Action)
	}
	if removed.ServerSeq > end.ServerSeq {
		t.Error("the refused message was taken out only when the turn ended")
	}
	if h := strings.Join(pe.history(), "\n"); strings.Contains(h, "/refused please") {
		t.Errorf("the model was told a message pi refused:\n%s", h)
	}
}
