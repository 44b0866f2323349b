package daemon_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// TestVSCodeDialect: a VS Code window names sessions <provider>:/<uuid>,
// computes the default chat as ahp-chat://default/<base64url(session)>,
// offers 0.10.0 and pushes root/configChanged with clientSeq 0; the host
// publishes exactly that URI as the default chat (C-FIRST-01, 03, 05, 06,
// 08): the session's defaultChat names the chat a client means when it
// names none (C-CHAT-08).
func TestVSCodeDialect(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	vs := ahptest.Dial(t, e.d.URL(), e.cfg.ConnectionToken)
	vs.ID = "vscode"
	raw := vs.MustCall("initialize", map[string]any{"channel": "ahp-root:", "protocolVersions": []string{"0.10.0"}, "clientId": "vscode", "initialSubscriptions": []string{"ahp-root://"}})
	var init ahp.InitializeResult
	if err := json.Unmarshal(raw, &init); err != nil {
		t.Fatal(err)
	}
	if init.ProtocolVersion != "0.10.0" || len(init.Snapshots) != 1 || init.TerminalCommandPrefix != "!" || init.DefaultDirectory == "" {
		t.Fatalf("initialize: %s", raw)
	}
	vs.Notify("dispatchAction", map[string]any{"channel": "ahp-root://", "clientSeq": 0, "action": map[string]any{"type": "root/configChanged", "config": map[string]any{"telemetryLevel": "off"}}})
	vs.MustCall("ping", map[string]any{"channel": "ahp-root://"})

	sess := "script:/0c0c0c0c-0000-4000-8000-000000000001"
	def := ahp.DefaultChatURI(sess)
	vs.MustCall("createSession", map[string]any{"channel": sess, "provider": "script"})
	// VS Code subscribes to the URI it computed, without reading the catalogue.
	cs := chatOf(t, vs, def)
	if cs.Resource != def {
		t.Fatalf("chat resource = %s, want %s", cs.Resource, def)
	}
	st := sessionState(t, vs, sess)
	if st.DefaultChat != def || len(st.Chats) != 1 || st.Chats[0].Resource != def {
		t.Fatalf("session names the chat %s / %+v, want %s", st.DefaultChat, st.Chats, def)
	}
	sendTurn(t, vs, def, "t1", "hello from VS Code")

	// Another client gets an opaque first chat; the derived URI of its
	// session is no chat (C-FIRST-02, 07, reading 4).
	other := e.client("cli")
	osess, odef := e.createSession(other, "ahp-session:/0c0c0c0c-0000-4000-8000-000000000002")
	if p, err := ahp.ParseChatURI(odef); err != nil || p.Kind != ahp.ChatURIOpaque {
		t.Fatalf("first chat of an ahp-session: session = %s", odef)
	}
	if _, err := other.Call("subscribe", map[string]any{"channel": ahp.DefaultChatURI(osess)}); err == nil || err.Code != ahp.CodeSessionNotFound || err.Message != "Resource not found: "+ahp.DefaultChatURI(osess) {
		t.Fatalf("derived URI of a session with an opaque default: %v", err)
	}
	// C-FIRST-16: ahp-chat:/<session id> is not the session's chat.
	id, _ := ahp.SessionID(osess)
	if _, err := other.Call("subscribe", map[string]any{"channel": "ahp-chat:/" + id}); err == nil || err.Code != ahp.CodeSessionNotFound {
		t.Fatalf("ahp-chat:/<session id>: %v", err)
	}
}

// TestOlderClientVersions: a 0.9.0 client is answered 0.9.0 and its
// summaries carry no 1.0 fields (chats, defaultChat).
func TestOlderClientVersions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	old := ahptest.Dial(t, e.d.URL(), e.cfg.ConnectionToken)
	raw := old.MustCall("initialize", map[string]any{"channel": ahp.RootURI, "protocolVersions": []string{"0.9.0"}, "clientId": "old"})
	var init ahp.InitializeResult
	if err := json.Unmarshal(raw, &init); err != nil || init.ProtocolVersion != "0.9.0" {
		t.Fatalf("0.9.0 offer: %s", raw)
	}
	old.MustCall("createSession", map[string]any{"channel": "ahp-session:/01d01d01-0000-4000-8000-000000000001"})
	var list struct {
		Items []map[string]json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(old.MustCall("listSessions", map[string]any{"channel": ahp.RootURI}), &list); err != nil || len(list.Items) != 1 {
		t.Fatal(err)
	}
	if _, ok := list.Items[0]["chats"]; ok {
		t.Fatalf("0.9.0 client got summary chats: %v", list.Items[0])
	}
	for _, offer := range [][]string{{"1.1.0", "1.0.0"}, {"1.0.0"}} {
		c := ahptest.Dial(t, e.d.URL(), e.cfg.ConnectionToken)
		raw := c.MustCall("initialize", map[string]any{"channel": ahp.RootURI, "protocolVersions": offer, "clientId": "n"})
		if err := json.Unmarshal(raw, &init); err != nil || init.ProtocolVersion != "1.0.0" {
			t.Fatalf("offer %v answered %s", offer, raw)
		}
	}
}

// TestOlderClientNotifications: root notifications to a 0.9.0 client carry
// no SessionSummary.chats or defaultChat; a 1.0.0 client gets them.
func TestOlderClientNotifications(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	old := ahptest.Dial(t, e.d.URL(), e.cfg.ConnectionToken)
	old.MustCall("initialize", map[string]any{"channel": ahp.RootURI, "protocolVersions": []string{"0.9.0"}, "clientId": "old", "initialSubscriptions": []string{ahp.RootURI}})
	cur := e.client("new")
	cur.MustCall("createSession", map[string]any{"channel": "ahp-session:/01d01d01-0000-4000-8000-000000000002"})
	for _, c := range []struct {
		cl   *ahptest.Client
		want bool
	}{{old, false}, {cur, true}} {
		n := c.cl.AwaitNotification("root/sessionAdded")
		var p struct {
			Summary map[string]json.RawMessage `json:"summary"`
		}
		if err := json.Unmarshal(n.Params, &p); err != nil {
			t.Fatal(err)
		}
		_, has := p.Summary["chats"]
		if has != c.want {
			t.Fatalf("client %s: summary chats present = %v, want %v", c.cl.ID, has, c.want)
		}
	}
}

// TestSessionFromCatalogue: a VS Code window names the derived default chat
// of a session this host never registered; the backend's catalogue holds a
// conversation under that id, so the host registers the session and serves
// its chat on that conversation (C-FIRST-08, 09). An id no catalogue holds
// stays no chat (C-FIRST-10).
func TestSessionFromCatalogue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := "cafe0000-0000-4000-8000-000000000001"
	conv, err := e.script.Open(context.Background(), agent.OpenParams{Mode: agent.OpenNew, ConversationID: id, Directories: []string{e.workDir}})
	if err != nil {
		t.Fatal(err)
	}
	if err := conv.Send(context.Background(), agent.Turn{ID: "outside-1", Text: "written outside the daemon"}); err != nil {
		t.Fatal(err)
	}
	for ev := range conv.Events() {
		if ev.Kind == agent.EventTurnEnd {
			break
		}
	}
	conv.Close()

	vs := e.client("vscode")
	sess := "script:/" + id
	def := ahp.DefaultChatURI(sess)
	cs := chatOf(t, vs, def)
	if cs.Resource != def {
		t.Fatalf("catalogue chat resource %s", cs.Resource)
	}
	st := sessionState(t, vs, sess)
	if st.DefaultChat != def || st.Title != "written outside the daemon" {
		t.Fatalf("catalogue session: default %s title %q", st.DefaultChat, st.Title)
	}
	vs.AwaitNotification("root/sessionAdded")
	sendTurn(t, vs, def, "t2", "and continued inside")
	if got := strings.Join(e.script.History(id), "|"); got != "written outside the daemon|and continued inside" {
		t.Fatalf("the chat did not resume the catalogue's conversation: %q", got)
	}
	if _, err := vs.Call("subscribe", map[string]any{"channel": ahp.DefaultChatURI("script:/cafe0000-0000-4000-8000-0000000000ff")}); err == nil || err.Code != ahp.CodeSessionNotFound {
		t.Fatalf("an id no catalogue holds: %v", err)
	}
}
