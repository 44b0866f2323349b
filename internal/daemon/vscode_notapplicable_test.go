package daemon_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/google/uuid"
)

// TestVSCodeNotApplicable holds the conformance cases docs/CONFORMANCE.md
// lists as not applicable, each under its suite's name. Each asserts what
// ahpd does instead, with the reason the doc gives, so a change to either
// shows here.
func TestVSCodeNotApplicable(t *testing.T) {
	t.Parallel()
	v := newVSCodeEnv(t)

	// automationSuite (cfb12483). It drives an earlier automation design:
	// one channel per automation, the createAutomation, updateAutomation,
	// disposeAutomation and listAutomations commands with revisions, and
	// root/automationAdded notifications, with no gate and a user-origin
	// message. ahpd serves the design automationsSuite tests (the
	// ahp-automations:// catalogue with automation/* actions, behind the
	// root config gates, whose messages come from an automation;
	// vscode_automations_test.go), which that one contradicts.
	t.Run("automation definitions support CRUD and subscriptions", func(t *testing.T) {
		c := v.fresh()
		defer c.Close()
		var caps struct {
			Create *struct{} `json:"create"`
		}
		if err := json.Unmarshal(initializeResult(t, c, "automation")["automations"], &caps); err != nil || caps.Create == nil {
			t.Fatalf("initialize does not advertise the automation catalogue: %v", err)
		}
		_, err := c.Call("createAutomation", map[string]any{"channel": "ahp-automation:/" + uuid.NewString(), "definition": map[string]any{"title": "x"}})
		wantCode(t, err, -32601, "")
		_, err = c.Call("listAutomations", map[string]any{"channel": ahp.RootURI})
		wantCode(t, err, -32601, "")
		c.Subscribe(ahp.AutomationsURI)
	})

	// hostFeaturesSuite. CHATS.md C-CHAT-04: every chat works in its
	// session's directory; a session created without one works in the
	// first served path, so there is no workspaceless session, and file
	// completions come from that directory.
	t.Run("workspaceless sessions return no file completions", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(v.dir, "served-file.txt"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		uri := "ahp-session:/" + uuid.NewString()
		v.c.MustCall("createSession", map[string]any{"channel": uri, "provider": "script"})
		raw, _ := v.c.Subscribe(uri)
		var s ahp.SessionState
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(s.WorkingDirectories, ","); got != ahp.FileURI(v.dir) {
			t.Fatalf("a session created without a directory works in %q, want the served path %q", got, ahp.FileURI(v.dir))
		}
		res := v.c.MustCall("completions", map[string]any{"channel": s.DefaultChat, "kind": "userMessage", "text": "@served", "offset": 7})
		if !strings.Contains(string(res), "served-file.txt") {
			t.Fatalf("file completions did not come from the served path: %s", res)
		}
	})
	// clientFilesystemSuite. No backend of ours loads client plugins, so the
	// host never fetches one; the active client and its customizations are
	// taken and kept, and a turn runs without a reverse request.
	t.Run("host reads a client-hosted plugin through reverse resource requests", func(t *testing.T) {
		var reverse atomic.Int32
		v.c.OnRequest(func(method string, _ json.RawMessage) (any, *ahptest.RPCError) {
			reverse.Add(1)
			return nil, &ahptest.RPCError{Code: -32601, Message: "not served by this test client: " + method}
		})
		defer v.c.OnRequest(nil)
		sess, chat := v.session()
		v.c.Subscribe(sess)
		plugin := map[string]any{"id": uuid.NewString(), "uri": ahp.FileURI(v.dir), "name": "e2e-client-plugin", "type": "plugin", "nonce": "nonce-1"}
		v.dispatchOK(sess, map[string]any{"type": "session/activeClientSet", "activeClient": map[string]any{"clientId": "vscode-suite", "displayName": "Test Client", "tools": []any{}, "customizations": []any{plugin}}})
		v.completedTurn(sess, chat, "plugin-t1", "hello")
		if n := reverse.Load(); n != 0 {
			t.Fatalf("the host sent %d reverse requests for a plugin", n)
		}
	})
}

// initializeResult initializes c as clientID and returns the result's
// members.
func initializeResult(t *testing.T, c *ahptest.Client, clientID string) map[string]json.RawMessage {
	t.Helper()
	var r map[string]json.RawMessage
	if err := json.Unmarshal(c.Initialize(clientID), &r); err != nil {
		t.Fatal(err)
	}
	return r
}
