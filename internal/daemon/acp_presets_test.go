package daemon_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/sandbox"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

// presetHints are the ACP presets and the npm package each one's install
// hint names.
var presetHints = map[string]string{
	"gemini":  "@google/gemini-cli",
	"codex":   "@agentclientprotocol/codex-acp",
	"copilot": "@github/copilot",
}

// noAgentCLIs makes every agent CLI absent for the test: the working
// directory is outside the module (no testdata/agents above it) and PATH
// holds only the returned directory.
func noAgentCLIs(t *testing.T) (pathDir string) {
	t.Helper()
	t.Chdir(t.TempDir())
	pathDir = t.TempDir()
	t.Setenv("PATH", pathDir)
	return pathDir
}

// rootAgents is the root state's agents list, by provider.
func rootAgents(t *testing.T, raw json.RawMessage) map[string]ahp.AgentInfo {
	t.Helper()
	var root struct {
		Agents []ahp.AgentInfo `json:"agents"`
	}
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	out := map[string]ahp.AgentInfo{}
	for _, a := range root.Agents {
		out[a.Provider] = a
	}
	return out
}

// TestACPPresetsUnavailableUntilFound: with nothing configured the root
// agents list offers gemini, codex and copilot, each unavailable with its
// install hint while its CLI is not found, and a turn of one fails with
// that hint; once a `gemini` is on PATH, the next createSession lists it
// available and a turn runs through it (here the in-repo fake ACP agent
// behind a wrapper named gemini).
func TestACPPresetsUnavailableUntilFound(t *testing.T) {
	acpagent := fakemodel.Build(t, "acpagent")
	pathDir := noAgentCLIs(t)
	cfg := daemon.Defaults()
	cfg.DataDir = t.TempDir()
	reg, err := daemon.BuiltinAgents(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, pkg := range presetHints {
		a, ok := reg.Get(name)
		if !ok {
			t.Fatalf("preset %s not offered: %q", name, reg.Providers())
		}
		if u := a.Info(t.Context()).Unavailable; !strings.Contains(u, "npm install -g "+pkg) {
			t.Errorf("preset %s unavailable says %q, want the install hint for %s", name, u, pkg)
		}
		if !daemon.IsACPPreset(cfg, name) {
			t.Errorf("IsACPPreset(%s) false with nothing configured", name)
		}
	}

	dataDir, state := cfg.DataDir, t.TempDir()
	e := newEnvWith(t, reg, func(c *daemon.Config) {
		c.DataDir = dataDir
		// Sandboxed (AHPD_TEST_SANDBOX), the wrapper runs the fake agent
		// from where the test built it, with its state where the test
		// put it: the config gives both, as an operator would.
		c.Sandbox.Backends = map[string]sandbox.Paths{"gemini": {ReadWrite: []string{state}, ReadOnly: []string{filepath.Dir(acpagent)}}}
	})
	c := e.client("a")
	raw, _ := c.Subscribe(ahp.RootURI)
	listed := rootAgents(t, raw)
	for name, pkg := range presetHints {
		if d := listed[name].Description; !strings.Contains(d, "(unavailable: ") || !strings.Contains(d, pkg) {
			t.Errorf("root lists %s as %q, want unavailable with the hint", name, d)
		}
	}

	// Refused: a turn of a preset whose CLI is missing fails with the hint.
	const codexSess = "ahp-session:/acc0de00-0000-4000-8000-0000000000c1"
	c.MustCall("createSession", map[string]any{"channel": codexSess, "provider": "codex"})
	def := sessionState(t, c, codexSess).DefaultChat
	c.Subscribe(def)
	end := sendTurn(t, c, def, "t1", "hello")
	if end.Type() != "chat/error" || !strings.Contains(string(end.Action), "npm install -g @agentclientprotocol/codex-acp") {
		t.Fatalf("a turn of the missing codex ended with %s: %s", end.Type(), end.Action)
	}

	// Found on PATH: offered at the next createSession, and it runs.
	wrapper := "#!/bin/sh\nexec " + acpagent + " -state " + state + "\n"
	if err := os.WriteFile(filepath.Join(pathDir, "gemini"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	const gemSess = "ahp-session:/acc0de00-0000-4000-8000-0000000000c2"
	c.MustCall("createSession", map[string]any{"channel": gemSess, "provider": "gemini"})
	changed := c.AwaitAction(ahp.RootURI, "root/agentsChanged")
	var ch struct {
		Agents []ahp.AgentInfo `json:"agents"`
	}
	if err := json.Unmarshal(changed.Action, &ch); err != nil {
		t.Fatal(err)
	}
	for _, a := range ch.Agents {
		unavailable := strings.Contains(a.Description, "(unavailable: ")
		switch a.Provider {
		case "gemini":
			if unavailable {
				t.Errorf("gemini on PATH still listed as %q", a.Description)
			}
		case "codex", "copilot":
			if !unavailable {
				t.Errorf("%s listed available: %q", a.Provider, a.Description)
			}
		}
	}
	gem := sessionState(t, c, gemSess).DefaultChat
	c.Subscribe(gem)
	if end := sendTurn(t, c, gem, "t1", "hello preset"); end.Type() != "chat/turnComplete" {
		t.Fatalf("the gemini preset's turn ended with %s: %s", end.Type(), end.Action)
	}
	if got := clMarkdown(chatOf(t, c, gem).Turns[0]); !strings.Contains(got, "fake acp: ") || !strings.Contains(got, "hello preset") {
		t.Errorf("the gemini preset answered %q", got)
	}
}

// TestACPPresetOverriddenByEntry: an agents.acp entry named like a preset
// replaces it (its command, display name and availability), an entry
// {"name", "disabled": true} hides one, and the presets nobody named stay
// offered; a disabled entry still takes part in the name checks.
func TestACPPresetOverriddenByEntry(t *testing.T) {
	acpagent := fakemodel.Build(t, "acpagent")
	noAgentCLIs(t)
	cfg := daemon.Defaults()
	cfg.DataDir = t.TempDir()
	entries, _ := json.Marshal([]map[string]any{
		{"name": "codex", "displayName": "My Codex", "command": acpagent},
		{"name": "copilot", "disabled": true},
	})
	cfg.Agents = map[string]json.RawMessage{"acp": entries}
	reg, err := daemon.BuiltinAgents(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ps := reg.Providers()
	if n := countOf(ps, "codex"); n != 1 {
		t.Fatalf("codex offered %d times: %q", n, ps)
	}
	if slices.Contains(ps, "copilot") || !slices.Contains(ps, "gemini") {
		t.Fatalf("providers %q: want copilot hidden and gemini offered", ps)
	}
	codex, _ := reg.Get("codex")
	if info := codex.Info(t.Context()); info.Unavailable != "" || info.DisplayName != "My Codex" {
		t.Errorf("the configured codex: %+v", info)
	}
	gemini, _ := reg.Get("gemini")
	if u := gemini.Info(t.Context()).Unavailable; !strings.Contains(u, "@google/gemini-cli") {
		t.Errorf("the gemini preset beside the entries says %q", u)
	}
	if daemon.IsACPPreset(cfg, "codex") || daemon.IsACPPreset(cfg, "copilot") || !daemon.IsACPPreset(cfg, "gemini") || daemon.IsACPPreset(cfg, "script") {
		t.Error("IsACPPreset does not follow the configured entries")
	}

	dataDir, agents := cfg.DataDir, cfg.Agents
	e := newEnvWith(t, reg, func(c *daemon.Config) { c.DataDir, c.Agents = dataDir, agents })
	c := e.client("a")
	const sess = "ahp-session:/acc0de00-0000-4000-8000-0000000000c3"
	c.MustCall("createSession", map[string]any{"channel": sess, "provider": "codex"})
	def := sessionState(t, c, sess).DefaultChat
	c.Subscribe(def)
	if end := sendTurn(t, c, def, "t1", "configured"); end.Type() != "chat/turnComplete" {
		t.Fatalf("the configured codex's turn ended with %s: %s", end.Type(), end.Action)
	}

	for _, bad := range []string{
		`[{"name":"copilot","disabled":true},{"name":"copilot","command":"x"}]`,
		`[{"name":"gemini","disabled":"yes"}]`,
		`[{"name":"","disabled":true}]`,
	} {
		cfg.Agents = map[string]json.RawMessage{"acp": json.RawMessage(bad)}
		if _, err := daemon.BuiltinAgents(cfg); !errors.Is(err, daemon.ErrUsage) {
			t.Errorf("%s: err %v, want a usage error", bad, err)
		}
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}
