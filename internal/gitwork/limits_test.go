package gitwork

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A git that hangs (here a pre-commit hook that sleeps) is stopped at the
// context's deadline, with the processes it started.
func TestTimeoutKillsGitAndItsHooks(t *testing.T) {
	repo := newRepo(t, nil)
	pidFile := filepath.Join(t.TempDir(), "hook.pid")
	hook := filepath.Join(repo, ".git", "hooks", "pre-commit")
	writeFile(t, hook, "#!/bin/sh\necho $$ > "+pidFile+"\nexec sleep 60\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	sh(t, repo, "echo changed > x.txt")

	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Commit(ctx, repo, "never", []string{"x.txt"})
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("Commit with a hanging hook = %v, want a timeout", err)
	}
	if took > 15*time.Second {
		t.Errorf("the timeout took %v", took)
	}
	b, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Skipf("the hook did not start in time on this machine: %v", rerr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the hook's process %d outlived the timeout", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if gitT(t, repo, "rev-list", "--count", "HEAD") != "1" {
		t.Error("the timed-out commit was made")
	}
}

// A context without a deadline gets one: DefaultTimeout, or the call's.
func TestDefaultTimeout(t *testing.T) {
	repo := newRepo(t, nil)
	hook := filepath.Join(repo, ".git", "hooks", "pre-commit")
	writeFile(t, hook, "#!/bin/sh\nexec sleep 60\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
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
