package gitwork

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNoGitSaysHowToInstall(t *testing.T) {
	old := gitBinary
	gitBinary = "git-that-is-not-installed-anywhere"
	defer func() { gitBinary = old }()
	if err := Available(); !errors.Is(err, ErrNoGit) {
		t.Fatalf("Available() = %v, want ErrNoGit", err)
	}
	if !strings.Contains(ErrNoGit.Error(), "apt-get install git") {
		t.Errorf("ErrNoGit has no install hint: %v", ErrNoGit)
	}
	dir := t.TempDir()
	if _, err := IsWorkTree(ctxT(t), dir); !errors.Is(err, ErrNoGit) {
		t.Errorf("IsWorkTree without git = %v, want ErrNoGit", err)
	}
	if _, err := Snapshot(ctxT(t), dir); !errors.Is(err, ErrNoGit) {
		t.Errorf("Snapshot without git = %v, want ErrNoGit", err)
	}
}

func TestDiscovery(t *testing.T) {
	repo := newRepo(t, nil)
	ctx := ctxT(t)
	sub := filepath.Join(repo, "sub", "deeper")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if ok, err := IsWorkTree(ctx, sub); !ok || err != nil {
		t.Errorf("IsWorkTree(subdir) = %v, %v", ok, err)
	}
	plain := t.TempDir()
	if ok, err := IsWorkTree(ctx, plain); ok || err != nil {
		t.Errorf("IsWorkTree(plain folder) = %v, %v; want false, nil", ok, err)
	}
	if _, err := TopLevel(ctx, plain); !errors.Is(err, ErrNotRepository) {
		t.Errorf("TopLevel(plain folder) = %v, want ErrNotRepository", err)
	}
	if ok, err := IsWorkTree(ctx, filepath.Join(repo, ".git")); ok || err != nil {
		t.Errorf("IsWorkTree(.git) = %v, %v; want false, nil", ok, err)
	}
	if _, err := IsWorkTree(ctx, "relative/dir"); !errors.Is(err, ErrPath) {
		t.Errorf("IsWorkTree(relative) = %v, want ErrPath", err)
	}
	if top, err := TopLevel(ctx, sub); top != repo || err != nil {
		t.Errorf("TopLevel(subdir) = %q, %v; want %q", top, err, repo)
	}
	// Through a symlink to the repository: the real top.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(repo, link); err != nil {
		t.Fatal(err)
	}
	if top, err := TopLevel(ctx, link); top != repo || err != nil {
		t.Errorf("TopLevel(symlink) = %q, %v; want %q", top, err, repo)
	}

	if b, err := CurrentBranch(ctx, repo); b != "main" || err != nil {
		t.Errorf("CurrentBranch = %q, %v", b, err)
	}
	gitT(t, repo, "branch", "feature")
	gitT(t, repo, "update-ref", "refs/remotes/origin/trunk", "HEAD")
	gitT(t, repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk")
	bs, err := Branches(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range bs {
		names = append(names, b.Name)
		if b.Name == "main" && !b.Current || b.Name != "main" && b.Current || b.Commit == "" {
			t.Errorf("branch %+v", b)
		}
	}
	if strings.Join(names, ",") != "feature,main,origin/trunk" {
		t.Errorf("Branches = %v", names)
	}
	// origin's HEAD names trunk, which has no local branch.
	if d, err := DefaultBranch(ctx, repo); d != "origin/trunk" || err != nil {
		t.Errorf("DefaultBranch = %q, %v; want origin/trunk", d, err)
	}
	gitT(t, repo, "branch", "trunk")
	if d, err := DefaultBranch(ctx, repo); d != "trunk" || err != nil {
		t.Errorf("DefaultBranch = %q, %v; want trunk", d, err)
	}
	gitT(t, repo, "symbolic-ref", "-d", "refs/remotes/origin/HEAD")
	gitT(t, repo, "checkout", "-q", "feature")
	if d, err := DefaultBranch(ctx, repo); d != "main" || err != nil {
		t.Errorf("DefaultBranch without origin = %q, %v; want main", d, err)
	}
	gitT(t, repo, "checkout", "-q", "--detach")
	if b, err := CurrentBranch(ctx, repo); b != "" || err != nil {
		t.Errorf("CurrentBranch detached = %q, %v", b, err)
	}
	if id, err := ResolveCommit(ctx, repo, "feature"); err != nil || len(id) < 40 {
		t.Errorf("ResolveCommit(feature) = %q, %v", id, err)
	}
	if _, err := ResolveCommit(ctx, repo, "no-such-branch"); err == nil {
		t.Error("ResolveCommit of a missing branch succeeded")
	}
}
