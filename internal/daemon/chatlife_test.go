package daemon_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// TestDraftsAreShared: a draft is a Message held by the session: two
// people in one chat see each other's, it is taken for a session nothing
// runs for, kept as it changes and there on the next process
// (C-TURN-117..121).
func TestDraftsAreShared(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := e.client("a"), e.client("b")
	_, def := e.createSession(a, "ahp-session:/dfdfdfdf-0000-4000-8000-000000000001")
	a.Subscribe(def)
	b.Subscribe(def)
	draft := map[string]any{"text": "typing…", "origin": map[string]any{"kind": "user"},
		"attachments": []any{map[string]any{"type": "resource", "label": "main.go", "uri": "file:///w/main.go"}}}
	seq := a.Dispatch(def, map[string]any{"type": "chat/draftChanged", "draft": draft})
	if env := a.AwaitEcho(seq); env.RejectionReason != "" {
		t.Fatalf("draft refused for an idle session: %s", env.RejectionReason)
	}
	env := b.AwaitAction(def, "chat/draftChanged")
	var got ahp.Message
	if err := env.Field("draft", &got); err != nil || got.Text != "typing…" || len(got.Attachments) != 1 {
		t.Fatalf("b saw draft %s", env.Action)
	}
	e.restart()
	c := e.client("c")
	if cs := chatOf(t, c, def); cs.Draft == nil || cs.Draft.Text != "typing…" || len(cs.Draft.Attachments) != 1 {
		t.Fatalf("draft after restart: %+v", cs.Draft)
	}
	c.AwaitEcho(c.Dispatch(def, map[string]any{"type": "chat/draftChanged"}))
	if cs := chatOf(t, c, def); cs.Draft != nil {
		t.Fatalf("draft not cleared: %+v", cs.Draft)
	}
}

// TestTitles: the host names a chat after its first message; a ! command
// gives a provisional title its first message replaces; a client renames
// the session and its default chat (C-COMP-25..28). The host naming chats
// is the deferred title strategy every session runs under (C-COMP-29).
func TestTitles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	sess, def := e.createSession(a, "ahp-session:/717171e5-0000-4000-8000-000000000001")
	a.Subscribe(def)
	sendTurn(t, a, def, "t1", "!echo hi")
	if st := sessionState(t, a, sess); st.Chats[0].Title != "!echo hi" {
		t.Fatalf("title after a ! command = %q", st.Chats[0].Title)
	}
	sendTurn(t, a, def, "t2", "   Fix the   flaky\ttest\nand more lines")
	st := sessionState(t, a, sess)
	if st.Chats[0].Title != "Fix the flaky test" || st.Title != "Fix the flaky test" {
		t.Fatalf("title after the first message = %q / %q", st.Chats[0].Title, st.Title)
	}
	sendTurn(t, a, def, "t3", "something else")
	if st := sessionState(t, a, sess); st.Chats[0].Title != "Fix the flaky test" {
		t.Fatalf("a later message renamed the chat: %q", st.Chats[0].Title)
	}
	// C-COMP-25: a client renames the chat on its channel; a rename on the
	// session's channel renames the session alone (the chat takes the
	// session's title only when a peer chat arrives, VS Code's rule).
	a.AwaitEcho(a.Dispatch(def, map[string]any{"type": "session/titleChanged", "title": "Renamed chat"}))
	a.AwaitEnvelope("default chat renamed", func(env ahptest.Envelope) bool {
		var ch ahp.PartialChatSummary
		_ = env.Field("changes", &ch)
		return env.Type() == "session/chatUpdated" && ch.Title != nil && *ch.Title == "Renamed chat"
	})
	a.AwaitEcho(a.Dispatch(sess, map[string]any{"type": "session/titleChanged", "title": "Renamed session"}))
	e.restart()
	b := e.client("b")
	if st := sessionState(t, b, sess); st.Title != "Renamed session" || st.Chats[0].Title != "Renamed chat" {
		t.Fatalf("after restart: session %q, chat %q", st.Title, st.Chats[0].Title)
	}
}

// TestDirectoryChangeRestartsOneChat: a chat/workingDirectorySet restarts
// that chat's backend, resumed, and no other chat's (C-FIRST-28, 29).
func TestDirectoryChangeRestartsOneChat(t *testing.T) {
	e := newEnv(t)
	a := e.client("a")
	sess, def := e.createSession(a, "ahp-session:/d1d1d1d1-0000-4000-8000-0000000000d2")
	other := "ahp-chat:/d1d1d1d1-0000-4000-8000-0000000000ff"
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": other})
	a.Subscribe(def)
	a.Subscribe(other)
	sendTurn(t, a, def, "t1", "one")
	sendTurn(t, a, other, "o1", "other one")
	dir := ahp.FileURI(e.workDir)
	seq := a.Dispatch(def, map[string]any{"type": "chat/workingDirectorySet", "directory": dir})
	if env := a.AwaitEcho(seq); env.RejectionReason != "" {
		t.Fatalf("directory change refused: %s", env.RejectionReason)
	}
	sendTurn(t, a, def, "t2", "two")
	sendTurn(t, a, other, "o2", "other two")
	conv := strings.TrimPrefix(sess, "ahp-session:/")
	// Resumed: the chat's conversation still holds its first turn.
	if got := strings.Join(e.script.History(conv), "|"); got != "one|two" {
		t.Fatalf("restarted chat's history = %q", got)
	}
	if cs := chatOf(t, a, def); len(cs.WorkingDirectories) != 1 || cs.WorkingDirectories[0] != dir {
		t.Fatalf("chat directories = %v", cs.WorkingDirectories)
	}
	if cs := chatOf(t, a, other); len(cs.WorkingDirectories) != 0 {
		t.Fatalf("the other chat changed: %v", cs.WorkingDirectories)
	}
}

// TestClosedChatsDelete: with closedChats "delete" closing a chat removes
// its backend conversation; with "hidden" (the default) it stays
// (C-FIRST-20..24).
func TestClosedChatsDelete(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"hidden", "delete"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, func(c *daemon.Config) { c.ClosedChats = mode })
			a := e.client("a")
			sess, _ := e.createSession(a, "ahp-session:/c1c1c1c1-0000-4000-8000-000000000001")
			ch := "ahp-chat:/c1c1c1c1-0000-4000-8000-0000000000aa"
			a.MustCall("createChat", map[string]any{"channel": sess, "chat": ch})
			a.Subscribe(ch)
			sendTurn(t, a, ch, "t1", "to be closed")
			conv := e.conversationOf(ch)
			a.MustCall("disposeChat", map[string]any{"channel": ch})
			kept := e.script.History(conv) != nil
			if kept != (mode == "hidden") {
				t.Fatalf("closedChats %s: backend conversation kept = %v", mode, kept)
			}
			// Never listed as a session again (C-FIRST-23).
			if n := len(sessionList(t, a)); n != 1 {
				t.Fatalf("%d sessions listed", n)
			}
		})
	}
}

// conversationOf reads a chat's backend conversation id from the store.
func (e *testEnv) conversationOf(chat string) string {
	e.t.Helper()
	if err := e.d.Store().Flush(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	rec, ok, err := e.d.Store().Chat(context.Background(), chat)
	if err != nil || !ok {
		e.t.Fatalf("chat record %s: %v %v", chat, ok, err)
	}
	return rec.ConversationID
}

// TestCompactionNotice: a backend's compaction becomes a
// systemNotification part in the running turn saying how many tokens went
// where, and nothing is dropped (C-COMP-01..04).
func TestCompactionNotice(t *testing.T) {
	t.Parallel()
	reg, err := agent.NewRegistry(compactingAgent{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, reg)
	a := e.client("a")
	sess, def := e.createSession(a, "compact:/c0a1c0a1-0000-4000-8000-000000000001")
	_ = sess
	a.Subscribe(def)
	for _, id := range []string{"t1", "t2"} {
		sendTurn(t, a, def, id, "talk a lot")
	}
	cs := chatOf(t, a, def)
	if len(cs.Turns) != 2 {
		t.Fatalf("turns dropped: %d", len(cs.Turns))
	}
	var notice string
	for _, p := range cs.Turns[1].ResponseParts {
		if p.Kind == ahp.PartSystemNotification {
			notice = p.Content
		}
	}
	if !strings.Contains(notice, "120000") || !strings.Contains(notice, "8000") {
		t.Fatalf("compaction notice = %q", notice)
	}
}

// compactingAgent is a backend that compacts its context on every second
// turn, reporting it as the Claude backend reports a compact_boundary.
type compactingAgent struct{}

func (compactingAgent) Provider() string { return "compact" }
func (compactingAgent) Info(context.Context) agent.Info {
	return agent.Info{Provider: "compact", DisplayName: "Compacting"}
}
func (compactingAgent) Capabilities() agent.Capabilities               { return agent.Capabilities{Resume: true} }
func (compactingAgent) Delete(context.Context, string, []string) error { return nil }
func (compactingAgent) Open(context.Context, agent.OpenParams) (agent.Conversation, error) {
	return &compactingConversation{events: make(chan agent.Event, 16)}, nil
}

type compactingConversation struct {
	events chan agent.Event
	turns  int
}

func (c *compactingConversation) Send(_ context.Context, t agent.Turn) error {
	c.turns++
	if c.turns%2 == 0 {
		c.events <- agent.Event{Kind: agent.EventNotice, TurnID: t.ID, Text: "Context compacted: 120000 tokens summarised into 8000."}
	}
	c.events <- agent.Event{Kind: agent.EventText, TurnID: t.ID, Text: "ok"}
	c.events <- agent.Event{Kind: agent.EventTurnEnd, TurnID: t.ID, End: &agent.End{Outcome: agent.OutcomeComplete}}
	return nil
}
func (c *compactingConversation) Steer(agent.Steering) agent.SteerResult {
	return agent.SteerUnsupported
}
func (c *compactingConversation) Withdraw(string) bool               { return false }
func (c *compactingConversation) Confirm(string, string, bool) error { return nil }
func (c *compactingConversation) Stop(context.Context) error         { return nil }
func (c *compactingConversation) Events() <-chan agent.Event         { return c.events }
func (c *compactingConversation) Close() error                       { return nil }

// pointlessAgent can fork but names no point for any turn, as a backend
// that reads turns back without points does; it records how each
// conversation was opened.
type pointlessAgent struct {
	compactingAgent
	opens chan agent.OpenParams
}

func (pointlessAgent) Provider() string { return "pointless" }
func (pointlessAgent) Capabilities() agent.Capabilities {
	return agent.Capabilities{Fork: true, Resume: true}
}
func (p pointlessAgent) Open(ctx context.Context, o agent.OpenParams) (agent.Conversation, error) {
	p.opens <- o
	return p.compactingAgent.Open(ctx, o)
}

// TestForkWithoutPoint: a fork at a turn the backend names no point for is
// made all the same: the new chat holds the turns up to it and its backend
// begins a conversation of its own (C-FROM-08, 09).
func TestForkWithoutPoint(t *testing.T) {
	t.Parallel()
	ag := pointlessAgent{opens: make(chan agent.OpenParams, 16)}
	reg, err := agent.NewRegistry(ag)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, reg)
	a := e.client("a")
	sess, def := e.createSession(a, "pointless:/90909090-0000-4000-8000-000000000001")
	a.Subscribe(def)
	sendTurn(t, a, def, "t1", "one")
	sendTurn(t, a, def, "t2", "two")
	<-ag.opens
	fork := "ahp-chat:/90909090-0000-4000-8000-0000000000ff"
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": fork, "source": map[string]any{"kind": "fork", "chat": def, "turnId": "t1"}})
	if got := strings.Join(texts(chatOf(t, a, fork).Turns), "|"); got != "one" {
		t.Fatalf("fork turns = %q", got)
	}
	a.Subscribe(fork)
	sendTurn(t, a, fork, "f1", "on its own")
	o := <-ag.opens
	if o.Mode != agent.OpenNew || o.Point != "" || o.Source != "" {
		t.Fatalf("fork opened its backend as %s (source %q point %q), want a new conversation", o.Mode, o.Source, o.Point)
	}
}
