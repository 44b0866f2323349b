package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/acp"
)

// acpAgents builds one Agent Client Protocol agent per entry of the
// config's "agents": {"acp": [{"name", "displayName", "command", "args",
// "env"}]}; each is listed as a provider of its own, named by its name,
// and keeps its session map under the data dir.
func acpAgents(cfg Config) ([]agent.Agent, error) {
	raw := cfg.Agents["acp"]
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var entries []acp.Options
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&entries); err != nil {
		return nil, fmt.Errorf("%w: agents.acp: want a list of {name, displayName, command, args, env, defaultModel}: %v", ErrUsage, err)
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
		if cfg.DataDir != "" {
			e.StateDir = filepath.Join(cfg.DataDir, "acp", e.Name)
		}
		e.Ledger = agentLedger(cfg)
		a, err := acp.New(e)
		if err != nil {
			return nil, fmt.Errorf("%w: agents.acp[%d]: %v", ErrUsage, i, err)
		}
		out = append(out, a)
	}
	return out, nil
}
