package daemon_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/sandbox"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

// TestACPLiveClaudeAdapter drives the real Claude ACP adapter, configured
// through agents.acp, over the daemon's websocket against the fake model:
// text streams; a permission it asks is confirmed by a second client; a
// stop ends the turn cancelled within a second; and after a daemon restart
// the chat's turns are there and the next turn runs in a new process that
// loaded the session (session/load). The adapter never sends
// fs/read_text_file (its tools read files themselves), so the refused read
// is proven with the fake agent in TestACPFakeAgentWire.
func TestACPLiveClaudeAdapter(t *testing.T) {
	t.Parallel()
	bin := fakemodel.Agent(t, "claude-agent-acp")
	fake := fakemodel.Start(t)
	cfg := daemon.Defaults()
	cfg.DataDir = t.TempDir()
	// Sessions start in the "default" permission mode, which asks for a
	// Bash call; the adapter's own default, "auto", would have its
	// classifier (a model call the fake cannot answer) block it unasked.
	claudeDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(claudeDir, "settings.json"), []byte(`{"permissions":{"defaultMode":"default"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	entry, _ := json.Marshal([]map[string]any{{
		"name": "claude-acp", "displayName": "Claude (ACP)", "command": bin,
		"env": []string{
			"HOME=" + home, "CLAUDE_CONFIG_DIR=" + claudeDir,
			"ANTHROPIC_BASE_URL=" + fake.URL, "ANTHROPIC_API_KEY=dummy", "IS_SANDBOX=1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1",
			"CLAUDE_CODE_MAX_RETRIES=0",
		},
	}})
	cfg.Agents = map[string]json.RawMessage{"acp": entry}
	reg, err := daemon.BuiltinAgents(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dataDir := cfg.DataDir
	e := newEnvWith(t, reg, func(c *daemon.Config) {
		c.DataDir = dataDir
		c.Agents = cfg.Agents
		// Sandboxed (AHPD_TEST_SANDBOX), the adapter keeps Claude's state
		// where an ACP agent's declared paths do not reach: the config
		// gives it (docs/SECURITY.md "Sandbox").
		c.Sandbox.Backends = map[string]sandbox.Paths{"claude-acp": {ReadWrite: []string{claudeDir, home}}}
	})
	a := e.client("a")
	const sess = "ahp-session:/acc0de00-0000-4000-8000-000000000001"
	a.MustCall("createSession", map[string]any{"channel": sess, "provider": "claude-acp"})
	st := sessionState(t, a, sess)
	def := st.DefaultChat
	a.Subscribe(def)

	if end := sendTurn(t, a, def, "t1", "hello acp"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended with %s: %s", end.Type(), end.Action)
	}
	if got := clMarkdown(chatOf(t, a, def).Turns[0]); !strings.Contains(got, "fake reply: hello acp") {
		t.Fatalf("t1 answered %q", got)
	}

	// The adapter asks permission for a Bash call (session/request_permission);
	// a second client confirms it, and the command runs.
	b := e.client("b")
	b.Subscribe(def)
	a.Dispatch(def, turnStarted("tp", "make it [bash:touch made.txt]"))
	call := clAwaitAsk(t, b, def, "tp")
	if env := b.AwaitEcho(b.Dispatch(def, map[string]any{"type": "chat/toolCallConfirmed", "turnId": "tp", "toolCallId": call, "approved": true})); env.RejectionReason != "" {
		t.Fatalf("confirmation refused: %s", env.RejectionReason)
	}
	if end := awaitEnd(t, a, def, "tp"); end.Type() != "chat/turnComplete" {
		t.Fatalf("tp ended with %s: %s", end.Type(), end.Action)
	}
	if _, err := os.Stat(filepath.Join(e.workDir, "made.txt")); err != nil {
		t.Errorf("the confirmed Bash call did not run: %v", err)
	}

	a.Dispatch(def, turnStarted("t2", "talk slowly [slow]"))
	clAwaitAction(t, a, def, "t2", "chat/delta")
	stopped := time.Now()
	a.AwaitEcho(a.Dispatch(def, map[string]any{"type": "chat/turnCancelled", "turnId": "t2"}))
	if end := awaitEnd(t, a, def, "t2"); end.Type() != "chat/turnCancelled" {
		t.Fatalf("t2 ended with %s", end.Type())
	}
	if d := time.Since(stopped); d > time.Second {
		t.Errorf("the stop took %v", d)
	}

	e.restart()
	a = e.client("a2")
	turns := chatOf(t, a, def).Turns
	if len(turns) != 3 || turns[0].Message.Text != "hello acp" {
		t.Fatalf("after the restart: %d turns", len(turns))
	}
	a.Subscribe(def)
	if end := sendTurn(t, a, def, "t3", "after the restart"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t3 ended with %s: %s", end.Type(), end.Action)
	}
	// The model saw the earlier turn: the new process loaded the session.
	var saw bool
	for _, r := range fake.Requests(t) {
		if !r.IsMessages() {
			continue
		}
		var all []string
		for _, m := range r.Messages() {
			all = append(all, m.Texts()...)
		}
		j := strings.Join(all, "|")
		if strings.Contains(j, "after the restart") && strings.Contains(j, "hello acp") {
			saw = true
		}
	}
	if !saw {
		t.Error("the turn after the restart did not carry the loaded history")
	}
}
