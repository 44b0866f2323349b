package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// `ahpd bot create` makes a bot whose work session runs its instructions
// first; a turn in the bot's chat then runs there after them. list, show
// and delete manage it, and a deleted slug is never reused.
func TestBotVerbs(t *testing.T) {
	data := t.TempDir()
	p := serveBinary(t, data, t.TempDir())
	env := []string{"AHPD_URL=" + p.url}

	out, errOut, code := ahpdRun(t, env, "bot", "create", "helper", "--name", "Helper", "--agent", "script", "--instructions", "You are Helper.", "--json")
	if code != 0 {
		t.Fatalf("bot create: exit %d: %s", code, errOut)
	}
	var b struct {
		Slug, Name, Agent, Folder, Owner, Session string
	}
	if err := json.Unmarshal([]byte(out), &b); err != nil || b.Session == "" || !strings.HasPrefix(b.Folder, data) {
		t.Fatalf("bot create printed %q (%v)", out, err)
	}

	c := ahptest.Dial(t, p.url, "")
	c.Initialize("test", ahp.RootURI)
	sess := "ahp-session:/" + uuid.NewString()
	c.MustCall("createSession", map[string]any{"channel": sess, "provider": "bot", "config": map[string]any{"bot": "helper"}})
	var ss ahp.SessionState
	raw, _ := c.Subscribe(sess)
	if err := json.Unmarshal(raw, &ss); err != nil {
		t.Fatal(err)
	}
	c.Subscribe(ss.DefaultChat)
	c.Dispatch(ss.DefaultChat, map[string]any{"type": "chat/turnStarted", "turnId": "t1", "startedAt": "2026-01-01T00:00:00.000Z",
		"message": map[string]any{"text": "hello bot", "origin": map[string]any{"kind": "user"}}})
	end := c.AwaitEnvelope("the bot turn's end", func(e ahptest.Envelope) bool {
		return e.Channel == ss.DefaultChat && (e.Type() == "chat/turnComplete" || e.Type() == "chat/error")
	})
	if end.Type() != "chat/turnComplete" {
		t.Fatalf("bot turn ended %s", end.Raw)
	}

	var ws ahp.SessionState
	raw, _ = c.Subscribe(b.Session)
	if err := json.Unmarshal(raw, &ws); err != nil {
		t.Fatal(err)
	}
	raw, _ = c.Subscribe(ws.DefaultChat)
	var work ahp.ChatState
	if err := json.Unmarshal(raw, &work); err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, tr := range work.Turns {
		said = append(said, tr.Message.Text)
	}
	if !slices.Equal(said, []string{"You are Helper.", "hello bot"}) || ws.Title != "Helper" {
		t.Fatalf("work session %q titled %q: want the instructions first, then the bot's turn", said, ws.Title)
	}

	out, _, code = ahpdRun(t, env, "bot", "list")
	if code != 0 || !strings.Contains(out, "helper") || !strings.Contains(out, b.Session) {
		t.Fatalf("bot list: %d %q", code, out)
	}
	out, _, code = ahpdRun(t, env, "bot", "show", "helper")
	if code != 0 || !strings.Contains(out, "You are Helper.") {
		t.Fatalf("bot show: %d %q", code, out)
	}
	if _, _, code = ahpdRun(t, env, "bot", "delete", "helper"); code != 0 {
		t.Fatalf("bot delete: exit %d", code)
	}
	if _, _, code = ahpdRun(t, env, "bot", "show", "helper"); code == 0 {
		t.Fatal("bot show found a deleted bot")
	}
	if _, errOut, code = ahpdRun(t, env, "bot", "create", "helper", "--name", "Again", "--agent", "script"); code == 0 {
		t.Fatal("a deleted bot's slug was reused")
	} else if !strings.Contains(errOut, "never reused") {
		t.Errorf("re-create said %q", errOut)
	}
	if _, _, code = ahpdRun(t, env, "bot", "create", "x"); code != 2 {
		t.Errorf("bot create without --name: exit %d, want 2", code)
	}
}
