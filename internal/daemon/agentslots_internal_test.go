package daemon

import (
	"errors"
	"testing"
)

// TestDefaultMaxAgentProcesses: with maxAgentProcesses 0 the daemon runs
// one agent process per 512 MiB of the machine's memory, at most 8 per
// core, never fewer than 2 nor more than 64, and 8 where the memory is
// unknown (within the same bounds).
func TestDefaultMaxAgentProcesses(t *testing.T) {
	t.Parallel()
	const gib = 1 << 30
	for _, tc := range []struct {
		name  string
		mem   uint64
		cores int
		want  int
	}{
		{"a 24 GiB, 2-core machine is bound by its cores", 24 * gib, 2, 16},
		{"a 4 GiB, 8-core machine is bound by its memory", 4 * gib, 8, 8},
		{"a 512 MiB machine still runs 2", gib / 2, 4, 2},
		{"a 1 TiB, 64-core machine stops at 64", 1024 * gib, 64, 64},
		{"unknown memory on 4 cores", 0, 4, 8},
		{"unknown memory on 1 core: 8, the core bound", 0, 1, 8},
		{"no cores reported counts as one", 64 * gib, 0, 8},
	} {
		if got := maxAgentProcessesFor(tc.mem, tc.cores); got != tc.want {
			t.Errorf("%s: maxAgentProcessesFor(%d MiB, %d) = %d, want %d", tc.name, tc.mem>>20, tc.cores, got, tc.want)
		}
	}
	if n := DefaultMaxAgentProcesses(); n < minDefaultAgentProcesses || n > maxDefaultAgentProcesses {
		t.Errorf("this machine's default is %d, outside [%d, %d]", n, minDefaultAgentProcesses, maxDefaultAgentProcesses)
	}
}

// TestMaxAgentProcessesConfig: -1 (no limit) and 0 (the machine's) are
// taken, below -1 is refused naming the key.
func TestMaxAgentProcessesConfig(t *testing.T) {
	t.Parallel()
	for _, n := range []int{-1, 0, 2} {
		c := Defaults()
		c.MaxAgentProcesses = n
		if err := c.Validate(); err != nil {
			t.Errorf("maxAgentProcesses %d refused: %v", n, err)
		}
	}
	c := Defaults()
	c.MaxAgentProcesses = -2
	var ke *KeyError
	if err := c.Validate(); !errors.As(err, &ke) || ke.Key != "maxAgentProcesses" {
		t.Fatalf("maxAgentProcesses -2: %v, want a KeyError naming maxAgentProcesses", err)
	}
	if got := agentSlots(Config{MaxAgentProcesses: -1}, nil).Max(); got != -1 {
		t.Errorf("maxAgentProcesses -1 makes a pool of %d, want no limit (-1)", got)
	}
	if got := agentSlots(Config{}, nil).Max(); got != DefaultMaxAgentProcesses() {
		t.Errorf("maxAgentProcesses 0 makes a pool of %d, want the machine's %d", got, DefaultMaxAgentProcesses())
	}
}
