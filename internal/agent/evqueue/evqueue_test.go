package evqueue

import (
	"sync"
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

// TestEmitLetsTheLockGoBeforeItWaits: Emit decides under the caller's
// lock, and while it waits for room in a full queue that lock is free (the
// chat actor's calls take it); its events arrive in the order decided.
func TestEmitLetsTheLockGoBeforeItWaits(t *testing.T) {
	q := New()
	defer q.Abandon()
	for range Cap {
		q.Push(agent.Event{TurnID: "fill"})
	}
	var mu sync.Mutex
	emitted := make(chan struct{})
	go func() {
		defer close(emitted)
		q.Emit(&mu, func() []agent.Event {
			return []agent.Event{{TurnID: "first"}, {TurnID: "second"}}
		})
	}()
	locked := make(chan struct{})
	go func() {
		mu.Lock() // free while Emit waits for room
		mu.Unlock()
		close(locked)
	}()
	select {
	case <-locked:
	case <-time.After(5 * time.Second):
		t.Fatal("the caller's lock is held while Emit waits for room")
	}
	var got []string
	for ev := range q.Events() {
		if ev.TurnID != "fill" {
			got = append(got, ev.TurnID)
		}
		if len(got) == 2 {
			break
		}
	}
	<-emitted
	if got[0] != "first" || got[1] != "second" {
		t.Fatalf("events %v, want first, second", got)
	}
}
