//go:build !unix

package store

import (
	"testing"
	"time"
)

// processCPU is not measured here: the CPU metrics read 0.
func processCPU(*testing.B) time.Duration { return 0 }
