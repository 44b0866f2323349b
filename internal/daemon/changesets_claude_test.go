package daemon_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/changeset"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// nobodyToken lists sessions and nothing more: it may not read a chat.
const nobodyToken = "nobody-token"

// csFile is a changeset file as these tests read it.
type csFile struct {
	ID   string `json:"id"`
	Edit struct {
		Before *csSide `json:"before"`
		After  *csSide `json:"after"`
		Diff   *struct {
			Added   int `json:"added"`
			Removed int `json:"removed"`
		} `json:"diff"`
	} `json:"edit"`
	Reviewed *bool          `json:"reviewed"`
	Meta     map[string]any `json:"_meta"`
}

type csSide struct {
	URI     string `json:"uri"`
	Content struct {
		URI string `json:"uri"`
	} `json:"content"`
}

type csState struct {
	Status     string           `json:"status"`
	Files      []csFile         `json:"files"`
	Operations []map[string]any `json:"operations"`
}

func csSubscribe(t *testing.T, c *ahptest.Client, channel string) csState {
	t.Helper()
	raw, _ := c.Subscribe(channel)
	var st csState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("changeset state %s: %v", raw, err)
	}
	return st
}

func csByPath(st csState, path string) *csFile {
	for i := range st.Files {
		if st.Files[i].ID == ahp.FileURI(path) {
			return &st.Files[i]
		}
	}
	return nil
}

// csRead reads a content ref through resourceRead, as VS Code's suite does.
func csRead(t *testing.T, c *ahptest.Client, uri string) string {
	t.Helper()
	raw := c.MustCall("resourceRead", map[string]any{"channel": ahp.RootURI, "uri": uri, "encoding": "utf-8"})
	var r struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r.Data
}

// csConfirmAll confirms each call of turn that asks, until the turn ends,
// and returns its ending.
func csConfirmAll(t *testing.T, c *ahptest.Client, chat, turn string) ahptest.Envelope {
	t.Helper()
	var done []string
	for {
		env := c.AwaitEnvelope("a new ask or the end of "+turn, func(e ahptest.Envelope) bool {
			if e.Channel != chat {
				return false
			}
			var tid, confirmed, call string
			_ = e.Field("turnId", &tid)
			_ = e.Field("confirmed", &confirmed)
			_ = e.Field("toolCallId", &call)
			switch e.Type() {
			case "chat/turnComplete", "chat/error", "chat/turnCancelled":
				return tid == turn
			case "chat/toolCallReady":
				return tid == turn && confirmed == "" && !slices.Contains(done, call)
			}
			return false
		})
		if env.Type() != "chat/toolCallReady" {
			return env
		}
		var call string
		_ = env.Field("toolCallId", &call)
		done = append(done, call)
		c.AwaitEcho(c.Dispatch(chat, map[string]any{"type": "chat/toolCallConfirmed", "turnId": turn, "toolCallId": call, "approved": true}))
	}
}

func csInvoke(c *ahptest.Client, channel, op, resource string) (json.RawMessage, *ahptest.RPCError) {
	p := map[string]any{"channel": channel, "operationId": op}
	if resource != "" {
		p["target"] = map[string]any{"kind": "resource", "resource": resource}
	}
	return c.Call("invokeChangesetOperation", p)
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestChangesetsClaude (C-TURN-19): the real claude CLI against the fake
// model edits two files in one turn; the turn's changeset lists both with
// their contents before and after, readable through resourceRead. Undoing
// one restores it; undo refuses a file changed since, naming it; a client
// without the grants is refused; a stop mid-turn keeps the turn's edit in
// its changeset; a path outside the chat's directories is never recorded
// nor written; all of it survives a restart.
func TestChangesetsClaude(t *testing.T) {
	t.Parallel()
	ce := newClaudeEnv(t, "turn", func(c *daemon.Config) {
		c.Tokens = append(c.Tokens, daemon.TokenConfig{Token: nobodyToken, Principal: "user:nobody", Grants: []string{"session:list"}})
		// The agent writes outside the chat's directories on purpose (a
		// changeset never records it): unconfined even in a sandboxed run
		// (AHPD_TEST_SANDBOX), where the kernel would refuse the write.
		c.Sandbox.Default = "off"
	})
	wd := ce.workDir
	one, two := filepath.Join(wd, "one.txt"), filepath.Join(wd, "two.txt")
	if err := os.WriteFile(one, []byte("one\nkeep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := ce.client("a")
	sess := "ahp-session:/7001700a-0000-4000-8000-00000000c519"
	def, _ := ce.session(a, sess)
	a.Subscribe(def)

	// A turn that edits two files: Read (claude edits only what it read),
	// Edit, Write; each edit waits for its confirmation.
	a.Dispatch(def, turnStarted("t1", `edit two files `+
		`[[call Read {"file_path":"`+one+`"}]] `+
		`[[call Edit {"file_path":"`+one+`","old_string":"one","new_string":"ONE"}]] `+
		`[[call Write {"file_path":"`+two+`","content":"two\n"}]]`))
	if end := csConfirmAll(t, a, def, "t1"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended %s: %s", end.Type(), end.Raw)
	}
	if got := mustRead(t, one); got != "ONE\nkeep\n" {
		t.Fatalf("claude did not edit one.txt: %q", got)
	}
	st := chatOf(t, a, def)
	if len(st.Changesets) != 2 || st.Changesets[0].URITemplate != changeset.TurnTemplate(def) || st.Changesets[0].ChangeKind != "turn" {
		t.Fatalf("ChatState.changesets = %+v", st.Changesets)
	}
	t1 := changeset.TurnURI(def, "t1")
	cs := csSubscribe(t, a, t1)
	f1, f2 := csByPath(cs, one), csByPath(cs, two)
	if cs.Status != "ready" || len(cs.Files) != 2 || f1 == nil || f2 == nil {
		t.Fatalf("t1's changeset: %s", clJSON(t, cs))
	}
	if f1.Edit.Before == nil || f1.Edit.After == nil || f1.Edit.Diff == nil || f1.Edit.Diff.Added != 1 || f1.Edit.Diff.Removed != 1 {
		t.Fatalf("one.txt's edit: %s", clJSON(t, f1))
	}
	if got := csRead(t, a, f1.Edit.Before.Content.URI); got != "one\nkeep\n" {
		t.Errorf("one.txt before = %q", got)
	}
	if got := csRead(t, a, f1.Edit.After.Content.URI); got != "ONE\nkeep\n" {
		t.Errorf("one.txt after = %q", got)
	}
	if f2.Edit.Before != nil || f2.Edit.After == nil || csRead(t, a, f2.Edit.After.Content.URI) != "two\n" {
		t.Errorf("two.txt (created) edit: %s", clJSON(t, f2))
	}
	if f1.Meta["ahpd.tool"] != "Edit" || f2.Meta["ahpd.tool"] != "Write" || f1.Reviewed == nil || *f1.Reviewed {
		t.Errorf("the calls that changed them: %v, %v", f1.Meta, f2.Meta)
	}
	var ops []string
	for _, o := range cs.Operations {
		ops = append(ops, o["id"].(string))
	}
	if !slices.Equal(ops, []string{"keep", "undo"}) {
		t.Errorf("operations %v", ops)
	}

	t.Run("grants", func(t *testing.T) {
		nobody := ce.dial("nobody", nobodyToken)
		if _, err := nobody.Call("subscribe", map[string]any{"channel": t1}); err == nil || err.Code != ahp.CodePermissionDenied {
			t.Errorf("subscribe without chat:turns: %v", err)
		}
		if _, err := nobody.Call("resourceRead", map[string]any{"channel": ahp.RootURI, "uri": f1.Edit.Before.Content.URI}); err == nil || err.Code != ahp.CodePermissionDenied {
			t.Errorf("content read without chat:turns: %v", err)
		}
		reader := ce.dial("reader", readerToken)
		csSubscribe(t, reader, t1) // reading needs chat:turns only
		if _, err := csInvoke(reader, t1, "undo", f1.ID); err == nil || err.Code != ahp.CodePermissionDenied || !strings.Contains(err.Message, "changeset:undo") {
			t.Errorf("undo by a reader: %v", err)
		}
		if got := mustRead(t, one); got != "ONE\nkeep\n" {
			t.Errorf("a refused undo wrote one.txt: %q", got)
		}
		if _, err := csInvoke(a, t1, "commit", ""); err == nil || err.Code != ahp.CodeInvalidParams {
			t.Errorf("an unknown operation: %v", err)
		}
	})

	t.Run("undo one file", func(t *testing.T) {
		res, err := csInvoke(a, t1, "undo", f1.ID)
		if err != nil {
			t.Fatalf("undo one.txt: %v", err)
		}
		if got := mustRead(t, one); got != "one\nkeep\n" {
			t.Fatalf("undo left one.txt %q (result %s)", got, res)
		}
		a.AwaitEnvelope("one.txt leaves t1's changeset", func(e ahptest.Envelope) bool {
			var id string
			_ = e.Field("fileId", &id)
			return e.Channel == t1 && e.Type() == "changeset/fileRemoved" && id == f1.ID
		})
		var statuses []string
		for _, e := range a.Envelopes() {
			var op, status string
			_ = e.Field("operationId", &op)
			_ = e.Field("status", &status)
			if e.Channel == t1 && e.Type() == "changeset/operationStatusChanged" && op == "undo" {
				statuses = append(statuses, status)
			}
		}
		if !slices.Equal(statuses, []string{"running", "idle"}) {
			t.Errorf("undo's statuses %v", statuses)
		}
		if cs := csSubscribe(t, a, t1); len(cs.Files) != 1 || csByPath(cs, two) == nil {
			t.Errorf("t1 after the undo: %s", clJSON(t, cs))
		}
	})

	t.Run("undo refuses a file changed since", func(t *testing.T) {
		if err := os.WriteFile(two, []byte("changed by hand\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := csInvoke(a, t1, "undo", "")
		if err == nil || err.Code != ahp.CodeConflict || !strings.Contains(err.Message, two) {
			t.Fatalf("undo of a file changed since: %v", err)
		}
		if got := mustRead(t, two); got != "changed by hand\n" {
			t.Errorf("a refused undo wrote two.txt: %q", got)
		}
		if _, err := csInvoke(a, t1, "keep", ""); err != nil {
			t.Fatalf("keep: %v", err)
		}
		if f := csByPath(csSubscribe(t, a, t1), two); f == nil || f.Reviewed == nil || !*f.Reviewed {
			t.Errorf("kept file: %s", clJSON(t, f))
		}
	})

	outside := t.TempDir()
	t.Run("outside the chat's directories", func(t *testing.T) {
		sub := filepath.Join(wd, "sub")
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		four := filepath.Join(sub, "four.txt")
		away := filepath.Join(outside, "away.txt")
		a.Dispatch(def, turnStarted("t2", `write inside and out `+
			`[[call Write {"file_path":"`+four+`","content":"four\n"}]] `+
			`[[call Write {"file_path":"`+away+`","content":"away\n"}]]`))
		if end := csConfirmAll(t, a, def, "t2"); end.Type() != "chat/turnComplete" {
			t.Fatalf("t2 ended %s: %s", end.Type(), end.Raw)
		}
		if got := mustRead(t, four); got != "four\n" {
			t.Fatalf("claude did not write four.txt: %q", got)
		}
		if got := mustRead(t, away); got != "away\n" {
			t.Fatalf("claude did not write outside: %q", got)
		}
		t2u := changeset.TurnURI(def, "t2")
		cs := csSubscribe(t, a, t2u)
		if csByPath(cs, away) != nil || csByPath(cs, four) == nil || len(cs.Files) != 1 {
			t.Fatalf("t2's changeset (a file outside is never recorded): %s", clJSON(t, cs))
		}
		// sub becomes a link out of the chat's directories, holding what
		// the turn wrote: undoing through it is refused, and nothing
		// outside is written.
		if err := os.Rename(sub, filepath.Join(outside, "sub")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(outside, "sub"), sub); err != nil {
			t.Fatal(err)
		}
		_, err := csInvoke(a, t2u, "undo", "")
		if err == nil || err.Code != ahp.CodePermissionDenied || !strings.Contains(err.Message, four) {
			t.Fatalf("undo through a link out: %v", err)
		}
		if got := mustRead(t, filepath.Join(outside, "sub", "four.txt")); got != "four\n" {
			t.Errorf("undo wrote outside: %q", got)
		}
	})

	three := filepath.Join(wd, "three.txt")
	t.Run("a stop mid-turn keeps the turn's edit", func(t *testing.T) {
		a.Dispatch(def, turnStarted("t3", `write then wait `+
			`[[call Write {"file_path":"`+three+`","content":"three\n"}]] `+
			`[[call Bash {"command":"sleep 30","description":"wait"}]]`))
		call := clAwaitAsk(t, a, def, "t3")
		a.AwaitEcho(a.Dispatch(def, map[string]any{"type": "chat/toolCallConfirmed", "turnId": "t3", "toolCallId": call, "approved": true}))
		clAwaitAction(t, a, def, "t3", "chat/toolCallComplete")
		// The turn is stopped while its next call (sleep 30) asks or runs.
		a.AwaitEnvelope("t3's sleep", func(e ahptest.Envelope) bool {
			var tid string
			_ = e.Field("turnId", &tid)
			return e.Channel == def && e.Type() == "chat/toolCallReady" && tid == "t3" && strings.Contains(string(e.Raw), "sleep 30")
		})
		a.Dispatch(def, map[string]any{"type": "chat/turnCancelled", "turnId": "t3"})
		if end := awaitEnd(t, a, def, "t3"); end.Type() != "chat/turnCancelled" {
			t.Fatalf("t3 ended %s", end.Type())
		}
		cs := csSubscribe(t, a, changeset.TurnURI(def, "t3"))
		if f := csByPath(cs, three); f == nil || f.Edit.Before != nil || f.Edit.After == nil {
			t.Fatalf("the stopped turn's changeset: %s", clJSON(t, cs))
		}
		if f := csByPath(csSubscribe(t, a, t1), three); f != nil {
			t.Error("t3's edit is listed under t1")
		}
	})

	t.Run("survives a restart", func(t *testing.T) {
		ce.restart()
		b := ce.client("b")
		if st := chatOf(t, b, def); len(st.Changesets) != 2 {
			t.Errorf("catalogue after restart: %+v", st.Changesets)
		}
		cs := csSubscribe(t, b, t1)
		f := csByPath(cs, two)
		if len(cs.Files) != 1 || f == nil || !*f.Reviewed || csRead(t, b, f.Edit.After.Content.URI) != "two\n" {
			t.Fatalf("t1 after restart: %s", clJSON(t, cs))
		}
		if csByPath(csSubscribe(t, b, changeset.TurnURI(def, "t3")), three) == nil {
			t.Error("t3's edit lost in the restart")
		}
		all := csSubscribe(t, b, changeset.ChatURI(def))
		if len(all.Files) != 3 {
			t.Errorf("the chat's changeset: %s", clJSON(t, all))
		}
		if cs := csSubscribe(t, b, changeset.TurnURI(def, "no-such-turn")); cs.Status != "error" {
			t.Errorf("an unknown turn's changeset: %s", clJSON(t, cs))
		}
	})
}

// TestChangesetsClaudeStoppedCall (C-TURN-19): a stop lands right after a
// Write is confirmed. The call reads back cancelled (C-TURN-16, 18), yet
// the CLI made the edit: it reaches the changeset of the turn it was made
// in, from the events the engine no longer takes.
func TestChangesetsClaudeStoppedCall(t *testing.T) {
	t.Parallel()
	ce := newClaudeEnv(t, "turn")
	a := ce.client("a")
	def, _ := ce.session(a, "ahp-session:/7001700a-0000-4000-8000-00000000c520")
	a.Subscribe(def)
	t1 := changeset.TurnURI(def, "t1")
	if cs := csSubscribe(t, a, t1); cs.Status != "error" {
		t.Errorf("a turn not started yet: %s", clJSON(t, cs))
	}
	five := filepath.Join(ce.workDir, "five.txt")
	a.Dispatch(def, turnStarted("t1", `[[call Write {"file_path":"`+five+`","content":"five\n"}]]`))
	call := clAwaitAsk(t, a, def, "t1")
	a.Dispatch(def, map[string]any{"type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": call, "approved": true})
	a.Dispatch(def, map[string]any{"type": "chat/turnCancelled", "turnId": "t1"})
	if end := awaitEnd(t, a, def, "t1"); end.Type() != "chat/turnCancelled" {
		t.Fatalf("t1 ended %s", end.Type())
	}
	set := a.AwaitEnvelope("the stopped call's edit in t1's changeset", func(e ahptest.Envelope) bool {
		return e.Channel == t1 && e.Type() == "changeset/fileSet"
	})
	if got := mustRead(t, five); got != "five\n" {
		t.Fatalf("five.txt = %q", got)
	}
	var f csFile
	if err := set.Field("file", &f); err != nil || f.ID != ahp.FileURI(five) || f.Meta["ahpd.toolCallId"] != call {
		t.Fatalf("fileSet %s (%v)", set.Raw, err)
	}
	if calls := clToolCalls(chatOf(t, a, def).Turns[0]); len(calls) != 1 || calls[0].Status != "cancelled" {
		t.Errorf("the call reads %s, want cancelled", clJSON(t, calls))
	}
	cs := csSubscribe(t, a, t1)
	if got := csByPath(cs, five); got == nil || got.Edit.Before != nil || csRead(t, a, got.Edit.After.Content.URI) != "five\n" {
		t.Fatalf("t1's changeset: %s", clJSON(t, cs))
	}
}
