package daemon_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// Sessions in git worktrees and changesets from the work tree (issue 33),
// against the real git, the daemon on port 0 and its script agent.

// needGitBinary skips a test on a machine without git.
func needGitBinary(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// gitIn runs git in dir for a test's setup and returns its output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitRepo makes a repository at dir on branch main holding seed.txt
// ("seed\n") in one commit, with an identity of its own.
func gitRepo(t *testing.T, dir string) string {
	t.Helper()
	needGitBinary(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "init", "-q", "-b", "main")
	gitIn(t, dir, "config", "user.name", "Test")
	gitIn(t, dir, "config", "user.email", "test@example.com")
	gitIn(t, dir, "config", "commit.gpgsign", "false")
	writeTestFile(t, filepath.Join(dir, "seed.txt"), "seed\n")
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "seed")
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fileExists(path string) bool { _, err := os.Lstat(path); return err == nil }

// worktreeSession creates a session of the script agent in repo with
// isolation "worktree" from branch, subscribes it and its default chat,
// and returns the session, the chat and the folder it works in.
func worktreeSession(t *testing.T, c *ahptest.Client, uri, repo, branch string) (sess, def, dir string) {
	t.Helper()
	c.MustCall("createSession", map[string]any{"channel": uri, "provider": "script",
		"workingDirectories": []string{ahp.FileURI(repo)}, "config": map[string]any{"isolation": "worktree", "branch": branch}})
	raw, _ := c.Subscribe(uri)
	var st ahp.SessionState
	if err := json.Unmarshal(raw, &st); err != nil || len(st.WorkingDirectories) != 1 {
		t.Fatalf("session state %s: %v", raw, err)
	}
	dir, err := ahp.LocalPath(st.WorkingDirectories[0])
	if err != nil {
		t.Fatal(err)
	}
	c.Subscribe(st.DefaultChat)
	return uri, st.DefaultChat, dir
}

// changesetFiles subscribes to a changeset channel and returns its state.
func changesetOf(t *testing.T, c *ahptest.Client, channel string) ahp.ChangesetState {
	t.Helper()
	raw, _ := c.Subscribe(channel)
	var st ahp.ChangesetState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("changeset %s: %v\n%s", channel, err, raw)
	}
	return st
}

// fileNamed is the file of st whose id ends with /name, nil when none.
func fileNamed(st ahp.ChangesetState, name string) *ahp.ChangesetFile {
	for i, f := range st.Files {
		if strings.HasSuffix(f.ID, "/"+name) {
			return &st.Files[i]
		}
	}
	return nil
}

func listWorktrees(t *testing.T, c *ahptest.Client, method string) []map[string]any {
	t.Helper()
	var res struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(c.MustCall(method, map[string]any{"channel": ahp.RootURI}), &res); err != nil {
		t.Fatal(err)
	}
	return res.Items
}

// TestWorktreeSessionKeepsItsWorkApart is the acceptance test: a
// session in a worktree of its own runs a ! command that makes a file and
// changes another; both are in the session's and the turn's changesets
// and neither reaches the repository's own folder; undo of one restores
// it through git; disposing the session keeps the dirty worktree (listed
// by ahpd worktrees), disposing a clean one removes it and its branch, and
// prune removes the kept one once it is clean.
func TestWorktreeSessionKeepsItsWorkApart(t *testing.T) {
	e := newEnv(t)
	repo := gitRepo(t, filepath.Join(e.workDir, "repo"))
	c := e.client("worktrees")
	sess, def, dir := worktreeSession(t, c, "ahp-session:/a11ce000-0000-4000-8000-000000000001", repo, "main")

	root, _ := filepath.EvalSymlinks(filepath.Join(e.cfg.DataDir, "worktrees"))
	if filepath.Dir(dir) != root {
		t.Fatalf("the session works in %s, not in a worktree under %s", dir, root)
	}
	if b := gitIn(t, dir, "branch", "--show-current"); b != "ahpd/a11ce000-0000-4000-8000-000000000001" {
		t.Fatalf("the worktree is on branch %q", b)
	}

	sendTurn(t, c, def, "t1", "!printf 'made\\n' > made.txt && printf 'changed\\n' > seed.txt")
	if pins := gitIn(t, repo, "for-each-ref", "--format=%(refname)", "refs/ahpd/"); strings.Count(pins, "\n") != 1 {
		t.Fatalf("the turn's two snapshots are not pinned from git gc: %q", pins)
	}
	if !fileExists(filepath.Join(dir, "made.txt")) {
		t.Fatal("the ! command did not run in the worktree")
	}
	if fileExists(filepath.Join(repo, "made.txt")) || gitIn(t, repo, "status", "--porcelain") != "" {
		t.Fatal("the ! command's work reached the repository's own folder")
	}
	for _, ch := range []string{sess + "/changeset/session", sess + "/changeset/turn/t1", sess + "/changeset/uncommitted"} {
		st := changesetOf(t, c, ch)
		if st.Status != ahp.ChangesetReady || fileNamed(st, "made.txt") == nil || fileNamed(st, "seed.txt") == nil {
			t.Fatalf("%s: %+v, want made.txt and seed.txt", ch, st)
		}
	}

	turn := sess + "/changeset/turn/t1"
	seedURI := ahp.FileURI(filepath.Join(dir, "seed.txt"))
	res := c.MustCall("invokeChangesetOperation", map[string]any{"channel": turn, "operationId": "undo",
		"target": map[string]any{"kind": "resource", "resource": seedURI}})
	if !strings.Contains(string(res), "Undid 1") {
		t.Fatalf("undo answered %s", res)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "seed.txt")); string(b) != "seed\n" {
		t.Fatalf("undo left seed.txt %q", b)
	}
	if !fileExists(filepath.Join(dir, "made.txt")) {
		t.Fatal("undo of seed.txt removed made.txt")
	}

	c.MustCall("disposeSession", map[string]any{"channel": sess})
	if !fileExists(filepath.Join(dir, "made.txt")) {
		t.Fatal("disposing the session deleted its uncommitted work")
	}
	if pins := gitIn(t, repo, "for-each-ref", "refs/ahpd/"); pins != "" {
		t.Fatalf("the disposed session's snapshots are still pinned: %q", pins)
	}
	items := listWorktrees(t, c, "x-ahpd/listWorktrees")
	if len(items) != 1 || items[0]["path"] != dir || items[0]["kept"] != "dirty" || items[0]["live"] != false {
		t.Fatalf("worktrees after dispose: %v", items)
	}

	clean, _, cleanDir := worktreeSession(t, c, "ahp-session:/a11ce000-0000-4000-8000-000000000002", repo, "main")
	c.MustCall("disposeSession", map[string]any{"channel": clean})
	if fileExists(cleanDir) {
		t.Fatalf("a clean worktree %s outlived its session", cleanDir)
	}
	if out := gitIn(t, repo, "branch", "--list", "ahpd/*"); strings.Contains(out, "000000000002") {
		t.Fatalf("the clean worktree's branch outlived it: %s", out)
	}

	if err := os.Remove(filepath.Join(dir, "made.txt")); err != nil {
		t.Fatal(err)
	}
	pruned := listWorktrees(t, c, "x-ahpd/pruneWorktrees")
	if len(pruned) != 1 || pruned[0]["pruned"] != "removed" || fileExists(dir) {
		t.Fatalf("prune of a worktree made clean: %v", pruned)
	}
	if left := listWorktrees(t, c, "x-ahpd/listWorktrees"); len(left) != 0 {
		t.Fatalf("worktrees after prune: %v", left)
	}
}

// TestWorktreeIsolationRefusals: a worktree asked for in a folder that is
// no repository, or on a machine without git, is refused -32602 with the
// reason, and no session is made; a branch that does not exist is
// refused with git's own words.
func TestWorktreeIsolationRefusals(t *testing.T) {
	e := newEnv(t)
	repo := gitRepo(t, filepath.Join(e.workDir, "repo"))
	plain := filepath.Join(e.workDir, "plain")
	if err := os.MkdirAll(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	c := e.client("refusals")
	create := func(uri, dir, branch string) *ahptest.RPCError {
		_, err := c.Call("createSession", map[string]any{"channel": uri, "provider": "script",
			"workingDirectories": []string{ahp.FileURI(dir)}, "config": map[string]any{"isolation": "worktree", "branch": branch}})
		return err
	}
	wantCode(t, create("ahp-session:/b0000000-0000-4000-8000-000000000001", plain, "main"), ahp.CodeInvalidParams, "not inside a git repository")
	wantCode(t, create("ahp-session:/b0000000-0000-4000-8000-000000000002", repo, "no-such-branch"), ahp.CodeInvalidParams, "no-such-branch")

	t.Setenv("PATH", t.TempDir()) // no git on it
	wantCode(t, create("ahp-session:/b0000000-0000-4000-8000-000000000003", repo, "main"), ahp.CodeInvalidParams, "git is not installed")
	if items := sessionList(t, c); len(items) != 0 {
		t.Fatalf("refused sessions were made: %v", items)
	}
}

// TestGitChangesetGrants: a token without changeset:commit may read a git
// session's changesets and not commit them; one without host:worktrees
// may not list worktrees; a git session's changeset refuses an operation
// it does not offer, and one of a session that is not in git does not
// exist.
func TestGitChangesetGrants(t *testing.T) {
	const reader = "reader-token"
	e := newEnv(t, func(c *daemon.Config) {
		c.Tokens = []daemon.TokenConfig{{Token: reader, Principal: "user:reader", Grants: []string{"session:read", "session:write"}}}
	})
	repo := gitRepo(t, filepath.Join(e.workDir, "repo"))
	root := e.client("root")
	sess := "ahp-session:/c0000000-0000-4000-8000-000000000001"
	root.MustCall("createSession", map[string]any{"channel": sess, "provider": "script", "workingDirectories": []string{ahp.FileURI(repo)}})
	raw, _ := root.Subscribe(sess)
	var st ahp.SessionState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	def := st.DefaultChat
	root.Subscribe(def)
	sendTurn(t, root, def, "t1", "!printf 'x\\n' > x.txt")

	rc := ahptest.Dial(t, e.d.URL(), reader)
	rc.Initialize("reader")
	uncommitted := sess + "/changeset/uncommitted"
	if st := changesetOf(t, rc, uncommitted); fileNamed(st, "x.txt") == nil {
		t.Fatalf("the reader sees %+v", st)
	}
	_, err := rc.Call("invokeChangesetOperation", map[string]any{"channel": uncommitted, "operationId": "commit"})
	wantCode(t, err, ahp.CodePermissionDenied, "changeset:commit")
	_, err = rc.Call("x-ahpd/listWorktrees", map[string]any{"channel": ahp.RootURI})
	wantCode(t, err, ahp.CodePermissionDenied, "host:worktrees")
	_, err = root.Call("invokeChangesetOperation", map[string]any{"channel": uncommitted, "operationId": "rm-rf"})
	wantCode(t, err, ahp.CodeInvalidParams, "rm-rf")
	_, err = root.Call("invokeChangesetOperation", map[string]any{"channel": uncommitted, "operationId": "discard-changes",
		"target": map[string]any{"kind": "resource", "resource": ahp.FileURI(filepath.Join(repo, "..", "outside.txt"))}})
	wantCode(t, err, ahp.CodeInvalidParams, "not a file of this changeset")

	plainDir := filepath.Join(e.workDir, "plain")
	if err := os.MkdirAll(plainDir, 0o755); err != nil {
		t.Fatal(err)
	}
	plain := "ahp-session:/c0000000-0000-4000-8000-000000000002"
	root.MustCall("createSession", map[string]any{"channel": plain, "provider": "script", "workingDirectories": []string{ahp.FileURI(plainDir)}})
	_, err = root.Call("subscribe", map[string]any{"channel": plain + "/changeset/uncommitted"})
	wantCode(t, err, ahp.CodeSessionNotFound, "git")
	if !strings.Contains(fmt.Sprint(sessionList(t, root)), plain) {
		t.Fatal("the plain session is missing")
	}
}

// TestGitSessionSurvivesRestart: after a restart a worktree session still
// works in its worktree, its turns' changesets are still computed from
// the snapshots taken before it, its catalogue is still the full one, and
// a new turn's ! command still runs in the worktree.
func TestGitSessionSurvivesRestart(t *testing.T) {
	e := newEnv(t)
	repo := gitRepo(t, filepath.Join(e.workDir, "repo"))
	c := e.client("before")
	sess, def, dir := worktreeSession(t, c, "ahp-session:/d0000000-0000-4000-8000-000000000001", repo, "main")
	sendTurn(t, c, def, "t1", "!printf 'one\\n' > one.txt")
	e.restart()

	c = e.client("after")
	raw, _ := c.Subscribe(sess)
	var st ahp.SessionState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.WorkingDirectories) != 1 || st.WorkingDirectories[0] != ahp.FileURI(dir) || len(st.Changesets) != 5 {
		t.Fatalf("after restart: directories %v, catalogue %+v", st.WorkingDirectories, st.Changesets)
	}
	if cs := changesetOf(t, c, sess+"/changeset/turn/t1"); cs.Status != ahp.ChangesetReady || fileNamed(cs, "one.txt") == nil {
		t.Fatalf("turn t1 after restart: %+v", cs)
	}
	c.Subscribe(def)
	sendTurn(t, c, def, "t2", "!printf 'two\\n' > two.txt")
	if !fileExists(filepath.Join(dir, "two.txt")) || fileExists(filepath.Join(repo, "two.txt")) {
		t.Fatal("after restart the ! command ran outside the worktree")
	}
	cs := changesetOf(t, c, sess+"/changeset/turn/t2")
	if fileNamed(cs, "two.txt") == nil || fileNamed(cs, "one.txt") != nil {
		t.Fatalf("turn t2: %+v", cs)
	}
}

// TestFolderSessionKeepsToolCallChangesets: a session in a folder that is
// not a git repository is no git session: it has no session changesets
// (its chats keep the changesets taken from their edit tool calls), and a
// ! command's file is in none.
func TestFolderSessionKeepsToolCallChangesets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.client("folder")
	sess, def := e.createSession(c, "ahp-session:/e0000000-0000-4000-8000-000000000001")
	c.Subscribe(def)
	sendTurn(t, c, def, "t1", "!printf 'x\\n' > folder.txt")
	raw, _ := c.Subscribe(sess)
	var st ahp.SessionState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Changesets) != 0 || st.Meta["git"] != nil {
		t.Fatalf("a folder session advertises git changesets %+v, meta %v", st.Changesets, st.Meta)
	}
	_, err := c.Call("subscribe", map[string]any{"channel": sess + "/changeset/uncommitted"})
	wantCode(t, err, ahp.CodeSessionNotFound, "")
	chatRaw, _ := c.Subscribe(def)
	if cs := chatState(t, chatRaw); len(cs.Changesets) != 0 {
		t.Fatalf("a ! command's file is in the chat's tool-call changesets: %+v", cs.Changesets)
	}
}
