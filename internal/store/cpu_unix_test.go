//go:build unix

package store

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the user and system CPU this process has used, for
// benchmarks that report CPU beside wall time (steadier on a shared VM).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
