package daemon_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// Trust-boundary holes, each a regression test: a reconnect replays only
// what the token may read; listing and reading sessions need their grants;
// odd session ids are refused; a view of zero turns is answered and a
// negative one refused, with the connection kept.
func TestTrustBoundaryHoles(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *daemon.Config) {
		c.Tokens = []daemon.TokenConfig{{Token: "draft-token", Principal: "user:drafter", Grants: []string{"chat:draft"}}}
	})
	root := e.client("root")
	sess, chat := e.createSession(root, "ahp-session:/7e57e57e-0000-4000-8000-000000000001")
	root.Subscribe(chat)
	sendTurn(t, root, chat, "t1", "secret answer")

	d := ahptest.Dial(t, e.d.URL(), "draft-token")
	d.Initialize("drafter")

	t.Run("reconnect replays no chat without chat:turns", func(t *testing.T) {
		raw, rerr := d.Call("reconnect", map[string]any{"channel": ahp.RootURI, "clientId": "drafter", "lastSeenServerSeq": 0, "subscriptions": []string{ahp.RootURI, sess, chat}})
		if rerr != nil {
			t.Fatalf("reconnect: %+v", rerr)
		}
		if strings.Contains(string(raw), "secret answer") {
			t.Fatalf("reconnect handed a chat:draft token the chat: %s", raw)
		}
		var res struct{ Missing []string }
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(res.Missing, " "), chat) || !strings.Contains(strings.Join(res.Missing, " "), sess) {
			t.Fatalf("missing %v, want the chat and the session", res.Missing)
		}
		if strings.Contains(strings.Join(res.Missing, " "), ahp.RootURI) {
			t.Fatalf("missing %v names the root, which every connection may read", res.Missing)
		}
	})
	t.Run("listSessions needs session:list", func(t *testing.T) {
		if _, rerr := d.Call("listSessions", map[string]any{}); rerr == nil || rerr.Code != ahp.CodePermissionDenied {
			t.Fatalf("listSessions: %+v, want permission denied", rerr)
		}
		root.MustCall("listSessions", map[string]any{})
	})
	t.Run("root notifications about sessions need session:list", func(t *testing.T) {
		d.Subscribe(ahp.RootURI)
		root.Subscribe(ahp.RootURI)
		other := "ahp-session:/7e57e57e-0000-4000-8000-000000000002"
		root.MustCall("createSession", map[string]any{"channel": other, "provider": "script"})
		root.AwaitNotificationWhere("root/sessionAdded", func(p json.RawMessage) bool { return strings.Contains(string(p), other) })
		root.Dispatch(other, map[string]any{"type": "session/titleChanged", "title": "secret plans"})
		root.AwaitNotificationWhere("root/sessionSummaryChanged", func(p json.RawMessage) bool { return strings.Contains(string(p), "secret plans") })
		root.MustCall("disposeSession", map[string]any{"channel": other})
		root.AwaitNotificationWhere("root/sessionRemoved", func(p json.RawMessage) bool { return strings.Contains(string(p), other) })
		// Anything sent to d before root heard the removal is ahead of this
		// reply on d's ordered connection.
		d.MustCall("ping", map[string]any{"channel": ahp.RootURI})
		for _, f := range d.Frames() {
			if strings.HasPrefix(f.Method, "root/session") {
				t.Fatalf("a token without session:list heard %s", f.Raw)
			}
		}
	})
	t.Run("every client-dispatchable session and root action checks its grant", func(t *testing.T) {
		for _, tc := range []struct {
			channel string
			action  map[string]any
			grant   string
		}{
			{ahp.RootURI, map[string]any{"type": "root/configChanged", "config": map[string]any{}}, "root:configure"},
			{sess, map[string]any{"type": "session/activeClientSet", "activeClient": map[string]any{"clientId": "drafter"}}, "session:state"},
			{sess, map[string]any{"type": "session/customizationToggled", "uri": "file:///x", "enabled": true}, "session:configure"},
			{sess, map[string]any{"type": "session/mcpServerStartRequested", "serverId": "x"}, "session:configure"},
		} {
			env := d.AwaitEcho(d.Dispatch(tc.channel, tc.action))
			if !strings.Contains(env.RejectionReason, tc.grant) {
				t.Errorf("%s by a chat:draft token: %s, want a refusal naming %s", tc.action["type"], env.Raw, tc.grant)
			}
		}
	})
	t.Run("subscribe to a session needs session:state", func(t *testing.T) {
		if _, rerr := d.Call("subscribe", map[string]any{"channel": sess}); rerr == nil || rerr.Code != ahp.CodePermissionDenied {
			t.Fatalf("subscribe session: %+v, want permission denied", rerr)
		}
	})
	t.Run("odd session ids", func(t *testing.T) {
		for _, id := range []string{".", "..", "..."} {
			if _, rerr := root.Call("createSession", map[string]any{"channel": "ahp-session:/" + id, "provider": "script"}); rerr == nil || rerr.Code != ahp.CodeInvalidParams {
				t.Errorf("session id %q: %+v, want -32602", id, rerr)
			}
		}
	})
	t.Run("view of zero turns and a negative view", func(t *testing.T) {
		raw := root.MustCall("subscribe", map[string]any{"channel": chat, "view": map[string]any{"turns": 0}})
		var res struct {
			Snapshot struct {
				State ahp.ChatState `json:"state"`
			} `json:"snapshot"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		snap := res.Snapshot
		if len(snap.State.Turns) != 0 || snap.State.TurnsNextCursor == nil {
			t.Fatalf("view 0: %s, want no turns and a cursor", raw)
		}
		root.MustCall("fetchTurns", map[string]any{"channel": chat, "cursor": *snap.State.TurnsNextCursor})
		if _, rerr := root.Call("subscribe", map[string]any{"channel": chat, "view": map[string]any{"turns": -1}}); rerr == nil || rerr.Code != ahp.CodeInvalidParams {
			t.Fatalf("view -1: %+v, want -32602", rerr)
		}
		// The connection and the chat are still up.
		sendTurn(t, root, chat, "t2", "after")
	})
}

// A ! command runs a shell with the daemon's rights: chat:send is not
// enough. Another user's token is refused in root's session, naming who
// may; the session's own owner may run one.
func TestBangCommandOnlyForOwnerOrRoot(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *daemon.Config) {
		c.Tokens = []daemon.TokenConfig{{Token: "bob-token", Principal: "user:bob", Grants: []string{"*"}}}
	})
	root := e.client("root")
	_, chat := e.createSession(root, "ahp-session:/7e57e57e-0000-4000-8000-000000000002")
	root.Subscribe(chat)
	bob := ahptest.Dial(t, e.d.URL(), "bob-token")
	bob.Initialize("bob", ahp.RootURI)
	bob.Subscribe(chat)
	seq := bob.Dispatch(chat, turnStarted("t1", "!id"))
	echo := bob.AwaitEcho(seq)
	if echo.RejectionReason == "" || !strings.Contains(echo.RejectionReason, "owner or root") {
		t.Fatalf("bob's ! command: %s, want a refusal naming owner or root", echo.Raw)
	}
	// A plain message from bob still runs.
	if end := sendTurn(t, bob, chat, "t2", "hello"); end.Type() != "chat/turnComplete" {
		t.Fatalf("bob's message ended %s", end.Type())
	}
	// In bob's own session, bob is the owner.
	_, own := e.createSession(bob, "ahp-session:/7e57e57e-0000-4000-8000-000000000003")
	bob.Subscribe(own)
	if end := sendTurn(t, bob, own, "t1", "!echo hi"); end.Type() != "chat/turnComplete" {
		t.Fatalf("the owner's ! command ended %s: %s", end.Type(), end.Raw)
	}
	if end := sendTurn(t, root, chat, "t3", "!echo root"); end.Type() != "chat/turnComplete" {
		t.Fatalf("root's ! command ended %s", end.Type())
	}
}

// createSession takes only existing directories inside the served paths:
// /, a nonexistent path, a path out through .. and a symlink out are each
// refused, and a folder inside is taken.
func TestSessionDirectoriesConfinedToServedPaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	root := e.client("root")
	outside := t.TempDir()
	link := filepath.Join(e.workDir, "out")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(e.workDir, "sub")
	if err := os.Mkdir(inside, 0o700); err != nil {
		t.Fatal(err)
	}
	for i, dir := range []string{"/", outside, filepath.Join(e.workDir, "missing"), e.workDir + "/../" + filepath.Base(outside), link} {
		uri := fmt.Sprintf("ahp-session:/7e57e57e-0000-4000-8000-0000000001%02d", i)
		if _, rerr := root.Call("createSession", map[string]any{"channel": uri, "provider": "script", "workingDirectories": []string{ahp.FileURI(dir)}}); rerr == nil {
			t.Errorf("working directory %s was accepted", dir)
		}
	}
	root.MustCall("createSession", map[string]any{"channel": "ahp-session:/7e57e57e-0000-4000-8000-000000000199", "provider": "script", "workingDirectories": []string{ahp.FileURI(inside)}})
}

// session/workingDirectorySet takes only an existing directory inside the
// served paths.
func TestSessionDirectorySetConfinedToServedPaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	root := e.client("root")
	sess, _ := e.createSession(root, "ahp-session:/7e57e57e-0000-4000-8000-000000000201")
	inside := filepath.Join(e.workDir, "sub")
	if err := os.Mkdir(inside, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"/", t.TempDir(), filepath.Join(e.workDir, "missing")} {
		seq := root.Dispatch(sess, map[string]any{"type": "session/workingDirectorySet", "directory": ahp.FileURI(dir)})
		if echo := root.AwaitEcho(seq); echo.RejectionReason == "" {
			t.Errorf("directory %s was taken: %s", dir, echo.Raw)
		}
	}
	seq := root.Dispatch(sess, map[string]any{"type": "session/workingDirectorySet", "directory": ahp.FileURI(inside)})
	if echo := root.AwaitEcho(seq); echo.RejectionReason != "" {
		t.Fatalf("a served directory was refused: %s", echo.RejectionReason)
	}
}

// TestSessionDirectoryReplacedConfinedToServedPaths: a replacement is a
// directory the session takes on, refused outside the served paths or when
// missing, as a set is; a served one is taken.
func TestSessionDirectoryReplacedConfinedToServedPaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	root := e.client("root")
	sess, _ := e.createSession(root, "ahp-session:/7e57e57e-0000-4000-8000-000000000202")
	first := sessionState(t, root, sess).WorkingDirectories[0]
	inside := filepath.Join(e.workDir, "sub")
	if err := os.Mkdir(inside, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"/", t.TempDir(), filepath.Join(e.workDir, "missing")} {
		seq := root.Dispatch(sess, map[string]any{"type": "session/workingDirectoryReplaced", "directory": first, "replacement": ahp.FileURI(dir)})
		if echo := root.AwaitEcho(seq); echo.RejectionReason == "" {
			t.Errorf("replacement %s was taken: %s", dir, echo.Raw)
		}
	}
	seq := root.Dispatch(sess, map[string]any{"type": "session/workingDirectoryReplaced", "directory": first, "replacement": ahp.FileURI(inside)})
	if echo := root.AwaitEcho(seq); echo.RejectionReason != "" {
		t.Fatalf("a served replacement was refused: %s", echo.RejectionReason)
	}
	if got := sessionState(t, root, sess).WorkingDirectories[0]; got != ahp.FileURI(inside) {
		t.Fatalf("first directory %s after the replacement, want %s", got, ahp.FileURI(inside))
	}
}
