package host

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/session"
)

// TestCatalogueRegisterOnce: a session found in a backend's catalogue is
// registered by one claim at a time; a second claim for it waits for the
// first to end (or for its context), a claim for another session does not,
// and the catalogue stays readable meanwhile.
func TestCatalogueRegisterOnce(t *testing.T) {
	const uri, other = "ahp-session:/one", "ahp-session:/two"
	c := newCatalogue()
	ctx := context.Background()
	live, done, err := c.register(ctx, uri)
	if live != nil || done == nil || err != nil {
		t.Fatalf("first claim: live %v, done %v, err %v", live, done != nil, err)
	}

	second := make(chan func(), 1)
	go func() {
		_, d, _ := c.register(ctx, uri)
		second <- d
	}()
	select {
	case <-second:
		t.Fatal("a second claim of the same session did not wait for the first")
	case <-time.After(50 * time.Millisecond):
	}

	if _, d, err := c.register(ctx, other); d == nil || err != nil {
		t.Fatalf("a claim of another session waited or failed: %v", err)
	} else {
		d()
	}
	if _, ok := c.session(uri); ok || c.count() != 0 {
		t.Fatal("the catalogue lists a session being registered")
	}

	// The first registration ends with no session: the waiter claims it.
	done()
	var again func()
	select {
	case again = <-second:
	case <-time.After(5 * time.Second):
		t.Fatal("the second claim still waits after the first ended")
	}
	if again == nil {
		t.Fatal("the second claim got no claim")
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, d, err := c.register(cctx, uri); d != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("a claim whose context ended while it waited: done %v, err %v", d != nil, err)
	}

	// This registration succeeds: a later claim finds the session live.
	s := &session.Session{}
	c.add(uri, s, ahp.SessionSummary{}, nil, true)
	again()
	if live, d, err := c.register(ctx, uri); live != s || d != nil || err != nil {
		t.Fatalf("claim of a live session: live %v, done %v, err %v", live, d != nil, err)
	}
}
