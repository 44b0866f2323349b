package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/script"
	"github.com/ahpd/ahpd/internal/ahp"
)

// TestChatActionOnSessionGoesToDefaultChat: a client action on a session
// that names no chat goes to the chat the session's defaultChat names
// (C-FIRST-11).
func TestChatActionOnSessionGoesToDefaultChat(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	sess, def := e.createSession(a, "ahp-session:/5e55d0c0-0000-4000-8000-000000000001")
	a.Subscribe(def)
	a.Dispatch(sess, turnStarted("t1", "sent to the session"))
	awaitEnd(t, a, def, "t1")
	if cs := chatOf(t, a, def); len(cs.Turns) != 1 || cs.Turns[0].Message.Text != "sent to the session" {
		t.Fatalf("default chat turns: %v", texts(cs.Turns))
	}
}

// TestChatsArePeers: a second chat is named by its creator, runs on the
// session's backend in the session's directory, and has a backend
// conversation of its own (C-CHAT-01..07, C-CHAT-10, C-FIRST-15, C-CMD-05).
func TestChatsArePeers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	sess, def := e.createSession(a, "ahp-session:/9ee59ee5-0000-4000-8000-000000000001")
	second := "ahp-chat:/mine-and-only-mine"
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": second})
	st := sessionState(t, a, sess)
	if len(st.Chats) != 2 || st.Chats[1].Resource != second || st.DefaultChat != def {
		t.Fatalf("session chats: %+v default %s", st.Chats, st.DefaultChat)
	}
	a.Subscribe(def)
	a.Subscribe(second)
	sendTurn(t, a, def, "d1", "[tool] first chat")
	sendTurn(t, a, second, "s1", "second chat")
	c1, c2 := e.conversationOf(def), e.conversationOf(second)
	if c1 == c2 {
		t.Fatalf("two chats share backend conversation %s", c1)
	}
	if got := strings.Join(e.script.History(c2), "|"); got != "second chat" {
		t.Fatalf("second chat's backend history = %q", got)
	}
	for _, p := range e.script.Prompts(c2) {
		if p.ID != "s1" {
			t.Fatalf("second chat's backend got turn %s", p.ID)
		}
	}
	cs := chatOf(t, a, def)
	if cs.ActiveTurn != nil || len(cs.Turns) != 1 {
		t.Fatalf("first chat: %d turns", len(cs.Turns))
	}
	var kinds []string
	for _, p := range cs.Turns[0].ResponseParts {
		kinds = append(kinds, p.Kind)
	}
	if !strings.Contains(strings.Join(kinds, ","), ahp.PartToolCall) || !strings.Contains(strings.Join(kinds, ","), ahp.PartMarkdown) {
		t.Fatalf("answer parts = %v, want a tool call and markdown", kinds)
	}
}

// TestCreateChatSourceKind: the source's kind is read first and decides
// what the rest means; an unknown kind is refused, and VS Code's source
// without a kind is a fork (C-FROM-01, 02).
func TestCreateChatSourceKind(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	sess, def := e.createSession(a, "ahp-session:/50c050c0-0000-4000-8000-000000000001")
	a.Subscribe(def)
	sendTurn(t, a, def, "t1", "one")
	if _, err := a.Call("createChat", map[string]any{"channel": sess, "chat": "ahp-chat:/k1", "source": map[string]any{"kind": "clone", "chat": def, "turnId": "t1"}}); err == nil || err.Code != ahp.CodeInvalidParams || !strings.Contains(err.Message, "kind") {
		t.Fatalf("unknown kind: %v", err)
	}
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": "ahp-chat:/k2", "source": map[string]any{"chat": def, "turnId": "t1"}})
	if cs := chatOf(t, a, "ahp-chat:/k2"); cs.Origin == nil || cs.Origin.Kind != "fork" || len(cs.Turns) != 1 {
		t.Fatalf("kindless source: origin %+v, %d turns", cs.Origin, len(cs.Turns))
	}
	// C-CMD-06: a fork copies an existing turn; one at a turn the source
	// does not hold is refused and makes no chat (VS Code's suite makes
	// it empty; CHATS.md wins, docs/CONFORMANCE.md).
	if _, err := a.Call("createChat", map[string]any{"channel": sess, "chat": "ahp-chat:/k3", "source": map[string]any{"kind": "fork", "chat": def, "turnId": "nope"}}); err == nil || err.Code != ahp.CodeInvalidParams || !strings.Contains(err.Message, "nope") {
		t.Fatalf("fork at an unknown turn: %v, want -32602 naming it", err)
	}
	if st := sessionState(t, a, sess); len(st.Chats) != 2 { // the default chat and k2
		t.Fatalf("a refused fork left a chat: %d chats", len(st.Chats))
	}
}

// TestMoveChatNotOffered: ahpd never marks a chat movable, so no chat
// moves and every chat keeps its URI (C-FIRST-17, AHP-1.0.md §7).
func TestMoveChatNotOffered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	_, def := e.createSession(a, "ahp-session:/30e030e0-0000-4000-8000-000000000001")
	if _, err := a.Call("moveChat", map[string]any{"channel": def, "destination": map[string]any{"kind": "newSession"}}); err == nil || err.Code != ahp.CodeMethodNotFound {
		t.Fatalf("moveChat: %v", err)
	}
	if cs := chatOf(t, a, def); cs.Movable || cs.Resource != def {
		t.Fatalf("chat movable %v resource %s", cs.Movable, cs.Resource)
	}
}

// capsEnv starts a daemon whose only agent is a script agent with caps.
func capsEnv(t *testing.T, caps agent.Capabilities, wrap func(*script.Script) agent.Agent) (*testEnv, *script.Script) {
	t.Helper()
	sc := script.New(script.Options{Caps: caps, ExactCaps: true})
	var ag agent.Agent = sc
	if wrap != nil {
		ag = wrap(sc)
	}
	reg, err := agent.NewRegistry(ag)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, reg)
	e.script = sc
	return e, sc
}

// TestForkWithoutForkCapability: a backend that cannot fork still gets the
// fork made: the new chat holds the turns and its backend starts a
// conversation of its own (C-FROM-06, reading 6).
func TestForkWithoutForkCapability(t *testing.T) {
	t.Parallel()
	e, sc := capsEnv(t, agent.Capabilities{Resume: true, Steering: true, OneTurnAtATime: true}, nil)
	a := e.client("a")
	sess, def := e.createSession(a, "ahp-session:/0f0f0f0f-0000-4000-8000-000000000001")
	a.Subscribe(def)
	sendTurn(t, a, def, "t1", "one")
	sendTurn(t, a, def, "t2", "two")
	fork := "ahp-chat:/0f0f0f0f-0000-4000-8000-0000000000ff"
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": fork, "source": map[string]any{"kind": "fork", "chat": def, "turnId": "t1"}})
	a.Subscribe(fork)
	sendTurn(t, a, fork, "f1", "fresh")
	if got := strings.Join(sc.History(e.conversationOf(fork)), "|"); got != "fresh" {
		t.Fatalf("fork's backend history = %q, want a conversation of its own", got)
	}
	if got := strings.Join(texts(chatOf(t, a, fork).Turns), "|"); got != "one|fresh" {
		t.Fatalf("fork turns = %q", got)
	}
	if got := strings.Join(sc.History(e.conversationOf(def)), "|"); got != "one|two" {
		t.Fatalf("source untouched? %q", got)
	}
}

// TestRewindWithoutRewindCapability: a backend that cannot cut keeps its
// history: the turns drop from every client and stay in the backend
// (C-COMP-11, 12).
func TestRewindWithoutRewindCapability(t *testing.T) {
	t.Parallel()
	e, sc := capsEnv(t, agent.Capabilities{Resume: true, Delete: true, OneTurnAtATime: true}, nil)
	a := e.client("a")
	_, def := e.createSession(a, "ahp-session:/1e1e1e1e-0000-4000-8000-000000000001")
	a.Subscribe(def)
	sendTurn(t, a, def, "t1", "one")
	sendTurn(t, a, def, "t2", "two")
	a.AwaitEcho(a.Dispatch(def, map[string]any{"type": "chat/truncated", "turnId": "t1"}))
	if got := strings.Join(texts(chatOf(t, a, def).Turns), "|"); got != "one" {
		t.Fatalf("client turns = %q", got)
	}
	sendTurn(t, a, def, "t3", "three")
	if got := strings.Join(sc.History(e.conversationOf(def)), "|"); got != "one|two|three" {
		t.Fatalf("backend history = %q, want it kept", got)
	}
}

type failingDelete struct{ *script.Script }

func (failingDelete) Delete(context.Context, string, []string) error {
	return errors.New("disk says no")
}

// TestClearWithoutDelete: clearing everything on a backend with no delete,
// or whose delete fails, keeps the backend's conversation: the failure is
// logged and the chat comes back on the conversation it had (C-COMP-17,
// 18, 19; reading 10).
func TestClearWithoutDelete(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		caps agent.Capabilities
		wrap func(*script.Script) agent.Agent
	}{
		{"no delete", agent.Capabilities{Resume: true, Rewind: true, OneTurnAtATime: true}, nil},
		{"delete fails", agent.Capabilities{Resume: true, Rewind: true, Delete: true, OneTurnAtATime: true}, func(s *script.Script) agent.Agent { return failingDelete{s} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, sc := capsEnv(t, c.caps, c.wrap)
			a := e.client("a")
			_, def := e.createSession(a, "ahp-session:/c1ea4c1e-0000-4000-8000-000000000001")
			a.Subscribe(def)
			sendTurn(t, a, def, "t1", "one")
			conv := e.conversationOf(def)
			a.AwaitEcho(a.Dispatch(def, map[string]any{"type": "chat/truncated"}))
			if cs := chatOf(t, a, def); len(cs.Turns) != 0 {
				t.Fatalf("turns after clear: %v", texts(cs.Turns))
			}
			sendTurn(t, a, def, "t2", "two")
			if got := e.conversationOf(def); got != conv {
				t.Fatalf("conversation changed %s → %s", conv, got)
			}
			if got := strings.Join(sc.History(conv), "|"); got != "one|two" {
				t.Fatalf("backend history = %q, want the conversation it had", got)
			}
		})
	}
}

// TestSessionAndChatDispatchKeepTheirOrder: chat actions a client sends
// to the session (meaning its default chat, C-FIRST-11) and to the chat's
// own URI reach the chat in the order sent (issue 9: both take the chat's
// lane). Forty messages queued alternately by the two names wait in that
// order.
func TestSessionAndChatDispatchKeepTheirOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	sess, def := e.createSession(a, "ahp-session:/0bde0000-0000-4000-8000-000000000001")
	a.Subscribe(def)
	a.Dispatch(def, turnStarted("t1", "[hold] keep the queue waiting"))
	var want []string
	var last int64
	for i := range 40 {
		id := fmt.Sprintf("q%02d", i)
		channel := def
		if i%2 == 0 {
			channel = sess
		}
		last = setPending(a, channel, ahp.PendingQueued, id, "message "+id)
		want = append(want, id)
	}
	a.AwaitEcho(last)
	var got []string
	for _, q := range chatOf(t, a, def).QueuedMessages {
		got = append(got, q.ID)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("queued in the order\n %v\nsent\n %v", got, want)
	}
}

// TestForeignChannelActionsRefused: the terminal, changeset and annotations
// actions a client may dispatch (actions.table) are refused on a chat or a
// session channel, and reach no watcher there: those channels' reducers
// would otherwise pass them on unchanged. A session action is refused on a
// chat channel, a chat action on the root.
func TestForeignChannelActionsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	sess, chat := e.createSession(a, "ahp-session:/f0e1c000-0000-4000-8000-000000000001")
	watcher := e.client("w")
	watcher.Subscribe(sess)
	watcher.Subscribe(chat)
	for _, tc := range []struct {
		channel string
		action  map[string]any
	}{
		{chat, map[string]any{"type": "terminal/input", "data": "rm -rf /\r"}},
		{sess, map[string]any{"type": "terminal/cleared"}},
		{chat, map[string]any{"type": "annotations/set", "annotation": map[string]any{"id": "x", "resolved": false, "entries": []any{}}}},
		{sess, map[string]any{"type": "annotations/removed", "annotationId": "x"}},
		{sess, map[string]any{"type": "changeset/filesReviewChanged", "files": []string{"file:///x"}, "reviewed": true}},
		// session/titleChanged on a chat renames that chat (C-COMP-25); the
		// session's other actions are the session's.
		{chat, map[string]any{"type": "session/isArchivedChanged", "isArchived": true}},
		{ahp.RootURI, map[string]any{"type": "chat/draftChanged", "draft": userMessage("x")}},
	} {
		env := a.AwaitEcho(a.Dispatch(tc.channel, tc.action))
		if !strings.Contains(env.RejectionReason, "is not an action of channel") {
			t.Errorf("%s on %s: %s, want a refusal", tc.action["type"], tc.channel, env.Raw)
		}
	}
	// The watcher hears none of them: a ping after them all comes back
	// with no envelope of those types in front of it.
	watcher.MustCall("ping", nil)
	for _, env := range watcher.Envelopes() {
		for _, p := range []string{"terminal/", "annotations/", "changeset/"} {
			if strings.Contains(string(env.Action), `"type":"`+p) {
				t.Errorf("a watcher heard %s", env.Raw)
			}
		}
	}
}
