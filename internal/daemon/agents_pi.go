package daemon

import "github.com/ahpd/ahpd/internal/agent"

// piAgents builds the pi coding agent (pi --mode rpc) from the config's "agents" key.
// None yet: the backend is not built.
func piAgents(cfg Config) ([]agent.Agent, error) {
	_ = cfg
	return nil, nil
}
