package reduce

import (
	"maps"
	"slices"

	"github.com/ahpd/ahpd/internal/ahp"
)

// Root applies a root-channel action to s.
func Root(s *ahp.RootState, a ahp.Action) {
	switch a := a.(type) {
	case ahp.RootAgentsChanged:
		s.Agents = slices.Clone(a.Agents)
		if s.Agents == nil {
			s.Agents = []ahp.AgentInfo{}
		}
	case ahp.RootActiveSessionsChanged:
		n := a.ActiveSessions
		s.ActiveSessions = &n
	case ahp.RootTerminalsChanged:
		s.Terminals = slices.Clone(a.Terminals)
	case ahp.RootConfigChanged:
		if s.Config == nil {
			return
		}
		s.Config = mergeConfig(s.Config, a.Config, a.Replace)
	}
}

// mergeConfig returns a copy of c whose values are merged with (or, when
// replace, replaced by) values.
func mergeConfig(c *ahp.ConfigState, values map[string]any, replace bool) *ahp.ConfigState {
	next := *c
	if replace {
		next.Values = make(map[string]any, len(values))
	} else {
		next.Values = maps.Clone(c.Values)
		if next.Values == nil {
			next.Values = make(map[string]any, len(values))
		}
	}
	maps.Copy(next.Values, values)
	return &next
}
