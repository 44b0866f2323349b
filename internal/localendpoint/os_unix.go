//go:build unix

package localendpoint

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// Alive reports whether process pid may be running: only a signal-0 probe
// answered "no such process" (ESRCH) says it is dead. EPERM (another user's
// process) and anything unexpected count as alive, so nothing of a live
// process is ever removed.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return !errors.Is(err, syscall.ESRCH)
}

// ownedByMe reports whether fi belongs to this process's effective user.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// noFollow is the open flag that refuses a symlink as the last element.
const noFollow = syscall.O_NOFOLLOW
