package daemon_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/agent/pi"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

// The pi_*_test.go files drive the real pi (`pi --mode rpc`, installed by
// `make agents` under testdata/agents) through the daemon's websocket. pi
// is configured the way a user configures it, through the config's
// agents.pi, with the project's fake model server on 127.0.0.1 as its only
// provider (PI_OFFLINE=1, HOME and PI_CODING_AGENT_DIR of the test's own).

// The two API styles of the fake that pi speaks.
const (
	piOpenAI    = "fakeoai/fake-model"
	piAnthropic = "fakeant/fake-claude"
)

// piEnv is a daemon offering pi (built by daemon.BuiltinAgents from the
// config) against its own fake model server.
type piEnv struct {
	*testEnv
	fake     *fakemodel.Server
	agentDir string
	model    string
}

// piConfig is the agents.pi the tests configure: both styles of the fake
// as providers, model the default.
func piConfig(t testing.TB, fake *fakemodel.Server, bin, agentDir, model string) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(map[string]any{
		"binary":   bin,
		"agentDir": agentDir,
		"providers": map[string]any{
			"fakeoai": map[string]any{
				"baseUrl": fake.URL + "/v1", "api": "openai-completions", "apiKey": "dummy",
				"compat": map[string]any{"supportsDeveloperRole": false, "supportsReasoningEffort": false},
				"models": []any{map[string]any{"id": "fake-model", "contextWindow": 128000, "maxTokens": 4096}},
			},
			"fakeant": map[string]any{
				"baseUrl": fake.URL, "api": "anthropic-messages", "apiKey": "dummy",
				"models": []any{map[string]any{"id": "fake-claude", "contextWindow": 200000, "maxTokens": 4096, "reasoning": true}},
			},
		},
		"defaultModel": model,
		"env":          []string{"HOME=" + t.TempDir()},
	})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// newPiEnv starts a daemon whose pi runs model by default. pi's own retry
// of a failed model call is off, so a failure ends its turn at once.
func newPiEnv(t *testing.T, model string, mutate ...func(*daemon.Config)) *piEnv {
	t.Helper()
	bin := fakemodel.Agent(t, "pi")
	fake := fakemodel.Start(t)
	pe := &piEnv{fake: fake, agentDir: t.TempDir(), model: model}
	if err := os.WriteFile(filepath.Join(pe.agentDir, "settings.json"), []byte(`{"retry":{"enabled":false}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := daemon.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.Agents = map[string]json.RawMessage{pi.Provider: piConfig(t, fake, bin, pe.agentDir, model)}
	for _, m := range mutate {
		m(&cfg)
	}
	reg, err := daemon.BuiltinAgents(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pe.testEnv = newEnvWith(t, reg, func(c *daemon.Config) {
		c.DataDir, c.Agents, c.Tokens, c.ConnectionToken = cfg.DataDir, cfg.Agents, cfg.Tokens, cfg.ConnectionToken
		c.AgentSilenceSeconds = cfg.AgentSilenceSeconds
		c.Sandbox = cfg.Sandbox
	})
	return pe
}

// session creates a pi session and returns its default chat, subscribed
// by c.
func (pe *piEnv) session(c *ahptest.Client, uri string) string {
	pe.t.Helper()
	c.MustCall("createSession", map[string]any{"channel": uri, "provider": pi.Provider})
	def := sessionState(pe.t, c, uri).DefaultChat
	if def == "" {
		pe.t.Fatalf("session %s has no default chat", uri)
	}
	c.Subscribe(def)
	return def
}

// modelCalls are the fake's model requests in pi's style (chat
// completions or messages), in order.
func (pe *piEnv) modelCalls() []fakemodel.Request {
	pe.t.Helper()
	var out []fakemodel.Request
	for _, r := range pe.fake.Requests(pe.t) {
		if r.Method == "POST" && (r.IsMessages() || strings.HasSuffix(r.Path, "/chat/completions")) {
			out = append(out, r)
		}
	}
	return out
}

// history is what the last model call sent: each non-system message as
// role:text.
func (pe *piEnv) history() []string {
	pe.t.Helper()
	calls := pe.modelCalls()
	if len(calls) == 0 {
		pe.t.Fatal("the fake saw no model call")
	}
	return historyOf(calls[len(calls)-1])
}

func historyOf(r fakemodel.Request) []string {
	var out []string
	for _, m := range r.Messages() {
		if m.Role == "system" || m.Role == "developer" {
			continue
		}
		out = append(out, m.Role+":"+strings.Join(m.Texts(), " + "))
	}
	return out
}

// piPIDs lists the pi processes the test's daemon runs: its children
// running node (pi renames its process, so its command line says nothing
// more), read from /proc; the test skips where there is none.
func (pe *piEnv) piPIDs() []int {
	pe.t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		pe.t.Skip("no /proc to count pi processes")
	}
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ")".
		i := strings.LastIndexByte(string(stat), ')')
		f := strings.Fields(string(stat)[i+1:])
		if len(f) < 2 || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", d.Name(), "exe"))
		if err != nil || !strings.HasPrefix(filepath.Base(exe), "node") {
			continue
		}
		// This env's pi, not another node agent of the test binary.
		environ, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if err == nil && strings.Contains(string(environ), "PI_CODING_AGENT_DIR="+pe.agentDir+"\x00") {
			out = append(out, pid)
		}
	}
	return out
}
