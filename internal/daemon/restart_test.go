package daemon_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// TestRestartKeepsEverything: sessions, chats, finished turns with their
// senders, titles, drafts and closed chats survive a restart; a turn that
// was running when the daemon went away comes back ended with chat/error
// (C-TURN-08, C-TURN-10, C-TURN-12, C-TURN-120).
func TestRestartKeepsEverything(t *testing.T) {
	e := newEnv(t)
	a := e.client("a")
	sess, def := e.createSession(a, "ahp-session:/7a7a7a7a-0000-4000-8000-000000000001")
	a.Subscribe(def)
	sendTurn(t, a, def, "t1", "Explain the build\nwith details")
	sendTurn(t, a, def, "t2", "and the tests")

	// A draft, a second chat that stays and a third that is closed.
	draft := map[string]any{"text": "half typed", "origin": map[string]any{"kind": "user"}}
	a.AwaitEcho(a.Dispatch(def, map[string]any{"type": "chat/draftChanged", "draft": draft}))
	keep := "ahp-chat:/11111111-0000-4000-8000-00000000aaaa"
	gone := "ahp-chat:/11111111-0000-4000-8000-00000000bbbb"
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": keep})
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": gone})
	if res := a.MustCall("disposeChat", map[string]any{"channel": gone}); string(res) != "null" {
		t.Fatalf("disposeChat answered %s, want null", res)
	}
	a.AwaitAction(sess, "session/chatRemoved")
	// A turn left running: [hold] streams once and waits for a stop.
	a.Dispatch(def, turnStarted("t3", "[hold] keep going"))
	a.AwaitEnvelope("t3 streaming", func(env ahptest.Envelope) bool {
		var id string
		_ = env.Field("turnId", &id)
		return env.Channel == def && env.Type() == "chat/responsePart" && id == "t3"
	})

	e.restart()

	b := e.client("b")
	raw := b.MustCall("listSessions", map[string]any{"channel": ahp.RootURI})
	var list ahp.ListSessionsResult
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Resource != sess {
		t.Fatalf("listSessions after restart: %s", raw)
	}
	if got := list.Items[0].Title; got != "Explain the build" {
		t.Fatalf("session title after restart = %q, want the first message's", got)
	}
	st, _ := b.Subscribe(sess)
	var ss ahp.SessionState
	if err := json.Unmarshal(st, &ss); err != nil {
		t.Fatal(err)
	}
	var chats []string
	for _, c := range ss.Chats {
		chats = append(chats, c.Resource)
	}
	if ss.DefaultChat != def || strings.Join(chats, ",") != def+","+keep {
		t.Fatalf("session after restart: default %s, chats %v; want %s and [%s %s]", ss.DefaultChat, chats, def, def, keep)
	}
	cst, _ := b.Subscribe(def)
	cs := chatState(t, cst)
	if len(cs.Turns) != 3 || cs.ActiveTurn != nil {
		t.Fatalf("chat after restart has %d turns (active %v): %s", len(cs.Turns), cs.ActiveTurn != nil, cst)
	}
	if cs.Turns[0].State != ahp.TurnComplete || cs.Turns[1].State != ahp.TurnComplete {
		t.Fatalf("finished turns changed state: %s", cst)
	}
	// C-TURN-08: the sender is read back by turn.
	if s, _ := cs.Turns[0].Message.Meta[chat.SenderMetaKey].(string); !strings.HasPrefix(s, "root:") {
		t.Fatalf("turn sender after restart = %q, want root:<host>", s)
	}
	last := cs.Turns[2]
	if last.ID != "t3" || last.State != ahp.TurnError {
		t.Fatalf("interrupted turn came back as %s/%s, want t3/error", last.ID, last.State)
	}
	ep := last.ResponseParts[len(last.ResponseParts)-1]
	if ep.Kind != ahp.PartError || ep.Error == nil || !strings.Contains(ep.Error.Message, "restarted") {
		t.Fatalf("interrupted turn's last part = %+v, want an error saying the host restarted", ep)
	}
	if cs.Draft == nil || cs.Draft.Text != "half typed" {
		t.Fatalf("draft after restart = %+v", cs.Draft)
	}
	// The closed chat is no chat any more.
	if _, err := b.Call("subscribe", map[string]any{"channel": gone}); err == nil || err.Code != ahp.CodeSessionNotFound {
		t.Fatalf("subscribe to the closed chat: %v, want -32001", err)
	}
	// And the chat still works.
	sendTurn(t, b, def, "t4", "still here?")
}

// TestRestartKeepsPendingMessages: what waits in a chat survives a restart;
// behind the turn the restart ended in an error it waits, as behind any
// failure, until a client acts (C-TURN-33, C-TURN-35).
func TestRestartKeepsPendingMessages(t *testing.T) {
	e := newEnv(t)
	a := e.client("a")
	_, def := e.createSession(a, "ahp-session:/9e9e9e9e-0000-4000-8000-000000000001")
	a.Subscribe(def)
	a.Dispatch(def, turnStarted("t1", "[hold] busy"))
	a.AwaitEnvelope("t1 streaming", func(env ahptest.Envelope) bool { return env.Type() == "chat/responsePart" })
	for _, id := range []string{"q1", "q2"} {
		seq := a.Dispatch(def, map[string]any{"type": "chat/pendingMessageSet", "kind": "queued", "id": id,
			"message": map[string]any{"text": "queued " + id, "origin": map[string]any{"kind": "user"}}})
		if env := a.AwaitEcho(seq); env.RejectionReason != "" {
			t.Fatal(env.RejectionReason)
		}
	}
	e.restart()
	b := e.client("b")
	cs := chatOf(t, b, def)
	if len(cs.QueuedMessages) != 2 || cs.QueuedMessages[0].ID != "q1" || cs.QueuedMessages[1].Message.Text != "queued q2" {
		t.Fatalf("queued after restart: %+v", cs.QueuedMessages)
	}
	if n := len(cs.Turns); n != 1 || cs.Turns[0].State != ahp.TurnError {
		t.Fatalf("turns after restart: %+v", texts(cs.Turns))
	}
	// Taking one back starts the head of what is left.
	b.AwaitEcho(b.Dispatch(def, map[string]any{"type": "chat/pendingMessageRemoved", "kind": "queued", "id": "q1"}))
	started := b.AwaitAction(def, "chat/turnStarted")
	var qid string
	_ = started.Field("queuedMessageId", &qid)
	if qid != "q2" {
		t.Fatalf("started %s, want q2", started.Action)
	}
	var id string
	_ = started.Field("turnId", &id)
	awaitEnd(t, b, def, id)
	if cs := chatOf(t, b, def); len(cs.QueuedMessages) != 0 {
		t.Fatalf("queue after the run: %+v", cs.QueuedMessages)
	}
}

// TestRestartKeepsPendingSenders: a message queued by a user names that
// user when it runs, also after a restart (C-TURN-04, 05, 08).
func TestRestartKeepsPendingSenders(t *testing.T) {
	e := newEnv(t, func(c *daemon.Config) {
		c.Tokens = []daemon.TokenConfig{{Token: "alice-token", Principal: "user:alice", Grants: []string{"chat:*", "session:read"}}}
	})
	owner := e.client("owner")
	_, def := e.createSession(owner, "ahp-session:/5e5d5e5d-0000-4000-8000-000000000001")
	owner.Subscribe(def)
	owner.Dispatch(def, turnStarted("t1", "[hold] busy"))
	owner.AwaitEnvelope("t1 streaming", func(env ahptest.Envelope) bool { return env.Type() == "chat/responsePart" })
	alice := ahptest.Dial(t, e.d.URL(), "alice-token")
	alice.Initialize("alice", ahp.RootURI)
	alice.Subscribe(def)
	alice.AwaitEcho(alice.Dispatch(def, map[string]any{"type": "chat/pendingMessageSet", "kind": "queued", "id": "qa",
		"message": map[string]any{"text": "from alice", "origin": map[string]any{"kind": "user"}}}))
	e.restart()
	b := e.client("b")
	b.Subscribe(def)
	b.AwaitEcho(b.Dispatch(def, map[string]any{"type": "chat/queuedMessagesReordered", "order": []string{"qa"}}))
	started := b.AwaitAction(def, "chat/turnStarted")
	var msg ahp.Message
	_ = started.Field("message", &msg)
	if s, _ := msg.Meta[chat.SenderMetaKey].(string); s != "user:alice" {
		t.Fatalf("the queued message runs as %q, want user:alice: %s", s, started.Action)
	}
}

// TestRestartKeepsTurnsSentBehind: a turn a client sent while another ran
// is not lost to a restart: the restart ends the running turn with an
// error, and the turn behind it then starts, as behind any ending but a
// stop (C-TURN-104).
func TestRestartKeepsTurnsSentBehind(t *testing.T) {
	e := newEnv(t)
	a := e.client("a")
	_, def := e.createSession(a, "ahp-session:/be41d000-0000-4000-8000-000000000001")
	a.Subscribe(def)
	a.Dispatch(def, turnStarted("t1", "[hold] busy"))
	a.AwaitEnvelope("t1 streaming", func(env ahptest.Envelope) bool { return env.Type() == "chat/responsePart" })
	a.Dispatch(def, turnStarted("t2", "sent behind"))
	// A draft round trip: t2 has reached the chat (held, unsaid) once
	// the draft's echo is back.
	a.AwaitEcho(a.Dispatch(def, map[string]any{"type": "chat/draftChanged"}))
	e.restart()
	b := e.client("b")
	// t2 may have run before b subscribed: wait on the snapshot.
	var cs ahp.ChatState
	deadline := time.Now().Add(ahptest.Timeout)
	for cs = chatOf(t, b, def); len(cs.Turns) < 2; cs = chatOf(t, b, def) {
		if time.Now().After(deadline) {
			t.Fatalf("t2 never ran after the restart: %q", texts(cs.Turns))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := strings.Join(texts(cs.Turns), "|"); got != "[hold] busy|sent behind" || cs.Turns[0].State != ahp.TurnError {
		t.Fatalf("after restart: %q (%s)", got, cs.Turns[0].State)
	}
}
