package daemon_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent/script"
	"github.com/ahpd/ahpd/internal/daemon"
)

// TestAgentSilenceEndsTurn: with agentSilenceSeconds set, a turn whose agent
// says nothing that long ends with chat/error naming the silence and the
// next turn runs in a new conversation; a turn waiting on a client's
// confirmation is not the agent's silence (issue 8 §4).
func TestAgentSilenceEndsTurn(t *testing.T) {
	// Slow and self-contained (its own daemon): it waits beside the other
	// slow ones rather than in line (make test stays under four minutes).
	t.Parallel()
	e := newEnv(t, func(c *daemon.Config) { c.AgentSilenceSeconds = 1 })
	c := e.client("a")
	_, def := e.createSession(c, "ahp-session:/5113e0ce-0000-4000-8000-000000000001")
	c.Subscribe(def)

	c.Dispatch(def, turnStarted("t1", "[confirm] may I"))
	call := clAwaitAsk(t, c, def, "t1")
	time.Sleep(2500 * time.Millisecond) // deliberate: over the limit, waiting on the client
	for _, env := range clTurnEnvs(c, def, "t1") {
		if typ := env.Type(); typ == "chat/error" || typ == "chat/turnComplete" || typ == "chat/turnCancelled" {
			t.Fatalf("a turn waiting for a confirmation ended as silent: %s", env.Raw)
		}
	}
	c.Dispatch(def, map[string]any{"type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": call, "approved": true})
	if end := awaitEnd(t, c, def, "t1"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended with %s", end.Raw)
	}

	c.Dispatch(def, turnStarted("t2", "[hold] and then nothing"))
	clAwaitAction(t, c, def, "t2", "chat/responsePart")
	quiet := time.Now()
	end := awaitEnd(t, c, def, "t2")
	if end.Type() != "chat/error" || !strings.Contains(string(end.Action), "agentSilent") || !strings.Contains(string(end.Action), "said nothing for 1s") {
		t.Fatalf("t2 ended with %s, want chat/error naming the silence", end.Raw)
	}
	if took := time.Since(quiet); took < time.Second || took > 3*time.Second {
		t.Errorf("ended %s after the agent went quiet, want 1–3 s", took.Round(time.Millisecond))
	}
	if end := sendTurn(t, c, def, "t3", "back again"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t3 ended with %s", end.Raw)
	}
}

// TestAgentSilenceSparesAStartingAgent: a conversation that has said
// nothing since it was opened (its process may still be starting) is not
// silent until chat.AgentStartAllowance, however short
// agentSilenceSeconds is; once it has spoken, the limit is the setting.
func TestAgentSilenceSparesAStartingAgent(t *testing.T) {
	// Slow and self-contained (its own daemon): it waits beside the other
	// slow ones rather than in line (make test stays under four minutes).
	t.Parallel()
	// [prep] says nothing for 3×SlowDelay (2.1 s) before its first event.
	e := newScriptEnv(t, script.Options{SlowDelay: 700 * time.Millisecond}, false, func(c *daemon.Config) { c.AgentSilenceSeconds = 1 })
	c := e.client("a")
	_, def := e.createSession(c, "ahp-session:/5113e0ce-0000-4000-8000-000000000002")
	c.Subscribe(def)
	if end := sendTurn(t, c, def, "t1", "[prep] a slow start"); end.Type() != "chat/turnComplete" {
		t.Fatalf("a conversation still starting was ended: %s", end.Raw)
	}
	end := sendTurn(t, c, def, "t2", "[prep] quiet once it has spoken")
	if end.Type() != "chat/error" || !strings.Contains(string(end.Action), "agentSilent") || !strings.Contains(string(end.Action), "said nothing for 1s") {
		t.Fatalf("t2 ended with %s, want chat/error naming the silence", end.Raw)
	}
}
