//go:build !unix

package acp

import (
	"os"
	"os/exec"
)

// setProcessGroup: no process groups here; only the agent itself is
// signalled.
func setProcessGroup(cmd *exec.Cmd) {}

func signalGroup(cmd *exec.Cmd, sig os.Signal) {
	if cmd.Process != nil {
		_ = cmd.Process.Signal(sig)
	}
}
