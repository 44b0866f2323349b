package daemon_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// TestVSCodeStateOperations ports stateOperationsSuite's cases that need no
// terminal (25 of its 45; the other 20 are TestVSCodeStateOperationsTerminals),
// read from the newest stored version (index id 57711248623: conformanceTest,
// terminal lifecycle and chat-scoped claims; the index names no commit for
// it, and the one version it names, 0df9cb21, is the older hostOnlyTest one
// of 25 cases). Each dispatch waits for its echo, as the suite's
// dispatchAndWait does, and then reads the state back through a fresh
// subscribe.
func TestVSCodeStateOperations(t *testing.T) {
	t.Parallel()
	v := newVSCodeEnv(t)
	dispatch := func(t *testing.T, channel string, action map[string]any) {
		t.Helper()
		v.c.Subscribe(channel)
		v.c.AwaitEcho(v.c.Dispatch(channel, action))
	}
	sessionState := func(t *testing.T, uri string) map[string]any {
		t.Helper()
		raw, _ := v.c.Subscribe(uri)
		var s map[string]any
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	status := func(t *testing.T, uri string) int {
		t.Helper()
		f, _ := sessionState(t, uri)["status"].(float64)
		return int(f)
	}
	configValues := func(t *testing.T, uri string) map[string]any {
		t.Helper()
		cfg, ok := sessionState(t, uri)["config"].(map[string]any)
		if !ok {
			t.Fatalf("session %s has no config", uri)
		}
		values, _ := cfg["values"].(map[string]any)
		return values
	}
	activeClients := func(t *testing.T, uri string) []any {
		t.Helper()
		list, _ := sessionState(t, uri)["activeClients"].([]any)
		return list
	}
	chat := func(t *testing.T, uri string) map[string]any {
		t.Helper()
		raw, _ := v.c.Subscribe(uri)
		var s map[string]any
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	same := func(t *testing.T, what string, got, want any) {
		t.Helper()
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		var gv, wv any
		_ = json.Unmarshal(g, &gv)
		_ = json.Unmarshal(w, &wv)
		if !reflect.DeepEqual(gv, wv) {
			t.Fatalf("%s = %s, want %s", what, g, w)
		}
	}
	activeClient := func(id, name string, tools ...map[string]any) map[string]any {
		if tools == nil {
			tools = []map[string]any{}
		}
		return map[string]any{"type": "session/activeClientSet", "activeClient": map[string]any{"clientId": id, "displayName": name, "tools": tools}}
	}

	conformanceCase(t, "client title change updates session state", func(t *testing.T) {
		sess, _ := v.session()
		dispatch(t, sess, map[string]any{"type": "session/titleChanged", "title": "Direct AHP Title"})
		same(t, "title", sessionState(t, sess)["title"], "Direct AHP Title")
	})
	conformanceCase(t, "marking a session read sets the read status flag", func(t *testing.T) {
		sess, _ := v.session()
		dispatch(t, sess, map[string]any{"type": "session/isReadChanged", "isRead": true})
		if status(t, sess)&int(ahp.StatusIsRead) == 0 {
			t.Fatal("read flag not set")
		}
	})
	conformanceCase(t, "marking a session unread clears the read status flag", func(t *testing.T) {
		sess, _ := v.session()
		dispatch(t, sess, map[string]any{"type": "session/isReadChanged", "isRead": true})
		dispatch(t, sess, map[string]any{"type": "session/isReadChanged", "isRead": false})
		if status(t, sess)&int(ahp.StatusIsRead) != 0 {
			t.Fatal("read flag still set")
		}
	})
	conformanceCase(t, "archiving a session sets the archived status flag", func(t *testing.T) {
		sess, _ := v.session()
		dispatch(t, sess, map[string]any{"type": "session/isArchivedChanged", "isArchived": true})
		if status(t, sess)&int(ahp.StatusIsArchived) == 0 {
			t.Fatal("archived flag not set")
		}
	})
	conformanceCase(t, "unarchiving a session clears the archived status flag", func(t *testing.T) {
		sess, _ := v.session()
		dispatch(t, sess, map[string]any{"type": "session/isArchivedChanged", "isArchived": true})
		dispatch(t, sess, map[string]any{"type": "session/isArchivedChanged", "isArchived": false})
		if status(t, sess)&int(ahp.StatusIsArchived) != 0 {
			t.Fatal("archived flag still set")
		}
	})
	conformanceCase(t, "session read and archived flags compose independently", func(t *testing.T) {
		sess, _ := v.session()
		dispatch(t, sess, map[string]any{"type": "session/isReadChanged", "isRead": true})
		dispatch(t, sess, map[string]any{"type": "session/isArchivedChanged", "isArchived": true})
		st := status(t, sess)
		if st&int(ahp.StatusIsRead) == 0 || st&int(ahp.StatusIsArchived) == 0 {
			t.Fatalf("status %b", st)
		}
	})
	conformanceCase(t, "session config changes merge with existing values", func(t *testing.T) {
		sess, _ := v.session()
		before := configValues(t, sess)
		dispatch(t, sess, map[string]any{"type": "session/configChanged", "config": map[string]any{"autoApprove": "assisted"}})
		want := map[string]any{}
		for k, val := range before {
			want[k] = val
		}
		want["autoApprove"] = "assisted"
		same(t, "config.values", configValues(t, sess), want)
	})
	conformanceCase(t, "session config replacement drops previous values", func(t *testing.T) {
		sess, _ := v.session()
		dispatch(t, sess, map[string]any{"type": "session/configChanged", "config": map[string]any{"autoApprove": "default"}, "replace": true})
		same(t, "config.values", configValues(t, sess), map[string]any{"autoApprove": "default"})
	})
	conformanceCase(t, "empty session config replacement clears previous values", func(t *testing.T) {
		sess, _ := v.session()
		dispatch(t, sess, map[string]any{"type": "session/configChanged", "config": map[string]any{"autoApprove": "assisted"}})
		dispatch(t, sess, map[string]any{"type": "session/configChanged", "config": map[string]any{}, "replace": true})
		same(t, "config.values", configValues(t, sess), map[string]any{})
	})
	conformanceCase(t, "active client set adds a session participant", func(t *testing.T) {
		sess, _ := v.session()
		dispatch(t, sess, activeClient("vscode-suite", "Coverage Client"))
		same(t, "activeClients", activeClients(t, sess), []any{map[string]any{"clientId": "vscode-suite", "displayName": "Coverage Client", "tools": []any{}}})
	})
	conformanceCase(t, "active client tools retain their protocol schemas", func(t *testing.T) {
		sess, _ := v.session()
		tool := map[string]any{
			"name":        "coverage_echo",
			"description": "Echoes a value",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"value": map[string]any{"type": "string"}}, "required": []any{"value"}},
		}
		dispatch(t, sess, activeClient("vscode-suite", "Tool Client", tool))
		same(t, "activeClients", activeClients(t, sess), []any{map[string]any{"clientId": "vscode-suite", "displayName": "Tool Client", "tools": []any{tool}}})
	})
	conformanceCase(t, "active client set replaces an existing participant", func(t *testing.T) {
		sess, _ := v.session()
		dispatch(t, sess, activeClient("vscode-suite", "Before"))
		dispatch(t, sess, activeClient("vscode-suite", "After"))
		var names []any
		for _, c := range activeClients(t, sess) {
			names = append(names, c.(map[string]any)["displayName"])
		}
		same(t, "displayNames", names, []any{"After"})
	})
	conformanceCase(t, "two active clients remain independently addressable", func(t *testing.T) {
		sess, _ := v.session()
		dispatch(t, sess, activeClient("vscode-suite", "First"))
		dispatch(t, sess, activeClient("second-client", "Second"))
		var ids []string
		for _, c := range activeClients(t, sess) {
			ids = append(ids, c.(map[string]any)["clientId"].(string))
		}
		slices.Sort(ids)
		same(t, "clientIds", ids, []string{"second-client", "vscode-suite"})
	})
	conformanceCase(t, "removing one active client preserves its sibling", func(t *testing.T) {
		sess, _ := v.session()
		dispatch(t, sess, activeClient("vscode-suite", "First"))
		dispatch(t, sess, activeClient("second-client", "Second"))
		dispatch(t, sess, map[string]any{"type": "session/activeClientRemoved", "clientId": "vscode-suite"})
		var ids []any
		for _, c := range activeClients(t, sess) {
			ids = append(ids, c.(map[string]any)["clientId"])
		}
		same(t, "clientIds", ids, []any{"second-client"})
	})
	conformanceCase(t, "active client removal removes the session participant", func(t *testing.T) {
		sess, _ := v.session()
		dispatch(t, sess, activeClient("vscode-suite", "Coverage Client"))
		dispatch(t, sess, map[string]any{"type": "session/activeClientRemoved", "clientId": "vscode-suite"})
		same(t, "activeClients", activeClients(t, sess), []any{})
	})
	drafts := []struct {
		name  string
		draft map[string]any
	}{
		{"draft change stores a user message", map[string]any{"text": "draft text", "origin": map[string]any{"kind": "user"}}},
		{"draft change preserves resource attachments", map[string]any{"text": "review this", "origin": map[string]any{"kind": "user"},
			"attachments": []any{map[string]any{"type": "resource", "uri": ahp.FileURI(v.dir + "/draft.ts"), "label": "draft.ts", "displayKind": "document"}}}},
		{"draft change preserves the selected model", map[string]any{"text": "model draft", "origin": map[string]any{"kind": "user"}, "model": map[string]any{"id": "coverage-model"}}},
	}
	for _, tc := range drafts {
		conformanceCase(t, tc.name, func(t *testing.T) {
			_, c := v.session()
			dispatch(t, c, map[string]any{"type": "chat/draftChanged", "draft": tc.draft})
			same(t, "draft", chat(t, c)["draft"], tc.draft)
		})
	}
	conformanceCase(t, "draft change replaces the previous message", func(t *testing.T) {
		_, c := v.session()
		dispatch(t, c, map[string]any{"type": "chat/draftChanged", "draft": userMessage("before")})
		dispatch(t, c, map[string]any{"type": "chat/draftChanged", "draft": userMessage("after")})
		same(t, "draft", chat(t, c)["draft"], userMessage("after"))
	})
	conformanceCase(t, "clearing a draft removes it from chat state", func(t *testing.T) {
		_, c := v.session()
		dispatch(t, c, map[string]any{"type": "chat/draftChanged", "draft": userMessage("draft")})
		dispatch(t, c, map[string]any{"type": "chat/draftChanged"})
		if d, ok := chat(t, c)["draft"]; ok {
			t.Fatalf("draft %v left", d)
		}
	})
	conformanceCase(t, "a message queued on an idle chat is promoted straight into a turn", func(t *testing.T) {
		// /rename keeps the promoted turn in the host's own commands, as in
		// the suite: no model answers it (C-TURN-34).
		_, c := v.session()
		dispatch(t, c, map[string]any{"type": "chat/pendingMessageSet", "kind": "queued", "id": "queued-1", "message": userMessage("/rename Queue Promoted")})
		started := v.c.AwaitEnvelope("turn of queued-1", func(e ahptest.Envelope) bool {
			return e.Channel == c && e.Type() == "chat/turnStarted" && field(e, "queuedMessageId") == "queued-1"
		})
		if end := awaitEnd(t, v.c, c, turnID(started)); end.Type() != "chat/turnComplete" {
			t.Fatalf("the promoted turn ended %s", end.Raw)
		}
		if q, ok := chat(t, c)["queuedMessages"].([]any); ok && len(q) > 0 {
			t.Fatalf("queued messages left: %v", q)
		}
	})
	conformanceCase(t, "removing a missing queued message leaves chat state unchanged", func(t *testing.T) {
		_, c := v.session()
		dispatch(t, c, map[string]any{"type": "chat/pendingMessageRemoved", "kind": "queued", "id": "missing"})
		if q, ok := chat(t, c)["queuedMessages"]; ok {
			t.Fatalf("queuedMessages = %v", q)
		}
	})
	conformanceCase(t, "reordering a missing queue leaves chat state unchanged", func(t *testing.T) {
		_, c := v.session()
		dispatch(t, c, map[string]any{"type": "chat/queuedMessagesReordered", "order": []string{"missing"}})
		if q, ok := chat(t, c)["queuedMessages"]; ok {
			t.Fatalf("queuedMessages = %v", q)
		}
	})
	conformanceCase(t, "truncating at a missing turn leaves history unchanged", func(t *testing.T) {
		sess, c := v.session()
		v.completedTurn(sess, c, "turn-kept", "kept")
		before := chat(t, c)["turns"]
		dispatch(t, c, map[string]any{"type": "chat/truncated", "turnId": "missing-turn"})
		same(t, "turns", chat(t, c)["turns"], before)
	})
	conformanceCase(t, "cancelling a missing turn leaves the chat idle", func(t *testing.T) {
		_, c := v.session()
		dispatch(t, c, map[string]any{"type": "chat/turnCancelled", "turnId": "missing-turn", "duration": 0})
		st := chat(t, c)
		if _, ok := st["activeTurn"]; ok {
			t.Fatalf("activeTurn %v", st["activeTurn"])
		}
		same(t, "turns and status", map[string]any{"turns": st["turns"], "status": st["status"]}, map[string]any{"turns": []any{}, "status": ahp.StatusIdle})
	})
}
