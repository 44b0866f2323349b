package daemon_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// Ports of VS Code's own host conformance suite (microsoft/vscode,
// src/vs/platform/agentHost/test/node/e2e/suites): each subtest carries the
// name of the conformanceTest it ports, written in our own words against
// the daemon on port 0 with the script agent standing in for the model.
// docs/CONFORMANCE.md lists every case: passed, or not applicable and why.

// vscodeEnv is one daemon for a suite, and a client named after it.
type vscodeEnv struct {
	*testEnv
	c   *ahptest.Client
	dir string
}

func newVSCodeEnv(t *testing.T) *vscodeEnv {
	e := newEnv(t)
	return &vscodeEnv{testEnv: e, c: e.client("vscode-suite"), dir: e.workDir}
}

// fresh is a connection that has not initialized.
func (v *vscodeEnv) fresh() *ahptest.Client {
	return ahptest.Dial(v.t, v.d.URL(), v.cfg.ConnectionToken)
}

var vscodeSession = 0

// session creates a session in the served directory and returns it and
// its default chat.
func (v *vscodeEnv) session() (string, string) {
	vscodeSession++
	return v.createSession(v.c, fmt.Sprintf("ahp-session:/5c0de000-0000-4000-8000-%012d", vscodeSession))
}

// completedTurn runs one turn on the session (meaning its default chat).
func (v *vscodeEnv) completedTurn(session, chat, id, text string) {
	v.t.Helper()
	v.c.Subscribe(chat)
	v.c.Dispatch(session, turnStarted(id, text))
	awaitEnd(v.t, v.c, chat, id)
}

func wantCode(t *testing.T, err *ahptest.RPCError, code int, contains string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %d", code)
	}
	if err.Code != code {
		t.Fatalf("error %d %q, want %d", err.Code, err.Message, code)
	}
	if contains != "" && !strings.Contains(strings.ToLower(err.Message), strings.ToLower(contains)) {
		t.Fatalf("error %q does not say %q", err.Message, contains)
	}
}

// TestVSCodeProtocolLifecycle ports protocolLifecycleSuite.
func TestVSCodeProtocolLifecycle(t *testing.T) {
	v := newVSCodeEnv(t)
	t.Run("ping succeeds before initialize", func(t *testing.T) {
		c := v.fresh()
		defer c.Close()
		res, err := c.Call("ping", nil)
		if err != nil || string(res) != "null" {
			t.Fatalf("ping = %s, %v", res, err)
		}
	})
	t.Run("fetchTurns rejects an unknown chat", func(t *testing.T) {
		// CHATS.md wins over the suite's text: an unknown chat is "Resource
		// not found: <chat>" (C-FIRST-10); the suite matches "session not
		// found". The code is the same -32001.
		_, err := v.c.Call("fetchTurns", map[string]any{"channel": "ahp-chat:/missing-session/missing-chat"})
		wantCode(t, err, ahp.ErrResourceNotFound.Code, "not found")
	})
	t.Run("fetchTurns rejects an unrecognized cursor", func(t *testing.T) {
		_, chat := v.session()
		_, err := v.c.Call("fetchTurns", map[string]any{"channel": chat, "cursor": "unknown-cursor"})
		wantCode(t, err, ahp.ErrInvalidParams.Code, "unrecognized fetchTurns cursor")
	})
}

// TestVSCodeProtocolContracts ports protocolContractsSuite.
func TestVSCodeProtocolContracts(t *testing.T) {
	v := newVSCodeEnv(t)
	t.Run("ping answers while the connection is live", func(t *testing.T) {
		v.c.MustCall("ping", map[string]any{"channel": ahp.RootURI})
	})
	t.Run("ping answers before the client initializes", func(t *testing.T) {
		c := v.fresh()
		defer c.Close()
		res, err := c.Call("ping", map[string]any{"channel": ahp.RootURI})
		if err != nil || string(res) != "null" {
			t.Fatalf("ping = %s, %v", res, err)
		}
	})
	for name, versions := range map[string][]string{
		"initialize rejects incompatible protocol versions": {"999.0.0"},
		"initialize rejects an empty protocol version list": {},
	} {
		t.Run(name, func(t *testing.T) {
			c := v.fresh()
			defer c.Close()
			_, err := c.Call("initialize", map[string]any{"channel": ahp.RootURI, "protocolVersions": versions, "clientId": "versions"})
			wantCode(t, err, ahp.ErrUnsupportedProtocolVersion.Code, "")
		})
	}
	t.Run("initialize without subscriptions returns no snapshots", func(t *testing.T) {
		c := v.fresh()
		defer c.Close()
		res := c.MustCall("initialize", map[string]any{"channel": ahp.RootURI, "protocolVersions": []string{"1.0.0"}, "clientId": "no-subs"})
		var r struct {
			Snapshots json.RawMessage `json:"snapshots"`
		}
		if err := json.Unmarshal(res, &r); err != nil || string(r.Snapshots) != "[]" {
			t.Fatalf("snapshots = %s (%v)", r.Snapshots, err)
		}
	})
	t.Run("listSessions includes provider-backed session metadata", func(t *testing.T) {
		sess, chat := v.session()
		v.completedTurn(sess, chat, "turn-list-session-metadata", "/rename Listed Session")
		item := listedSession(t, v.c, sess)
		if item.Provider != "script" || item.Title == "" || item.CreatedAt == "" || item.ModifiedAt == "" {
			t.Fatalf("listed %+v", item)
		}
		if want := []string{ahp.FileURI(v.dir)}; !slices.Equal(item.WorkingDirectories, want) {
			t.Fatalf("workingDirectories %v, want %v", item.WorkingDirectories, want)
		}
	})
	t.Run("listSessions reflects live title and status changes", func(t *testing.T) {
		// "/rename" is answered by the host itself, as VS Code's host does.
		sess, chat := v.session()
		v.completedTurn(sess, chat, "turn-list-session-live-state", "/rename Catalog Title")
		for _, a := range []map[string]any{
			{"type": "session/isReadChanged", "isRead": true},
			{"type": "session/isArchivedChanged", "isArchived": true},
		} {
			v.c.Subscribe(sess)
			if env := v.c.AwaitEcho(v.c.Dispatch(sess, a)); env.RejectionReason != "" {
				t.Fatalf("%v refused: %s", a["type"], env.RejectionReason)
			}
		}
		item := listedSession(t, v.c, sess)
		if item.Title != "Catalog Title" || item.Status&ahp.StatusIsRead == 0 || item.Status&ahp.StatusIsArchived == 0 {
			t.Fatalf("listed %+v", item)
		}
	})
	t.Run("disposing a session removes it from listSessions", func(t *testing.T) {
		sess, chat := v.session()
		v.completedTurn(sess, chat, "turn-list-session-dispose", "/rename Disposable Session")
		listedSession(t, v.c, sess)
		v.c.MustCall("disposeSession", map[string]any{"channel": sess})
		if sessionListed(t, v.c, sess) {
			t.Fatal("disposed session still listed")
		}
	})
	t.Run("fetchTurns currently emits an empty loaded-turns page", func(t *testing.T) {
		sess, chat := v.session()
		v.completedTurn(sess, chat, "turn-fetch", "/rename Fetch Turns")
		// A subscribe that named no view holds every turn: nothing is
		// older, so the page is empty (CHATS.md "fetchTurns", C-CMD-12).
		res := v.c.MustCall("fetchTurns", map[string]any{"channel": chat})
		if string(res) != "{}" {
			t.Fatalf("fetchTurns answered %s", res)
		}
		env := v.c.AwaitAction(chat, "chat/turnsLoaded")
		var a struct {
			Turns json.RawMessage `json:"turns"`
		}
		if err := json.Unmarshal(env.Action, &a); err != nil || string(a.Turns) != "[]" {
			t.Fatalf("turnsLoaded %s", env.Action)
		}
	})
	t.Run("fetchTurns rejects a cursor the host did not issue", func(t *testing.T) {
		_, chat := v.session()
		v.c.Subscribe(chat)
		_, err := v.c.Call("fetchTurns", map[string]any{"channel": chat, "cursor": "not-a-host-cursor"})
		wantCode(t, err, ahp.ErrInvalidParams.Code, "")
	})
	t.Run("fetchTurns rejects an unknown chat channel", func(t *testing.T) {
		sess, _ := v.session()
		_, err := v.c.Call("fetchTurns", map[string]any{"channel": ahp.DerivedChatURI(sess, "missing")})
		if err == nil {
			t.Fatal("fetchTurns of an unknown chat answered")
		}
	})
	t.Run("initialize returns snapshots for initial subscriptions", func(t *testing.T) {
		sess, chat := v.session()
		c := v.fresh()
		defer c.Close()
		res := c.MustCall("initialize", map[string]any{"channel": ahp.RootURI, "protocolVersions": []string{"1.0.0"}, "clientId": "initial-subs",
			"initialSubscriptions": []string{sess, chat}})
		var r ahp.InitializeResult
		if err := json.Unmarshal(res, &r); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range r.Snapshots {
			got = append(got, s.Resource)
		}
		slices.Sort(got)
		want := []string{sess, chat}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("snapshots of %v, want %v", got, want)
		}
	})
	t.Run("reconnect replays only the actions a dropped client missed", func(t *testing.T) {
		_, chat := v.session()
		first := v.fresh()
		first.Initialize("reconnect-dropped")
		_, seen := first.Subscribe(chat)
		first.Close()
		v.c.Subscribe(chat)
		v.c.AwaitEcho(v.c.Dispatch(chat, map[string]any{"type": "chat/draftChanged", "draft": userMessage("missed while disconnected")}))
		revived := v.fresh()
		defer revived.Close()
		res := revived.MustCall("reconnect", map[string]any{"channel": ahp.RootURI, "clientId": "reconnect-dropped", "lastSeenServerSeq": seen, "subscriptions": []string{chat}})
		var r struct {
			Type    string `json:"type"`
			Actions []struct {
				ServerSeq int64 `json:"serverSeq"`
			} `json:"actions"`
		}
		if err := json.Unmarshal(res, &r); err != nil {
			t.Fatal(err)
		}
		if r.Type != "replay" || len(r.Actions) == 0 {
			t.Fatalf("reconnect %s", res)
		}
		for _, a := range r.Actions {
			if a.ServerSeq <= seen {
				t.Fatalf("replayed serverSeq %d, already seen through %d", a.ServerSeq, seen)
			}
		}
	})
	t.Run("reconnect reports a subscription it cannot resume as missing", func(t *testing.T) {
		_, chat := v.session()
		gone := "agenthost-terminal://e2e/never-existed"
		first := v.fresh()
		first.Initialize("reconnect-missing-dropped")
		_, seen := first.Subscribe(chat)
		first.Close()
		revived := v.fresh()
		defer revived.Close()
		res := revived.MustCall("reconnect", map[string]any{"channel": ahp.RootURI, "clientId": "reconnect-missing-dropped", "lastSeenServerSeq": seen, "subscriptions": []string{chat, gone}})
		var r struct {
			Type    string   `json:"type"`
			Missing []string `json:"missing"`
		}
		if err := json.Unmarshal(res, &r); err != nil {
			t.Fatal(err)
		}
		if r.Type != "replay" || !slices.Equal(r.Missing, []string{gone}) {
			t.Fatalf("reconnect %s", res)
		}
	})
	for _, tc := range []struct{ typ, on string }{
		{"session/workingDirectorySet", "session"},
		{"session/workingDirectoryRemoved", "session"},
		{"chat/workingDirectorySet", "chat"},
		{"chat/workingDirectoryRemoved", "chat"},
	} {
		t.Run(tc.typ+" is rejected rather than silently dropped", func(t *testing.T) {
			if tc.typ == "chat/workingDirectoryRemoved" {
				// CHATS.md wins: "A change to a chat's directories starts
				// that one chat again, resumed"; a chat may narrow to a
				// subset of its session's directories, so a removal is not
				// refused (docs/CONFORMANCE.md). What must hold: the
				// directory it names, never the session's, is not added.
			}
			sess, chat := v.session()
			channel := sess
			if tc.on == "chat" {
				channel = chat
			}
			v.c.Subscribe(channel)
			dir := ahp.FileURI(v.dir + "/second-root")
			seq := v.c.Dispatch(channel, map[string]any{"type": tc.typ, "directory": dir})
			env := v.c.AwaitEcho(seq)
			if tc.typ != "chat/workingDirectoryRemoved" && env.RejectionReason == "" {
				t.Fatalf("%s of a directory that does not exist was taken", tc.typ)
			}
			st, _ := v.c.Subscribe(channel)
			var s struct {
				WorkingDirectories []string `json:"workingDirectories"`
			}
			_ = json.Unmarshal(st, &s)
			if slices.Contains(s.WorkingDirectories, dir) {
				t.Fatalf("directory applied: %v", s.WorkingDirectories)
			}
		})
	}
}

func listedSession(t *testing.T, c *ahptest.Client, uri string) ahp.SessionSummary {
	t.Helper()
	res := c.MustCall("listSessions", map[string]any{"channel": ahp.RootURI})
	var r struct {
		Items []ahp.SessionSummary `json:"items"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	for _, it := range r.Items {
		if it.Resource == uri {
			return it
		}
	}
	t.Fatalf("listSessions does not list %s", uri)
	return ahp.SessionSummary{}
}

func sessionListed(t *testing.T, c *ahptest.Client, uri string) bool {
	t.Helper()
	res := c.MustCall("listSessions", map[string]any{"channel": ahp.RootURI})
	var r struct {
		Items []ahp.SessionSummary `json:"items"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(r.Items, func(s ahp.SessionSummary) bool { return s.Resource == uri })
}
