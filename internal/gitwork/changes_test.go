package gitwork

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestChangesSeeAFileMadeByAShellCommand(t *testing.T) {
	repo := newRepo(t, nil)
	ctx := ctxT(t)
	base, err := Snapshot(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if head := gitT(t, repo, "rev-parse", "HEAD"); base != head {
		t.Errorf("Snapshot of a clean tree = %s, want HEAD %s", base, head)
	}
	sh(t, repo, "mkdir -p out && printf 'one\\ntwo\\nthree\\n' > out/made.txt")
	changes, err := Changes(ctx, repo, base)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := byPath(changes)["out/made.txt"]
	if len(changes) != 1 || !ok || c.Kind != Added || c.Additions != 3 || c.Deletions != 0 || c.NewBlob == "" {
		t.Fatalf("Changes = %+v", changes)
	}
	if b, err := ReadBlob(ctx, repo, c.NewBlob); err != nil || string(b) != "one\ntwo\nthree\n" {
		t.Errorf("ReadBlob = %q, %v", b, err)
	}
	// From a subdirectory, the same (paths relative to the top).
	sub := filepath.Join(repo, "out")
	if changes, err := Changes(ctx, sub, base); err != nil || len(changes) != 1 || changes[0].Path != "out/made.txt" {
		t.Errorf("Changes from a subdirectory = %+v, %v", changes, err)
	}
	// Nothing in the repository moved: no commit, no stash, index as it was.
	if st := gitT(t, repo, "status", "--porcelain"); st != "?? out/" {
		t.Errorf("git status after Changes = %q", st)
	}
	if gitT(t, repo, "stash", "list") != "" || gitT(t, repo, "rev-list", "--count", "HEAD") != "1" {
		t.Error("Changes made a stash or a commit")
	}
}

func TestChangesEveryKind(t *testing.T) {
	repo := newRepo(t, map[string]string{
		"mod.txt":     "a\nb\nc\n",
		"del.txt":     "1\n2\n",
		"old.txt":     "same\nlines\nhere\nfor\nrename\n",
		"pic.bin":     "\x00\x01\x02",
		".gitignore":  "*.log\n",
		"keep/ok.txt": "ok\n",
	})
	ctx := ctxT(t)
	base := gitT(t, repo, "rev-parse", "HEAD")
	sh(t, repo, strings.Join([]string{
		"printf 'a\\nB\\nc\\nd\\n' > mod.txt",        // modified: +2 -1
		"rm del.txt",                                 // deleted: -2
		"mv old.txt new.txt && echo more >> new.txt", // renamed, +1
		"printf 'x\\000y' > new.bin",                 // untracked binary
		"printf '\\003\\004' > pic.bin",              // modified binary
		"printf 'u1\\nu2\\n' > 'with space.txt'",     // untracked text
		"echo noise > debug.log",                     // ignored
		"git rm -q --cached keep/ok.txt",             // untracked now, same content: no change
	}, " && "))
	changes, err := Changes(ctx, repo, base)
	if err != nil {
		t.Fatal(err)
	}
	got := byPath(changes)
	want := map[string]Change{
		"mod.txt":        {Kind: Modified, Additions: 2, Deletions: 1},
		"del.txt":        {Kind: Deleted, Deletions: 2},
		"new.txt":        {Kind: Renamed, OldPath: "old.txt", Additions: 1},
		"new.bin":        {Kind: Added, Binary: true},
		"pic.bin":        {Kind: Modified, Binary: true},
		"with space.txt": {Kind: Added, Additions: 2},
	}
	if len(changes) != len(want) {
		t.Errorf("Changes = %+v", changes)
	}
	for p, w := range want {
		c, ok := got[p]
		if !ok || c.Kind != w.Kind || c.OldPath != w.OldPath || c.Additions != w.Additions || c.Deletions != w.Deletions || c.Binary != w.Binary {
			t.Errorf("%s: %+v, want %+v", p, c, w)
		}
	}
	if _, ok := got["debug.log"]; ok {
		t.Error("an ignored file is in Changes")
	}
	// A symlink's change shows too (as a file whose content is the target).
	sh(t, repo, "ln -s /etc/passwd link")
	changes, _ = Changes(ctx, repo, base)
	if c := byPath(changes)["link"]; c.Kind != Added || c.NewMode != "120000" {
		t.Errorf("the new symlink: %+v", c)
	}
}

func TestSnapshotOfADirtyTreeIsTheTurnsBase(t *testing.T) {
	repo := newRepo(t, nil)
	ctx := ctxT(t)
	// Dirty before the turn: a modified file, an untracked one, a staged one.
	sh(t, repo, "echo before >> x.txt && echo u > untracked.txt && echo s > staged.txt && git add staged.txt")
	statusBefore := gitT(t, repo, "status", "--porcelain")
	start, err := Snapshot(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if start == gitT(t, repo, "rev-parse", "HEAD") {
		t.Fatal("a dirty tree's snapshot is HEAD")
	}
	if parent := gitT(t, repo, "rev-parse", start+"^"); parent != gitT(t, repo, "rev-parse", "HEAD") {
		t.Errorf("the snapshot's parent is %s, not HEAD", parent)
	}
	if again, err := Snapshot(ctx, repo); err != nil {
		t.Fatal(err)
	} else if c, err := ChangesBetween(ctx, repo, start, again); err != nil || len(c) != 0 {
		t.Errorf("between two snapshots of the same tree: %+v, %v", c, err)
	}
	// The turn: edits the untracked file, deletes the modified one, adds one.
	sh(t, repo, "echo turn >> untracked.txt && rm x.txt && echo n > turn.txt")
	end, err := Snapshot(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	turn, err := ChangesBetween(ctx, repo, start, end)
	if err != nil {
		t.Fatal(err)
	}
	got := byPath(turn)
	if len(turn) != 3 || got["untracked.txt"].Kind != Modified || got["untracked.txt"].Additions != 1 ||
		got["x.txt"].Kind != Deleted || got["x.txt"].Deletions != 3 || got["turn.txt"].Kind != Added {
		t.Errorf("the turn's changes = %+v", turn)
	}
	if now, err := Changes(ctx, repo, start); err != nil || len(now) != 3 {
		t.Errorf("Changes since the turn began = %+v, %v", now, err)
	}
	// Since the session began (HEAD): the dirt from before the turn too.
	if all, err := Changes(ctx, repo, "HEAD"); err != nil || len(all) != 4 {
		t.Errorf("Changes since HEAD = %+v, %v", all, err)
	}
	// What was before the turn can be read back from its snapshot.
	if b, err := Show(ctx, repo, start, "x.txt"); err != nil || string(b) != "x1\nx2\nbefore\n" {
		t.Errorf("Show(start, x.txt) = %q, %v", b, err)
	}
	// The repository's own state did not move: index, stash, refs.
	if gitT(t, repo, "stash", "list") != "" || gitT(t, repo, "rev-list", "--count", "HEAD") != "1" {
		t.Error("Snapshot made a stash or a commit on the branch")
	}
	if !strings.Contains(statusBefore, "A  staged.txt") || !strings.Contains(gitT(t, repo, "status", "--porcelain"), "A  staged.txt") {
		t.Errorf("the index moved: before %q", statusBefore)
	}
}

func TestSnapshotWithoutIdentityOrCommits(t *testing.T) {
	needGit(t)
	ctx := ctxT(t)
	repo, _ := filepath.EvalSymlinks(t.TempDir())
	gitT(t, repo, "init", "-q", "-b", "main")
	gitT(t, repo, "config", "user.useConfigOnly", "true") // no identity at all
	empty, err := Snapshot(ctx, repo)
	if err != nil {
		t.Fatalf("Snapshot of an empty unborn repository: %v", err)
	}
	writeFile(t, filepath.Join(repo, "a.txt"), "a\n")
	snap, err := Snapshot(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := ChangesBetween(ctx, repo, empty, snap); err != nil || len(c) != 1 || c[0].Path != "a.txt" {
		t.Errorf("ChangesBetween = %+v, %v", c, err)
	}
	if c, err := Changes(ctx, repo, "HEAD"); err != nil || len(c) != 1 || c[0].Kind != Added {
		t.Errorf("Changes(HEAD) on an unborn branch = %+v, %v", c, err)
	}
	// Pinned, a snapshot survives gc's pruning.
	if err := Pin(ctx, repo, "sessions/s1/base", snap); err != nil {
		t.Fatal(err)
	}
	gitT(t, repo, "gc", "-q", "--prune=now")
	if _, err := Show(ctx, repo, snap, "a.txt"); err != nil {
		t.Errorf("a pinned snapshot after gc: %v", err)
	}
	if err := Unpin(ctx, repo, "sessions/s1/base"); err != nil {
		t.Fatal(err)
	}
	if err := Pin(ctx, repo, "../x", snap); err == nil {
		t.Error("Pin with a bad name succeeded")
	}
}

func TestShow(t *testing.T) {
	repo := newRepo(t, map[string]string{"dir/a.txt": "at base\n"})
	ctx := ctxT(t)
	base := gitT(t, repo, "rev-parse", "HEAD")
	sh(t, repo, "echo changed > dir/a.txt")
	if b, err := Show(ctx, repo, base, "dir/a.txt"); err != nil || string(b) != "at base\n" {
		t.Errorf("Show = %q, %v", b, err)
	}
	if b, err := Show(ctx, repo, "main", "./dir//a.txt"); err != nil || string(b) != "at base\n" {
		t.Errorf("Show(uncleaned path) = %q, %v", b, err)
	}
	if _, err := Show(ctx, repo, base, "dir/none.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Show(missing) = %v, want fs.ErrNotExist", err)
	}
	if _, err := Show(ctx, repo, base, "dir"); err == nil {
		t.Error("Show(directory) succeeded")
	}
	for _, p := range []string{"../repo/dir/a.txt", "/etc/passwd", ".git/config", ""} {
		if _, err := Show(ctx, repo, base, p); !errors.Is(err, ErrPath) {
			t.Errorf("Show(%q) = %v, want ErrPath", p, err)
		}
	}
	if _, err := Show(ctx, repo, "--output=/tmp/x", "dir/a.txt"); err == nil {
		t.Error("Show with an option for a commit succeeded")
	}
	// Bounded: a blob past MaxShowBytes is refused, not read.
	big := bytes.Repeat([]byte("0123456789abcdef\n"), MaxShowBytes/17+1)
	if err := os.WriteFile(filepath.Join(repo, "big.txt"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, repo, "add", "big.txt")
	gitT(t, repo, "commit", "-q", "-m", "big")
	if _, err := Show(ctx, repo, "HEAD", "big.txt"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Show(big) = %v, want ErrTooLarge", err)
	}
	if _, err := ReadBlob(ctx, repo, "HEAD:big.txt"); err == nil {
		t.Error("ReadBlob took a revision expression")
	}
}
