package daemon_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent/script"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// TestStalledUnloadBlocksNoOne: a chat whose agent takes 6 s to close while
// it unloads holds up only itself. The connection that dispatches a turn to
// it goes on at once: its pings are answered and its turns in other
// sessions complete at their usual latency; the stalled chat's turn runs
// once the chat is loaded again (issue 9, "Routing one way").
// stallingChat starts a daemon whose script agent takes stall to close a
// conversation that ran a [stuck-close] turn, and makes such a chat in
// session stuckConv: its one watcher leaves, so it idles (1 s) and
// unloads. closing is closed as its Close begins: the chat cannot be
// reached until stall has passed.
func stallingChat(t *testing.T, stall time.Duration, stuckConv string) (e *testEnv, stuck string, closing <-chan struct{}) {
	t.Helper()
	c := make(chan struct{})
	var once sync.Once
	e = newScriptEnv(t, script.Options{CloseDelay: stall, OnClose: func(id string) {
		if id == stuckConv {
			once.Do(func() { close(c) })
		}
	}}, false, func(c *daemon.Config) { c.ChatIdleSeconds = 1 })
	b := e.client("b")
	_, stuck = e.createSession(b, "ahp-session:/"+stuckConv)
	b.Subscribe(stuck)
	sendTurn(t, b, stuck, "s1", "[stuck-close] remember me")
	b.Close()
	return e, stuck, c
}

func TestStalledUnloadBlocksNoOne(t *testing.T) {
	const stall = 6 * time.Second
	e, stuck, closing := stallingChat(t, stall, "57a11ed0-0000-4000-8000-000000000001")

	a := e.client("a")
	var others []string
	for i := range 3 {
		_, def := e.createSession(a, fmt.Sprintf("ahp-session:/57a11ed0-0000-4000-8000-00000000001%d", i))
		a.Subscribe(def)
		others = append(others, def)
	}
	var usual time.Duration
	for i, def := range others {
		t0 := time.Now()
		sendTurn(t, a, def, fmt.Sprintf("warm-%d", i), "hello")
		usual = max(usual, time.Since(t0))
	}
	// Idle (1 s) plus the actor's ticker: the chat unloads, its Close
	// asleep for the stall.
	select {
	case <-closing:
	case <-time.After(ahptest.Timeout):
		t.Fatal("the idle chat never began to unload")
	}
	stalledAt := time.Now()

	a.Dispatch(stuck, turnStarted("s2", "are you there"))
	t0 := time.Now()
	a.MustCall("ping", map[string]any{"channel": "ahp-root://"})
	if took := time.Since(t0); took > time.Second {
		t.Errorf("a ping behind a dispatch to the stalled chat took %s", took.Round(time.Millisecond))
	}
	limit := max(time.Second, 5*usual)
	for i, def := range others {
		t0 := time.Now()
		if end := sendTurn(t, a, def, fmt.Sprintf("during-%d", i), "still here"); end.Type() != "chat/turnComplete" {
			t.Fatalf("turn in another session ended %s", end.Raw)
		}
		if took := time.Since(t0); took > limit {
			t.Errorf("a turn in another session took %s while one chat stalled (usual %s)", took.Round(time.Millisecond), usual.Round(time.Millisecond))
		}
	}
	if time.Since(stalledAt) > stall/2 {
		t.Fatalf("the checks took %s: the stall was over before they ended", time.Since(stalledAt))
	}

	// The stalled chat's turn ran once the chat came back.
	c := e.client("c")
	c.Subscribe(stuck)
	deadline := time.Now().Add(3 * stall)
	for {
		cs := chatOf(t, c, stuck)
		if n := len(cs.Turns); n == 2 && cs.Turns[1].ID == "s2" {
			if cs.Turns[1].State != "complete" {
				t.Fatalf("the stalled chat's turn ended %s", cs.Turns[1].State)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn dispatched to the stalled chat never ran: %d turns", len(cs.Turns))
		}
		time.Sleep(200 * time.Millisecond) // polls the chat
	}
}
