package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/changeset"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

// TestChangesetsCofold (C-TURN-19): cofold's own tools, write_file and
// edit_file, fill the turn's changeset from the disk: one file created
// then edited is one entry with no before and the last after. In default
// mode each edit waits for its confirmation; in acceptEdits nothing waits,
// and the before cofold read just ahead of its edit (agent.ToolCall.Before)
// is what the host records. Undoing the turn removes the created file and
// restores the edited one. A file the turn changed and put back is not
// listed.
func TestChangesetsCofold(t *testing.T) {
	t.Parallel()
	cofoldEach(t, func(t *testing.T, fake *fakemodel.Server, api string) {
		for _, mode := range []string{"default", "acceptEdits"} {
			t.Run(mode, func(t *testing.T) { changesetsCofold(t, fake, api, mode) })
		}
	})
}

func changesetsCofold(t *testing.T, fake *fakemodel.Server, api, mode string) {
	ce := newCofoldEnv(t, fake, api, map[string]any{"permissionMode": mode}, nil)
	a := ce.client("a")
	chat := ce.session(a, "ahp-session:/c0f01d00-0000-4000-8000-0000000000c5")
	old := filepath.Join(ce.workDir, "old.txt")
	if err := os.WriteFile(old, []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// same.txt is changed and put back within the turn: no change is left.
	if err := os.WriteFile(filepath.Join(ce.workDir, "same.txt"), []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	loop := callJSON("write_file", map[string]any{"path": "notes.txt", "content": "one two"}) +
		callJSON("read_file", map[string]any{"path": "notes.txt"}) +
		callJSON("edit_file", map[string]any{"path": "notes.txt", "old_string": "two", "new_string": "three"}) +
		callJSON("read_file", map[string]any{"path": "old.txt"}) +
		callJSON("edit_file", map[string]any{"path": "old.txt", "old_string": "beta", "new_string": "gamma"}) +
		callJSON("write_file", map[string]any{"path": "same.txt", "content": "changed"}) +
		callJSON("write_file", map[string]any{"path": "same.txt", "content": "same\n"})
	a.Dispatch(chat, turnStarted("t1", loop))
	mustEnd(t, csConfirmAll(t, a, chat, "t1"), "chat/turnComplete")
	notes := filepath.Join(ce.workDir, "notes.txt")
	if got := mustRead(t, notes); got != "one three" {
		t.Fatalf("notes.txt = %q", got)
	}
	wrote := 0
	for _, c := range clToolCalls(chatOf(t, a, chat).Turns[0]) {
		if strings.Contains(string(c.ToolInput), "same.txt") && c.Success != nil && *c.Success {
			wrote++
		}
	}
	if wrote != 2 {
		t.Fatalf("cofold wrote same.txt %d times, want 2", wrote)
	}
	t1 := changeset.TurnURI(chat, "t1")
	cs := csSubscribe(t, a, t1)
	n, o := csByPath(cs, notes), csByPath(cs, old)
	if len(cs.Files) != 2 || n == nil || o == nil || n.Edit.Before != nil || o.Edit.Before == nil {
		t.Fatalf("t1's changeset: %s", clJSON(t, cs))
	}
	if csRead(t, a, n.Edit.After.Content.URI) != "one three" || n.Meta["ahpd.tool"] != "edit_file" ||
		n.Edit.Diff == nil || n.Edit.Diff.Added != 1 || n.Edit.Diff.Removed != 0 {
		t.Errorf("notes.txt: %s", clJSON(t, n))
	}
	if csRead(t, a, o.Edit.Before.Content.URI) != "alpha\nbeta\n" || csRead(t, a, o.Edit.After.Content.URI) != "alpha\ngamma\n" ||
		o.Edit.Diff == nil || o.Edit.Diff.Added != 1 || o.Edit.Diff.Removed != 1 {
		t.Errorf("old.txt: %s", clJSON(t, o))
	}
	if _, err := csInvoke(a, t1, "undo", ""); err != nil {
		t.Fatalf("undo the turn: %v", err)
	}
	if clExists(notes) || mustRead(t, old) != "alpha\nbeta\n" {
		t.Errorf("after undoing the turn: notes.txt exists %v, old.txt %q", clExists(notes), mustRead(t, old))
	}
	if cs := csSubscribe(t, a, t1); len(cs.Files) != 0 {
		t.Errorf("t1 after the undo: %s", clJSON(t, cs))
	}
}
