//go:build !unix

package gitwork

import "os/exec"

// setGroup: no process groups here; a timeout kills git alone.
func setGroup(cmd *exec.Cmd) {}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
