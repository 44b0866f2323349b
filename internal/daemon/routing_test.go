package daemon_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// Routing never waits (DESIGN.md, "Requests, lanes and locks"): a
// connection's read loop parses, checks and routes; a request is answered
// from its channel's lane, so a slow or stalled chat holds up only itself.

// replyOrder is the ids of the replies among a client's frames, in the
// order they arrived.
func replyOrder(c *ahptest.Client, ids ...string) []string {
	var order []string
	for _, f := range c.Frames() {
		if id := string(f.ID); f.Method == "" && slices.Contains(ids, id) {
			order = append(order, id)
		}
	}
	return order
}

// TestPingBehindSubscribeIsAnsweredFirst: a client subscribes, without a
// view, to a chat of 3,000 stored turns and pings 10 ms later on the same
// connection. The ping is answered first: the subscribe waits on the
// chat's lane (loading 3,000 turns and their snapshot), not on the read
// loop.
func TestPingBehindSubscribeIsAnsweredFirst(t *testing.T) {
	dir := t.TempDir()
	seedStore(t, dir, 1, 3000)
	d, _ := startOn(t, dir)
	c := ahptest.Dial(t, d.URL(), "")
	c.Initialize("pinger")
	chat := ahp.DefaultChatURI("script:/5eed0000-0000-4000-8000-000000000000")

	sub := c.Request("subscribe", map[string]any{"channel": chat})
	time.Sleep(10 * time.Millisecond) // the measure: the ping goes 10 ms behind
	ping := c.Request("ping", map[string]any{"channel": "ahp-root://"})
	c.Await(sub)
	c.Await(ping)
	if got := replyOrder(c, sub, ping); !slices.Equal(got, []string{ping, sub}) {
		t.Fatalf("replies arrived in the order %v, want the ping (%s) before the subscribe (%s)", got, ping, sub)
	}
	// The snapshot is whole: the lane answered the subscribe in full.
	f := c.Await(sub)
	if f.Error != nil {
		t.Fatalf("subscribe: %v", f.Error)
	}
	var res struct {
		Snapshot struct {
			State ahp.ChatState `json:"state"`
		} `json:"snapshot"`
	}
	if err := json.Unmarshal(f.Result, &res); err != nil {
		t.Fatal(err)
	}
	if n := len(res.Snapshot.State.Turns); n != 3000 {
		t.Fatalf("snapshot holds %d turns, want 3000", n)
	}
}

// TestStalledChatDelaysNoOtherRequest: a chat stalls (its agent takes 8 s
// to close as it unloads, so the chat cannot be reached until then). A
// request to it waits on its lane; a request to another chat, sent right
// behind it on the same connection, is answered meanwhile, and so is a
// ping.
func TestStalledChatDelaysNoOtherRequest(t *testing.T) {
	const stall = 8 * time.Second
	e, stuck, closing := stallingChat(t, stall, "57a11ed0-0000-4000-8000-000000000021")
	a := e.client("a")
	_, other := e.createSession(a, "ahp-session:/57a11ed0-0000-4000-8000-000000000022")
	a.Subscribe(other)
	sendTurn(t, a, other, "o1", "hello")
	select {
	case <-closing:
	case <-time.After(ahptest.Timeout):
		t.Fatal("the idle chat never began to unload")
	}
	stalledAt := time.Now()

	stuckID := a.Request("fetchTurns", map[string]any{"channel": stuck, "limit": 1})
	otherID := a.Request("fetchTurns", map[string]any{"channel": other, "limit": 1})
	pingID := a.Request("ping", map[string]any{"channel": "ahp-root://"})
	if f := a.Await(otherID); f.Error != nil {
		t.Fatalf("fetchTurns on the other chat: %v", f.Error)
	}
	a.Await(pingID)
	if took := time.Since(stalledAt); took > time.Second {
		t.Errorf("the other chat's request and the ping took %s while the stuck chat stalled", took.Round(time.Millisecond))
	}
	if got := replyOrder(a, stuckID); len(got) != 0 {
		t.Fatalf("the stalled chat answered during its stall (%s after it began)", time.Since(stalledAt))
	}
	// The stuck chat's request is answered once it is back, in full.
	if f := a.Await(stuckID); f.Error != nil {
		t.Fatalf("fetchTurns on the stalled chat, after the stall: %v", f.Error)
	}
}
