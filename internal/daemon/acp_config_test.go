package daemon_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/ahpd/ahpd/internal/daemon"
)

// TestACPConfig: each agents.acp entry is a provider of its own; an empty
// or duplicate name, an empty command or an unknown field is a usage error.
func TestACPConfig(t *testing.T) {
	t.Parallel()
	build := func(raw string) ([]string, error) {
		cfg := daemon.Defaults()
		cfg.DataDir = t.TempDir()
		cfg.Agents = map[string]json.RawMessage{"acp": json.RawMessage(raw)}
		reg, err := daemon.BuiltinAgents(cfg)
		if err != nil {
			return nil, err
		}
		return reg.Providers(), nil
	}
	got, err := build(`[{"name":"one","displayName":"One","command":"sh","args":["-c","true"],"env":["A=b"]},{"name":"two","command":"sh"}]`)
	if err != nil || !slices.Contains(got, "one") || !slices.Contains(got, "two") {
		t.Fatalf("providers %q, %v", got, err)
	}
	for _, bad := range []string{
		`[{"name":"","command":"sh"}]`,
		`[{"name":"x","command":"sh"},{"name":"x","command":"sh"}]`,
		`[{"name":"x","command":""}]`,
		`[{"name":"x","command":"sh","bogus":1}]`,
		`{"name":"x"}`,
		`[{"name":"x","command":"sh","env":["NOEQUALS"]}]`,
	} {
		if _, err := build(bad); !errors.Is(err, daemon.ErrUsage) {
			t.Errorf("%s: err %v, want a usage error", bad, err)
		}
	}
}
