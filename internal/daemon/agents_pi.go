package daemon

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/pi"
)

// piAgents builds the pi coding agent (pi --mode rpc) from the config's
// "agents": {"pi": {"binary", "agentDir", "providers", "defaultModel",
// "extraArgs", "env"}}, decoded strictly. pi is always listed (with the
// reason when its CLI is not installed, as claude is); its agent dir is
// <data dir>/pi/agent unless the config names one.
func piAgents(cfg Config) ([]agent.Agent, error) {
	raw := bytes.TrimSpace(cfg.Agents[pi.Provider])
	o, err := pi.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: agents.pi: %v", ErrUsage, err)
	}
	if o.AgentDir == "" && cfg.DataDir != "" {
		o.AgentDir = filepath.Join(cfg.DataDir, "pi", "agent")
	}
	o.Ledger = agentLedger(cfg)
	return []agent.Agent{pi.New(o)}, nil
}
