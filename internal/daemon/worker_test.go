package daemon_test

import (
	"encoding/json"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/google/uuid"
)

// Worker chats with the script agent's [worker...] markers
// (internal/agent/script/worker.go): a turn's "Task" call <turn>-task-1
// spawns a worker whose prompt is "work on: <turn text>".

// awaitWorkerAdded waits for the session/chatAdded of the worker chat
// spawned by call (any call when empty) and returns its summary.
func awaitWorkerAdded(t testing.TB, c *ahptest.Client, sess, call string) ahp.ChatSummary {
	t.Helper()
	var sum ahp.ChatSummary
	c.AwaitEnvelope("worker chat of "+call, func(e ahptest.Envelope) bool {
		if e.Channel != sess || e.Type() != "session/chatAdded" {
			return false
		}
		var s ahp.ChatSummary
		if e.Field("summary", &s) != nil || s.Origin == nil || s.Origin.Kind != ahp.OriginTool || call != "" && s.Origin.ToolCallID != call {
			return false
		}
		sum = s
		return true
	})
	return sum
}

// workerTurn subscribes to a worker chat and waits until its first turn
// ended; it returns the chat's state then.
func workerTurn(t testing.TB, c *ahptest.Client, uri string) ahp.ChatState {
	t.Helper()
	st := chatOf(t, c, uri)
	if st.ActiveTurn != nil {
		awaitEnd(t, c, uri, st.ActiveTurn.ID)
		st = chatOf(t, c, uri)
	}
	if len(st.Turns) == 0 {
		t.Fatalf("worker chat %s has no turn", uri)
	}
	return st
}

// toolCallOf finds a tool call in a turn's parts.
func toolCallOf(t testing.TB, tr ahp.Turn, id string) *ahp.ToolCallState {
	t.Helper()
	for _, p := range tr.ResponseParts {
		if p.Kind == ahp.PartToolCall && p.ToolCall != nil && p.ToolCall.ToolCallID == id {
			return p.ToolCall
		}
	}
	raw, _ := json.Marshal(tr.ResponseParts)
	t.Fatalf("no tool call %s in turn %s: %s", id, tr.ID, raw)
	return nil
}

func subagentContentOf(tc *ahp.ToolCallState) string {
	for _, c := range tc.Content {
		if c.Type == ahp.ContentSubagent {
			return c.Resource
		}
	}
	return ""
}

// TestWorkerChat: a tool call that spawns a subagent runs in a worker chat
// of its own (C-CHAT-12, C-SUB-01), announced as session/chatAdded
// (C-SUB-07), read-only, its URI opaque in a session whose default chat is
// opaque and made from the root chat and the call (C-SUB-02, 03), its turn
// opened with the prompt the parent agent wrote (C-SUB-08); its origin names
// the spawning call (C-SUB-16) and the call's result names the chat
// (C-SUB-17).
func TestWorkerChat(t *testing.T) {
	t.Parallel()
	e := newTurnsEnv(t)
	c := e.dial(t, "watcher")
	sess, root := e.newSession(t, c, provScript)
	c.Subscribe(root)
	if end := sendTurn(t, c, root, "t1", "[worker] go"); end.Type() != "chat/turnComplete" {
		t.Fatalf("root turn ended %s", end.Raw)
	}
	sum := awaitWorkerAdded(t, c, sess, "t1-task-1")
	want := chat.MintWorkerURI(sess, root, root, "t1-task-1")
	if sum.Resource != want {
		t.Fatalf("worker chat %s, want %s", sum.Resource, want)
	}
	if p, err := ahp.ParseChatURI(sum.Resource); err != nil || p.Kind != ahp.ChatURIOpaque {
		t.Fatalf("worker chat URI %s is not opaque", sum.Resource)
	}
	id, _ := ahp.ParseChatURI(sum.Resource)
	if _, err := uuid.Parse(id.ID); err != nil {
		t.Fatalf("worker chat id %q is no uuid", id.ID)
	}
	if chat.MintWorkerURI(sess, root, root, "t1-task-1") != want || chat.MintWorkerURI(sess, root, root, "t1-task-2") == want {
		t.Fatal("worker URI is not made from the root chat and the call")
	}
	if sum.Interactivity != ahp.InteractivityReadOnly {
		t.Fatalf("worker interactivity %q", sum.Interactivity)
	}
	if o := sum.Origin; o.Kind != ahp.OriginTool || o.Chat != root || o.ToolCallID != "t1-task-1" {
		t.Fatalf("worker origin %+v", o)
	}

	st := workerTurn(t, c, sum.Resource)
	if st.Origin == nil || st.Origin.ToolCallID != "t1-task-1" || st.Interactivity != ahp.InteractivityReadOnly {
		t.Fatalf("worker chat state: origin %+v, interactivity %q", st.Origin, st.Interactivity)
	}
	tr := st.Turns[0]
	if tr.Message.Text != "work on: [worker] go" || tr.Message.Origin.Kind != ahp.MessageFromAgent {
		t.Fatalf("worker turn opened with %+v", tr.Message)
	}
	if got := answerOf(tr); got != "worker: work on: [worker] go" || tr.State != ahp.TurnComplete {
		t.Fatalf("worker turn %s answered %q", tr.State, got)
	}

	rs := chatOf(t, c, root)
	call := toolCallOf(t, turnOf(t, rs, "t1"), "t1-task-1")
	if got := subagentContentOf(call); got != sum.Resource {
		t.Fatalf("spawning call's result names %q, want %s", got, sum.Resource)
	}
	ss := sessionState(t, c, sess)
	if len(ss.Chats) != 2 || ss.DefaultChat != root {
		t.Fatalf("session chats %+v default %s", ss.Chats, ss.DefaultChat)
	}
}

// TestWorkerChatReadOnly: a person's turn, pending message and resume in a
// worker chat are refused as read-only (C-SUB-09, 10, 11); a draft applies
// to the worker chat's state (C-SUB-15).
func TestWorkerChatReadOnly(t *testing.T) {
	t.Parallel()
	e := newTurnsEnv(t)
	c := e.dial(t, "person")
	sess, root := e.newSession(t, c, provScript)
	c.Subscribe(root)
	sendTurn(t, c, root, "t1", "[worker] go")
	w := awaitWorkerAdded(t, c, sess, "t1-task-1").Resource
	st := workerTurn(t, c, w)

	awaitRefused(t, c, startTurn(c, w, "p1", "hello worker"), "This chat is read-only.")
	awaitRefused(t, c, setPending(c, w, ahp.PendingQueued, "q1", "later"), "This chat is read-only.")
	awaitRefused(t, c, setPending(c, w, ahp.PendingSteering, "s1", "steer"), "This chat is read-only.")
	awaitRefused(t, c, resumeTurn(c, w, st.Turns[0].ID), "This chat is read-only.")

	seq := c.Dispatch(w, map[string]any{"type": "chat/draftChanged", "draft": userMessage("a note")})
	awaitAccepted(t, c, seq)
	st = chatOf(t, c, w)
	if st.Draft == nil || st.Draft.Text != "a note" || len(st.Turns) != 1 || st.ActiveTurn != nil {
		t.Fatalf("worker chat after the refusals and a draft: draft %+v, %d turns", st.Draft, len(st.Turns))
	}
	if got := e.sentTexts(provScript); len(got) != 1 {
		t.Fatalf("the backend was handed %q", got)
	}
}

// TestWorkerStop: a stop in a worker chat is handed to the backend that runs
// the worker, which stops that worker alone (C-SUB-13): the worker's turn
// ends cancelled and the turn that spawned it goes on.
func TestWorkerStop(t *testing.T) {
	t.Parallel()
	e := newTurnsEnv(t)
	c := e.dial(t, "watcher")
	sess, root := e.newSession(t, c, provScript)
	c.Subscribe(root)
	startTurn(c, root, "t1", "[worker:hold] go")
	w := awaitWorkerAdded(t, c, sess, "t1-task-1").Resource
	st := chatOf(t, c, w)
	if st.ActiveTurn == nil {
		t.Fatalf("worker chat has no running turn: %+v", st)
	}
	wt := st.ActiveTurn.ID
	if len(st.ActiveTurn.ResponseParts) == 0 {
		// Subscribed with the snapshot: the first words come after it.
		c.AwaitEnvelope("the worker's first words", func(e ahptest.Envelope) bool {
			return e.Channel == w && e.Type() == "chat/responsePart"
		})
	}
	awaitAccepted(t, c, stopTurn(c, w, wt))
	if end := awaitEnd(t, c, w, wt); end.Type() != "chat/turnCancelled" {
		t.Fatalf("worker turn ended %s", end.Raw)
	}
	if end := awaitEnd(t, c, root, "t1"); end.Type() != "chat/turnComplete" {
		t.Fatalf("root turn ended %s", end.Raw)
	}
	call := toolCallOf(t, turnOf(t, chatOf(t, c, root), "t1"), "t1-task-1")
	if call.Success == nil || *call.Success {
		t.Fatalf("spawning call of a stopped worker: %+v", call)
	}
	if subagentContentOf(call) != w {
		t.Fatalf("stopped worker's call does not name its chat")
	}
}

// TestWorkerConfirm: the answer to a tool call the worker made is handed to
// the backend that runs the worker (C-SUB-12).
func TestWorkerConfirm(t *testing.T) {
	t.Parallel()
	e := newTurnsEnv(t)
	c := e.dial(t, "watcher")
	answerer := e.dial(t, "answerer")
	sess, root := e.newSession(t, c, provScript)
	c.Subscribe(root)
	startTurn(c, root, "t1", "[worker:confirm] go")
	w := awaitWorkerAdded(t, c, sess, "t1-task-1").Resource
	st, _ := answerer.Subscribe(w)
	wt := chatState(t, st).ActiveTurn
	if wt == nil {
		t.Fatalf("worker chat has no running turn")
	}
	const call = "t1-task-1-tool-1"
	waiting := false
	for _, p := range wt.ResponseParts {
		if p.ToolCall != nil && p.ToolCall.ToolCallID == call && p.ToolCall.Status == ahp.ToolPendingConfirmation {
			waiting = true
		}
	}
	if !waiting {
		answerer.AwaitEnvelope("the worker's tool call to wait", func(e ahptest.Envelope) bool {
			return e.Channel == w && e.Type() == "chat/toolCallReady" && field(e, "toolCallId") == call
		})
	}
	seq := answerer.Dispatch(w, map[string]any{"type": "chat/toolCallConfirmed", "turnId": wt.ID, "toolCallId": call, "approved": true})
	awaitAccepted(t, answerer, seq)
	if end := awaitEnd(t, c, root, "t1"); end.Type() != "chat/turnComplete" {
		t.Fatalf("root turn ended %s", end.Raw)
	}
	ws := workerTurn(t, c, w)
	tc := toolCallOf(t, ws.Turns[0], call)
	if tc.Success == nil || !*tc.Success {
		t.Fatalf("worker's confirmed call: %+v", tc)
	}
}

// TestWorkerNested: a nested worker's spawning call is in the worker chat
// that spawned it, and the nested worker's origin names that call
// (C-SUB-18).
func TestWorkerNested(t *testing.T) {
	t.Parallel()
	e := newTurnsEnv(t)
	c := e.dial(t, "watcher")
	sess, root := e.newSession(t, c, provScript)
	c.Subscribe(root)
	sendTurn(t, c, root, "t1", "[worker:nested] go")
	outer := awaitWorkerAdded(t, c, sess, "t1-task-1")
	inner := awaitWorkerAdded(t, c, sess, "t1-task-1-task-1")
	if o := inner.Origin; o.Kind != ahp.OriginTool || o.Chat != outer.Resource {
		t.Fatalf("nested worker's origin %+v, want the chat %s", o, outer.Resource)
	}
	if inner.Resource != chat.MintWorkerURI(sess, root, root, "t1-task-1-task-1") {
		t.Fatalf("nested worker URI %s is not made from the root chat", inner.Resource)
	}
	os := workerTurn(t, c, outer.Resource)
	call := toolCallOf(t, os.Turns[0], "t1-task-1-task-1")
	if subagentContentOf(call) != inner.Resource {
		t.Fatalf("nested spawning call names %q", subagentContentOf(call))
	}
	is := workerTurn(t, c, inner.Resource)
	if got := answerOf(is.Turns[0]); got != "worker: nested: work on: [worker:nested] go" {
		t.Fatalf("nested worker answered %q", got)
	}
	rs := chatOf(t, c, root)
	for _, p := range turnOf(t, rs, "t1").ResponseParts {
		if p.ToolCall != nil && p.ToolCall.ToolCallID == "t1-task-1-task-1" {
			t.Fatal("the nested call is in the root chat")
		}
	}
}

// TestWorkerStopEndsWorkers: the workers a stopped turn spawned end with the
// stop (C-TURN-72); a background worker of an earlier turn keeps running
// through it (C-TURN-73).
func TestWorkerStopEndsWorkers(t *testing.T) {
	t.Parallel()
	e := newTurnsEnv(t)
	c := e.dial(t, "watcher")
	sess, root := e.newSession(t, c, provScript)
	c.Subscribe(root)
	sendTurn(t, c, root, "t1", "[worker:bg] go")
	bg := awaitWorkerAdded(t, c, sess, "t1-task-1").Resource
	bst := chatOf(t, c, bg)
	if bst.ActiveTurn == nil {
		t.Fatal("background worker is not running")
	}
	startTurn(c, root, "t2", "[worker:hold] go")
	held := awaitWorkerAdded(t, c, sess, "t2-task-1").Resource
	hst := chatOf(t, c, held)
	if hst.ActiveTurn == nil {
		t.Fatal("held worker is not running")
	}
	awaitAccepted(t, c, stopTurn(c, root, "t2"))
	if end := awaitEnd(t, c, held, hst.ActiveTurn.ID); end.Type() != "chat/turnCancelled" {
		t.Fatalf("worker of the stopped turn ended %s", end.Raw)
	}
	if st := chatOf(t, c, bg); st.ActiveTurn == nil || len(st.Turns) != 0 {
		t.Fatalf("background worker ended with the stop: %d turns", len(st.Turns))
	}
	sendTurn(t, c, root, "t3", "[release]")
	if end := awaitEnd(t, c, bg, bst.ActiveTurn.ID); end.Type() != "chat/turnComplete" {
		t.Fatalf("background worker ended %s", end.Raw)
	}
}

// TestWorkerVSCodeURI: in a session an older VS Code window made, a worker
// chat is ahp-chat://subagent/<base64url(session)>/<toolCallId> (C-SUB-02,
// 04), and an older VS Code computes and subscribes to it.
func TestWorkerVSCodeURI(t *testing.T) {
	t.Parallel()
	e := newTurnsEnv(t)
	c := e.dial(t, "vscode")
	sess := "script:/" + uuid.NewString()
	c.MustCall("createSession", map[string]any{"channel": sess, "provider": provScript})
	c.Subscribe(sess)
	def := ahp.DefaultChatURI(sess)
	c.Subscribe(def)
	sendTurn(t, c, def, "t1", "[worker] go")
	sum := awaitWorkerAdded(t, c, sess, "t1-task-1")
	want := ahp.SubagentChatURI(sess, "t1-task-1")
	if sum.Resource != want {
		t.Fatalf("worker chat %s, want %s", sum.Resource, want)
	}
	if st := workerTurn(t, c, want); st.Resource != want {
		t.Fatalf("worker chat resource %s", st.Resource)
	}
}

// TestWorkerRestart: a worker is known by its records, so its chat serves
// after a restart (C-SUB-05); a worker name no record holds is no chat,
// -32001 (C-SUB-06).
func TestWorkerRestart(t *testing.T) {
	e := newTurnsEnv(t)
	c := e.dial(t, "watcher")
	sess, root := e.newSession(t, c, provScript)
	c.Subscribe(root)
	sendTurn(t, c, root, "t1", "[worker] go")
	w := awaitWorkerAdded(t, c, sess, "t1-task-1").Resource
	before := workerTurn(t, c, w)
	e.restart()
	c = e.dial(t, "again")
	st := chatOf(t, c, w)
	if len(st.Turns) != 1 || answerOf(st.Turns[0]) != answerOf(before.Turns[0]) || st.Origin == nil || st.Origin.ToolCallID != "t1-task-1" || st.Interactivity != ahp.InteractivityReadOnly {
		t.Fatalf("worker chat after a restart: %+v", st)
	}
	awaitRefused(t, c, startTurn(c, w, "p1", "hello"), "This chat is read-only.")
	for _, uri := range []string{
		chat.MintWorkerURI(sess, root, root, "no-such-call"),
		ahp.SubagentChatURI(sess, "no-such-call"),
		ahp.SubagentChatURI(sess, "t1-task-1"),
	} {
		_, err := c.Call("subscribe", map[string]any{"channel": uri})
		if err == nil || err.Code != ahp.CodeSessionNotFound || err.Message != "Resource not found: "+uri {
			t.Fatalf("subscribe to %s: %v", uri, err)
		}
	}
}
