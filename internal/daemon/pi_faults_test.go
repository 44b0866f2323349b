package daemon_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent/agentproc"
	"github.com/ahpd/ahpd/internal/agent/pi"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/sandbox"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

// TestPiGarbageOnStdout: lines on pi's stdout that are not JSON (here from
// a wrapper around the real pi, before pi starts and in the middle of a
// run) are logged and skipped; the turns answer as ever.
func TestPiGarbageOnStdout(t *testing.T) {
	t.Parallel()
	real := fakemodel.Agent(t, "pi")
	wrapper := filepath.Join(t.TempDir(), "pi-garbage")
	script := "#!/bin/sh\necho 'this is not json'\n\"$PI_REAL\" \"$@\" | sed -u '/\"type\":\"agent_start\"/i garbage {{'\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	pe := newPiEnv(t, piOpenAI, func(c *daemon.Config) {
		var o map[string]any
		_ = json.Unmarshal(c.Agents[pi.Provider], &o)
		o["binary"] = wrapper
		o["env"] = append(o["env"].([]any), "PI_REAL="+real)
		c.Agents[pi.Provider], _ = json.Marshal(o)
		// Sandboxed (AHPD_TEST_SANDBOX), the wrapper's real pi is a path
		// the backend does not know: the config names it.
		c.Sandbox.Backends = map[string]sandbox.Paths{pi.Provider: {ReadOnly: agentproc.InstallPaths(real)}}
	})
	a := pe.client("a")
	def := pe.session(a, "ahp-session:/9100de00-0000-4000-8000-000000000006")
	for i, text := range []string{"through the garbage", "and again"} {
		id := []string{"t1", "t2"}[i]
		if end := sendTurn(t, a, def, id, text); end.Type() != "chat/turnComplete" {
			t.Fatalf("%s ended with %s: %s", id, end.Type(), end.Action)
		}
		if got := clMarkdown(chatOf(t, a, def).Turns[i]); got != "fake reply: "+text {
			t.Errorf("%s answered %q", id, got)
		}
	}
}

// TestPiSilence: a pi that says nothing for agentSilenceSeconds while a
// turn runs (a tool that hangs) is caught by the silence watchdog: the turn
// ends with chat/error naming the silence, that pi is ended, and the next
// turn runs in a fresh one.
func TestPiSilence(t *testing.T) {
	pe := newPiEnv(t, piAnthropic, func(c *daemon.Config) { c.AgentSilenceSeconds = 2 })
	a := pe.client("a")
	def := pe.session(a, "ahp-session:/9100de00-0000-4000-8000-000000000007")
	a.Dispatch(def, turnStarted("t1", "hang [bash:sleep 30; echo late]"))
	clAwaitAction(t, a, def, "t1", "chat/toolCallReady")
	before := pe.piPIDs()
	end := awaitEnd(t, a, def, "t1")
	if end.Type() != "chat/error" || !strings.Contains(string(end.Action), "agentSilent") {
		t.Fatalf("t1 ended with %s: %s", end.Type(), end.Action)
	}
	if end := sendTurn(t, a, def, "t2", "awake again"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t2 ended with %s: %s", end.Type(), end.Action)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		after := pe.piPIDs()
		if len(before) == 1 && len(after) == 1 && !slices.Contains(after, before[0]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pi processes %v while silent, %v after the next turn", before, after)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
