package gitwork

import (
	"path/filepath"
	"testing"
)

// TestUpstreamAndSync: a branch without an upstream has none; one pushed
// with -u is level with it; a commit on each side is outgoing and
// incoming; Sync merges the incoming one and pushes, after which the two
// are level; a remote that is gone fails Sync with git's error and keeps
// the local commit.
func TestUpstreamAndSync(t *testing.T) {
	repo := newRepo(t, nil)
	ctx := ctxT(t)
	if _, ok, err := UpstreamOf(ctx, repo); ok || err != nil {
		t.Fatalf("no upstream yet: %v %v", ok, err)
	}
	if err := Sync(ctx, repo); err == nil {
		t.Fatal("Sync without an upstream succeeded")
	}
	remote := filepath.Join(filepath.Dir(repo), "remote.git")
	gitT(t, filepath.Dir(repo), "init", "-q", "--bare", "--initial-branch=main", remote)
	gitT(t, repo, "remote", "add", "origin", remote)
	gitT(t, repo, "push", "-q", "-u", "origin", "HEAD")
	if u, ok, err := UpstreamOf(ctx, repo); !ok || err != nil || u != (Upstream{Name: "origin/main"}) {
		t.Fatalf("after push -u: %+v %v %v", u, ok, err)
	}

	clone := filepath.Join(filepath.Dir(repo), "clone")
	gitT(t, filepath.Dir(repo), "clone", "-q", remote, clone)
	gitT(t, clone, "config", "user.name", "Other")
	gitT(t, clone, "config", "user.email", "other@example.com")
	writeFile(t, filepath.Join(clone, "incoming.txt"), "in\n")
	gitT(t, clone, "add", "-A")
	gitT(t, clone, "commit", "-q", "-m", "incoming")
	gitT(t, clone, "push", "-q")
	writeFile(t, filepath.Join(repo, "outgoing.txt"), "out\n")
	gitT(t, repo, "add", "-A")
	gitT(t, repo, "commit", "-q", "-m", "outgoing")
	gitT(t, repo, "fetch", "-q")
	if u, _, _ := UpstreamOf(ctx, repo); u.Ahead != 1 || u.Behind != 1 {
		t.Fatalf("diverged: %+v", u)
	}

	if err := Sync(ctx, repo); err != nil {
		t.Fatal(err)
	}
	if u, _, _ := UpstreamOf(ctx, repo); u.Ahead != 0 || u.Behind != 0 || !exists(filepath.Join(repo, "incoming.txt")) {
		t.Fatalf("after Sync: %+v", u)
	}
	if gitT(t, repo, "rev-parse", "HEAD") != gitT(t, repo, "--git-dir", remote, "rev-parse", "main") {
		t.Fatal("Sync did not push")
	}

	writeFile(t, filepath.Join(repo, "later.txt"), "later\n")
	gitT(t, repo, "add", "-A")
	gitT(t, repo, "commit", "-q", "-m", "later")
	gitT(t, repo, "remote", "set-url", "origin", filepath.Join(repo, "missing-remote"))
	if err := Sync(ctx, repo); err == nil {
		t.Fatal("Sync to a missing remote succeeded")
	}
	if !exists(filepath.Join(repo, "later.txt")) || gitT(t, repo, "log", "-1", "--format=%s") != "later" {
		t.Fatal("a failed Sync lost the local commit")
	}
}

// TestUnpinAll deletes the pins under one prefix and no other.
func TestUnpinAll(t *testing.T) {
	repo := newRepo(t, nil)
	ctx := ctxT(t)
	head := gitT(t, repo, "rev-parse", "HEAD")
	for _, name := range []string{"sessions/a/start", "sessions/a/turns/1-end", "sessions/ab/start"} {
		if err := Pin(ctx, repo, name, head); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := UnpinAll(ctx, repo, "sessions/a"); err != nil || n != 2 {
		t.Fatalf("UnpinAll: %d %v", n, err)
	}
	if left := gitT(t, repo, "for-each-ref", "--format=%(refname)", "refs/ahpd/"); left != "refs/ahpd/sessions/ab/start" {
		t.Fatalf("left %q", left)
	}
	if n, err := UnpinAll(ctx, repo, "sessions/a"); err != nil || n != 0 {
		t.Fatalf("UnpinAll again: %d %v", n, err)
	}
	if _, err := UnpinAll(ctx, repo, "../x"); err == nil {
		t.Error("UnpinAll with a bad prefix succeeded")
	}
}
