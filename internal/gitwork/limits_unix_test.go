//go:build unix

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
	preCommitHook(t, repo, "echo $$ > "+pidFile+"\nexec sleep 60")
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
