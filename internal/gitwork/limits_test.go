package gitwork

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A context without a deadline gets one: DefaultTimeout, or the call's.
func TestDefaultTimeout(t *testing.T) {
	repo := newRepo(t, nil)
	preCommitHook(t, repo, "exec sleep 60")
	sh(t, repo, "echo changed > x.txt && git add x.txt")
	_, err := run(context.Background(), repo, opts{timeout: 500 * time.Millisecond}, "commit", "-q", "-m", "never")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("run with no deadline and a 500ms bound = %v", err)
	}
	// A cancelled context is Canceled, not a timeout.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := run(ctx, repo, opts{}, "status"); !errors.Is(err, context.Canceled) {
		t.Errorf("run with a cancelled context = %v", err)
	}
}

// Output past the cap stops the call with ErrOutputTooLarge.
func TestOutputCap(t *testing.T) {
	repo := newRepo(t, nil)
	_, err := run(ctxT(t), repo, opts{maxOut: 16}, "cat-file", "-p", "HEAD")
	if !errors.Is(err, ErrOutputTooLarge) {
		t.Errorf("run past its output cap = %v", err)
	}
	if out, err := run(ctxT(t), repo, opts{maxOut: 1 << 10}, "cat-file", "-p", "HEAD"); err != nil || !strings.HasPrefix(string(out), "tree ") {
		t.Errorf("run under its cap = %q, %v", out, err)
	}
}

// The daemon's own GIT_DIR and friends do not redirect a call.
func TestEnvironmentDoesNotRedirect(t *testing.T) {
	repo := newRepo(t, nil)
	other := newRepo(t, map[string]string{"other.txt": "o\n"})
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_WORK_TREE", other)
	t.Setenv("GIT_INDEX_FILE", filepath.Join(other, ".git", "index"))
	if top, err := TopLevel(ctxT(t), repo); top != repo || err != nil {
		t.Errorf("TopLevel with GIT_DIR set elsewhere = %q, %v", top, err)
	}
	if err := os.WriteFile(filepath.Join(repo, "n.txt"), []byte("n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Changes(ctxT(t), repo, "HEAD")
	if err != nil || len(c) != 1 || c[0].Path != "n.txt" {
		t.Errorf("Changes with GIT_DIR set elsewhere = %+v, %v", c, err)
	}
}
