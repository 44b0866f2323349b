package daemon

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestNetworkPorts: sandbox.network models allows the ports of every
// http(s) URL in the agents' settings, at any depth and under any key,
// 443 and 53, and allowPorts; other strings add nothing.
func TestNetworkPorts(t *testing.T) {
	t.Parallel()
	cfg := Defaults()
	cfg.Agents = map[string]json.RawMessage{
		"claude": json.RawMessage(`{"env":{"ANTHROPIC_BASE_URL":"http://127.0.0.1:8787","OTHER":"not a url"}}`),
		"cofold": json.RawMessage(`{"baseURL":"https://models.example.com/v1","fallbacks":["http://gateway.local"]}`),
		"acp:x":  json.RawMessage(`{"command":"x","args":["--url","ftp://127.0.0.1:21"],"env":{"A":"https://h:8443/p"}}`),
	}
	cfg.Sandbox.AllowPorts = []uint16{11434, 443}
	got := networkPorts(cfg)
	want := []uint16{53, 80, 443, 8443, 8787, 11434}
	if !slices.Equal(got, want) {
		t.Fatalf("networkPorts = %v, want %v", got, want)
	}
}
