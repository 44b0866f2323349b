package evqueue

import (
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
)

// TestQueueBoundsAndOrder: events arrive in order; Push waits while Cap
// events wait, PushOwed does not; Abandon ends Events and later pushes.
func TestQueueBoundsAndOrder(t *testing.T) {
	q := New()
	for i := range Cap {
		if !q.Push(agent.Event{TurnID: string(rune('a' + i%26))}) {
			t.Fatal("push refused")
		}
	}
	pushed := make(chan bool)
	go func() { pushed <- q.Push(agent.Event{TurnID: "late"}) }()
	select {
	case <-pushed:
		t.Fatal("a push past Cap did not wait")
	case <-time.After(50 * time.Millisecond):
	}
	if !q.PushOwed(agent.Event{TurnID: "owed"}) {
		t.Fatal("an owed push was refused")
	}
	// The owed event counts: two must be read before the late push fits.
	for _, want := range []string{"a", "b"} {
		if got := (<-q.Events()).TurnID; got != want {
			t.Fatalf("event %q, want %q", got, want)
		}
	}
	if !<-pushed {
		t.Fatal("the waiting push was refused once there was room")
	}
	q.Abandon()
	if q.Push(agent.Event{}) || q.PushOwed(agent.Event{}) {
		t.Fatal("a push after Abandon was taken")
	}
	for range q.Events() {
	}
}
