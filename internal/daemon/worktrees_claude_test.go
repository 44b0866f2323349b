package daemon_test

import (
	"path/filepath"
	"testing"

	"github.com/ahpd/ahpd/internal/agent/claude"
	"github.com/ahpd/ahpd/internal/ahp"
)

// TestWorktreeBashToolClaude is the Bash half of the acceptance
// test, with the real claude CLI against the fake model (make check): in
// a worktree session, a Bash tool call that makes a file makes it in the
// worktree, not in the repository's own folder, and the file is in the
// session's and the turn's changesets though no edit tool touched it.
func TestWorktreeBashToolClaude(t *testing.T) {
	ce := newClaudeEnv(t, "turn")
	repo := gitRepo(t, filepath.Join(ce.workDir, "repo"))
	a := ce.dial("a", "")
	sess := "ahp-session:/7001700a-0000-4000-8000-0000000b0a5f"
	a.MustCall("createSession", map[string]any{"channel": sess, "provider": claude.Provider,
		"workingDirectories": []string{ahp.FileURI(repo)}, "config": map[string]any{"isolation": "worktree", "branch": "main"}})
	st := sessionState(t, a, sess)
	dir, err := ahp.LocalPath(st.WorkingDirectories[0])
	if err != nil {
		t.Fatal(err)
	}
	a.Subscribe(st.DefaultChat)
	written := filepath.Join(dir, "written.txt")
	a.Dispatch(st.DefaultChat, turnStarted("t1", `make a file with the shell `+
		`[[call Bash {"command":"printf 'bash\\n' > bash.txt","description":"make bash.txt"}]] `+
		`[[call Write {"file_path":"`+written+`","content":"written\n"}]]`))
	if end := csConfirmAll(t, a, st.DefaultChat, "t1"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended %s: %s", end.Type(), end.Raw)
	}
	if !fileExists(filepath.Join(dir, "bash.txt")) || fileExists(filepath.Join(repo, "bash.txt")) {
		t.Fatalf("the Bash call's file: in the worktree %v, in the repository %v",
			fileExists(filepath.Join(dir, "bash.txt")), fileExists(filepath.Join(repo, "bash.txt")))
	}
	for _, ch := range []string{sess + "/changeset/session", sess + "/changeset/turn/t1"} {
		if cs := changesetOf(t, a, ch); fileNamed(cs, "bash.txt") == nil || fileNamed(cs, "written.txt") == nil {
			t.Fatalf("%s: %+v", ch, cs)
		}
	}
	// The session's changesets hold the Write call's file too: the chat
	// keeps no tool-call changesets of its own beside them.
	raw, _ := a.Subscribe(st.DefaultChat)
	if cs := chatState(t, raw); len(cs.Changesets) != 0 {
		t.Fatalf("a git session's chat lists changesets of its own: %+v", cs.Changesets)
	}
}
