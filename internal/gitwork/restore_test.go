package gitwork

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRestoreFileOneAtATime(t *testing.T) {
	repo := newRepo(t, map[string]string{"mod.txt": "m\n", "del.txt": "d\n", "sub/keep.txt": "k\n"})
	ctx := ctxT(t)
	// The session began dirty: an untracked file the turn then deletes.
	sh(t, repo, "echo 'was untracked' > pre.txt")
	base, err := Snapshot(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	sh(t, repo, strings.Join([]string{
		"echo changed > mod.txt", "rm del.txt", "rm pre.txt", "rm -r sub",
		"echo new > new.txt", "echo staged > staged.txt && git add staged.txt",
		"mkdir -p made/deep && echo x > made/deep/file.txt",
	}, " && "))
	for _, tc := range []struct {
		path    string
		want    string // "" = must not exist
		changes int    // left after this restore
	}{
		{"mod.txt", "m\n", 7},
		{"del.txt", "d\n", 6},
		{"pre.txt", "was untracked\n", 5},
		{"sub/keep.txt", "k\n", 4}, // its folder was gone too
		{"new.txt", "", 3},
		{"staged.txt", "", 2},
		{"made/deep/file.txt", "", 1},
	} {
		before, _ := Changes(ctx, repo, base)
		if err := RestoreFile(ctx, repo, base, tc.path); err != nil {
			t.Fatalf("RestoreFile(%s): %v", tc.path, err)
		}
		p := filepath.Join(repo, tc.path)
		if tc.want == "" {
			if exists(p) {
				t.Errorf("%s: still there after restoring to a base without it", tc.path)
			}
		} else if got := readFile(t, p); got != tc.want {
			t.Errorf("%s: %q after restore, want %q", tc.path, got, tc.want)
		}
		after, err := Changes(ctx, repo, base)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before)-1 {
			t.Errorf("%s: %d changes before, %d after: %+v", tc.path, len(before), len(after), after)
		}
	}
	if c, err := Changes(ctx, repo, base); err != nil || len(c) != 0 {
		t.Errorf("left after every restore: %+v, %v", c, err)
	}
	// The staged new file left the index with its file.
	if out := gitT(t, repo, "ls-files", "staged.txt"); out != "" {
		t.Errorf("staged.txt is still in the index")
	}
}

func TestRestoreAll(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "a\nb\nc\nd\n", "b.bin": "\x00\x01"})
	ctx := ctxT(t)
	base, _ := Snapshot(ctx, repo)
	sh(t, repo, "mv a.txt moved.txt && printf '\\002' > b.bin && echo n > n.txt && ln -s /etc out-link")
	undone, err := RestoreAll(ctx, repo, base)
	if err != nil {
		t.Fatal(err)
	}
	if len(undone) != 4 {
		t.Errorf("RestoreAll restored %+v", undone)
	}
	if c, err := Changes(ctx, repo, base); err != nil || len(c) != 0 {
		t.Errorf("Changes after RestoreAll = %+v, %v", c, err)
	}
	if readFile(t, filepath.Join(repo, "a.txt")) != "a\nb\nc\nd\n" || exists(filepath.Join(repo, "moved.txt")) || exists(filepath.Join(repo, "out-link")) {
		t.Error("the rename or the link was not undone")
	}
	if _, err := os.Stat("/etc"); err != nil {
		t.Fatal("/etc is gone?")
	}
}

func TestDiscardChanges(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
	ctx := ctxT(t)
	sh(t, repo, strings.Join([]string{
		"echo a2 > a.txt && git add a.txt && echo a3 > a.txt", // staged and unstaged
		"git rm -q b.txt",                 // staged deletion
		"echo c2 > c.txt",                 // unstaged
		"echo u > u.txt",                  // untracked
		"echo s > s.txt && git add s.txt", // staged new
	}, " && "))
	if err := DiscardChanges(ctx, repo, nil); err == nil {
		t.Error("DiscardChanges with no paths succeeded")
	}
	if err := DiscardChanges(ctx, repo, []string{"a.txt", "b.txt", "u.txt", "s.txt"}); err != nil {
		t.Fatal(err)
	}
	if st := gitT(t, repo, "status", "--porcelain"); st != "M c.txt" {
		t.Errorf("git status after discarding all but c.txt = %q", st)
	}
	discarded, err := DiscardAll(ctx, repo)
	if err != nil || len(discarded) != 1 || discarded[0].Path != "c.txt" {
		t.Errorf("DiscardAll = %+v, %v", discarded, err)
	}
	if st := gitT(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("git status after DiscardAll = %q", st)
	}
}

func TestCommit(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
	ctx := ctxT(t)
	sh(t, repo, "echo a2 > a.txt && rm b.txt && echo n > new.txt && echo c2 > c.txt && echo s > staged.txt && git add staged.txt")
	id, err := Commit(ctx, repo, "the agent's work", []string{"a.txt", "b.txt", "new.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if id != gitT(t, repo, "rev-parse", "HEAD") || gitT(t, repo, "log", "-1", "--format=%s") != "the agent's work" {
		t.Error("Commit's id or message is not HEAD's")
	}
	if files := gitT(t, repo, "show", "--name-status", "--format=", "HEAD"); files != "M\ta.txt\nD\tb.txt\nA\tnew.txt" {
		t.Errorf("the commit holds %q", files)
	}
	// What was not named stays as it was: c.txt changed, staged.txt staged.
	if st := gitT(t, repo, "status", "--porcelain"); st != "M c.txt\nA  staged.txt" {
		t.Errorf("git status after Commit = %q", st)
	}
	if _, err := Commit(ctx, repo, "again", []string{"a.txt"}); !errors.Is(err, ErrNothingToCommit) {
		t.Errorf("Commit of an unchanged path = %v, want ErrNothingToCommit", err)
	}
	if _, err := Commit(ctx, repo, "  ", []string{"c.txt"}); err == nil {
		t.Error("Commit with an empty message succeeded")
	}
	if _, err := Commit(ctx, repo, "all", nil); err != nil {
		t.Fatal(err)
	}
	if st := gitT(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("git status after committing everything = %q", st)
	}
	if _, err := Commit(ctx, repo, "none", nil); !errors.Is(err, ErrNothingToCommit) {
		t.Errorf("Commit of a clean tree = %v, want ErrNothingToCommit", err)
	}
	// Without an identity git refuses, and says why.
	gitT(t, repo, "config", "--unset", "user.email")
	gitT(t, repo, "config", "--unset", "user.name")
	gitT(t, repo, "config", "user.useConfigOnly", "true")
	sh(t, repo, "echo z > z.txt")
	if _, err := Commit(ctx, repo, "anon", []string{"z.txt"}); err == nil || !strings.Contains(err.Error(), "user.email") {
		t.Errorf("Commit without an identity = %v; want git's explanation", err)
	}
}

// Paths are confined: absolute, "..", .git and symlinks leading out of the
// tree are refused before git runs, and nothing is touched.
func TestPathRefusals(t *testing.T) {
	repo := newRepo(t, nil)
	ctx := ctxT(t)
	base := gitT(t, repo, "rev-parse", "HEAD")
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim.txt")
	writeFile(t, victim, "keep me\n")
	sh(t, repo, "ln -s "+outside+" escape && ln -s . self && mkdir -p inner && ln -s ../inner inlink")
	bad := []string{
		"/etc/passwd", victim, "../victim.txt", "x.txt/../../victim.txt", "a/../x.txt", "..",
		"escape/victim.txt", "self/x.txt", "inlink/f.txt", ".git/config", ".git/hooks/pre-commit", "", ".",
	}
	for _, p := range bad {
		if err := RestoreFile(ctx, repo, base, p); !errors.Is(err, ErrPath) {
			t.Errorf("RestoreFile(%q) = %v, want ErrPath", p, err)
		}
		if err := DiscardChanges(ctx, repo, []string{"x.txt", p}); !errors.Is(err, ErrPath) {
			t.Errorf("DiscardChanges(%q) = %v, want ErrPath", p, err)
		}
		if _, err := Commit(ctx, repo, "m", []string{p}); !errors.Is(err, ErrPath) {
			t.Errorf("Commit(%q) = %v, want ErrPath", p, err)
		}
	}
	// A revision that is an option, and a bad ref name, are refused too.
	for _, rev := range []string{"--output=" + victim, "-p"} {
		if _, err := Changes(ctx, repo, rev); err == nil {
			t.Errorf("Changes(%q) succeeded", rev)
		}
		if _, err := ChangesBetween(ctx, repo, base, rev); err == nil {
			t.Errorf("ChangesBetween(%q) succeeded", rev)
		}
		if err := RestoreFile(ctx, repo, rev, "x.txt"); err == nil {
			t.Errorf("RestoreFile at %q succeeded", rev)
		}
		if err := Pin(ctx, repo, "p", rev); err == nil {
			t.Errorf("Pin(%q) succeeded", rev)
		}
	}
	if err := Unpin(ctx, repo, "../x"); err == nil {
		t.Error("Unpin with a bad name succeeded")
	}
	if readFile(t, victim) != "keep me\n" {
		t.Error("the file outside the tree was touched")
	}
	if gitT(t, repo, "rev-list", "--count", "HEAD") != "1" {
		t.Error("a refused Commit committed")
	}
	// A glob is a name, not a pattern: "*.txt" matches no file here.
	sh(t, repo, "echo changed > x.txt && echo new > untracked.txt")
	for _, p := range []string{"*.txt", ":(glob)*.txt", ":/"} {
		if err := RestoreFile(ctx, repo, base, p); err != nil {
			t.Fatal(err)
		}
		if readFile(t, filepath.Join(repo, "x.txt")) != "changed\n" || !exists(filepath.Join(repo, "untracked.txt")) {
			t.Fatalf("RestoreFile(%q) touched other files: the path was taken as a pattern", p)
		}
	}
	// The link itself (the last component) is a file git tracks: allowed,
	// and restoring removes the link, never what it points at.
	if err := RestoreFile(ctx, repo, base, "escape"); err != nil {
		t.Fatal(err)
	}
	if exists(filepath.Join(repo, "escape")) || readFile(t, victim) != "keep me\n" {
		t.Error("restoring the link went wrong")
	}
}

// More paths than one command line should carry: they go on stdin.
func TestCommitAndRestoreManyPaths(t *testing.T) {
	repo := newRepo(t, nil)
	ctx := ctxT(t)
	base := gitT(t, repo, "rev-parse", "HEAD")
	sh(t, repo, "mkdir many && i=0; while [ $i -lt 700 ]; do echo $i > many/f$i.txt; i=$((i+1)); done")
	changes, err := Changes(ctx, repo, base)
	if err != nil || len(changes) != 700 {
		t.Fatalf("Changes = %d, %v", len(changes), err)
	}
	paths := changedPaths(changes)
	if _, err := Commit(ctx, repo, "many", paths[:650]); err != nil {
		t.Fatal(err)
	}
	if n := gitT(t, repo, "show", "--name-only", "--format=", "HEAD"); strings.Count(n, "\n")+1 != 650 {
		t.Errorf("the commit holds %d files", strings.Count(n, "\n")+1)
	}
	if _, err := RestoreAll(ctx, repo, base); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Join(repo, "many")); len(entries) != 0 {
		t.Errorf("%d files left after RestoreAll", len(entries))
	}
}
