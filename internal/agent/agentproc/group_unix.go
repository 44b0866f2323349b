//go:build unix

package agentproc

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// SetGroup makes cmd start in a process group of its own, which is killed
// when the daemon dies where the system can say so (Linux: the group's
// leader gets SIGKILL with its parent; the rest of the group is ended by
// the next start, Ledger.EndLeftovers).
func SetGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setDeathSignal(cmd.SysProcAttr)
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

// killGroup sends SIGKILL to the process group pgid and says whether any
// process was there to take it.
func killGroup(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, syscall.SIGKILL), syscall.ESRCH)
}

// processAlive says whether a process pid exists (a zombie counts: it is
// no longer running, but its pid is not free).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
