package daemon_test

import (
	"context"
	"testing"
	"time"
)

// TestCloseTwice: a daemon closed a second time (a Shutdown, then the
// deferred Close of the code that started it) answers at once with what
// the first Close came to, rather than waiting forever for the server's
// end the first Close already took.
func TestCloseTwice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.d
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first := d.Close(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Close(ctx) }()
	select {
	case err := <-done:
		if (err == nil) != (first == nil) {
			t.Errorf("the second Close said %v, the first %v", err, first)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a second Close still waits after 5 s")
	}
	e.d = nil // closed: the env's cleanup has nothing left to close
}
