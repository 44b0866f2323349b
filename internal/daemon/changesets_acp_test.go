package daemon_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ahpd/ahpd/internal/changeset"
)

// TestChangesetsACP (C-TURN-19): an ACP agent's edit call names its file
// in the call's locations (kind edit); asked and confirmed, the agent
// writes it, and the turn's changeset holds the file as it was before the
// call and after. Undoing the file restores it.
func TestChangesetsACP(t *testing.T) {
	t.Parallel()
	e := newACPFakeEnv(t)
	a := e.client("a")
	const sess = "ahp-session:/acc0de00-0000-4000-8000-0000000000c5"
	a.MustCall("createSession", map[string]any{"channel": sess, "provider": "fake-acp"})
	def := sessionState(t, a, sess).DefaultChat
	a.Subscribe(def)
	notes := filepath.Join(e.workDir, "notes.txt")
	if err := os.WriteFile(notes, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.Dispatch(def, turnStarted("t1", "[edit:"+notes+"|after\n]"))
	mustEnd(t, csConfirmAll(t, a, def, "t1"), "chat/turnComplete")
	if got := mustRead(t, notes); got != "after\n" {
		t.Fatalf("notes.txt = %q", got)
	}
	t1 := changeset.TurnURI(def, "t1")
	cs := csSubscribe(t, a, t1)
	f := csByPath(cs, notes)
	if len(cs.Files) != 1 || f == nil || f.Edit.Before == nil || f.Edit.After == nil || f.Meta["ahpd.tool"] != "edit" {
		t.Fatalf("t1's changeset: %s", clJSON(t, cs))
	}
	if b, af := csRead(t, a, f.Edit.Before.Content.URI), csRead(t, a, f.Edit.After.Content.URI); b != "before\n" || af != "after\n" {
		t.Errorf("before %q, after %q", b, af)
	}
	if _, err := csInvoke(a, t1, "undo", f.ID); err != nil {
		t.Fatalf("undo: %v", err)
	}
	if got := mustRead(t, notes); got != "before\n" {
		t.Errorf("after undo notes.txt = %q", got)
	}
}
