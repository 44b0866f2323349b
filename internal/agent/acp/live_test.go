package acp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

func TestMain(m *testing.M) { fakemodel.Main(m) }

const waitFor = 90 * time.Second

// claudeACP is the real Claude ACP adapter (make agents) against the fake
// model server on loopback.
func claudeACP(t *testing.T) (*Agent, string) {
	t.Helper()
	bin := fakemodel.Agent(t, "claude-agent-acp")
	fake := fakemodel.Start(t)
	a, err := New(Options{Name: "claude-acp", Command: bin, StateDir: t.TempDir(), Env: []string{
		"HOME=" + t.TempDir(),
		"CLAUDE_CONFIG_DIR=" + askingConfigDir(t),
		"ANTHROPIC_BASE_URL=" + fake.URL,
		"ANTHROPIC_API_KEY=dummy",
		"IS_SANDBOX=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_MAX_RETRIES=0",
	}})
	if err != nil {
		t.Fatal(err)
	}
	return a, t.TempDir()
}

// askingConfigDir is a CLAUDE_CONFIG_DIR whose settings start sessions in
// the "default" permission mode. Without it claude-agent-acp starts in
// "auto", whose classifier (a model call the fake cannot answer) blocks a
// Bash call instead of sending session/request_permission.
func askingConfigDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	settings := `{"permissions":{"defaultMode":"default"}}`
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// collect reads events until turn id ends.
func collect(t *testing.T, conv agent.Conversation, id string, on func(agent.Event)) []agent.Event {
	t.Helper()
	var out []agent.Event
	timeout := time.After(waitFor)
	for {
		select {
		case ev, ok := <-conv.Events():
			if !ok {
				t.Fatalf("events closed before %s ended", id)
			}
			out = append(out, ev)
			if on != nil {
				on(ev)
			}
			if ev.Kind == agent.EventTurnEnd && ev.TurnID == id {
				return out
			}
		case <-timeout:
			t.Fatalf("turn %s did not end; events %+v", id, out)
		}
	}
}

func textOf(evs []agent.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Kind == agent.EventText {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

// TestClaudeACPLive drives the real Claude ACP adapter: text streams, a
// permission asked and confirmed, a stop ends the turn cancelled within a
// second, and a new process loads the session with session/load.
func TestClaudeACPLive(t *testing.T) {
	a, dir := claudeACP(t)
	conv, err := a.Open(context.Background(), agent.OpenParams{Mode: agent.OpenNew, ConversationID: "c1", Directories: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()

	t.Run("text streams", func(t *testing.T) {
		if err := conv.Send(context.Background(), agent.Turn{ID: "t1", Text: "hello acp"}); err != nil {
			t.Fatal(err)
		}
		evs := collect(t, conv, "t1", nil)
		if end := evs[len(evs)-1].End; end.Outcome != agent.OutcomeComplete {
			t.Fatalf("t1 ended %+v", end)
		}
		if got := textOf(evs); !strings.Contains(got, "fake reply: hello acp") {
			t.Errorf("t1 said %q", got)
		}
	})

	t.Run("permission confirmed", func(t *testing.T) {
		if err := conv.Send(context.Background(), agent.Turn{ID: "t2", Text: "make it [bash:touch made.txt && rm -f ../acp-never-there]"}); err != nil {
			t.Fatal(err)
		}
		asked := false
		evs := collect(t, conv, "t2", func(ev agent.Event) {
			if ev.Kind == agent.EventToolReady && ev.ToolCall.NeedsConfirmation {
				asked = true
				if err := conv.Confirm("t2", ev.ToolCall.ID, true); err != nil {
					t.Errorf("confirm: %v", err)
				}
			}
		})
		if !asked {
			t.Fatal("the adapter asked no permission for the Bash call")
		}
		if end := evs[len(evs)-1].End; end.Outcome != agent.OutcomeComplete {
			t.Fatalf("t2 ended %+v", end)
		}
		if _, err := os.Stat(dir + "/made.txt"); err != nil {
			t.Errorf("the confirmed tool did not run: %v", err)
		}
	})

	t.Run("stop ends the turn within a second", func(t *testing.T) {
		if err := conv.Send(context.Background(), agent.Turn{ID: "t3", Text: "talk slowly [slow]"}); err != nil {
			t.Fatal(err)
		}
		var stopped time.Time
		evs := collect(t, conv, "t3", func(ev agent.Event) {
			if ev.Kind == agent.EventText && stopped.IsZero() {
				stopped = time.Now()
				_ = conv.Stop(context.Background())
			}
		})
		if end := evs[len(evs)-1].End; end.Outcome != agent.OutcomeCancelled {
			t.Fatalf("t3 ended %+v", end)
		}
		if d := time.Since(stopped); d > time.Second {
			t.Errorf("the stop took %v", d)
		}
	})

	t.Run("a new process loads the session", func(t *testing.T) {
		_ = conv.Close()
		tts, err := a.ReadTurns(context.Background(), "c1", []string{dir})
		if err != nil {
			t.Fatal(err)
		}
		if len(tts) < 2 || tts[0].Text != "hello acp" {
			t.Fatalf("read back %+v", tts)
		}
		conv2, err := a.Open(context.Background(), agent.OpenParams{Mode: agent.OpenResume, ConversationID: "c1", Directories: []string{dir}})
		if err != nil {
			t.Fatal(err)
		}
		defer conv2.Close()
		if err := conv2.Send(context.Background(), agent.Turn{ID: "t4", Text: "after the load"}); err != nil {
			t.Fatal(err)
		}
		evs := collect(t, conv2, "t4", nil)
		if end := evs[len(evs)-1].End; end.Outcome != agent.OutcomeComplete {
			t.Fatalf("t4 ended %+v", end)
		}
	})
}
