//go:build !unix

package pi

import (
	"os"
	"os/exec"
)

func setProcessGroup(cmd *exec.Cmd) {}

func signalGroup(cmd *exec.Cmd, sig os.Signal) {
	if cmd.Process == nil {
		return
	}
	if sig == os.Interrupt {
		// Windows has no interrupt for another process; kill instead.
		sig = os.Kill
	}
	_ = cmd.Process.Signal(sig)
}
