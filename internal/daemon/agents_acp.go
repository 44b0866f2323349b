package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/acp"
)

// acpEntry is one entry of agents.acp: an agent's options, or
// {"name", "disabled": true} to list nothing under that name (a preset
// the operator does not want offered).
type acpEntry struct {
	acp.Options
	Disabled bool `json:"disabled,omitempty"`
}

// acpPreset is an ACP agent the root config offers unconfigured: listed
// under its name, unavailable with the install hint until its command is
// found (a configured path as it is, a bare name on PATH, each
// time the agents are looked at, as for claude and pi). An agents.acp
// entry of the same name replaces it.
type acpPreset struct {
	opts acp.Options
	// npm is the package that installs the command.
	npm string
}

// acpPresets are Gemini CLI, Codex's ACP adapter and GitHub Copilot CLI,
// each launched in its ACP mode with the user's own login and settings
// (docs/BACKENDS.md has what each reads from its env to use another
// model server).
var acpPresets = []acpPreset{
	{opts: acp.Options{Name: "gemini", DisplayName: "Gemini CLI", Command: "gemini", Args: []string{"--acp"}}, npm: "@google/gemini-cli"},
	{opts: acp.Options{Name: "codex", DisplayName: "Codex", Command: "codex-acp"}, npm: "@agentclientprotocol/codex-acp"},
	{opts: acp.Options{Name: "copilot", DisplayName: "GitHub Copilot CLI", Command: "copilot", Args: []string{"--acp"}}, npm: "@github/copilot"},
}

// hint says how to get the preset's command.
func (p acpPreset) hint() string {
	return fmt.Sprintf("%s CLI not found; install %s (npm install -g %s), or give agents.acp entry %q its command",
		p.opts.Command, p.npm, p.npm, p.opts.Name)
}

// acpAgents builds one Agent Client Protocol agent per entry of the
// config's "agents": {"acp": [{"name", "displayName", "command", "args",
// "env"}]}, then each preset no entry names; each is listed as a provider
// of its own, named by its name, and keeps its session map under the data
// dir.
func acpAgents(cfg Config) ([]agent.Agent, error) {
	var entries []acpEntry
	raw := bytes.TrimSpace(cfg.Agents["acp"])
	if len(raw) > 0 && string(raw) != "null" {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&entries); err != nil {
			return nil, fmt.Errorf("%w: agents.acp: want a list of {name, displayName, command, args, env, defaultModel, disabled}: %v", ErrUsage, err)
		}
	}
	seen := make(map[string]bool, len(entries))
	var out []agent.Agent
	for i, e := range entries {
		if e.Name == "" {
			return nil, fmt.Errorf("%w: agents.acp[%d]: empty name", ErrUsage, i)
		}
		if seen[e.Name] {
			return nil, fmt.Errorf("%w: agents.acp[%d]: name %q is used twice", ErrUsage, i, e.Name)
		}
		seen[e.Name] = true
		if e.Disabled {
			continue
		}
		a, err := newACPAgent(cfg, e.Options)
		if err != nil {
			return nil, fmt.Errorf("%w: agents.acp[%d]: %v", ErrUsage, i, err)
		}
		out = append(out, a)
	}
	for _, p := range acpPresets {
		if seen[p.opts.Name] {
			continue
		}
		a, err := newACPAgent(cfg, p.opts)
		if err != nil {
			return nil, fmt.Errorf("agents.acp preset %q: %v", p.opts.Name, err)
		}
		out = append(out, &presetAgent{Agent: a, hint: p.hint()})
	}
	return out, nil
}

func newACPAgent(cfg Config, o acp.Options) (*acp.Agent, error) {
	if cfg.DataDir != "" {
		o.StateDir = filepath.Join(cfg.DataDir, "acp", o.Name)
	}
	o.Ledger = agentLedger(cfg)
	return acp.New(o)
}

// presetAgent is a preset's ACP agent: the same backend, whose missing
// command is reported with the preset's install hint.
type presetAgent struct {
	*acp.Agent
	hint string
}

// Info is the agent's, unavailable with the install hint while its
// command is not found.
func (p *presetAgent) Info(ctx context.Context) agent.Info {
	info := p.Agent.Info(ctx)
	if info.Unavailable != "" {
		info.Unavailable = p.hint
	}
	return info
}

// Binary is the agent's command, or the install hint.
func (p *presetAgent) Binary() (string, error) {
	bin, err := p.Agent.Binary()
	if err != nil {
		return "", errors.New(p.hint)
	}
	return bin, nil
}

// IsACPPreset reports whether provider is an ACP preset cfg does not
// configure (no agents.acp entry of its name): `ahpd doctor` does not run
// such a CLI to ask its version.
func IsACPPreset(cfg Config, provider string) bool {
	preset := false
	for _, p := range acpPresets {
		preset = preset || p.opts.Name == provider
	}
	if !preset {
		return false
	}
	var entries []struct {
		Name string `json:"name"`
	}
	if raw := bytes.TrimSpace(cfg.Agents["acp"]); len(raw) > 0 {
		_ = json.Unmarshal(raw, &entries)
	}
	for _, e := range entries {
		if e.Name == provider {
			return false
		}
	}
	return true
}

var _ agent.Agent = (*presetAgent)(nil)
