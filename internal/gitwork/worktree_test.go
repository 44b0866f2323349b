package gitwork

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/confine"
)

// worktreesRoot is a data dir's worktrees folder, beside the repository.
func worktreesRoot(repo string) string {
	return filepath.Join(filepath.Dir(repo), "data", "worktrees")
}

// addWorktree adds the worktree root/<name> on a new branch ahpd/<name>
// made from main, and returns its folder.
func addWorktree(t *testing.T, ctx context.Context, repo, root, name string) (string, Worktree) {
	t.Helper()
	dest := filepath.Join(root, name)
	wt, err := AddWorktree(ctx, repo, root, dest, "ahpd/"+name, "main")
	if err != nil {
		t.Fatal(err)
	}
	return dest, wt
}

func TestAddAndRemoveCleanWorktree(t *testing.T) {
	repo := newRepo(t, nil)
	ctx := ctxT(t)
	root := worktreesRoot(repo)
	dest, wt := addWorktree(t, ctx, repo, root, "session-1")
	head := gitT(t, repo, "rev-parse", "main")
	if wt.Path != dest || wt.Branch != "ahpd/session-1" || wt.Head != head {
		t.Errorf("AddWorktree = %+v", wt)
	}
	if readFile(t, filepath.Join(dest, "x.txt")) != "x1\nx2\n" {
		t.Error("the worktree has not main's files")
	}
	if b, _ := CurrentBranch(ctx, dest); b != "ahpd/session-1" {
		t.Errorf("the worktree is on %q", b)
	}
	// The new branch tracks nothing (it was made from the commit).
	if up := gitT(t, repo, "for-each-ref", "--format=%(upstream)", "refs/heads/ahpd/session-1"); up != "" {
		t.Errorf("the new branch tracks %q", up)
	}
	list, err := ListWorktrees(ctx, repo)
	if err != nil || len(list) != 2 || list[0].Path != repo || list[1].Path != dest || list[1].Branch != "ahpd/session-1" || list[1].Head != head {
		t.Fatalf("ListWorktrees = %+v, %v", list, err)
	}

	r, err := RemoveWorktree(ctx, root, dest, wt.Head)
	if err != nil || !r.Removed || r.Kept != "" || !r.BranchDeleted || r.String() != "removed" {
		t.Fatalf("RemoveWorktree(clean) = %+v, %v", r, err)
	}
	if exists(dest) {
		t.Error("the clean worktree's folder is still there")
	}
	if out := gitT(t, repo, "branch", "--list", "ahpd/*"); out != "" {
		t.Errorf("its branch is still there: %q", out)
	}
	if list, _ := ListWorktrees(ctx, repo); len(list) != 1 {
		t.Errorf("ListWorktrees after removal = %+v", list)
	}
}

func TestRemoveWorktreeKeepsDirty(t *testing.T) {
	repo := newRepo(t, nil)
	ctx := ctxT(t)
	root := worktreesRoot(repo)
	for name, change := range map[string]string{
		"untracked": "echo new > made-by-shell.txt",
		"modified":  "echo more >> x.txt",
		"deleted":   "rm y.txt",
		"staged":    "echo s > s.txt && git add s.txt",
	} {
		dest, wt := addWorktree(t, ctx, repo, root, name)
		sh(t, dest, change)
		r, err := RemoveWorktree(ctx, root, dest, wt.Head)
		if err != nil || r.Removed || r.Kept != KeptDirty || r.String() != "kept: dirty" {
			t.Errorf("%s: RemoveWorktree = %+v, %v; want kept: dirty", name, r, err)
		}
		if !exists(dest) || gitT(t, repo, "branch", "--list", "ahpd/"+name) == "" {
			t.Errorf("%s: the dirty worktree or its branch is gone", name)
		}
	}
	// An ignored file is not work: the worktree goes, and it with it.
	dest, wt := addWorktree(t, ctx, repo, root, "ignored")
	sh(t, dest, `echo build > out.log && echo '*.log' >> "$(git rev-parse --git-path info/exclude)"`)
	if r, err := RemoveWorktree(ctx, root, dest, wt.Head); err != nil || !r.Removed {
		t.Errorf("ignored only: RemoveWorktree = %+v, %v", r, err)
	}
}

func TestRemoveWorktreeKeepsUnmergedCommits(t *testing.T) {
	repo := newRepo(t, nil)
	ctx := ctxT(t)
	root := worktreesRoot(repo)
	dest, wt := addWorktree(t, ctx, repo, root, "s")
	sh(t, dest, "echo work > w.txt && git add w.txt && git commit -q -m work")
	r, err := RemoveWorktree(ctx, root, dest, wt.Head)
	if err != nil || r.Removed || r.Kept != KeptUnmerged || r.String() != "kept: unmerged commits" {
		t.Fatalf("RemoveWorktree(unmerged) = %+v, %v", r, err)
	}
	if !exists(filepath.Join(dest, "w.txt")) {
		t.Fatal("the unmerged worktree lost its file")
	}
	// Against main, once main has the commit, nothing is lost.
	if r, err := RemoveWorktree(ctx, root, dest, "main"); r.Removed || r.Kept != KeptUnmerged || err != nil {
		t.Fatalf("RemoveWorktree against main before the merge = %+v, %v", r, err)
	}
	gitT(t, repo, "merge", "-q", "--ff-only", "ahpd/s")
	r, err = RemoveWorktree(ctx, root, dest, "main")
	if err != nil || !r.Removed || !r.BranchDeleted {
		t.Fatalf("RemoveWorktree after the merge = %+v, %v", r, err)
	}
	// A base naming the worktree itself protects nothing: its commits are
	// on its branch alone, and stay.
	self, _ := addWorktree(t, ctx, repo, root, "self")
	sh(t, self, "echo work > self.txt && git add self.txt && git commit -q -m work")
	for _, base := range []string{"HEAD", "@", "HEAD~0", "ahpd/self", "refs/heads/ahpd/self"} {
		if r, err := RemoveWorktree(ctx, root, self, base); err != nil || r.Removed || r.Kept != KeptUnmerged {
			t.Errorf("RemoveWorktree against its own %q = %+v, %v; want kept: unmerged", base, r, err)
		}
	}
	// Detached, the same: its commit is on no branch.
	sh(t, self, "git checkout -q --detach && echo more >> self.txt && git commit -q -am more")
	if r, err := RemoveWorktree(ctx, root, self, "HEAD"); err != nil || r.Removed || r.Kept != KeptUnmerged {
		t.Errorf("RemoveWorktree, detached, against its own HEAD = %+v, %v; want kept: unmerged", r, err)
	}
	if !exists(filepath.Join(self, "self.txt")) || gitT(t, repo, "branch", "--list", "ahpd/self") == "" {
		t.Error("a worktree removed against its own HEAD lost its work")
	}
	// A base that no longer exists: an error, and the worktree stays.
	dest2, _ := addWorktree(t, ctx, repo, root, "s2")
	if r, err := RemoveWorktree(ctx, root, dest2, "gone-branch"); err == nil || r.Removed || !exists(dest2) {
		t.Errorf("RemoveWorktree with a missing base = %+v, %v", r, err)
	}
}

func TestRemoveWorktreeRefusals(t *testing.T) {
	repo := newRepo(t, nil)
	ctx := ctxT(t)
	root := worktreesRoot(repo)
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	head := gitT(t, repo, "rev-parse", "HEAD")
	// The main work tree is not under root, and is never removed.
	if r, err := RemoveWorktree(ctx, root, repo, head); err == nil || r.Removed {
		t.Errorf("RemoveWorktree(main work tree outside root) = %+v, %v", r, err)
	}
	if r, err := RemoveWorktree(ctx, filepath.Dir(repo), repo, head); err == nil || r.Removed || !exists(repo) {
		t.Errorf("RemoveWorktree(main work tree) = %+v, %v", r, err)
	}
	if _, err := RemoveWorktree(ctx, root, root, head); err == nil {
		t.Error("RemoveWorktree(root) succeeded")
	}
	if _, err := RemoveWorktree(ctx, root, filepath.Join(root, "none"), head); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("RemoveWorktree(missing) = %v", err)
	}
	if _, err := RemoveWorktree(ctx, root, filepath.Join(root, "none"), ""); err == nil {
		t.Error("RemoveWorktree without a base succeeded")
	}
	// A linked worktree outside root, reached through a link in root, by
	// "..", or by a relative path, is refused and stays.
	other := filepath.Join(filepath.Dir(root), "other")
	gitT(t, repo, "worktree", "add", "-q", "-b", "other", other, "main")
	if err := os.Symlink(other, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]string{
		"through a symlink": filepath.Join(root, "escape"),
		"dotdot":            root + "/../other",
		"relative":          "data/other",
	} {
		if r, err := RemoveWorktree(ctx, root, p, head); !errors.Is(err, ErrPath) && !errors.Is(err, confine.ErrOutside) || r.Removed {
			t.Errorf("%s: RemoveWorktree(%q) = %+v, %v; want refused", name, p, r, err)
		}
	}
	if !exists(other) || gitT(t, repo, "branch", "--list", "other") == "" {
		t.Error("a refused RemoveWorktree removed the worktree outside root")
	}
	inside, _ := addWorktree(t, ctx, repo, root, "inside")
	for _, base := range []string{"-p", "--all", "a b"} {
		if r, err := RemoveWorktree(ctx, root, inside, base); err == nil || r.Removed {
			t.Errorf("RemoveWorktree with the base %q = %+v, %v", base, r, err)
		}
	}
}

func TestAddWorktreeRefusals(t *testing.T) {
	repo := newRepo(t, nil)
	ctx := ctxT(t)
	root := worktreesRoot(repo)
	outside := t.TempDir()
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"", "-b", "--force", "a b", "a..b", "x.lock", "HEAD", "a~1", "a:b"} {
		if _, err := AddWorktree(ctx, repo, root, filepath.Join(root, "w"), b, "main"); err == nil {
			t.Errorf("branch %q accepted", b)
		}
	}
	for name, dest := range map[string]string{
		"outside root":     filepath.Join(outside, "w"),
		"dotdot":           filepath.Join(root, "..", "w"),
		"root itself":      root,
		"relative":         "w",
		"through symlink":  filepath.Join(root, "escape", "w"),
		"control char":     filepath.Join(root, "w\nx"),
		"existing":         filepath.Join(root, "escape"),
		"the repo subtree": filepath.Join(repo, "w"),
	} {
		if wt, err := AddWorktree(ctx, repo, root, dest, "ahpd/w", "main"); err == nil {
			t.Errorf("%s: AddWorktree(%q) = %+v", name, dest, wt)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("something was made outside the root: %v", entries)
	}
	for _, ref := range []string{"", "-p", "--orphan", "no-such-branch"} {
		if _, err := AddWorktree(ctx, repo, root, filepath.Join(root, "w"), "ahpd/w", ref); err == nil {
			t.Errorf("fromRef %q accepted", ref)
		}
	}
	if out := gitT(t, repo, "branch", "--list", "ahpd/*"); out != "" {
		t.Errorf("a refused worktree made a branch: %q", out)
	}
	// git's own refusal comes back with what git said.
	gitT(t, repo, "branch", "taken")
	_, err := AddWorktree(ctx, repo, root, filepath.Join(root, "w"), "taken", "main")
	var ge *Error
	if !errors.As(err, &ge) || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("AddWorktree(existing branch) = %v; want git's stderr", err)
	}
}

func TestListAndPruneWorktrees(t *testing.T) {
	repo := newRepo(t, nil)
	ctx := ctxT(t)
	root := worktreesRoot(repo)
	dest, _ := addWorktree(t, ctx, repo, root, "gone")
	if err := os.RemoveAll(dest); err != nil {
		t.Fatal(err)
	}
	list, err := ListWorktrees(ctx, repo)
	if err != nil || len(list) != 2 || !list[1].Prunable {
		t.Fatalf("ListWorktrees with a vanished folder = %+v, %v", list, err)
	}
	if err := Prune(ctx, repo); err != nil {
		t.Fatal(err)
	}
	if list, err := ListWorktrees(ctx, repo); err != nil || len(list) != 1 {
		t.Errorf("ListWorktrees after Prune = %+v, %v", list, err)
	}
	// Prune deletes no branch: the work on it stays reachable.
	if gitT(t, repo, "branch", "--list", "ahpd/gone") == "" {
		t.Error("Prune deleted the branch")
	}
}

// A session's worktree: a file a shell command makes there is in the
// worktree's changes and not in the repository's, and undoing it works
// through git there too.
func TestChangesInAWorktreeStayThere(t *testing.T) {
	repo := newRepo(t, nil)
	ctx := ctxT(t)
	root := worktreesRoot(repo)
	dest, wt := addWorktree(t, ctx, repo, root, "s")
	base, err := Snapshot(ctx, dest)
	if err != nil || base != wt.Head {
		t.Fatalf("Snapshot of the fresh worktree = %s, %v; want %s", base, err, wt.Head)
	}
	sh(t, dest, "echo made > bang.txt && echo edit >> x.txt")
	changes, err := Changes(ctx, dest, base)
	if err != nil || len(changes) != 2 || byPath(changes)["bang.txt"].Kind != Added {
		t.Fatalf("the worktree's Changes = %+v, %v", changes, err)
	}
	if c, err := Changes(ctx, repo, "HEAD"); err != nil || len(c) != 0 || exists(filepath.Join(repo, "bang.txt")) {
		t.Errorf("the repository's own Changes = %+v, %v", c, err)
	}
	if err := RestoreFile(ctx, dest, base, "bang.txt"); err != nil {
		t.Fatal(err)
	}
	if exists(filepath.Join(dest, "bang.txt")) {
		t.Error("the undone file is still in the worktree")
	}
	if r, _ := RemoveWorktree(ctx, root, dest, wt.Head); r.Kept != KeptDirty {
		t.Errorf("RemoveWorktree with x.txt still edited = %+v", r)
	}
	if _, err := RestoreAll(ctx, dest, base); err != nil {
		t.Fatal(err)
	}
	if r, err := RemoveWorktree(ctx, root, dest, wt.Head); err != nil || !r.Removed {
		t.Errorf("RemoveWorktree once undone = %+v, %v", r, err)
	}
}
