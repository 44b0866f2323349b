package host

import (
	"fmt"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/lockorder"
)

// TestClientKnowsFollowsItsVersion: what a connection is sent follows the
// version it speaks, through the cache of answers, when the version
// changes (a reconnect can speak another), and beyond the cache's bound.
func TestClientKnowsFollowsItsVersion(t *testing.T) {
	c := &client{mu: lockorder.Mutex{Rank: lockorder.HostClient}}
	if !c.Knows(ahp.ActionChatCanvasesChanged) {
		t.Fatal("a connection that named no version is sent every action")
	}
	c.setIdentity("a", "0.9.0")
	for range 2 { // the second answer is the cache's
		if c.Knows(ahp.ActionChatCanvasesChanged) {
			t.Fatal("a 0.9.0 connection is sent a 0.10.0 action")
		}
		if !c.Knows(ahp.ActionChatTurnStarted) {
			t.Fatal("a 0.9.0 connection is not sent chat/turnStarted")
		}
	}
	c.setIdentity("a", "1.0.0")
	if !c.Knows(ahp.ActionChatCanvasesChanged) {
		t.Fatal("after speaking 1.0.0 the connection is still refused a 0.10.0 action")
	}
	for i := range knownMax + 10 {
		if c.Knows(fmt.Sprintf("x/made-up-%d", i)) {
			t.Fatal("an unknown action type is known")
		}
	}
	if len(c.known) > knownMax {
		t.Fatalf("cache holds %d answers, bound %d", len(c.known), knownMax)
	}
	if !c.Knows(ahp.ActionChatCanvasesChanged) {
		t.Fatal("a full cache answers wrong")
	}
}
