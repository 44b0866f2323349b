//go:build darwin || freebsd || netbsd

package resources

import (
	"io/fs"
	"syscall"
	"time"
)

// created is the entry's birth time.
func created(st fs.FileInfo) time.Time {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return time.Unix(int64(s.Birthtimespec.Sec), int64(s.Birthtimespec.Nsec))
	}
	return st.ModTime()
}
