package agentproc

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// setDeathSignal: the kernel kills the agent when the daemon's thread that
// started it ends. Go ends a thread only under runtime.LockOSThread, which
// the daemon does not use where it starts agents, so in effect: when the
// daemon dies.
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

// processStart is pid's start time in clock ticks since boot, field 22 of
// /proc/<pid>/stat.
func processStart(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	return statStart(string(b))
}

// statStart reads the start time out of a /proc/<pid>/stat line. The
// command name (field 2) is in parentheses and may hold spaces and
// parentheses itself, so the fields are counted after its last ")".
func statStart(stat string) (uint64, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); field 22 is f[19].
	if len(f) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(f[19], 10, 64)
	return v, err == nil
}
