package daemon

import "github.com/ahpd/ahpd/internal/agent"

// acpAgents builds the Agent Client Protocol agents the config names from the config's "agents" key.
// None yet: the backend is not built.
func acpAgents(cfg Config) ([]agent.Agent, error) {
	_ = cfg
	return nil, nil
}
