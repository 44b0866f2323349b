package daemon_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// TestStartOpensNoStoredSession: after a restart no session actor runs;
// listSessions answers from the stored records exactly what the open
// sessions said before the restart; a session opens when something needs
// it (a subscribe, an action sent straight to it, a chat's turn), and a
// stored session that never opened is disposed. (Issue 34 §3: start-up
// reads the catalogue and opens nothing else.)
func TestStartOpensNoStoredSession(t *testing.T) {
	e := newEnv(t)
	a := e.client("a")
	var sessions, chats []string
	for i := range 4 {
		sess, def := e.createSession(a, fmt.Sprintf("ahp-session:/1a2b0000-0000-4000-8000-00000000034%d", i))
		a.Subscribe(def)
		sendTurn(t, a, def, "t1", fmt.Sprintf("hello %d", i))
		a.AwaitEcho(a.Dispatch(sess, map[string]any{"type": "session/titleChanged", "title": fmt.Sprintf("title %d", i)}))
		sessions, chats = append(sessions, sess), append(chats, def)
	}
	before := sessionList(t, a)
	a.Close()

	e.restart()
	if n := e.d.Host().OpenSessions(); n != 0 {
		t.Fatalf("%d sessions open right after the start, want none", n)
	}
	if n := e.d.Host().SessionCount(); n != 4 {
		t.Fatalf("the host holds %d sessions, want 4", n)
	}
	b := e.client("b")
	if after := sessionList(t, b); !reflect.DeepEqual(after, before) {
		before, _ := json.Marshal(before)
		after, _ := json.Marshal(after)
		t.Fatalf("listSessions from the records differs from the open sessions':\nbefore %s\nafter  %s", before, after)
	}
	if n := e.d.Host().OpenSessions(); n != 0 {
		t.Fatalf("listSessions opened %d sessions", n)
	}

	// A subscribe opens its session, with the state it had.
	if st := sessionState(t, b, sessions[0]); st.Title != "title 0" || st.DefaultChat != chats[0] {
		t.Errorf("session 0 opened as %+v", st)
	}
	// An action sent straight to a session that is not open, by a client
	// not subscribed to it, is applied (the session opens on the
	// channel's lane, not on the read loop); root watchers see the title.
	b.Dispatch(sessions[1], map[string]any{"type": "session/titleChanged", "title": "renamed"})
	titleOf := func(uri string) string {
		for _, s := range sessionList(t, b) {
			if s.Resource == uri {
				return s.Title
			}
		}
		return ""
	}
	for deadline := time.Now().Add(ahptest.Timeout); titleOf(sessions[1]) != "renamed"; {
		if time.Now().After(deadline) {
			t.Fatalf("the stored session's title is %q, want renamed", titleOf(sessions[1]))
		}
		time.Sleep(10 * time.Millisecond) // polls listSessions for the action's effect
	}
	// A chat's turn opens its session.
	b.Subscribe(chats[2])
	if end := sendTurn(t, b, chats[2], "t2", "again"); end.Type() != "chat/turnComplete" {
		t.Fatalf("turn on a stored session's chat ended %s", end.Raw)
	}
	if n := e.d.Host().OpenSessions(); n != 3 {
		t.Errorf("%d sessions open, want the 3 something needed", n)
	}
	// Disposing a session that never opened.
	b.MustCall("disposeSession", map[string]any{"channel": sessions[3]})
	if n := e.d.Host().SessionCount(); n != 3 {
		t.Errorf("after disposing a stored session the host holds %d", n)
	}
	for _, s := range sessionList(t, b) {
		if s.Resource == sessions[3] {
			t.Errorf("the disposed session is still listed")
		}
	}
	e.restart()
	c := e.client("c")
	if list := sessionList(t, c); len(list) != 3 {
		t.Fatalf("%d sessions after a second restart, want 3", len(list))
	}
	if title := sessionState(t, c, sessions[1]).Title; title != "renamed" {
		t.Fatalf("the title set on a stored session came back as %q", title)
	}
}
