//go:build !unix

package agentproc

import (
	"os"
	"os/exec"
)

// SetGroup: no process groups here; only the process itself is signalled.
func SetGroup(cmd *exec.Cmd) {}

// SignalGroup signals cmd; an interrupt, which another process cannot be
// sent here, kills it.
func SignalGroup(cmd *exec.Cmd, sig os.Signal) {
	if cmd.Process == nil {
		return
	}
	if sig == os.Interrupt {
		sig = os.Kill
	}
	_ = cmd.Process.Signal(sig)
}

// killGroup: no groups here, and no pid to kill either once the leader is
// gone; the process itself was killed or waited for by its backend.
func killGroup(int) bool { return false }

// processAlive: not known here; EndLeftovers ends nothing.
func processAlive(int) bool { return true }
