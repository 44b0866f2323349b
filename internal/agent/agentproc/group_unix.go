//go:build unix

package agentproc

import (
	"os"
	"os/exec"
	"syscall"
)

// SetGroup makes cmd start in a process group of its own.
func SetGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// SignalGroup signals cmd's process group, or cmd alone when that fails
// (it was not started by SetGroup, or sig is not a syscall.Signal).
func SignalGroup(cmd *exec.Cmd, sig os.Signal) {
	if cmd.Process == nil {
		return
	}
	s, ok := sig.(syscall.Signal)
	if !ok || syscall.Kill(-cmd.Process.Pid, s) != nil {
		_ = cmd.Process.Signal(sig)
	}
}
