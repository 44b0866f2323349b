//go:build !(linux || darwin || freebsd || netbsd)

package resources

import (
	"io/fs"
	"time"
)

// created falls back to the modification time where stat gives no other.
func created(st fs.FileInfo) time.Time { return st.ModTime() }
