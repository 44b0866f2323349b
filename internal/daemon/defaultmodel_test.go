package daemon_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/agent/cofold"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

// TestCofoldSessionWithoutModelRunsTheConfiguredDefault: cofold with an
// OpenAI-compatible provider listed first and defaultModel naming an
// Anthropic provider's model: a session created naming no model sends
// that model, to the Anthropic endpoint, and its config says so. (Issue
// 35 §1: the first listed model used to win.)
func TestCofoldSessionWithoutModelRunsTheConfiguredDefault(t *testing.T) {
	t.Parallel()
	fake := fakemodel.Start(t)
	s, _ := json.Marshal(map[string]any{
		"providers": []any{
			map[string]any{"name": "fast", "api": "openai", "baseUrl": fake.URL + "/v1", "apiKey": "k", "models": []any{map[string]any{"id": "gpt-fake"}}},
			map[string]any{"name": "smart", "api": "anthropic", "baseUrl": fake.URL, "apiKey": "k", "models": []any{map[string]any{"id": "claude-fake"}}},
		},
		"defaultModel": "smart/claude-fake",
		"maxRetries":   0,
	})
	cfg := daemon.Defaults()
	cfg.Agents = map[string]json.RawMessage{"cofold": s}
	reg, err := daemon.BuiltinAgents(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, reg, func(c *daemon.Config) { c.Agents = cfg.Agents })
	a := e.client("a")
	const sess = "ahp-session:/de7a0100-0000-4000-8000-000000000351"
	a.MustCall("createSession", map[string]any{"channel": sess, "provider": cofold.Provider})
	st := sessionState(t, a, sess)
	if m := st.Config.Values["model"]; m != "smart/claude-fake" {
		t.Errorf("the session's config says model %v, want the configured default smart/claude-fake", m)
	}
	a.Subscribe(st.DefaultChat)
	if end := sendTurn(t, a, st.DefaultChat, "t1", "hi"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended with %s: %s", end.Type(), end.Action)
	}
	var last fakemodel.Request
	for _, r := range fake.Requests(t) {
		if r.Method == "POST" {
			last = r
		}
	}
	var body struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(last.Body, &body)
	if !strings.HasSuffix(last.Path, "/messages") || body.Model != "claude-fake" {
		t.Errorf("the turn went to %s with model %q, want the Anthropic endpoint with claude-fake", last.Path, body.Model)
	}
}

// TestACPSessionWithoutModelRunsTheConfiguredDefault: an ACP agent whose
// own list names fake-small first, configured with defaultModel
// fake-large: a session naming no model runs on fake-large, before and
// after the agent's list was learned. (Issue 35 §1.)
func TestACPSessionWithoutModelRunsTheConfiguredDefault(t *testing.T) {
	t.Parallel()
	e := newACPFakeEnvWith(t, map[string]any{"defaultModel": "fake-large"}, nil)
	a := e.client("a")
	for i, sess := range []string{"ahp-session:/de7a0100-0000-4000-8000-000000000352", "ahp-session:/de7a0100-0000-4000-8000-000000000353"} {
		a.MustCall("createSession", map[string]any{"channel": sess, "provider": "fake-acp"})
		st := sessionState(t, a, sess)
		a.Subscribe(st.DefaultChat)
		if end := sendTurn(t, a, st.DefaultChat, "t1", "[model]"); end.Type() != "chat/turnComplete" {
			t.Fatalf("session %d: t1 ended with %s: %s", i, end.Type(), end.Action)
		}
		if got := clMarkdown(chatOf(t, a, st.DefaultChat).Turns[0]); !strings.HasPrefix(got, "model fake-large,") {
			t.Errorf("session %d (the agent's list learned: %v) answered %q, want model fake-large", i, i > 0, got)
		}
	}
}

// TestPiSessionWithoutModelRunsTheConfiguredDefault: the real pi CLI with
// an OpenAI-compatible provider that sorts first and defaultModel naming
// an Anthropic provider's model: a session naming no model sends that
// model to the Anthropic endpoint. (Issue 35 §1.)
func TestPiSessionWithoutModelRunsTheConfiguredDefault(t *testing.T) {
	t.Parallel()
	pe := newPiEnv(t, "", func(c *daemon.Config) {
		var o map[string]any
		if err := json.Unmarshal(c.Agents["pi"], &o); err != nil {
			t.Fatal(err)
		}
		provs := o["providers"].(map[string]any)
		provs["zfakeant"] = provs["fakeant"] // sorts after fakeoai
		delete(provs, "fakeant")
		o["defaultModel"] = "zfakeant/fake-claude"
		c.Agents["pi"], _ = json.Marshal(o)
	})
	a := pe.client("a")
	const sess = "ahp-session:/de7a0100-0000-4000-8000-000000000354"
	def := pe.session(a, sess)
	if m := sessionState(t, a, sess).Config.Values["model"]; m != "zfakeant/fake-claude" {
		t.Errorf("the session's config says model %v, want zfakeant/fake-claude", m)
	}
	if end := sendTurn(t, a, def, "t1", "hi"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended with %s: %s", end.Type(), end.Action)
	}
	calls := pe.modelCalls()
	if len(calls) == 0 {
		t.Fatal("pi made no model call")
	}
	var body struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(calls[len(calls)-1].Body, &body)
	if !calls[len(calls)-1].IsMessages() || body.Model != "fake-claude" {
		t.Errorf("pi called %s with model %q, want the Anthropic endpoint with fake-claude", calls[len(calls)-1].Path, body.Model)
	}
}
