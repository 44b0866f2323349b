package daemon

import "github.com/ahpd/ahpd/internal/agent"

// cofoldAgents builds cofold, the in-process coding agent from the config's "agents" key.
// None yet: the backend is not built.
func cofoldAgents(cfg Config) ([]agent.Agent, error) {
	_ = cfg
	return nil, nil
}
