package daemon_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// TestTurnsCommands: a message starting with the terminalCommandPrefix runs
// as a local shell command in the chat's first directory, as one terminal
// tool call carrying its output and completed with its exit status; a
// failing command fails the call and the turn still completes (VS Code's
// host; issue 11). It never reaches the backend (issue 4's acceptance;
// C-TURN-11 for command turns).
func TestTurnsCommands(t *testing.T) {
	e := newTurnsEnv(t)
	for _, prov := range []string{provScript, provConcurrent} {
		t.Run(prov, func(t *testing.T) {
			t.Parallel()
			chatURI, a, b := e.twoWatchers(t, prov)
			if end := sendTurn(t, a.Client, chatURI, "hi", "!echo hi"); end.Type() != "chat/turnComplete" {
				t.Fatalf("!echo hi ended %s", end.Raw)
			}
			if end := sendTurn(t, a.Client, chatURI, "false", "!false"); end.Type() != "chat/turnComplete" {
				t.Fatalf("!false ended %s", end.Raw)
			}
			sendTurn(t, a.Client, chatURI, "pwd", "!pwd")
			settle(t, a, b)
			st := sameState(t, a, b)
			if tc := commandCall(turnOf(t, st, "false")); tc == nil || tc.Success == nil || *tc.Success || !strings.Contains(tc.PastTenseMessage.String(), "status 1") {
				t.Fatalf("!false's tool call %+v does not fail with exit status 1", tc)
			}
			if got := commandOutput(turnOf(t, st, "hi")); strings.TrimSpace(got) != "hi" {
				t.Fatalf("!echo hi's parts hold %q", got)
			}
			dir, _ := filepath.EvalSymlinks(e.workDir)
			if got := strings.TrimSpace(commandOutput(turnOf(t, st, "pwd"))); got != e.workDir && got != dir {
				t.Fatalf("!pwd ran in %q, want %q", got, e.workDir)
			}
			for _, text := range e.sentTexts(prov) {
				if strings.HasPrefix(text, "!") {
					t.Fatalf("%q reached the backend", text)
				}
			}
		})
	}
}

// TestTurnsDraft is the paragraph "A draft is a Message rather than a
// string": C-TURN-117, C-TURN-118, C-TURN-119, C-TURN-120, C-TURN-121.
func TestTurnsDraft(t *testing.T) {
	t.Parallel()
	e := newTurnsEnv(t)
	chatURI, a, b := e.twoWatchers(t, provScript)
	draft := map[string]any{"text": "half typed", "origin": map[string]any{"kind": "user"},
		"attachments": []any{map[string]any{"type": "simple", "label": "notes.txt", "modelRepresentation": "notes"}}}
	awaitAccepted(t, a.Client, a.Dispatch(chatURI, map[string]any{"type": "chat/draftChanged", "draft": draft}))
	// C-TURN-118: the other person in the chat sees it.
	awaitTyped(t, b.Client, chatURI, "chat/draftChanged", "")
	st := sameState(t, a, b)
	// C-TURN-117: a Message, attachments and all.
	if st.Draft == nil || st.Draft.Text != "half typed" || len(st.Draft.Attachments) != 1 {
		t.Fatalf("draft = %+v", st.Draft)
	}
	raw, _ := b.Subscribe(chatURI)
	var shape struct {
		Draft json.RawMessage `json:"draft"`
	}
	_ = json.Unmarshal(raw, &shape)
	if len(shape.Draft) == 0 || shape.Draft[0] != '{' {
		t.Fatalf("draft on the wire is %s, want an object", shape.Draft)
	}
	// C-TURN-121: taken while nothing runs for the session: no backend was
	// started for it.
	if n := len(e.scripts[provScript].Opens()); n != 0 {
		t.Fatalf("a draft started %d backend conversations", n)
	}
	// C-TURN-119, C-TURN-120: kept in the record, the chat opens with it on
	// the next process.
	e.restart()
	c := e.client("after")
	raw, _ = c.Subscribe(chatURI)
	if got := chatState(t, raw).Draft; got == nil || got.Text != "half typed" || len(got.Attachments) != 1 {
		t.Fatalf("draft after a restart = %+v", got)
	}
	// And changed again on a session read back, with nothing running.
	awaitAccepted(t, c, c.Dispatch(chatURI, map[string]any{"type": "chat/draftChanged", "draft": userMessage("changed")}))
	if n := len(e.scripts[provScript].Opens()); n != 0 {
		t.Fatalf("a draft started %d backend conversations", n)
	}
	e.restart()
	c = e.client("after2")
	raw, _ = c.Subscribe(chatURI)
	if got := chatState(t, raw).Draft; got == nil || got.Text != "changed" {
		t.Fatalf("draft after the second restart = %+v", got)
	}
}

// TestTurnsServerSeq is the paragraph "serverSeq moves with every
// envelope": C-TURN-122, C-TURN-123, C-TURN-124.
func TestTurnsServerSeq(t *testing.T) {
	t.Parallel()
	e := newTurnsEnv(t)
	chatURI, a, b := e.twoWatchers(t, provNoSteer)
	sendTurn(t, a.Client, chatURI, "t1", "one")
	// Refused: no turn runs, and this backend takes no steering.
	r1 := a.AwaitEcho(stopTurn(a.Client, chatURI, "t1"))
	r2 := a.AwaitEcho(setPending(a.Client, chatURI, ahp.PendingSteering, "s1", "x"))
	if r1.RejectionReason == "" || r2.RejectionReason == "" {
		t.Fatalf("want refusals: %s %s", r1.Raw, r2.Raw)
	}
	after := draftBarrier(t, b.Client, chatURI, "typing")
	// C-TURN-122: each refusal took a serverSeq of its own.
	if !(r1.ServerSeq < r2.ServerSeq && r2.ServerSeq < after.ServerSeq) {
		t.Fatalf("serverSeqs %d, %d, %d", r1.ServerSeq, r2.ServerSeq, after.ServerSeq)
	}
	for _, env := range b.Envelopes() {
		if env.ServerSeq == r1.ServerSeq || env.ServerSeq == r2.ServerSeq {
			t.Fatalf("b got a's refusal %s", env.Raw)
		}
	}
	sendTurn(t, b.Client, chatURI, "t2", "two")
	for _, w := range []*watcher{a, b} {
		envs := w.Envelopes()
		for i, env := range envs {
			// C-TURN-124: everything after a snapshot carries a greater serverSeq.
			if env.Channel == chatURI && env.ServerSeq <= w.fromSeq {
				t.Fatalf("client %s: %s at or before its snapshot's %d", w.ID, env.Raw, w.fromSeq)
			}
			if i > 0 && env.ServerSeq <= envs[i-1].ServerSeq {
				t.Fatalf("client %s: serverSeq %d after %d", w.ID, env.ServerSeq, envs[i-1].ServerSeq)
			}
		}
	}
	// C-TURN-123: a snapshot is taken at a serverSeq: it is what folding
	// every envelope up to that serverSeq gives.
	settle(t, a, b)
	sameState(t, a, b)
	c := e.dial(t, "late")
	raw, seq := c.Subscribe(chatURI)
	late := &watcher{Client: c, chat: chatURI, first: raw, fromSeq: seq}
	sendTurn(t, a.Client, chatURI, "t3", "three")
	awaitEnd(t, c, chatURI, "t3")
	settle(t, a, b, late)
	sameState(t, a, b, late)
}
