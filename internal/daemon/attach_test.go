package daemon_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/attach"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/google/uuid"
)

// Wire tests of CHATS.md "Attachments" through the websocket with the
// script agent, whose Sent log shows what each turn handed the backend.

func turnWith(id, text string, atts ...map[string]any) map[string]any {
	a := turnStarted(id, text)
	a["message"].(map[string]any)["attachments"] = atts
	return a
}

func embedded(label, contentType string, data []byte) map[string]any {
	return map[string]any{"type": "embeddedResource", "label": label, "contentType": contentType, "data": base64.StdEncoding.EncodeToString(data)}
}

func chatRef(label, resource, endTurn string) map[string]any {
	m := map[string]any{"type": "chat", "label": label, "resource": resource}
	if endTurn != "" {
		m["endTurn"] = endTurn
	}
	return m
}

func messageOf(t testing.TB, e ahptest.Envelope) ahp.Message {
	t.Helper()
	var m ahp.Message
	if err := e.Field("message", &m); err != nil {
		t.Fatalf("message of %s: %v", e.Type(), err)
	}
	return m
}

// sentTurn is the turn the script agent was handed under id.
func sentTurn(t testing.TB, e *testEnv, id string) agent.Turn {
	t.Helper()
	for _, tr := range e.script.Sent() {
		if tr.ID == id {
			return tr
		}
	}
	t.Fatalf("the backend was never handed turn %s", id)
	return agent.Turn{}
}

func handed(e *testEnv, id string) bool {
	for _, tr := range e.script.Sent() {
		if tr.ID == id {
			return true
		}
	}
	return false
}

func filesUnder(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

// TestAttachmentsWritten: inline bytes are written once, before the turn is
// said, under <data dir>/attachments/<session id>/<uuid>/<label>, and the
// message carries the path from then on; the backend gets each as an image,
// inlined or by path.
func TestAttachmentsWritten(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.client("a")
	const sessID = "a77a0000-0000-4000-8000-000000000001"
	_, def := e.createSession(c, "ahp-session:/"+sessID)
	c.Subscribe(def)

	png := []byte("\x89PNG\r\n\x1a\nnot really")
	text := []byte("pasted words")
	big := bytes.Repeat([]byte("x"), attach.InlineTextLimit+1)
	pdf := []byte("%PDF-1.4 not really")
	sent := []map[string]any{
		embedded("shot.png", "image/png", png),
		embedded("notes/paste?.txt", "text/plain", text),
		embedded("big.txt", "text/plain", big),
		embedded("doc.pdf", "application/pdf", pdf),
	}
	c.Dispatch(def, turnWith("t1", "look", sent...))
	echo := awaitTyped(t, c, def, "chat/turnStarted", "t1")
	root := filepath.Join(e.cfg.DataDir, "attachments", sessID)
	// C-ATT-07: the files exist by the time the turn is said.
	if n := len(filesUnder(t, root)); n != len(sent) {
		t.Fatalf("C-ATT-07: %d files when the turn was said, want %d", n, len(sent))
	}
	msg := messageOf(t, echo)
	wantBytes := [][]byte{png, text, big, pdf}
	wantNames := []string{"shot.png", "notes_paste_.txt", "big.txt", "doc.pdf"}
	paths := make([]string, len(sent))
	for i, a := range msg.Attachments {
		// C-ATT-10: the echo carries the path, not the bytes.
		if a.Type != ahp.AttachmentResource || a.Data != "" || !strings.HasPrefix(a.URI, "file:") {
			t.Fatalf("C-ATT-10: echoed attachment %d = %+v", i, a)
		}
		p, err := ahp.LocalPath(a.URI)
		if err != nil {
			t.Fatal(err)
		}
		paths[i] = p
		// C-ATT-09: <session folder>/<uuid>/<label, made a path segment>.
		rel, _ := filepath.Rel(root, p)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 2 || parts[1] != wantNames[i] {
			t.Errorf("C-ATT-09: %s is not <uuid>/%s under %s", p, wantNames[i], root)
		} else if _, err := uuid.Parse(parts[0]); err != nil {
			t.Errorf("C-ATT-09: folder %q is no UUID", parts[0])
		}
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, wantBytes[i]) {
			t.Errorf("attachment %d: file holds %d bytes, %v", i, len(got), err)
		}
		// C-ATT-38: the file is the message's own.
		if !attach.Own(a) {
			t.Errorf("C-ATT-38: written attachment %d is not tagged as the message's own", i)
		}
	}
	awaitEnd(t, c, def, "t1")

	// C-ATT-01, 37: the backend got each as one of the three kinds.
	got := sentTurn(t, e, "t1").Attachments
	if len(got) != 4 {
		t.Fatalf("backend got %d attachments", len(got))
	}
	if got[0].As != attach.AsImage || !bytes.Equal(got[0].Data, png) || got[0].MimeType != "image/png" { // C-ATT-02
		t.Errorf("C-ATT-02: png went as %q (%d bytes)", got[0].As, len(got[0].Data))
	}
	if got[1].As != attach.AsInline || got[1].Text != string(text) { // C-ATT-04
		t.Errorf("C-ATT-04: text went as %q %q", got[1].As, got[1].Text)
	}
	if got[2].As != attach.AsPath || got[2].Path != paths[2] || got[2].Text != "" { // C-ATT-05
		t.Errorf("C-ATT-05: big text went as %q %q", got[2].As, got[2].Path)
	}
	if got[3].As != attach.AsPath || got[3].Path != paths[3] { // C-ATT-06
		t.Errorf("C-ATT-06: pdf went as %q %q", got[3].As, got[3].Path)
	}

	// C-ATT-10: the stored turn carries the path, for a new watcher and
	// after a restart; C-ATT-08: nothing was written again.
	check := func(when string) {
		t.Helper()
		r := e.client("reader-" + when)
		st := chatOf(t, r, def)
		if len(st.Turns) != 1 {
			t.Fatalf("%s: %d turns", when, len(st.Turns))
		}
		for i, a := range st.Turns[0].Message.Attachments {
			if a.Data != "" || a.URI != msg.Attachments[i].URI {
				t.Errorf("C-ATT-10 %s: attachment %d = %+v", when, i, a)
			}
		}
		raw, _ := json.Marshal(st)
		if bytes.Contains(raw, []byte(base64.StdEncoding.EncodeToString(pdf))) {
			t.Errorf("C-ATT-10 %s: the chat state holds the bytes", when)
		}
		if n := len(filesUnder(t, root)); n != len(sent) {
			t.Errorf("C-ATT-08 %s: %d files, want %d", when, n, len(sent))
		}
	}
	check("live")
	e.restart()
	check("restarted")
}

// TestAttachmentsLeftAsSent: a file somebody works in, a directory and a
// resource on a scheme this host does not serve are left exactly as sent
// and go to the model by path; a file tagged as the message's own goes as
// its kind says.
func TestAttachmentsLeftAsSent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.client("a")
	// The remote resource is asked for (C-ATT-11) and this client cannot
	// give it: left as sent (C-ATT-17).
	c.OnRequest(func(method string, _ json.RawMessage) (any, *ahptest.RPCError) {
		return nil, &ahptest.RPCError{Code: ahp.CodeNotFound, Message: "not here"}
	})
	_, def := e.createSession(c, "ahp-session:/a77a0000-0000-4000-8000-000000000002")
	c.Subscribe(def)
	work := filepath.Join(e.workDir, "main.go")
	if err := os.WriteFile(work, []byte("package main"), 0o600); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(e.workDir, "unsaved.txt")
	if err := os.WriteFile(snap, []byte("unsaved buffer"), 0o600); err != nil {
		t.Fatal(err)
	}
	sent := []map[string]any{
		{"type": "resource", "label": "main.go", "uri": ahp.FileURI(work), "contentType": "text/plain"},                                                            // C-ATT-18, 39
		{"type": "resource", "label": "src", "uri": ahp.FileURI(e.workDir), "displayKind": "directory"},                                                            // C-ATT-13
		{"type": "resource", "label": "remote.txt", "uri": "vscode-remote://elsewhere/a.txt", "sizeHint": 10},                                                      // C-ATT-17
		{"type": "resource", "label": "unsaved.txt", "uri": ahp.FileURI(snap), "contentType": "text/plain", "_meta": map[string]any{attach.SnapshotMetaKey: true}}, // C-ATT-38
		{"type": "simple", "label": "note", "modelRepresentation": "a note"},
	}
	c.Dispatch(def, turnWith("t1", "look", sent...))
	echo := awaitTyped(t, c, def, "chat/turnStarted", "t1")
	awaitEnd(t, c, def, "t1")
	var sentMsg struct {
		Attachments []ahp.MessageAttachment `json:"attachments"`
	}
	raw, _ := json.Marshal(map[string]any{"attachments": sent})
	_ = json.Unmarshal(raw, &sentMsg)
	echoed := messageOf(t, echo).Attachments
	for i := range sentMsg.Attachments {
		a, b := mustJSON(t, sentMsg.Attachments[i]), mustJSON(t, echoed[i])
		if a != b {
			t.Errorf("C-ATT-13/17/18: attachment %d changed:\nsent %s\nsaid %s", i, a, b)
		}
	}
	if files := filesUnder(t, filepath.Join(e.cfg.DataDir, "attachments")); len(files) != 0 {
		t.Errorf("nothing to write, yet %v", files)
	}
	got := sentTurn(t, e, "t1").Attachments
	if got[0].As != attach.AsPath || got[0].Path != work || got[0].Text != "" {
		t.Errorf("C-ATT-39: a working file went as %+v", got[0])
	}
	if got[1].As != attach.AsPath || got[1].Path != e.workDir {
		t.Errorf("C-ATT-13: a directory went as %+v", got[1])
	}
	if got[2].As != attach.AsPath || got[2].Path != "vscode-remote://elsewhere/a.txt" {
		t.Errorf("C-ATT-17: a remote resource went as %+v", got[2])
	}
	if got[3].As != attach.AsInline || got[3].Text != "unsaved buffer" {
		t.Errorf("C-ATT-38: a tagged file went as %+v", got[3])
	}
	if got[4].As != attach.AsInline || got[4].Text != "a note" {
		t.Errorf("simple went as %+v", got[4])
	}
}

// TestSnapshotAttachmentOutsideIsNotRead: a file tagged as the message's own
// is read by the host only inside the chat's directories and the session's
// attachments folder. Anywhere else (outside, or reached through a symlink
// or "..") it goes to the model by path, left exactly as sent, so the agent
// reads it under its own permissions (issue 8 §2, C-ATT-18).
func TestSnapshotAttachmentOutsideIsNotRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.client("a")
	_, def := e.createSession(c, "ahp-session:/a77a0000-0000-4000-8000-00000000000a")
	c.Subscribe(def)
	secret := filepath.Join(t.TempDir(), "id_rsa")
	if err := os.WriteFile(secret, []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(e.workDir, "innocent.txt")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(e.workDir, "buffer.txt")
	if err := os.WriteFile(inside, []byte("unsaved buffer"), 0o600); err != nil {
		t.Fatal(err)
	}
	tag := map[string]any{attach.SnapshotMetaKey: true}
	dotdot := e.workDir + "/../" + filepath.Base(filepath.Dir(secret)) + "/id_rsa"
	sent := []map[string]any{
		{"type": "resource", "label": "a", "uri": ahp.FileURI(secret), "contentType": "text/plain", "_meta": tag},
		{"type": "resource", "label": "b", "uri": ahp.FileURI(link), "contentType": "text/plain", "_meta": tag},
		{"type": "resource", "label": "c", "uri": "file://" + dotdot, "contentType": "text/plain", "_meta": tag},
		{"type": "resource", "label": "d", "uri": ahp.FileURI(inside), "contentType": "text/plain", "_meta": tag},
	}
	c.Dispatch(def, turnWith("t1", "look", sent...))
	awaitEnd(t, c, def, "t1")
	got := sentTurn(t, e, "t1").Attachments
	if len(got) != 4 {
		t.Fatalf("attachments reached the agent as %+v", got)
	}
	for i, a := range got[:3] {
		if a.As != attach.AsPath || a.Text != "" || len(a.Data) != 0 {
			t.Errorf("attachment %s outside the chat's directories was read by the host: %+v", sent[i]["label"], a)
		}
	}
	if got[3].As != attach.AsInline || got[3].Text != "unsaved buffer" {
		t.Errorf("a tagged file inside the chat's directories went as %+v", got[3])
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAttachmentWriteFails: a write that fails is a log line; the
// attachment stays as sent and the turn goes on (C-ATT-19, 20).
func TestAttachmentWriteFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *daemon.Config) {
		// A file where the attachments folder should be: every write fails.
		if err := os.WriteFile(filepath.Join(c.DataDir, "attachments"), []byte("in the way"), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	c := e.client("a")
	_, def := e.createSession(c, "ahp-session:/a77a0000-0000-4000-8000-000000000003")
	c.Subscribe(def)
	att := embedded("paste.txt", "text/plain", []byte("still here"))
	c.Dispatch(def, turnWith("t1", "look", att))
	echo := awaitTyped(t, c, def, "chat/turnStarted", "t1")
	end := awaitEnd(t, c, def, "t1")
	if end.Type() != "chat/turnComplete" {
		t.Fatalf("C-ATT-20: the turn ended in %s", end.Type())
	}
	a := messageOf(t, echo).Attachments[0]
	if a.Type != ahp.AttachmentEmbeddedResource || a.Data != att["data"] {
		t.Errorf("C-ATT-19: attachment said as %+v", a)
	}
	if got := sentTurn(t, e, "t1").Attachments; len(got) != 1 || got[0].As != attach.AsInline || got[0].Text != "still here" {
		t.Errorf("C-ATT-20: backend got %+v", got)
	}
}

// TestChatAttachments: a chat attachment is a reference (resource, label,
// the turn to read up to) that reaches the backend as a pointer with the
// tail of that chat's transcript up to the pinned turn, and the chat keeps
// the attachment as sent (C-ATT-21..29, 35, 36).
func TestChatAttachments(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.client("a")
	sess, def := e.createSession(c, "ahp-session:/a77a0000-0000-4000-8000-000000000004")
	other := "ahp-chat:/a77a0000-0000-4000-8000-0000000000b1"
	c.MustCall("createChat", map[string]any{"channel": sess, "chat": other})
	c.Subscribe(def)
	c.Subscribe(other)
	sendTurn(t, c, other, "b1", "first question [think] [tool]")
	// C-ATT-29: b2 points at a chat of its own; in b's transcript it is b2's text.
	c.Dispatch(other, turnWith("b2", "second question", chatRef("Elsewhere", "ahp-chat:/a77a0000-0000-4000-8000-0000000000ff", "")))
	awaitEnd(t, c, other, "b2")
	sendTurn(t, c, other, "b3", "third question")

	ref := chatRef("Other chat", other, "b2")
	c.Dispatch(def, turnWith("t1", "what did they say?", ref))
	echo := awaitTyped(t, c, def, "chat/turnStarted", "t1")
	if end := awaitEnd(t, c, def, "t1"); end.Type() != "chat/turnComplete" {
		t.Fatalf("turn ended in %s", end.Type())
	}
	got := sentTurn(t, e, "t1").Attachments
	if len(got) != 1 {
		t.Fatalf("backend got %d attachments", len(got))
	}
	p := got[0]
	// C-ATT-23: a simple attachment (inline text) for the backend.
	if p.As != attach.AsInline {
		t.Errorf("C-ATT-23: pointer went as %q", p.As)
	}
	for _, want := range []string{
		`"Other chat"`, // C-ATT-24
		other,          // C-ATT-25
		"call the get_session_context tool with " + other,                              // C-ATT-26
		"User: first question", "Agent: echo: first question", "User: second question", // C-ATT-27, 28
	} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("pointer lacks %q:\n%s", want, p.Text)
		}
	}
	// C-ATT-27: up to the pinned turn only; C-ATT-28: no reasoning, no
	// tool call; C-ATT-29: the reference in b2 is not followed.
	for _, not := range []string{"third question", "Elsewhere", "not running", "tool-1"} {
		if strings.Contains(p.Text, not) {
			t.Errorf("pointer holds %q:\n%s", not, p.Text)
		}
	}
	st := chatOf(t, c, other)
	if r := reasoningOf(st.Turns[0]); r == "" || strings.Contains(p.Text, r) {
		t.Errorf("C-ATT-28: reasoning %q in the pointer (or none produced)", r)
	}
	// C-ATT-35, 36: the chat says and keeps the attachment as sent; the
	// pointer is only in what the backend was handed.
	if a := messageOf(t, echo).Attachments; len(a) != 1 || mustJSON(t, a[0]) != mustJSON(t, ahp.MessageAttachment{Type: "chat", Label: "Other chat", Resource: other, EndTurn: "b2"}) {
		t.Errorf("C-ATT-35: echoed %+v", a)
	}
	for _, when := range []string{"live", "restarted"} {
		if when == "restarted" {
			e.restart()
			c = e.client("again")
		}
		st := chatOf(t, c, def)
		if a := st.Turns[0].Message.Attachments; len(a) != 1 || a[0].Type != ahp.AttachmentChat || a[0].EndTurn != "b2" || a[0].ModelRepresentation != "" {
			t.Errorf("C-ATT-35 %s: kept %+v", when, a)
		}
		if raw := mustJSON(t, st); strings.Contains(raw, "get_session_context") {
			t.Errorf("C-ATT-36 %s: the pointer is in the chat state", when)
		}
	}
}

func reasoningOf(tr ahp.Turn) string {
	var b strings.Builder
	for _, p := range tr.ResponseParts {
		if p.Kind == ahp.PartReasoning {
			b.WriteString(p.Content)
		}
	}
	return b.String()
}

// TestChatAttachmentPins: only a pin on the running turn or on no retained
// turn ends the message's turn, in a chat/error of errorType sendFailed
// before the backend is handed it; a chat this host does not run gives the
// pointer and no excerpt (C-ATT-30, 32..34).
func TestChatAttachmentPins(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.client("a")
	sess, def := e.createSession(c, "ahp-session:/a77a0000-0000-4000-8000-000000000005")
	other := "ahp-chat:/a77a0000-0000-4000-8000-0000000000b2"
	c.MustCall("createChat", map[string]any{"channel": sess, "chat": other})
	c.Subscribe(def)
	c.Subscribe(other)
	sendTurn(t, c, other, "b1", "done already")
	c.Dispatch(other, turnStarted("b2", "still going [hold]"))
	awaitTyped(t, c, other, "chat/turnStarted", "b2")

	for _, tc := range []struct {
		rule, turn, endTurn string
	}{
		{"C-ATT-32", "t1", "b2"},
		{"C-ATT-33", "t2", "no-such-turn"},
	} {
		c.Dispatch(def, turnWith(tc.turn, "pinned", chatRef("Other", other, tc.endTurn)))
		end := awaitEnd(t, c, def, tc.turn)
		if end.Type() != "chat/error" {
			t.Fatalf("%s: the turn ended in %s", tc.rule, end.Type())
		}
		if !strings.Contains(string(end.Action), `"errorType":"sendFailed"`) {
			t.Errorf("%s: ending %s has no errorType sendFailed", tc.rule, end.Action)
		}
		if handed(e, tc.turn) {
			t.Errorf("%s: the backend was handed the turn", tc.rule)
		}
	}
	// C-ATT-30, 34: a chat this host does not run fails nothing.
	gone := "ahp-chat:/a77a0000-0000-4000-8000-0000000000ee"
	c.Dispatch(def, turnWith("t3", "about a stranger", chatRef("Stranger", gone, "x1")))
	if end := awaitEnd(t, c, def, "t3"); end.Type() != "chat/turnComplete" {
		t.Fatalf("C-ATT-34: the turn ended in %s", end.Type())
	}
	p := sentTurn(t, e, "t3").Attachments[0]
	if !strings.Contains(p.Text, `"Stranger"`) || !strings.Contains(p.Text, "not running") || strings.Contains(p.Text, "User:") {
		t.Errorf("C-ATT-30: pointer %q", p.Text)
	}
	c.Dispatch(other, map[string]any{"type": "chat/turnCancelled", "turnId": "b2"})
	awaitEnd(t, c, other, "b2")
}

// TestChatAttachmentUnreadable: a sender who may not read chats gets the
// pointer and no excerpt, and the turn goes on (C-ATT-31).
func TestChatAttachmentUnreadable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *daemon.Config) {
		c.Tokens = []daemon.TokenConfig{{Token: "sender-token", Principal: "user:sender", Grants: []string{"chat:send"}}}
	})
	owner := e.client("owner")
	sess, def := e.createSession(owner, "ahp-session:/a77a0000-0000-4000-8000-000000000006")
	other := "ahp-chat:/a77a0000-0000-4000-8000-0000000000b3"
	owner.MustCall("createChat", map[string]any{"channel": sess, "chat": other})
	owner.Subscribe(def)
	owner.Subscribe(other)
	sendTurn(t, owner, other, "b1", "secret words")

	s := ahptest.Dial(t, e.d.URL(), "sender-token")
	s.Initialize("sender", ahp.RootURI)
	s.Dispatch(def, turnWith("t1", "peek", chatRef("Other", other, "")))
	if end := awaitEnd(t, owner, def, "t1"); end.Type() != "chat/turnComplete" {
		t.Fatalf("C-ATT-31: the turn ended in %s", end.Type())
	}
	p := sentTurn(t, e, "t1").Attachments[0]
	if !strings.Contains(p.Text, other) || strings.Contains(p.Text, "secret words") {
		t.Errorf("C-ATT-31: pointer %q", p.Text)
	}
}

// TestAttachmentsOfQueuedMessage: a queued message that starts as a turn
// has its bytes written then and its chat attachments resolved as when it
// was queued (C-ATT-07, 10, 27).
func TestAttachmentsOfQueuedMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.client("a")
	sess, def := e.createSession(c, "ahp-session:/a77a0000-0000-4000-8000-000000000007")
	other := "ahp-chat:/a77a0000-0000-4000-8000-0000000000b4"
	c.MustCall("createChat", map[string]any{"channel": sess, "chat": other})
	c.Subscribe(def)
	c.Subscribe(other)
	sendTurn(t, c, other, "b1", "queued context")
	c.Dispatch(def, turnStarted("t1", "slowly [slow]"))
	awaitTyped(t, c, def, "chat/turnStarted", "t1")
	msg := map[string]any{"text": "then this", "origin": map[string]any{"kind": "user"}, "attachments": []map[string]any{
		embedded("q.txt", "text/plain", []byte("queued bytes")), chatRef("Other", other, "b1"),
	}}
	c.Dispatch(def, map[string]any{"type": "chat/pendingMessageSet", "kind": "queued", "id": "q1", "message": msg})
	start := awaitStartOf(t, c, def, "q1")
	a := messageOf(t, start).Attachments
	if a[0].Type != ahp.AttachmentResource || a[0].Data != "" || a[1].Type != ahp.AttachmentChat {
		t.Errorf("C-ATT-10: the queued turn said %+v", a)
	}
	id := turnID(start)
	awaitEnd(t, c, def, id)
	got := sentTurn(t, e, id).Attachments
	if len(got) != 2 || got[0].Text != "queued bytes" || !strings.Contains(got[1].Text, "User: queued context") {
		t.Errorf("backend got %+v", got)
	}
}

// TestAttachmentFetchLimitConfig: attachmentFetchLimitBytes is 32 MiB
// unless the config says otherwise, and 0 is a value (C-ATT-15, 16).
func TestAttachmentFetchLimitConfig(t *testing.T) {
	t.Parallel()
	if got := daemon.Defaults().AttachmentFetchLimitBytes; got != 32<<20 {
		t.Errorf("C-ATT-15: default %d", got)
	}
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(`{"attachmentFetchLimitBytes": 0}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := daemon.Defaults()
	if err := cfg.LoadFile(path, false); err != nil {
		t.Fatal(err)
	}
	if cfg.AttachmentFetchLimitBytes != 0 {
		t.Errorf("C-ATT-16: 0 in the file read as %d", cfg.AttachmentFetchLimitBytes)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("C-ATT-16: 0 refused: %v", err)
	}
	cfg.AttachmentFetchLimitBytes = -1
	if err := cfg.Validate(); err == nil {
		t.Errorf("a negative limit was accepted")
	}
}

// TestInlineBytesWrittenAtTheDoor: a message's inline bytes are written
// before its action is applied (C-ATT-07), so a queued message is said,
// kept in the chat's state and shown to a new watcher with the path, never
// the bytes (C-ATT-10), and the turn it becomes writes nothing again
// (C-ATT-08).
func TestInlineBytesWrittenAtTheDoor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.client("a")
	const sessID = "a77a0000-0000-4000-8000-00000000000d"
	_, def := e.createSession(c, "ahp-session:/"+sessID)
	c.Subscribe(def)
	c.Dispatch(def, turnStarted("t1", "slowly [slow]"))
	awaitTyped(t, c, def, "chat/turnStarted", "t1")
	bytesSent := []byte("queued bytes, pasted")
	msg := map[string]any{"text": "then this", "origin": map[string]any{"kind": "user"}, "attachments": []map[string]any{
		embedded("q.txt", "text/plain", bytesSent),
	}}
	c.Dispatch(def, map[string]any{"type": "chat/pendingMessageSet", "kind": "queued", "id": "q1", "message": msg})
	set := c.AwaitEnvelope("the queued message", func(env ahptest.Envelope) bool {
		return env.Channel == def && env.Type() == "chat/pendingMessageSet"
	})
	said := messageOf(t, set).Attachments
	if len(said) != 1 || said[0].Type != ahp.AttachmentResource || said[0].Data != "" || !attach.Own(said[0]) {
		t.Fatalf("C-ATT-07, 10: the queued message was said with %+v", said)
	}
	path, err := ahp.LocalPath(said[0].URI)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, bytesSent) {
		t.Fatalf("the file holds %q, %v", got, err)
	}
	st := chatOf(t, e.client("late"), def)
	raw, _ := json.Marshal(st)
	if len(st.QueuedMessages) != 1 || bytes.Contains(raw, []byte(base64.StdEncoding.EncodeToString(bytesSent))) {
		t.Fatalf("C-ATT-10: a new watcher's chat holds %s", raw)
	}
	start := awaitStartOf(t, c, def, "q1")
	if a := messageOf(t, start).Attachments; len(a) != 1 || a[0].URI != said[0].URI {
		t.Errorf("the turn said %+v, not the queued message's file", a)
	}
	id := turnID(start)
	awaitEnd(t, c, def, id)
	if got := sentTurn(t, e, id).Attachments; len(got) != 1 || got[0].As != attach.AsInline || got[0].Text != string(bytesSent) {
		t.Errorf("C-ATT-04: the backend got %+v", got)
	}
	if n := len(filesUnder(t, filepath.Join(e.cfg.DataDir, "attachments", sessID))); n != 1 {
		t.Errorf("C-ATT-08: %d files, want 1", n)
	}
}

// TestInlineBytesOfARefusedSenderAreNotWritten: the door writes nothing
// for a client without the grant the action needs; the chat refuses the
// action naming the grant, and the attachments folder stays empty.
func TestInlineBytesOfARefusedSenderAreNotWritten(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *daemon.Config) {
		c.Tokens = []daemon.TokenConfig{{Token: "reader-token", Principal: "user:reader", Grants: []string{"chat:turns", "session:read"}}}
	})
	owner := e.client("owner")
	sess, def := e.createSession(owner, "ahp-session:/a77a0000-0000-4000-8000-00000000000e")
	r := ahptest.Dial(t, e.d.URL(), "reader-token")
	r.Initialize("reader", ahp.RootURI)
	r.Subscribe(sess)
	r.Subscribe(def)
	seq := r.Dispatch(def, turnWith("r1", "let me in", embedded("x.bin", "application/octet-stream", []byte("not mine to write"))))
	if env := r.AwaitEcho(seq); !strings.Contains(env.RejectionReason, "chat:send") {
		t.Fatalf("a reader's turn: rejection %q, want one naming chat:send", env.RejectionReason)
	}
	if files := filesUnder(t, filepath.Join(e.cfg.DataDir, "attachments")); len(files) != 0 {
		t.Errorf("a refused sender's bytes were written: %v", files)
	}
}
