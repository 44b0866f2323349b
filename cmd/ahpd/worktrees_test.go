package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// `ahpd worktrees` lists the worktree a disposed session left dirty, as a
// table and as JSON; `ahpd worktrees prune` removes it once it is clean.
func TestWorktreesVerb(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	data, work := t.TempDir(), t.TempDir()
	repo := filepath.Join(work, "repo")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", repo},
		{"-C", repo, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "seed"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	p := serveBinary(t, data, work)
	env := []string{"AHPD_URL=" + p.url}

	c := ahptest.Dial(t, p.url, "")
	c.Initialize("test", ahp.RootURI)
	sess := "ahp-session:/f0000000-0000-4000-8000-000000000001"
	c.MustCall("createSession", map[string]any{"channel": sess, "provider": "script",
		"workingDirectories": []string{ahp.FileURI(repo)}, "config": map[string]any{"isolation": "worktree", "branch": "main"}})
	raw, _ := c.Subscribe(sess)
	var st ahp.SessionState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	dir, _ := ahp.LocalPath(st.WorkingDirectories[0])
	if err := os.WriteFile(filepath.Join(dir, "work.txt"), []byte("work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.MustCall("disposeSession", map[string]any{"channel": sess})

	out, errOut, code := ahpdRun(t, env, "worktrees", "--json")
	var items []struct {
		Session, Path, Kept string
		Live, Exists        bool
	}
	if code != 0 || json.Unmarshal([]byte(out), &items) != nil || len(items) != 1 ||
		items[0].Path != dir || items[0].Kept != "dirty" || items[0].Live || !items[0].Exists || items[0].Session != sess {
		t.Fatalf("worktrees --json: exit %d %q %s", code, out, errOut)
	}
	if out, _, code = ahpdRun(t, env, "worktrees"); code != 0 || !strings.Contains(out, dir) || !strings.Contains(out, "dirty") {
		t.Fatalf("worktrees: exit %d %q", code, out)
	}
	if err := os.Remove(filepath.Join(dir, "work.txt")); err != nil {
		t.Fatal(err)
	}
	if out, _, code = ahpdRun(t, env, "worktrees", "prune"); code != 0 || !strings.Contains(out, "removed") {
		t.Fatalf("worktrees prune: exit %d %q", code, out)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatal("prune left the clean worktree")
	}
	if out, _, _ = ahpdRun(t, env, "worktrees", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("after prune: %q", out)
	}
}
