//go:build unix

package acp

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup starts the agent in a process group of its own, so a
// kill reaches what it started (its model CLI, shells) too.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup signals the process group of cmd.
func signalGroup(cmd *exec.Cmd, sig os.Signal) {
	if cmd.Process == nil {
		return
	}
	s, ok := sig.(syscall.Signal)
	if !ok || syscall.Kill(-cmd.Process.Pid, s) != nil {
		_ = cmd.Process.Signal(sig)
	}
}
