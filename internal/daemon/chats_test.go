package daemon_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

func sessionState(t testing.TB, c *ahptest.Client, uri string) ahp.SessionState {
	t.Helper()
	st, _ := c.Subscribe(uri)
	var s ahp.SessionState
	if err := json.Unmarshal(st, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func chatOf(t testing.TB, c *ahptest.Client, uri string) ahp.ChatState {
	t.Helper()
	st, _ := c.Subscribe(uri)
	return chatState(t, st)
}

func texts(turns []ahp.Turn) []string {
	var out []string
	for _, t := range turns {
		out = append(out, t.Message.Text)
	}
	return out
}

// comparable strips what legitimately differs between snapshots taken at
// different moments of the same state (nothing, today) and returns JSON.
func canon(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestThreeClientsForkSideChatAndClose: one client forks a chat at turn 2
// of 4, one opens a side chat with a selection, one closes a non-default
// chat; all three end with identical session and chat states, and a
// restart keeps them (C-FROM-03..05, C-FROM-12..18, C-FIRST-18, C-CMD-05..07).
func TestThreeClientsForkSideChatAndClose(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b, c := e.client("a"), e.client("b"), e.client("c")
	sess, def := e.createSession(a, "ahp-session:/3c3c3c3c-0000-4000-8000-000000000001")
	for _, cl := range []*ahptest.Client{a, b, c} {
		cl.Subscribe(sess)
		cl.Subscribe(def)
	}
	for i := 1; i <= 4; i++ {
		sendTurn(t, a, def, fmt.Sprintf("t%d", i), fmt.Sprintf("message %d", i))
	}
	srcBefore := canon(t, chatOf(t, a, def))

	fork := "ahp-chat:/f0f0f0f0-0000-4000-8000-000000000001"
	b.MustCall("createChat", map[string]any{"channel": sess, "chat": fork, "source": map[string]any{"kind": "fork", "chat": def, "turnId": "t2"}})
	side := "ahp-chat:/51de51de-0000-4000-8000-000000000001"
	c.MustCall("createChat", map[string]any{"channel": sess, "chat": side, "source": map[string]any{
		"kind": "sideChat", "chat": def, "turnId": "t3", "selection": map[string]any{"text": "echo: message 3"}}})
	extra := "ahp-chat:/e7e7e7e7-0000-4000-8000-000000000001"
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": extra})
	if res := a.MustCall("disposeChat", map[string]any{"channel": extra}); string(res) != "null" {
		t.Fatalf("disposeChat = %s, want null", res)
	}
	for _, cl := range []*ahptest.Client{a, b, c} {
		cl.AwaitEnvelope("extra removed", func(env ahptest.Envelope) bool {
			var ch string
			_ = env.Field("chat", &ch)
			return env.Type() == "session/chatRemoved" && ch == extra
		})
	}

	// C-FROM-03: the fork holds the source's turns through t2.
	fs := chatOf(t, b, fork)
	if got := strings.Join(texts(fs.Turns), "|"); got != "message 1|message 2" {
		t.Fatalf("fork turns = %q", got)
	}
	if fs.Origin == nil || fs.Origin.Kind != "fork" || fs.Origin.Chat != def || fs.Origin.TurnID != "t2" {
		t.Fatalf("fork origin = %+v", fs.Origin)
	}
	// C-FROM-05: the source is untouched.
	if got := canon(t, chatOf(t, a, def)); got != srcBefore {
		t.Fatalf("source chat changed by the fork:\n%s\n%s", srcBefore, got)
	}
	// C-FROM-12, 15: the side chat copies nothing and keeps its selection.
	ss := chatOf(t, c, side)
	if len(ss.Turns) != 0 || ss.Origin == nil || ss.Origin.Kind != "sideChat" || ss.Origin.Selection == nil || ss.Origin.Selection.Text != "echo: message 3" {
		t.Fatalf("side chat = %+v origin %+v", ss.Turns, ss.Origin)
	}
	// C-FROM-13, 14: its first prompt is told what the source turn said;
	// its visible history is only its own turn.
	c.Subscribe(side)
	sendTurn(t, c, side, "s1", "what did it mean?")
	ss = chatOf(t, c, side)
	if len(ss.Turns) != 1 || ss.Turns[0].Message.Text != "what did it mean?" {
		t.Fatalf("side chat after its first turn: %+v", texts(ss.Turns))
	}
	var answer string
	for _, p := range ss.Turns[0].ResponseParts {
		answer += p.Content
	}
	if !strings.HasPrefix(answer, "(context: ") {
		t.Fatalf("side chat's first prompt carried no host context: %q", answer)
	}
	// The fork continues on its own (C-FROM-04): its backend conversation
	// holds the two copied turns plus its new one.
	b.Subscribe(fork)
	sendTurn(t, b, fork, "f3", "continue the fork")
	// C-FROM-17, 18: a change to the fork re-sends its origin whole.
	upd := b.AwaitEnvelope("fork updated", func(env ahptest.Envelope) bool {
		var ch string
		_ = env.Field("chat", &ch)
		return env.Type() == "session/chatUpdated" && ch == fork
	})
	var changes ahp.PartialChatSummary
	_ = upd.Field("changes", &changes)
	if changes.Origin == nil || changes.Origin.Kind != "fork" {
		t.Fatalf("chatUpdated of the fork without its origin: %s", upd.Action)
	}

	check := func(when string, clients ...*ahptest.Client) {
		t.Helper()
		// The session's summary of the fork settles just after its turn
		// ends (the session actor hears of it from the chat's), so the
		// snapshots are compared once every client's agree or 5 s passed.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if snapshotsAgree(t, sess, []string{def, fork, side}, clients) {
				break
			}
		}
		var want []string
		for i, cl := range clients {
			var got []string
			st := sessionState(t, cl, sess)
			got = append(got, canon(t, st.Chats), st.DefaultChat)
			for _, ch := range []string{def, fork, side} {
				got = append(got, canon(t, chatOf(t, cl, ch)))
			}
			if i == 0 {
				want = got
				continue
			}
			for j := range got {
				if got[j] != want[j] {
					t.Fatalf("%s: client %s differs from %s:\n%s\n%s", when, cl.ID, clients[0].ID, want[j], got[j])
				}
			}
		}
		st := sessionState(t, clients[0], sess)
		var uris []string
		for _, cs := range st.Chats {
			uris = append(uris, cs.Resource)
		}
		if strings.Join(uris, ",") != def+","+fork+","+side {
			t.Fatalf("%s: chats = %v", when, uris)
		}
	}
	check("live", a, b, c)
	e.restart()
	check("after restart", e.client("a2"), e.client("b2"))
}

// TestDisposeDefaultChatAnswersNull: the default chat stays (C-FIRST-12..14,
// C-CMD-08); an unknown chat answers null too (C-CMD-09); disposeChat never
// ends the session (C-CMD-10), whose chats list is never empty (C-CHAT-01).
// No act of a client closes the default chat, so default never has to move
// (C-FIRST-19, C-CHAT-09; reading 2 in docs/CHATS.md).
func TestDisposeDefaultChatAnswersNull(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	sess, def := e.createSession(a, "ahp-session:/d0d0d0d0-0000-4000-8000-000000000001")
	a.Subscribe(def)
	sendTurn(t, a, def, "t1", "keep me")
	before := canon(t, chatOf(t, a, def))
	for _, ch := range []string{def, "ahp-chat:/not-held-here"} {
		res, err := a.Call("disposeChat", map[string]any{"channel": ch})
		if err != nil || string(res) != "null" {
			t.Fatalf("disposeChat %s = %s, %v; want null", ch, res, err)
		}
	}
	st := sessionState(t, a, sess)
	if st.DefaultChat != def || len(st.Chats) != 1 {
		t.Fatalf("session after disposeChat: default %s, %d chats", st.DefaultChat, len(st.Chats))
	}
	if got := canon(t, chatOf(t, a, def)); got != before {
		t.Fatalf("default chat changed:\n%s\n%s", before, got)
	}
}

// TestCreateChatOutsideDirectoryRefused: a chat naming a directory its
// session does not have is refused and the session is not widened
// (C-FIRST-25..27); a subset is taken (C-FIRST-04).
func TestCreateChatOutsideDirectoryRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	sess, _ := e.createSession(a, "ahp-session:/d1d1d1d1-0000-4000-8000-000000000001")
	outside := t.TempDir()
	_, err := a.Call("createChat", map[string]any{"channel": sess, "chat": "ahp-chat:/outside-1", "workingDirectories": []string{ahp.FileURI(outside)}})
	if err == nil || err.Code != ahp.CodeInvalidParams || !strings.Contains(err.Message, "not a working directory of session") {
		t.Fatalf("createChat outside the session: %v", err)
	}
	st := sessionState(t, a, sess)
	if len(st.WorkingDirectories) != 1 || len(st.Chats) != 1 {
		t.Fatalf("session widened or chat added: dirs %v chats %d", st.WorkingDirectories, len(st.Chats))
	}
	inside := ahp.FileURI(e.workDir)
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": "ahp-chat:/inside-1", "workingDirectories": []string{inside}})
	if cs := chatOf(t, a, "ahp-chat:/inside-1"); len(cs.WorkingDirectories) != 1 || cs.WorkingDirectories[0] != inside {
		t.Fatalf("subset chat directories = %v", cs.WorkingDirectories)
	}
	// A directory change to one outside is refused too.
	seq := a.Dispatch("ahp-chat:/inside-1", map[string]any{"type": "chat/workingDirectorySet", "directory": ahp.FileURI(outside)})
	if env := a.AwaitEcho(seq); env.RejectionReason == "" {
		t.Fatalf("chat/workingDirectorySet outside the session accepted")
	}
}

// TestRewind: chat/truncated with a turnId drops the later turns and the
// backend is resumed at the kept turn (C-COMP-05, 06, 10); without one it
// clears everything and the backend starts over (C-COMP-13..16).
func TestRewind(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	sess, def := e.createSession(a, "ahp-session:/4e4e4e4e-0000-4000-8000-000000000001")
	_ = sess
	a.Subscribe(def)
	for i := 1; i <= 3; i++ {
		sendTurn(t, a, def, fmt.Sprintf("t%d", i), fmt.Sprintf("msg %d", i))
	}
	conv := strings.TrimPrefix(sess, "ahp-session:/")
	if got := strings.Join(e.script.History(conv), "|"); got != "msg 1|msg 2|msg 3" {
		t.Fatalf("backend history before = %q", got)
	}
	seq := a.Dispatch(def, map[string]any{"type": "chat/truncated", "turnId": "t1"})
	if env := a.AwaitEcho(seq); env.RejectionReason != "" {
		t.Fatalf("truncate refused: %s", env.RejectionReason)
	}
	if cs := chatOf(t, a, def); strings.Join(texts(cs.Turns), "|") != "msg 1" {
		t.Fatalf("after rewind to t1: %v", texts(cs.Turns))
	}
	sendTurn(t, a, def, "t4", "edited msg 2")
	if got := strings.Join(e.script.History(conv), "|"); got != "msg 1|edited msg 2" {
		t.Fatalf("backend history after the rewind = %q, want the cut history", got)
	}

	// Clear everything: a new conversation, nothing resumed.
	seq = a.Dispatch(def, map[string]any{"type": "chat/truncated"})
	if env := a.AwaitEcho(seq); env.RejectionReason != "" {
		t.Fatalf("clear refused: %s", env.RejectionReason)
	}
	if cs := chatOf(t, a, def); len(cs.Turns) != 0 {
		t.Fatalf("after clear: %v", texts(cs.Turns))
	}
	if h := e.script.History(conv); h != nil {
		t.Fatalf("the old conversation was not deleted: %v", h)
	}
	sendTurn(t, a, def, "t5", "fresh start")
	if cs := chatOf(t, a, def); strings.Join(texts(cs.Turns), "|") != "fresh start" {
		t.Fatalf("after clear and a turn: %v", texts(cs.Turns))
	}
}

// TestGrantRefusals: a token configured without chat:send cannot start a
// turn, and the refusal names the grant (C-GRANT-08); nor open, close or
// rewind a chat (C-GRANT-06, 07, 18); it can read and subscribe
// (C-GRANT-01, 02), its session group covering chat reading (C-GRANT-05).
func TestGrantRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *daemon.Config) {
		c.Tokens = []daemon.TokenConfig{{Token: "reader-token", Principal: "user:reader", Grants: []string{"chat:turns", "session:read"}}}
	})
	owner := e.client("owner")
	sess, def := e.createSession(owner, "ahp-session:/9a9a9a9a-0000-4000-8000-000000000001")
	owner.Subscribe(def)
	sendTurn(t, owner, def, "t1", "visible")

	r := ahptest.Dial(t, e.d.URL(), "reader-token")
	r.Initialize("reader", ahp.RootURI)
	r.Subscribe(sess)
	if cs := chatOf(t, r, def); len(cs.Turns) != 1 {
		t.Fatalf("reader sees %d turns", len(cs.Turns))
	}
	seq := r.Dispatch(def, turnStarted("r1", "let me in"))
	env := r.AwaitEcho(seq)
	if !strings.Contains(env.RejectionReason, "chat:send") {
		t.Fatalf("turn from a reader: rejection %q, want one naming chat:send", env.RejectionReason)
	}
	if _, err := r.Call("createChat", map[string]any{"channel": sess, "chat": "ahp-chat:/r-1"}); err == nil || err.Code != ahp.CodePermissionDenied || !strings.Contains(err.Message, "chat:create") {
		t.Fatalf("createChat by a reader: %v", err)
	}
	if _, err := r.Call("disposeChat", map[string]any{"channel": def}); err == nil || err.Code != ahp.CodePermissionDenied || !strings.Contains(err.Message, "chat:dispose") {
		t.Fatalf("disposeChat by a reader: %v", err)
	}
	seq = r.Dispatch(def, map[string]any{"type": "chat/truncated"})
	if env := r.AwaitEcho(seq); !strings.Contains(env.RejectionReason, "chat:truncate") {
		t.Fatalf("truncate by a reader: %q", env.RejectionReason)
	}
	if cs := chatOf(t, owner, def); len(cs.Turns) != 1 {
		t.Fatalf("refused acts changed the chat: %d turns", len(cs.Turns))
	}
	// An unknown token is refused at the door.
	if _, resp, err := ahptest.DialRaw(e.d.URL(), "forged"); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("unknown token: %v", err)
	}
}

// TestFetchTurnsPagesToTheFirst: a subscribe that names a view gets the
// newest turns and a cursor; fetchTurns answers {} and each page arrives
// as chat/turnsLoaded to every watcher, down to the first turn
// (C-CMD-11..14, C-GRANT-03). make check pages 500 turns at the default
// page size (50); make test 60 turns in pages of 10.
func TestFetchTurnsPagesToTheFirst(t *testing.T) {
	t.Parallel()
	n, page := 500, 0
	if !testutil.Check() {
		n, page = 60, 10
	}
	e := newEnv(t, func(c *daemon.Config) {
		if page > 0 {
			c.TurnsView = page
		}
	})
	a := e.client("a")
	_, def := e.createSession(a, "ahp-session:/fe7cfe7c-0000-4000-8000-000000000001")
	a.Subscribe(def)
	for i := range n {
		sendTurn(t, a, def, fmt.Sprintf("t%03d", i), fmt.Sprintf("m%03d", i))
	}
	b := e.client("b")
	view := 20
	var sub struct {
		Snapshot struct {
			State ahp.ChatState `json:"state"`
		} `json:"snapshot"`
	}
	raw := b.MustCall("subscribe", map[string]any{"channel": def, "view": map[string]any{"turns": view}})
	if err := json.Unmarshal(raw, &sub); err != nil {
		t.Fatal(err)
	}
	st := sub.Snapshot.State
	if len(st.Turns) != view || st.TurnsNextCursor == nil || st.Turns[0].ID != fmt.Sprintf("t%03d", n-view) {
		t.Fatalf("view snapshot: %d turns from %s, cursor %v", len(st.Turns), st.Turns[0].ID, st.TurnsNextCursor)
	}
	cursor := *st.TurnsNextCursor
	have := append([]ahp.Turn(nil), st.Turns...)
	for pages := 0; cursor != ""; pages++ {
		if pages > n {
			t.Fatal("paging never ends")
		}
		res := b.MustCall("fetchTurns", map[string]any{"channel": def, "cursor": cursor})
		if string(res) != "{}" {
			t.Fatalf("fetchTurns answered %s, want {}", res)
		}
		// The page arrived before the answer, to every watcher.
		var loaded ahptest.Envelope
		for _, env := range b.Envelopes() {
			if env.Type() == "chat/turnsLoaded" {
				loaded = env
			}
		}
		var page ahp.ChatTurnsLoaded
		if err := json.Unmarshal(loaded.Action, &page); err != nil || len(page.Turns) == 0 {
			t.Fatalf("no chat/turnsLoaded before the fetchTurns answer: %s", loaded.Action)
		}
		a.AwaitEnvelope("the page at the other watcher", func(env ahptest.Envelope) bool { return env.ServerSeq == loaded.ServerSeq })
		have = append(page.Turns, have...)
		cursor = ""
		if page.TurnsNextCursor != nil {
			cursor = *page.TurnsNextCursor
		}
	}
	if len(have) != n {
		t.Fatalf("paged %d turns, want %d", len(have), n)
	}
	for i, tr := range have {
		if tr.ID != fmt.Sprintf("t%03d", i) {
			t.Fatalf("turn %d is %s", i, tr.ID)
		}
	}
	if _, err := b.Call("fetchTurns", map[string]any{"channel": def, "cursor": "bogus!"}); err == nil || err.Code != ahp.CodeInvalidParams {
		t.Fatalf("bogus cursor: %v", err)
	}
}

// TestCompletions: / offers the session's commands, @ paths in the chat's
// directories, # files, and #chat: the other chats and files
// (C-CMD-15..18).
func TestCompletions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.workDir, "main.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(e.workDir, "chatter"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := e.client("a")
	sess, def := e.createSession(a, "ahp-session:/c0c0c0c0-0000-4000-8000-000000000001")
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": "ahp-chat:/other-1"})
	a.Subscribe("ahp-chat:/other-1")
	sendTurn(t, a, "ahp-chat:/other-1", "o1", "Design notes")
	complete := func(text string) []ahp.CompletionItem {
		t.Helper()
		raw := a.MustCall("completions", map[string]any{"channel": def, "kind": "userMessage", "text": text, "offset": len([]rune(text))})
		var r ahp.CompletionsResult
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		return r.Items
	}
	has := func(items []ahp.CompletionItem, insert string) bool {
		for _, it := range items {
			if it.InsertText == insert {
				return true
			}
		}
		return false
	}
	if items := complete("look at @ma"); !has(items, "@main.go") {
		t.Fatalf("@ma: %+v", items)
	}
	if items := complete("#cha"); !has(items, "#chat:Design notes ") || !has(items, "#chatter/") {
		t.Fatalf("#cha should offer chats and files: %+v", items)
	}
	if items := complete("#chat:Des"); !has(items, "#chat:Design notes ") || has(items, "#main.go") {
		t.Fatalf("#chat:Des: %+v", items)
	}
	if items := complete("#mai"); !has(items, "#main.go") || has(items, "#chat:Design notes") {
		t.Fatalf("#mai should offer files alone: %+v", items)
	}
	if items := complete("/"); !has(items, "/help ") || !has(items, "/hold ") {
		t.Fatalf("/ should offer the script agent's commands: %+v", items)
	}
	if items := complete("/he"); len(items) != 1 || !has(items, "/help ") || items[0].Attachment.Meta["command"] != "help" {
		t.Fatalf("/he: %+v", items)
	}
	if items := complete("not at the start /he"); len(items) != 0 {
		t.Fatalf("a / inside a message offered %+v", items)
	}
}

// snapshotsAgree reports whether every client's snapshot of the session and
// of each chat is the same.
func snapshotsAgree(t *testing.T, sess string, chats []string, clients []*ahptest.Client) bool {
	t.Helper()
	var want []string
	for i, cl := range clients {
		got := []string{canon(t, sessionState(t, cl, sess).Chats)}
		for _, ch := range chats {
			got = append(got, canon(t, chatOf(t, cl, ch)))
		}
		if i == 0 {
			want = got
			continue
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			return false
		}
	}
	return true
}
