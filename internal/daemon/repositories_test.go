package daemon_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// Repository-backed sessions (issue 33 §2; AHP channels-session at
// 043bc34700935951efc4528c59e9d3158f463bfc, "Repository-backed creation"),
// against the real git and the daemon on port 0.

// repositorySession creates a session of the script agent from repos and
// returns its state once subscribed, and its default chat subscribed too.
func repositorySession(t *testing.T, c *ahptest.Client, uri string, repos ...map[string]any) ahp.SessionState {
	t.Helper()
	c.MustCall("createSession", map[string]any{"channel": uri, "provider": "script", "repositories": repos})
	raw, _ := c.Subscribe(uri)
	var st ahp.SessionState
	if err := json.Unmarshal(raw, &st); err != nil || len(st.WorkingDirectories) != 1 {
		t.Fatalf("session state %s: %v", raw, err)
	}
	c.Subscribe(st.DefaultChat)
	return st
}

// TestRepositorySessionClonesItsRepository: initialize advertises
// repositoryPreparation; a session created from a repository at a
// revision works in a clone of it under the worktrees folder, on a branch
// of its own, its state and summary keep the repositories exactly as
// asked, before and after a restart; a ! command's file is in its
// changeset and not in the source; disposing it keeps the dirty clone
// (listed), prune removes it once clean, and a clean one goes at dispose.
func TestRepositorySessionClonesItsRepository(t *testing.T) {
	e := newEnv(t)
	repo := gitRepo(t, filepath.Join(e.workDir, "repo"))
	gitIn(t, repo, "checkout", "-q", "-b", "feature")
	writeTestFile(t, filepath.Join(repo, "feature.txt"), "feature\n")
	gitIn(t, repo, "add", "feature.txt")
	gitIn(t, repo, "commit", "-q", "-m", "feature")
	gitIn(t, repo, "checkout", "-q", "main")

	c := ahptest.Dial(t, e.d.URL(), e.cfg.ConnectionToken)
	var init struct {
		RepositoryPreparation *ahp.RepositoryPreparationCapabilities `json:"repositoryPreparation"`
	}
	if err := json.Unmarshal(c.Initialize("repos", ahp.RootURI), &init); err != nil || init.RepositoryPreparation == nil || !init.RepositoryPreparation.Revision {
		t.Fatalf("initialize: repositoryPreparation %+v, %v", init.RepositoryPreparation, err)
	}

	source := "file://" + repo
	sess := "ahp-session:/e0000000-0000-4000-8000-000000000001"
	st := repositorySession(t, c, sess, map[string]any{"source": source, "revision": "feature"})
	want := []ahp.RepositorySource{{Source: ahp.URI(source), Revision: "feature"}}
	if !ahp.SameRepositories(st.Repositories, want) {
		t.Fatalf("session state repositories %+v, want %+v", st.Repositories, want)
	}
	dir, err := ahp.LocalPath(st.WorkingDirectories[0])
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.EvalSymlinks(filepath.Join(e.cfg.DataDir, "worktrees"))
	if filepath.Dir(dir) != root {
		t.Fatalf("the session works in %s, not in a clone under %s", dir, root)
	}
	if !fileExists(filepath.Join(dir, "feature.txt")) {
		t.Fatal("the clone is not at the revision asked for")
	}
	if b := gitIn(t, dir, "branch", "--show-current"); b != "ahpd/e0000000-0000-4000-8000-000000000001" {
		t.Fatalf("the clone is on branch %q", b)
	}
	for _, s := range sessionList(t, c) {
		if s.Resource == sess && !ahp.SameRepositories(s.Repositories, want) {
			t.Fatalf("the summary's repositories are %+v", s.Repositories)
		}
	}

	sendTurn(t, c, st.DefaultChat, "t1", "!printf 'made\\n' > made.txt")
	if !fileExists(filepath.Join(dir, "made.txt")) || fileExists(filepath.Join(repo, "made.txt")) {
		t.Fatal("the ! command did not run in the clone alone")
	}
	if cs := changesetOf(t, c, sess+"/changeset/uncommitted"); fileNamed(cs, "made.txt") == nil {
		t.Fatalf("the clone's changeset lacks made.txt: %+v", cs)
	}

	e.restart()
	c = e.client("after")
	raw, _ := c.Subscribe(sess)
	var after ahp.SessionState
	if err := json.Unmarshal(raw, &after); err != nil {
		t.Fatal(err)
	}
	if !ahp.SameRepositories(after.Repositories, want) || len(after.WorkingDirectories) != 1 || after.WorkingDirectories[0] != st.WorkingDirectories[0] {
		t.Fatalf("after a restart: repositories %+v, directories %v", after.Repositories, after.WorkingDirectories)
	}

	c.MustCall("disposeSession", map[string]any{"channel": sess})
	if !fileExists(filepath.Join(dir, "made.txt")) {
		t.Fatal("disposing the session deleted its uncommitted work")
	}
	items := listWorktrees(t, c, "x-ahpd/listWorktrees")
	if len(items) != 1 || items[0]["path"] != dir || items[0]["kept"] != "dirty" || items[0]["repository"] != source {
		t.Fatalf("worktrees after dispose: %v", items)
	}
	if err := os.Remove(filepath.Join(dir, "made.txt")); err != nil {
		t.Fatal(err)
	}
	if pruned := listWorktrees(t, c, "x-ahpd/pruneWorktrees"); len(pruned) != 1 || pruned[0]["pruned"] != "removed" || fileExists(dir) {
		t.Fatalf("prune of a clone made clean: %v", pruned)
	}

	clean := repositorySession(t, c, "ahp-session:/e0000000-0000-4000-8000-000000000002", map[string]any{"source": source})
	cleanDir, _ := ahp.LocalPath(clean.WorkingDirectories[0])
	if !fileExists(filepath.Join(cleanDir, "seed.txt")) || fileExists(filepath.Join(cleanDir, "feature.txt")) {
		t.Fatal("a clone at the default revision is not at main")
	}
	c.MustCall("disposeSession", map[string]any{"channel": clean.Resource})
	if fileExists(cleanDir) {
		t.Fatalf("a clean clone %s outlived its session", cleanDir)
	}
	if fileExists(filepath.Join(repo, "made.txt")) || gitIn(t, repo, "status", "--porcelain") != "" {
		t.Fatal("the source repository changed")
	}
}

// TestRepositorySessionRefusals: every malformed or forbidden repository
// list is refused -32602 before anything is cloned, a token without
// session:clone is refused PermissionDenied, a clone that fails
// leaves no folder and no session, and configuration queries take the
// list as context without cloning. Without git the host advertises no
// repositoryPreparation and refuses the list.
func TestRepositorySessionRefusals(t *testing.T) {
	const writer = "writer-token"
	e := newEnv(t, func(c *daemon.Config) {
		c.Tokens = []daemon.TokenConfig{{Token: writer, Principal: "user:w", Grants: []string{"session:read", "session:write"}}}
	})
	repo := gitRepo(t, filepath.Join(e.workDir, "repo"))
	outside := gitRepo(t, filepath.Join(t.TempDir(), "outside"))
	c := e.client("refusals")
	source := "file://" + repo
	create := func(params map[string]any) *ahptest.RPCError {
		params["channel"], params["provider"] = "ahp-session:/f0000000-0000-4000-8000-000000000001", "script"
		_, err := c.Call("createSession", params)
		return err
	}
	repos := func(list ...map[string]any) []map[string]any { return append([]map[string]any{}, list...) }
	wantCode(t, create(map[string]any{"repositories": repos()}), ahp.CodeInvalidParams, "empty")
	wantCode(t, create(map[string]any{"repositories": repos(map[string]any{"source": source}), "workingDirectories": []string{ahp.FileURI(repo)}}),
		ahp.CodeInvalidParams, "mutually exclusive")
	wantCode(t, create(map[string]any{"repositories": repos(map[string]any{"source": source}, map[string]any{"source": source})}), ahp.CodeInvalidParams, "one")
	wantCode(t, create(map[string]any{"repositories": repos(map[string]any{"source": "https://u:secret@127.0.0.1/r.git"})}), ahp.CodeInvalidParams, "credential")
	wantCode(t, create(map[string]any{"repositories": repos(map[string]any{"source": source, "revision": ""})}), ahp.CodeInvalidParams, "blank")
	wantCode(t, create(map[string]any{"repositories": repos(map[string]any{"source": "ext::sh -c id"})}), ahp.CodeInvalidParams, "source")
	wantCode(t, create(map[string]any{"repositories": repos(map[string]any{"source": source}), "config": map[string]any{"isolation": "worktree"}}),
		ahp.CodeInvalidParams, "isolation")
	wantCode(t, create(map[string]any{"config": map[string]any{"repositoryUrl": source}}), ahp.CodeInvalidParams, "repositoryUrl")
	wantCode(t, create(map[string]any{"repositories": repos(map[string]any{"source": "file://" + outside})}), ahp.CodeInvalidParams, "served paths")
	wantCode(t, create(map[string]any{"repositories": repos(map[string]any{"source": source, "revision": "no-such-branch"})}), ahp.CodeInvalidParams, "no-such-branch")
	if entries, _ := os.ReadDir(filepath.Join(e.cfg.DataDir, "worktrees")); len(entries) != 0 {
		t.Fatalf("a refused clone left %v", entries)
	}

	wc := ahptest.Dial(t, e.d.URL(), writer)
	wc.Initialize("writer")
	_, err := wc.Call("createSession", map[string]any{"channel": "ahp-session:/f0000000-0000-4000-8000-000000000002", "provider": "script",
		"repositories": repos(map[string]any{"source": source})})
	wantCode(t, err, ahp.CodePermissionDenied, "session:clone")

	// Configuration queries check the list and prepare nothing.
	_, err = c.Call("resolveSessionConfig", map[string]any{"channel": ahp.RootURI, "provider": "script", "repositories": repos()})
	wantCode(t, err, ahp.CodeInvalidParams, "empty")
	c.MustCall("resolveSessionConfig", map[string]any{"channel": ahp.RootURI, "provider": "script", "repositories": repos(map[string]any{"source": source})})
	c.MustCall("sessionConfigCompletions", map[string]any{"channel": ahp.RootURI, "provider": "script", "property": "branch",
		"repositories": repos(map[string]any{"source": source, "revision": "main"})})
	if entries, _ := os.ReadDir(filepath.Join(e.cfg.DataDir, "worktrees")); len(entries) != 0 {
		t.Fatalf("a configuration query cloned: %v", entries)
	}
	if items := sessionList(t, c); len(items) != 0 {
		t.Fatalf("refused sessions were made: %v", items)
	}

	t.Setenv("PATH", t.TempDir()) // no git on it
	nc := ahptest.Dial(t, e.d.URL(), e.cfg.ConnectionToken)
	if raw := nc.Initialize("no-git"); strings.Contains(string(raw), "repositoryPreparation") {
		t.Fatalf("without git, initialize still offers repositoryPreparation: %s", raw)
	}
	_, err = nc.Call("createSession", map[string]any{"channel": "ahp-session:/f0000000-0000-4000-8000-000000000003", "provider": "script",
		"repositories": repos(map[string]any{"source": source})})
	wantCode(t, err, ahp.CodeInvalidParams, "prepares no repositories")
}
