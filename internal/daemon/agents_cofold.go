package daemon

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/cofold"
	"github.com/ahpd/ahpd/internal/store"
)

// cofoldAgents builds cofold, the in-process coding agent, from the
// config's "agents": {"cofold": {"providers": [{"name", "api", "baseUrl",
// "apiKey" | "apiKeyEnv", "models": [{"id", "contextWindow",
// "maxTokens"}]}], "defaultModel", "permissionMode", ...}}. It is always
// offered: with no provider its turns fail saying where to configure one.
func cofoldAgents(cfg Config) ([]agent.Agent, error) {
	raw := bytes.TrimSpace(cfg.Agents[cofold.Provider])
	s, err := cofold.ParseSettings(raw)
	if err != nil {
		if errors.Is(err, cofold.ErrSettings) {
			return nil, fmt.Errorf("%w: agents.cofold: %v", ErrUsage, err)
		}
		return nil, err
	}
	return []agent.Agent{cofold.New(s)}, nil
}

// storeUser is a backend that keeps its conversations in ahpd's own store
// (cofold); the daemon hands it the store once it is open.
type storeUser interface {
	UseStore(cofold.Store)
}

// bindStore hands st's cofold rows to every backend of reg that keeps its
// conversations in it.
func bindStore(reg *agent.Registry, st *store.Store) {
	for _, p := range reg.Providers() {
		if a, ok := reg.Get(p); ok {
			if u, ok := a.(storeUser); ok {
				u.UseStore(st.Cofold())
			}
		}
	}
}
