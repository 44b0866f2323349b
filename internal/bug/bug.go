// Package bug reports broken invariants: a bug logs loudly with its stack
// and the daemon goes on; under test it panics, so a test cannot pass over
// it (gopls's bug package does the same).
package bug

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"testing"
)

// Report logs a broken invariant with the stack, and panics under test.
func Report(log *slog.Logger, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	log.Error("BUG: "+msg, "stack", string(debug.Stack()))
	if testing.Testing() {
		panic("bug: " + msg)
	}
}

// Recover runs fn; a panic in it is reported as a bug instead of ending the
// process (an actor's loop survives one bad action or event).
func Recover(log *slog.Logger, what string, fn func()) {
	defer func() {
		if r := recover(); r != nil {
			Report(log, "%s panicked: %v", what, r)
		}
	}()
	fn()
}
