package host

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

// TestLanesDrainWaitsForWhatTheLaneHolds: drain returns once the work
// queued on the lane before it has run (a disposed git session's work tree
// goes only after its refresh), and gives up when its context ends first.
func TestLanesDrainWaitsForWhatTheLaneHolds(t *testing.T) {
	l := newLanes(slog.New(slog.DiscardHandler))
	l.open()
	var ran atomic.Bool
	l.push("git:s", func() {
		time.Sleep(50 * time.Millisecond) // work that takes a while
		ran.Store(true)
	})
	if !l.drain(context.Background(), "git:s") {
		t.Fatal("drain gave up with no deadline")
	}
	if !ran.Load() {
		t.Fatal("drain returned before the work queued ahead of it ran")
	}

	release := make(chan struct{})
	l.push("git:s", func() { <-release })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if l.drain(ctx, "git:s") {
		t.Fatal("drain waited past its context for work that does not end")
	}
	close(release)
}
