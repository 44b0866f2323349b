package host

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/ahpd/ahpd/internal/lockorder"
	"github.com/ahpd/ahpd/internal/reduce"
)

// rootDesk owns the root channel: the root state (the agents, the
// terminals, the root config), its snapshot, the root actions applied to
// it, and what root watchers are told about sessions.
type rootDesk struct {
	bus    *bus.Bus
	agents *agent.Registry

	// mu (rank lockorder.HostRoot) guards state: a root action is reduced
	// and published under it, so the root snapshot and the envelopes after
	// it agree. The bus's lock (rank Bus) is taken inside.
	mu    lockorder.Mutex
	state ahp.RootState
}

func newRootDesk(ctx context.Context, b *bus.Bus, agents *agent.Registry) *rootDesk {
	r := &rootDesk{bus: b, agents: agents, mu: lockorder.Mutex{Rank: lockorder.HostRoot}}
	r.state = ahp.RootState{Agents: r.agentInfos(ctx)}
	return r
}

func (r *rootDesk) agentInfos(ctx context.Context) []ahp.AgentInfo {
	var out []ahp.AgentInfo
	for _, p := range r.agents.Providers() {
		a, _ := r.agents.Get(p)
		info := a.Info(ctx)
		caps := a.Capabilities()
		ai := ahp.AgentInfo{
			Provider:    p,
			DisplayName: info.DisplayName,
			Description: info.Description,
			Models:      []ahp.SessionModelInfo{},
			Capabilities: &ahp.AgentCapabilities{
				MultipleChats: &ahp.MultipleChatsCapability{Fork: caps.Fork, SideChat: caps.SideChat},
			},
		}
		if ai.DisplayName == "" {
			ai.DisplayName = p
		}
		if info.Unavailable != "" {
			if ai.Description != "" {
				ai.Description += " "
			}
			ai.Description += "(unavailable: " + info.Unavailable + ")"
		}
		for _, m := range info.Models {
			ai.Models = append(ai.Models, ahp.SessionModelInfo{ID: m.ID, Provider: p, Name: m.Name})
		}
		out = append(out, ai)
	}
	return out
}

// apply applies a root action and publishes it.
func (r *rootDesk) apply(a ahp.Action, origin *ahp.ActionOrigin) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reduce.Root(&r.state, a)
	r.keepOnlyKnownConfig()
	r.bus.Publish(ahp.RootURI, a, origin)
}

// snapshot subscribes sub to the root channel and returns its snapshot.
func (r *rootDesk) snapshot(sub bus.Subscriber) (ahp.Snapshot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq := r.bus.Subscribe(sub, ahp.RootURI)
	raw, err := json.Marshal(r.state)
	if err != nil {
		return ahp.Snapshot{}, fmt.Errorf("marshal root state: %w", err)
	}
	return ahp.Snapshot{Resource: ahp.RootURI, State: json.RawMessage(raw), FromSeq: seq}, nil
}

// probeAgents asks every backend again whether it can run here (its CLI
// is looked up anew) and publishes root/agentsChanged when the agents list
// changed, so a CLI installed after the daemon started is offered from the
// next createSession on.
func (r *rootDesk) probeAgents(ctx context.Context) {
	infos := r.agentInfos(ctx)
	r.mu.Lock()
	same := reflect.DeepEqual(r.state.Agents, infos)
	r.mu.Unlock()
	if !same {
		r.apply(ahp.RootAgentsChanged{Agents: infos}, nil)
	}
}

// notifySessions sends a root notification about a session to the root
// watchers holding session:list; a connection whose version does not know
// SessionSummary.chats/defaultChat (0.9.0) gets legacy, or nothing when
// legacy is nil.
func (r *rootDesk) notifySessions(method string, full, legacy any) {
	r.bus.NotifyEach(ahp.RootURI, method, func(s bus.Subscriber) any {
		c, ok := s.(*client)
		if ok && !c.principal.Can(auth.SessionList) {
			// Root watchers hear of sessions only when they may list them.
			return nil
		}
		if ok && !ahp.SummaryChatsKnownTo(c.negotiated()) {
			if legacy == nil {
				return nil
			}
			return legacy
		}
		return full
	})
}

func jsonString(v any) string { b, _ := json.Marshal(v); return string(b) }
