package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// TestStartOpensNoStoredSession: after a restart no session actor runs;
// listSessions answers from the stored records exactly what the open
// sessions said before the restart; a session opens when something needs
// it (a subscribe, an action sent straight to it, a chat's turn), and a
// stored session that never opened is disposed. (Issue 34 §3: start-up
// reads the catalogue and opens nothing else.)
func TestStartOpensNoStoredSession(t *testing.T) {
	t.Parallel()
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
	before := settledList(t, a)
	a.Close()

	e.restart()
	if n := e.d.Host().OpenSessions(); n != 0 {
		t.Fatalf("%d sessions open right after the start, want none", n)
	}
	if n := e.d.Host().SessionCount(); n != 4 {
		t.Fatalf("the host holds %d sessions, want 4", n)
	}
	b := e.client("b")
	if after := settledList(t, b); !reflect.DeepEqual(after, before) {
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

// TestIdleSessionsUnload: sessions nobody watches, with no chat loaded,
// unload to their records after chatIdleSeconds (no actor, no goroutine);
// listSessions says the same of them, and each opens again, whole, when
// named: a subscribe, a turn, an action. A watched session stays open.
// (Issue 34 §2.)
func TestIdleSessionsUnload(t *testing.T) {
	t.Parallel() // it waits for idle timers; it runs beside the others (make test's time)
	e := newEnv(t, func(c *daemon.Config) { c.ChatIdleSeconds = 1 })
	a := e.client("a")
	var sessions, chats []string
	for i := range 3 {
		sess, def := e.createSession(a, fmt.Sprintf("ahp-session:/1a2b0000-0000-4000-8000-00000000035%d", i))
		a.Subscribe(def)
		sendTurn(t, a, def, "t1", fmt.Sprintf("hello %d", i))
		sessions, chats = append(sessions, sess), append(chats, def)
	}
	before := settledList(t, a)
	a.Close()
	w := e.client("watcher")
	w.Subscribe(sessions[2]) // watched: stays open

	waitOpen := func(want int) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for e.d.Host().OpenSessions() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%d sessions open after 15 s, want %d", e.d.Host().OpenSessions(), want)
			}
			time.Sleep(50 * time.Millisecond) // polls the idle timers (1 s)
		}
	}
	waitOpen(1)
	b := e.client("b")
	if after := settledList(t, b); !reflect.DeepEqual(after, before) {
		before, _ := json.Marshal(before)
		after, _ := json.Marshal(after)
		t.Fatalf("listSessions of unloaded sessions differs:\nbefore %s\nafter  %s", before, after)
	}
	// A turn on an unloaded session's chat opens it and resumes.
	b.Subscribe(chats[0])
	if end := sendTurn(t, b, chats[0], "t2", "again"); end.Type() != "chat/turnComplete" {
		t.Fatalf("turn after the unload ended %s", end.Raw)
	}
	if turns := chatOf(t, b, chats[0]).Turns; len(turns) != 2 || turns[0].Message.Text != "hello 0" {
		t.Fatalf("the chat after its session unloaded: %d turns", len(turns))
	}
	// An action on an unloaded session, and its state read back.
	b.Dispatch(sessions[1], map[string]any{"type": "session/titleChanged", "title": "after unload"})
	for deadline := time.Now().Add(ahptest.Timeout); sessionState(t, b, sessions[1]).Title != "after unload"; {
		if time.Now().After(deadline) {
			t.Fatal("the title set on an unloaded session did not take")
		}
		time.Sleep(10 * time.Millisecond) // polls the session's state for the action's effect
	}
	if n := e.d.Host().OpenSessions(); n != 3 {
		t.Errorf("%d sessions open after each was named, want 3", n)
	}
}

// settledList is listSessions once two readings 50 ms apart agree (the
// last turn's summary has reached the catalogue), with each modifiedAt at
// the store's millisecond precision: a session read back from its records
// says the time to the millisecond.
func settledList(t *testing.T, c *ahptest.Client) []ahp.SessionSummary {
	t.Helper()
	ms := func(list []ahp.SessionSummary) []ahp.SessionSummary {
		for i := range list {
			if at, err := time.Parse(time.RFC3339Nano, list[i].ModifiedAt); err == nil {
				list[i].ModifiedAt = at.UTC().Truncate(time.Millisecond).Format("2006-01-02T15:04:05.000Z")
			}
		}
		return list
	}
	prev := ms(sessionList(t, c))
	for deadline := time.Now().Add(ahptest.Timeout); ; {
		time.Sleep(50 * time.Millisecond) // lets the catalogue settle between readings
		cur := ms(sessionList(t, c))
		if reflect.DeepEqual(cur, prev) {
			return cur
		}
		if time.Now().After(deadline) {
			t.Fatal("listSessions did not settle")
		}
		prev = cur
	}
}

// TestDisposeChatOfAnUnloadedSession: disposeChat of a chat whose session
// has unloaded opens the session and disposes the chat, as it does for a
// loaded one (it answered null and did nothing: the chat stayed).
func TestDisposeChatOfAnUnloadedSession(t *testing.T) {
	t.Parallel() // it waits for an idle timer
	e := newEnv(t, func(c *daemon.Config) { c.ChatIdleSeconds = 1 })
	a := e.client("a")
	sess, _ := e.createSession(a, "ahp-session:/1a2b0000-0000-4000-8000-000000000401")
	extra := ahp.DerivedChatURI(sess, "extra")
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": extra})
	a.Close()
	for deadline := time.Now().Add(15 * time.Second); e.d.Host().OpenSessions() != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions open after 15 s, want 0", e.d.Host().OpenSessions())
		}
		time.Sleep(50 * time.Millisecond) // polls the idle timers (1 s)
	}
	b := e.client("b")
	if res := b.MustCall("disposeChat", map[string]any{"channel": extra}); string(res) != "null" {
		t.Fatalf("disposeChat answered %s", res)
	}
	for _, cs := range sessionState(t, b, sess).Chats {
		if cs.Resource == extra {
			t.Fatalf("the session still lists %s after disposeChat", extra)
		}
	}
	if r, ok, err := e.d.Store().Chat(context.Background(), extra); err != nil || ok && !r.Closed {
		t.Fatalf("the chat's record after disposeChat: stored %v, closed %v (%v)", ok, r.Closed, err)
	}
}

// TestSessionConfigSurvivesItsRecordWrites: a session's config, which a
// loaded session keeps only in its state (not as JSON in its record),
// is written with every later write of the record and reads back whole
// after a restart.
func TestSessionConfigSurvivesItsRecordWrites(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	sess, _ := e.createSession(a, "ahp-session:/1a2b0000-0000-4000-8000-000000000402")
	before, err := json.Marshal(sessionState(t, a, sess).Config)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) == "null" {
		t.Fatal("the session has no config to keep")
	}
	a.Dispatch(sess, map[string]any{"type": "session/titleChanged", "title": "renamed"})
	for deadline := time.Now().Add(ahptest.Timeout); sessionState(t, a, sess).Title != "renamed"; {
		if time.Now().After(deadline) {
			t.Fatal("the title did not take")
		}
		time.Sleep(10 * time.Millisecond) // polls the session's state for the action's effect
	}
	e.restart()
	a = e.client("a")
	st := sessionState(t, a, sess)
	after, err := json.Marshal(st.Config)
	if err != nil {
		t.Fatal(err)
	}
	if st.Title != "renamed" || string(after) != string(before) {
		t.Fatalf("after a record write and a restart: title %q, config\n%s\nwant\n%s", st.Title, after, before)
	}
}
