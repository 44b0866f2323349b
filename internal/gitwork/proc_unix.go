//go:build unix

package gitwork

import (
	"os/exec"
	"syscall"
)

// setGroup starts git in a process group of its own, so a timeout kills the
// hooks and helpers it started too.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	if syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) != nil {
		_ = cmd.Process.Kill()
	}
}
