//go:build linux

package resources

import (
	"io/fs"
	"syscall"
	"time"
)

// created is when the entry came to be, as stat tells it. Linux's stat has
// no birth time (only statx does, which the syscall package does not
// offer), so it is the inode's last status change: when the entry was
// made, or later renamed, chmodded or written.
func created(st fs.FileInfo) time.Time {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return time.Unix(int64(s.Ctim.Sec), int64(s.Ctim.Nsec))
	}
	return st.ModTime()
}
