package gitwork

import (
	"context"
	"fmt"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCloneChecksOutARevisionOnANewBranch: a file: source cloned at its
// default branch, at another branch, at a tag and at a commit, each on the
// new branch; a revision the source lacks fails and leaves nothing.
func TestCloneChecksOutARevisionOnANewBranch(t *testing.T) {
	repo := newRepo(t, nil)
	ctx := ctxT(t)
	first := gitT(t, repo, "rev-parse", "HEAD")
	gitT(t, repo, "tag", "v1")
	sh(t, repo, "git checkout -q -b feature && echo f > f.txt && git add f.txt && git commit -q -m feature && git checkout -q main")
	feature := gitT(t, repo, "rev-parse", "feature")
	sh(t, repo, "echo z > z.txt && git add z.txt && git commit -q -m z")
	mainHead := gitT(t, repo, "rev-parse", "HEAD")
	root := filepath.Join(filepath.Dir(repo), "worktrees")

	for _, tc := range []struct {
		name, revision, want, file string
	}{
		{"default", "", mainHead, "z.txt"},
		{"branch", "feature", feature, "f.txt"},
		{"tag", "v1", first, "x.txt"},
		{"commit", first, first, "x.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dest := filepath.Join(root, tc.name)
			wt, err := Clone(ctx, root, dest, "file://"+repo, tc.revision, "ahpd/"+tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if wt.Head != tc.want || wt.Branch != "ahpd/"+tc.name || wt.Path != dest {
				t.Errorf("Clone = %+v; want head %s on ahpd/%s at %s", wt, tc.want, tc.name, dest)
			}
			if got := gitT(t, dest, "rev-parse", "--abbrev-ref", "HEAD"); got != "ahpd/"+tc.name {
				t.Errorf("the clone is on %q", got)
			}
			if !exists(filepath.Join(dest, tc.file)) {
				t.Errorf("%s is not checked out", tc.file)
			}
			if st := gitT(t, dest, "status", "--porcelain"); st != "" {
				t.Errorf("a fresh clone is dirty: %q", st)
			}
		})
	}
	dest := filepath.Join(root, "missing")
	if _, err := Clone(ctx, root, dest, "file://"+repo, "no-such-branch", "ahpd/missing"); err == nil || !strings.Contains(err.Error(), "no-such-branch") {
		t.Errorf("Clone at a missing revision = %v", err)
	}
	if exists(dest) {
		t.Error("a failed clone left its folder")
	}
	if _, err := Clone(ctx, root, filepath.Join(root, "gone"), "file://"+filepath.Join(repo, "nope"), "", "ahpd/gone"); err == nil || exists(filepath.Join(root, "gone")) {
		t.Errorf("Clone of a missing repository = %v", err)
	}
}

// TestCloneRefusals: a destination outside root, root itself, an existing
// one, a source of another transport or with a credential, a revision git
// would read as an option.
func TestCloneRefusals(t *testing.T) {
	repo := newRepo(t, nil)
	ctx := ctxT(t)
	root := filepath.Join(filepath.Dir(repo), "worktrees")
	src := "file://" + repo
	for name, call := range map[string]func() error{
		"outside root": func() error {
			_, err := Clone(ctx, root, filepath.Join(filepath.Dir(repo), "out"), src, "", "ahpd/a")
			return err
		},
		"dot-dot": func() error {
			_, err := Clone(ctx, root, filepath.Join(root, "..", "out"), src, "", "ahpd/a")
			return err
		},
		"root": func() error { _, err := Clone(ctx, root, root, src, "", "ahpd/a"); return err },
		"existing": func() error {
			_, err := Clone(ctx, root, filepath.Dir(repo), src, "", "ahpd/a")
			return err
		},
		"ext transport": func() error {
			_, err := Clone(ctx, root, filepath.Join(root, "e"), "ext::sh -c touch% /tmp/pwned", "", "ahpd/a")
			return err
		},
		"credential": func() error {
			_, err := Clone(ctx, root, filepath.Join(root, "c"), "https://user:pw@127.0.0.1/r.git", "", "ahpd/a")
			return err
		},
		"option revision": func() error {
			_, err := Clone(ctx, root, filepath.Join(root, "o"), src, "--upload-pack=x", "ahpd/a")
			return err
		},
		"bad branch": func() error { _, err := Clone(ctx, root, filepath.Join(root, "b"), src, "", "-x"); return err },
	} {
		if err := call(); err == nil {
			t.Errorf("%s: Clone succeeded", name)
		}
	}
	if exists(filepath.Join(filepath.Dir(repo), "out")) {
		t.Error("a refused clone wrote outside root")
	}
}

// TestCloneOverHTTP clones through git's own smart HTTP server
// (git http-backend) on 127.0.0.1: a clone URL, not a local path.
func TestCloneOverHTTP(t *testing.T) {
	repo := newRepo(t, nil)
	backend, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skip("git --exec-path:", err)
	}
	bin := filepath.Join(strings.TrimSpace(string(backend)), "git-http-backend")
	if _, err := os.Stat(bin); err != nil {
		t.Skip("git-http-backend is not installed (apt-get install git)")
	}
	gitT(t, repo, "config", "http.receivepack", "false")
	srv := httptest.NewServer(&cgi.Handler{Path: bin, Env: []string{
		"GIT_PROJECT_ROOT=" + filepath.Dir(repo), "GIT_HTTP_EXPORT_ALL=1",
	}})
	defer srv.Close()
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("the test server is at %s, not on 127.0.0.1", srv.URL)
	}
	ctx := ctxT(t)
	root := filepath.Join(t.TempDir(), "worktrees")
	wt, err := Clone(ctx, root, filepath.Join(root, "s"), srv.URL+"/repo/.git", "main", "ahpd/s")
	if err != nil {
		t.Fatal(err)
	}
	if wt.Head != gitT(t, repo, "rev-parse", "HEAD") || readFile(t, filepath.Join(wt.Path, "x.txt")) != "x1\nx2\n" {
		t.Errorf("Clone over HTTP = %+v", wt)
	}
}

// TestRemoveCloneKeepsUnpushedWork: a clone is removed only when clean and
// all its commits are on the remote; a dirty one, one with a stash and one
// with a commit never pushed are kept. A main work tree without the clone
// mark is never removed, even under root.
func TestRemoveCloneKeepsUnpushedWork(t *testing.T) {
	repo := newRepo(t, nil)
	ctx := ctxT(t)
	root := filepath.Join(filepath.Dir(repo), "worktrees")
	clone := func(name string) string {
		t.Helper()
		wt, err := Clone(ctx, root, filepath.Join(root, name), "file://"+repo, "", "ahpd/"+name)
		if err != nil {
			t.Fatal(err)
		}
		gitT(t, wt.Path, "config", "user.name", "Test")
		gitT(t, wt.Path, "config", "user.email", "test@example.com")
		return wt.Path
	}

	clean := clone("clean")
	if r, err := RemoveWorktree(ctx, root, clean, ""); err != nil || !r.Removed || exists(clean) {
		t.Errorf("RemoveWorktree(clean clone) = %+v, %v", r, err)
	}

	dirty := clone("dirty")
	writeFile(t, filepath.Join(dirty, "new.txt"), "new\n")
	if r, err := RemoveWorktree(ctx, root, dirty, ""); err != nil || r.Removed || r.Kept != KeptDirty || !exists(filepath.Join(dirty, "new.txt")) {
		t.Errorf("RemoveWorktree(dirty clone) = %+v, %v", r, err)
	}

	stashed := clone("stashed")
	sh(t, stashed, "echo more >> x.txt && git stash -q")
	if r, err := RemoveWorktree(ctx, root, stashed, ""); err != nil || r.Removed || r.Kept != KeptDirty {
		t.Errorf("RemoveWorktree(clone with a stash) = %+v, %v", r, err)
	}

	unpushed := clone("unpushed")
	sh(t, unpushed, "echo more >> x.txt && git commit -q -am more")
	if r, err := RemoveWorktree(ctx, root, unpushed, ""); err != nil || r.Removed || r.Kept != KeptUnmerged {
		t.Errorf("RemoveWorktree(clone with an unpushed commit) = %+v, %v", r, err)
	}
	// Pushed (here: the source fetched it), the same clone goes.
	gitT(t, repo, "fetch", "-q", unpushed, "ahpd/unpushed:refs/heads/taken")
	gitT(t, unpushed, "fetch", "-q", "origin")
	if r, err := RemoveWorktree(ctx, root, unpushed, ""); err != nil || !r.Removed {
		t.Errorf("RemoveWorktree(clone whose commit the remote has) = %+v, %v", r, err)
	}

	// A repository of the user's that happens to lie under root.
	own := filepath.Join(root, "own")
	if err := os.MkdirAll(own, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, own, "init", "-q", "-b", "main")
	if r, err := RemoveWorktree(ctx, root, own, ""); err == nil || r.Removed || !exists(filepath.Join(own, ".git")) {
		t.Errorf("RemoveWorktree(an unmarked repository under root) = %+v, %v", r, err)
	}
}

// TestRemoveAllSettledOutlastsAWriter: a clone whose directory a process
// still writes into as it is removed (a git command finishing) is removed
// once the writer stops, where one os.RemoveAll fails with "directory not
// empty".
func TestRemoveAllSettledOutlastsAWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "clone")
	objects := filepath.Join(dir, ".git", "objects")
	if err := os.MkdirAll(objects, 0o755); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// As git writes a loose object: a fan-out directory, then
			// the file; nothing once the clone's directories are gone.
			sub := filepath.Join(objects, fmt.Sprintf("%02x", i%256))
			_ = os.Mkdir(sub, 0o755)
			_ = os.WriteFile(filepath.Join(sub, fmt.Sprintf("o%d", i)), nil, 0o644)
		}
	}()
	time.AfterFunc(150*time.Millisecond, func() { close(stop) })
	err := removeAllSettled(context.Background(), dir)
	<-done
	if err != nil {
		t.Fatalf("removeAllSettled with a writer that stops: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the clone is still there: %v", err)
	}
}
