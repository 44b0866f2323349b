package daemon_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// vscodeWorkspace numbers the workspaces of every test; tests run in parallel.
var vscodeWorkspace atomic.Int64

// workspaceSession creates a session the way a VS Code window does: a
// <provider>:/<uuid> URI, one working directory of its own under the
// served path. It returns the session, its default chat and the folder.
func (v *vscodeEnv) workspaceSession(prefix string) (sess, def, dir string) {
	v.t.Helper()
	n := vscodeWorkspace.Add(1)
	dir = filepath.Join(v.dir, fmt.Sprintf("%s-%d", prefix, n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		v.t.Fatal(err)
	}
	sess = fmt.Sprintf("script:/5c0de111-0000-4000-8000-%012d", n)
	v.c.MustCall("createSession", map[string]any{"channel": sess, "provider": "script", "workingDirectories": []string{ahp.FileURI(dir)}})
	v.c.Subscribe(sess)
	def = ahp.DefaultChatURI(sess)
	v.c.Subscribe(def)
	return sess, def, dir
}

// dispatchOK dispatches action and waits for its echo, which must not be
// a refusal.
func (v *vscodeEnv) dispatchOK(channel string, action map[string]any) ahptest.Envelope {
	v.t.Helper()
	env := v.c.AwaitEcho(v.c.Dispatch(channel, action))
	if env.RejectionReason != "" {
		v.t.Fatalf("%s on %s refused: %s", action["type"], channel, env.RejectionReason)
	}
	return env
}

// peer creates chat id of sess as VS Code names it (buildChatUri).
func (v *vscodeEnv) peer(sess, id string, extra map[string]any) string {
	v.t.Helper()
	uri := ahp.DerivedChatURI(sess, id)
	params := map[string]any{"channel": sess, "chat": uri}
	for k, val := range extra {
		params[k] = val
	}
	v.c.MustCall("createChat", params)
	return uri
}

// rename renames a session or chat with session/titleChanged and waits for
// what VS Code waits for: the catalogue's chatUpdated for a chat.
func (v *vscodeEnv) rename(channel, title string) {
	v.t.Helper()
	v.c.Subscribe(channel) // the echo reaches subscribers
	v.dispatchOK(channel, map[string]any{"type": "session/titleChanged", "title": title})
	if !ahp.IsChatURI(channel) {
		return
	}
	v.c.AwaitEnvelope("chatUpdated "+title, func(e ahptest.Envelope) bool {
		var chat string
		var ch ahp.PartialChatSummary
		_ = e.Field("chat", &chat)
		_ = e.Field("changes", &ch)
		return e.Type() == "session/chatUpdated" && chat == channel && ch.Title != nil && *ch.Title == title
	})
}

// driveTurn runs one turn in chat and returns its ending.
func (v *vscodeEnv) driveTurn(chat, id, text string) ahptest.Envelope {
	v.t.Helper()
	v.c.Subscribe(chat)
	end := sendTurn(v.t, v.c, chat, id, text)
	if end.Type() != "chat/turnComplete" {
		v.t.Fatalf("turn %s ended %s: %s", id, end.Type(), end.Raw)
	}
	return end
}

// completedPeer is a peer with one turn that renamed it (the suite's
// createCompletedPeer: "/rename <title>").
func (v *vscodeEnv) completedPeer(sess, id, title, turnID string) string {
	v.t.Helper()
	p := v.peer(sess, id, nil)
	v.driveTurn(p, turnID, "/rename "+title)
	return p
}

func (v *vscodeEnv) chatCompletions(chat, text string) ahp.CompletionsResult {
	v.t.Helper()
	raw := v.c.MustCall("completions", map[string]any{"channel": chat, "kind": "userMessage", "text": text, "offset": len(text)})
	var res ahp.CompletionsResult
	if err := json.Unmarshal(raw, &res); err != nil {
		v.t.Fatal(err)
	}
	return res
}

func chatResources(st ahp.SessionState) []string {
	var out []string
	for _, c := range st.Chats {
		out = append(out, c.Resource)
	}
	return out
}

func chatTitle(st ahp.SessionState, uri string) string {
	for _, c := range st.Chats {
		if c.Resource == uri {
			return c.Title
		}
	}
	return "<absent>"
}

// TestVSCodeMultiChat ports multiChatSuite's conformanceTests (microsoft/vscode
// 0d73f41e, the newest stored version: 26 cases, the 26th, failing peer
// bang command records a failed terminal tool call, in
// TestVSCodeBangCommands; 661c6aa4 is an older hostOnlyTest version without
// the #chat: completion cases, index id 54898523562 a shorter one still).
func TestVSCodeMultiChat(t *testing.T) {
	t.Parallel()
	v := newVSCodeEnv(t)
	conformanceCase(t, "creating a peer chat adds it to the session catalog", func(t *testing.T) {
		sess, _, _ := v.workspaceSession("catalog-add")
		p := v.peer(sess, "peer", nil)
		if !slices.Contains(chatResources(sessionState(t, v.c, sess)), p) {
			t.Fatalf("peer %s not in the catalogue", p)
		}
	})
	conformanceCase(t, "peer chat subscription starts empty and idle", func(t *testing.T) {
		sess, _, _ := v.workspaceSession("empty-peer")
		st := chatOf(t, v.c, v.peer(sess, "peer", nil))
		if len(st.Turns) != 0 || st.ActiveTurn != nil || st.Status != ahp.StatusIdle {
			t.Fatalf("peer state: %d turns, active %v, status %d", len(st.Turns), st.ActiveTurn, st.Status)
		}
	})
	conformanceCase(t, "creating the same peer chat twice is idempotent", func(t *testing.T) {
		sess, _, _ := v.workspaceSession("idempotent")
		p := v.peer(sess, "peer", nil)
		v.peer(sess, "peer", nil)
		n := 0
		for _, r := range chatResources(sessionState(t, v.c, sess)) {
			if r == p {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("peer listed %d times", n)
		}
	})
	conformanceCase(t, "creating two peer chats preserves both catalog entries", func(t *testing.T) {
		sess, _, _ := v.workspaceSession("two-peers")
		first, second := v.peer(sess, "first", nil), v.peer(sess, "second", nil)
		got := chatResources(sessionState(t, v.c, sess))
		if !slices.Contains(got, first) || !slices.Contains(got, second) {
			t.Fatalf("catalogue %v", got)
		}
	})
	conformanceCase(t, "disposing a peer chat removes its catalog entry", func(t *testing.T) {
		sess, _, _ := v.workspaceSession("dispose")
		p := v.peer(sess, "peer", nil)
		v.c.MustCall("disposeChat", map[string]any{"channel": p})
		if slices.Contains(chatResources(sessionState(t, v.c, sess)), p) {
			t.Fatal("disposed peer still listed")
		}
	})
	conformanceCase(t, "disposing one peer chat preserves its sibling", func(t *testing.T) {
		sess, _, _ := v.workspaceSession("dispose-one")
		first, second := v.peer(sess, "first", nil), v.peer(sess, "second", nil)
		v.c.MustCall("disposeChat", map[string]any{"channel": first})
		got := chatResources(sessionState(t, v.c, sess))
		if slices.Contains(got, first) || !slices.Contains(got, second) {
			t.Fatalf("catalogue %v", got)
		}
	})
	conformanceCase(t, "recreating a disposed peer chat starts empty", func(t *testing.T) {
		sess, _, _ := v.workspaceSession("recreate")
		p := v.peer(sess, "peer", nil)
		v.driveTurn(p, "before-dispose", "remember me")
		v.c.MustCall("disposeChat", map[string]any{"channel": p})
		v.peer(sess, "peer", nil)
		if st := chatOf(t, v.c, p); len(st.Turns) != 0 {
			t.Fatalf("recreated peer has %d turns", len(st.Turns))
		}
	})
	conformanceCase(t, "renaming a peer chat updates its catalog title", func(t *testing.T) {
		sess, _, _ := v.workspaceSession("rename-peer")
		p := v.peer(sess, "peer", nil)
		v.rename(p, "Peer Title")
		if got := chatTitle(sessionState(t, v.c, sess), p); got != "Peer Title" {
			t.Fatalf("peer title %q", got)
		}
	})
	conformanceCase(t, "renaming a peer chat leaves the session title unchanged", func(t *testing.T) {
		sess, _, _ := v.workspaceSession("rename-isolated")
		v.rename(sess, "Session Title")
		p := v.peer(sess, "peer", nil)
		v.rename(p, "Peer Title")
		if got := sessionState(t, v.c, sess).Title; got != "Session Title" {
			t.Fatalf("session title %q", got)
		}
	})
	conformanceCase(t, "peer chat survives unsubscribe and resubscribe", func(t *testing.T) {
		sess, _, _ := v.workspaceSession("resubscribe")
		p := v.peer(sess, "peer", nil)
		v.c.Subscribe(p)
		v.c.Notify("unsubscribe", map[string]any{"channel": p})
		if st := chatOf(t, v.c, p); st.Resource != p {
			t.Fatalf("resubscribed resource %s", st.Resource)
		}
	})
	conformanceCase(t, "peer creation does not leak a provider backing as a top-level session", func(t *testing.T) {
		sess, _, _ := v.workspaceSession("session-list")
		before := map[string]bool{}
		for _, s := range sessionList(t, v.c) {
			before[s.Resource] = true
		}
		v.peer(sess, "peer", nil)
		for _, s := range sessionList(t, v.c) {
			if !before[s.Resource] && s.Resource != sess {
				t.Fatalf("new top-level session %s", s.Resource)
			}
		}
	})
	conformanceCase(t, "peer file completion uses the parent workspace", func(t *testing.T) {
		sess, _, dir := v.workspaceSession("completion")
		writeFile(t, filepath.Join(dir, "peer-target.txt"), "target")
		p := v.peer(sess, "peer", nil)
		if got := insertTexts(v.chatCompletions(p, "@peer-t")); !slices.Equal(got, []string{"@peer-target.txt"}) {
			t.Fatalf("completions %v", got)
		}
	})
	conformanceCase(t, "chat completion references a peer at its last completed turn", func(t *testing.T) {
		sess, def, _ := v.workspaceSession("chat-completion-basic")
		p := v.completedPeer(sess, "peer", "Referenced Peer", "peer-reference-turn")
		got := v.chatCompletions(def, "#chat:")
		want := []ahp.CompletionItem{{InsertText: "#chat:Referenced Peer ", RangeStart: intp(0), RangeEnd: intp(6),
			Attachment: ahp.MessageAttachment{Type: ahp.AttachmentChat, Resource: p, EndTurn: "peer-reference-turn", Label: "Referenced Peer"}}}
		sameJSON(t, "items", got.Items, want)
	})
	conformanceCase(t, "chat completion filters peer titles case-insensitively", func(t *testing.T) {
		sess, def, _ := v.workspaceSession("chat-completion-filter")
		target := v.completedPeer(sess, "target", "Alpha Target", "turn-target")
		v.completedPeer(sess, "other", "Beta Reference", "turn-other")
		got := v.chatCompletions(def, "#chat:tArGeT")
		want := []ahp.MessageAttachment{{Type: ahp.AttachmentChat, Resource: target, EndTurn: "turn-target", Label: "Alpha Target"}}
		sameJSON(t, "attachments", attachmentsOf(got), want)
	})
	conformanceCase(t, "partial chat prefix offers completed peer chats", func(t *testing.T) {
		sess, def, _ := v.workspaceSession("chat-completion-partial")
		v.completedPeer(sess, "peer", "Partial Peer", "turn-partial")
		got := v.chatCompletions(def, "#ch")
		if len(got.Items) != 1 || got.Items[0].InsertText != "#chat:Partial Peer " || *got.Items[0].RangeStart != 0 || *got.Items[0].RangeEnd != 3 {
			t.Fatalf("items %+v", got.Items)
		}
	})
	conformanceCase(t, "chat completion replaces only the whitespace-delimited token", func(t *testing.T) {
		sess, def, _ := v.workspaceSession("chat-completion-range")
		v.completedPeer(sess, "peer", "Range Peer", "turn-range")
		text := "Compare with #chat:Range"
		got := v.chatCompletions(def, text)
		if len(got.Items) != 1 || got.Items[0].InsertText != "#chat:Range Peer " || *got.Items[0].RangeStart != len("Compare with ") || *got.Items[0].RangeEnd != len(text) {
			t.Fatalf("items %+v", got.Items)
		}
	})
	conformanceCase(t, "chat completion excludes peers without a completed turn", func(t *testing.T) {
		sess, def, _ := v.workspaceSession("chat-completion-empty")
		v.peer(sess, "empty", nil)
		completed := v.completedPeer(sess, "completed", "Completed Peer", "turn-completed")
		sameJSON(t, "resources", resourcesOf(v.chatCompletions(def, "#chat:")), []string{completed})
	})
	conformanceCase(t, "chat completion excludes the chat being edited", func(t *testing.T) {
		sess, _, _ := v.workspaceSession("chat-completion-current")
		current := v.completedPeer(sess, "current", "Current Peer", "turn-current")
		sibling := v.completedPeer(sess, "sibling", "Sibling Peer", "turn-sibling")
		sameJSON(t, "resources", resourcesOf(v.chatCompletions(current, "#chat:")), []string{sibling})
	})
	conformanceCase(t, "peer chat completion can reference the completed default chat", func(t *testing.T) {
		sess, def, _ := v.workspaceSession("chat-completion-default")
		v.driveTurn(def, "default-reference-turn", "/rename Default Reference")
		p := v.peer(sess, "peer", nil)
		want := []ahp.MessageAttachment{{Type: ahp.AttachmentChat, Resource: def, EndTurn: "default-reference-turn", Label: "Default Reference"}}
		sameJSON(t, "attachments", attachmentsOf(v.chatCompletions(p, "#chat:Default")), want)
	})
	conformanceCase(t, "chat completion sanitizes multiline titles", func(t *testing.T) {
		sess, def, _ := v.workspaceSession("chat-completion-title")
		p := v.completedPeer(sess, "peer", "Initial Title", "turn-title")
		v.rename(p, "Line One\n  Line Two")
		got := v.chatCompletions(def, "#chat:Line")
		if len(got.Items) != 1 || got.Items[0].InsertText != "#chat:Line One Line Two " || got.Items[0].Attachment.Label != "Line One Line Two" {
			t.Fatalf("items %+v", got.Items)
		}
	})
	conformanceCase(t, "first peer chat snapshots the session title onto the default chat", func(t *testing.T) {
		sess, def, _ := v.workspaceSession("default-title")
		v.rename(sess, "Original Session")
		v.peer(sess, "peer", nil)
		if got := chatTitle(sessionState(t, v.c, sess), def); got != "Original Session" {
			t.Fatalf("default chat title %q", got)
		}
	})
	conformanceCase(t, "session rename after peer creation preserves the default chat title", func(t *testing.T) {
		sess, def, _ := v.workspaceSession("independent-title")
		v.rename(sess, "Original Session")
		v.peer(sess, "peer", nil)
		v.rename(sess, "Renamed Session")
		st := sessionState(t, v.c, sess)
		if got := chatTitle(st, def); got != "Original Session" || st.Title != "Renamed Session" {
			t.Fatalf("default chat title %q, session title %q", got, st.Title)
		}
	})
	conformanceCase(t, "forking an unknown turn creates a fresh empty peer chat", func(t *testing.T) {
		// CHATS.md wins (C-CMD-06: a fork copies an existing turn): the
		// suite wants an empty chat claiming a turn it never had; ahpd
		// refuses the fork and makes no chat (docs/CONFORMANCE.md).
		sess, def, _ := v.workspaceSession("unknown-fork")
		before := len(sessionState(t, v.c, sess).Chats)
		_, err := v.c.Call("createChat", map[string]any{"channel": sess, "chat": "ahp-chat:/" + uuid.NewString(),
			"source": map[string]any{"kind": "fork", "chat": def, "turnId": "missing-turn"}})
		if err == nil || err.Code != ahp.CodeInvalidParams {
			t.Fatalf("a fork of an unknown turn: %v, want -32602", err)
		}
		if after := len(sessionState(t, v.c, sess).Chats); after != before {
			t.Fatalf("a refused fork changed the session's chats: %d, then %d", before, after)
		}
	})
	conformanceCase(t, "peer rename command updates the peer title and records a local turn", func(t *testing.T) {
		sess, _, _ := v.workspaceSession("local-rename")
		p := v.peer(sess, "peer", nil)
		v.driveTurn(p, "peer-rename", "/rename Renamed Peer")
		st := chatOf(t, v.c, p)
		if st.Title != "Renamed Peer" || len(st.Turns) != 1 || st.Turns[0].Message.Text != "/rename Renamed Peer" {
			t.Fatalf("title %q, turns %+v", st.Title, st.Turns)
		}
	})
	conformanceCase(t, "empty peer rename command leaves the peer title unchanged", func(t *testing.T) {
		sess, _, _ := v.workspaceSession("local-empty-rename")
		p := v.peer(sess, "peer", nil)
		v.rename(p, "Original Peer")
		v.driveTurn(p, "peer-empty-rename", "/rename")
		if st := chatOf(t, v.c, p); st.Title != "Original Peer" {
			t.Fatalf("title %q", st.Title)
		}
	})
}

func intp(i int) *int { return &i }

func insertTexts(r ahp.CompletionsResult) []string {
	out := []string{}
	for _, it := range r.Items {
		out = append(out, it.InsertText)
	}
	return out
}

func attachmentsOf(r ahp.CompletionsResult) []ahp.MessageAttachment {
	out := []ahp.MessageAttachment{}
	for _, it := range r.Items {
		out = append(out, it.Attachment)
	}
	return out
}

func resourcesOf(r ahp.CompletionsResult) []string {
	out := []string{}
	for _, it := range r.Items {
		out = append(out, it.Attachment.Resource)
	}
	return out
}

func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("%s = %s, want %s", what, g, w)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
