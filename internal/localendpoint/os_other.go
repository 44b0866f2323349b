//go:build !unix

package localendpoint

import "io/fs"

// Alive cannot probe a process here: every pid counts as alive, so a start
// never prunes (VS Code's own readers still do).
func Alive(pid int) bool { return pid > 0 }

// ownedByMe has no owner to compare here; the directory checks still refuse
// links and non-directories.
func ownedByMe(fs.FileInfo) bool { return true }

const noFollow = 0
