package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/daemon"
)

// TestIdleChatUnloads: a chat nobody watches and nothing runs in is
// unloaded (its actor and its agent conversation), and comes back whole
// when named again: its turns, its draft, what waits in it, and its
// backend conversation, resumed.
func TestIdleChatUnloads(t *testing.T) {
	e := newEnv(t, func(c *daemon.Config) { c.ChatIdleSeconds = 1 })
	a := e.client("a")
	sess, def := e.createSession(a, "ahp-session:/1d1e1d1e-0000-4000-8000-000000000001")
	a.Subscribe(def)
	sendTurn(t, a, def, "t1", "before the nap")
	a.AwaitEcho(a.Dispatch(def, map[string]any{"type": "chat/draftChanged", "draft": map[string]any{"text": "half", "origin": map[string]any{"kind": "user"}}}))
	a.Close()

	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for e.d.Host().OpenChats(ctx) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the idle chat was never unloaded (%d open)", e.d.Host().OpenChats(ctx))
		}
		time.Sleep(50 * time.Millisecond)
	}

	b := e.client("b")
	cs := chatOf(t, b, def)
	if len(cs.Turns) != 1 || cs.Draft == nil || cs.Draft.Text != "half" {
		t.Fatalf("after reloading: %d turns, draft %+v", len(cs.Turns), cs.Draft)
	}
	sendTurn(t, b, def, "t2", "after the nap")
	conv := strings.TrimPrefix(sess, "ahp-session:/")
	if got := strings.Join(e.script.History(conv), "|"); got != "before the nap|after the nap" {
		t.Fatalf("backend history = %q, want the conversation resumed", got)
	}
	opens := e.script.Opens()
	var resumed bool
	for _, o := range opens {
		if o.Conversation == conv && o.Mode == agent.OpenResume {
			resumed = true
		}
	}
	if !resumed {
		t.Fatalf("the reloaded chat did not resume its conversation: %+v", opens)
	}
}

// TestIdleLongerThanTheFlushTick: an idle time longer than the chat's own
// flush tick (one second) still unloads the chat: the tick is not activity
// (issue 18: the default 600 s never fired, because every tick reset the
// idle timer).
func TestIdleLongerThanTheFlushTick(t *testing.T) {
	t.Parallel() // it waits for idle timers; it runs beside the others (make test's time)
	e := newEnv(t, func(c *daemon.Config) { c.ChatIdleSeconds = 2 })
	a := e.client("a")
	_, def := e.createSession(a, "ahp-session:/1d1e1d1e-0000-4000-8000-000000000002")
	a.Subscribe(def)
	sendTurn(t, a, def, "t1", "then nothing")
	a.Close()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for e.d.Host().OpenChats(ctx) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a chat idle for 2 s was never unloaded (%d open)", e.d.Host().OpenChats(ctx))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
