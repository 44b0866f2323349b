package daemon

import (
	"bufio"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/ahpd/ahpd/internal/agentslots"
)

// agentProcessBytes is what one agent process is planned to take: an idle
// claude CLI holds about 200 MiB, a working one and the tools it runs
// more (issue 34).
const agentProcessBytes = 512 << 20

// agentProcessesPerCore bounds the default by the machine's cores too: an
// agent mostly waits on its model, but the tools it runs (builds, tests)
// do not.
const agentProcessesPerCore = 8

// Bounds of the default, whatever the machine.
const (
	minDefaultAgentProcesses = 2
	maxDefaultAgentProcesses = 64
	// unknownMemoryAgentProcesses is the default where the memory cannot
	// be read (not Linux).
	unknownMemoryAgentProcesses = 8
)

// DefaultMaxAgentProcesses is maxAgentProcesses when the config says 0:
// what this machine's memory and cores hold (maxAgentProcessesFor).
func DefaultMaxAgentProcesses() int {
	return maxAgentProcessesFor(memTotal(), runtime.NumCPU())
}

// maxAgentProcessesFor is the default for a machine of memBytes (0:
// unknown) and cores: one agent process per agentProcessBytes of memory,
// at most agentProcessesPerCore per core, within the bounds above.
func maxAgentProcessesFor(memBytes uint64, cores int) int {
	n := unknownMemoryAgentProcesses
	if memBytes > 0 {
		n = int(min(memBytes/agentProcessBytes, uint64(maxDefaultAgentProcesses)))
	}
	n = min(n, max(cores, 1)*agentProcessesPerCore)
	return max(minDefaultAgentProcesses, min(n, maxDefaultAgentProcesses))
}

// memTotal is the machine's memory in bytes from /proc/meminfo; 0 when it
// cannot be read.
func memTotal() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}

// agentSlots is the daemon's one pool of agent process slots, from
// maxAgentProcesses (0: the machine's default; -1: no limit, still
// counted).
func agentSlots(cfg Config, log *slog.Logger) *agentslots.Pool {
	n := cfg.MaxAgentProcesses
	if n == 0 {
		n = DefaultMaxAgentProcesses()
	}
	return agentslots.New(n, log)
}
