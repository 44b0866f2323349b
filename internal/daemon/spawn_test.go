package daemon_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// The create_session host tool (issue 33 §5; VS Code's
// sessionServerTools.ts, create_session), called over MCP with the
// credential a real conversation was handed, against the real git.

var createdRe = regexp.MustCompile(`\((ahp-[a-z]+:/[^)]+|[a-z]+:/[0-9a-f-]{36})\)`)

// delegate calls create_session and returns what it made (a session or a
// chat URI); it fails the test when the tool refused.
func delegate(t *testing.T, tools *agent.HostTools, args map[string]any) string {
	t.Helper()
	text, isErr := hostTool(t, tools, "create_session", args)
	if isErr {
		t.Fatalf("create_session %v: %s", args, text)
	}
	m := createdRe.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("create_session named nothing it made: %q", text)
	}
	return m[1]
}

// awaitFirstTurn subscribes to a delegated chat and waits for the end of
// the turn the delegation started.
func awaitFirstTurn(t *testing.T, c *ahptest.Client, chatURI string) {
	t.Helper()
	if st := chatOf(t, c, chatURI); len(st.Turns) > 0 && st.ActiveTurn == nil {
		return
	}
	c.AwaitEnvelopeWithin("the delegated turn's end", 20*time.Second, func(e ahptest.Envelope) bool {
		switch e.Type() {
		case "chat/turnComplete", "chat/error", "chat/turnCancelled":
			return e.Channel == chatURI
		}
		return false
	})
}

// TestCreateSessionToolWorktree: an agent's create_session with
// relationship independent and worktree true makes a session beside its
// own, on the same agent, in a new git worktree of the repository, whose
// state names where it came from; its chat carries the title and runs the
// prompt there, apart from the repository's folder; disposed with changes,
// the worktree is kept, and a clean delegate's worktree goes with it.
func TestCreateSessionToolWorktree(t *testing.T) {
	e := newEnv(t)
	repo := gitRepo(t, filepath.Join(e.workDir, "repo"))
	c := e.client("owner")
	owner := "ahp-session:/5a000000-0000-4000-8000-000000000001"
	c.MustCall("createSession", map[string]any{"channel": owner, "provider": "script", "workingDirectories": []string{ahp.FileURI(repo)}})
	def := sessionState(t, c, owner).DefaultChat
	c.Subscribe(def)
	tools := toolsOf(t, e, c, def)

	made := delegate(t, tools, map[string]any{"prompt": "!printf 'sib\\n' > sib.txt", "title": "Sibling work",
		"relationship": "independent", "worktree": true})
	if !ahp.IsSessionURI(made) || made == owner {
		t.Fatalf("create_session made %q", made)
	}
	st := sessionState(t, c, made)
	by, _ := st.Meta["agentHost/createdBySession"].(map[string]any)
	if st.Provider != "script" || by["session"] != owner || by["chat"] != def {
		t.Fatalf("the delegate: provider %q, _meta %v", st.Provider, st.Meta)
	}
	dir, _ := ahp.LocalPath(st.WorkingDirectories[0])
	root, _ := filepath.EvalSymlinks(filepath.Join(e.cfg.DataDir, "worktrees"))
	if filepath.Dir(dir) != root {
		t.Fatalf("the delegate works in %s, not in a worktree under %s", dir, root)
	}
	c.WaitForWithin("the delegated ! command's file", 20*time.Second, func() bool { return fileExists(filepath.Join(dir, "sib.txt")) })
	if fileExists(filepath.Join(repo, "sib.txt")) {
		t.Fatal("the delegate's work reached the repository's own folder")
	}
	if ch := chatOf(t, c, st.DefaultChat); ch.Title != "Sibling work" {
		t.Fatalf("the delegate's chat is titled %q", ch.Title)
	}
	c.MustCall("disposeSession", map[string]any{"channel": made})
	if !fileExists(filepath.Join(dir, "sib.txt")) {
		t.Fatal("disposing the delegate deleted its work")
	}

	clean := delegate(t, tools, map[string]any{"prompt": "hello", "title": "Clean", "relationship": "independent", "worktree": true})
	cst := sessionState(t, c, clean)
	cleanDir, _ := ahp.LocalPath(cst.WorkingDirectories[0])
	awaitFirstTurn(t, c, cst.DefaultChat)
	c.MustCall("disposeSession", map[string]any{"channel": clean})
	if fileExists(cleanDir) {
		t.Fatalf("a clean delegate's worktree %s outlived it", cleanDir)
	}
}

// TestCreateSessionToolChatAndBounds: the default relationship makes a
// titled chat of the caller's own session running the prompt; a
// workspace outside the served paths or a worktree of a folder that is no
// repository is refused with the reason; a chain of delegations stops at
// depth three.
func TestCreateSessionToolChatAndBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.client("owner")
	owner, def := e.createSession(c, "ahp-session:/5b000000-0000-4000-8000-000000000001")
	c.Subscribe(def)
	tools := toolsOf(t, e, c, def)

	chatURI := delegate(t, tools, map[string]any{"prompt": "hello", "title": "Side chat"})
	st := sessionState(t, c, owner)
	found := false
	for _, ch := range st.Chats {
		found = found || (ch.Resource == chatURI && ch.Title == "Side chat")
	}
	if !found {
		t.Fatalf("the side chat %s is not in the session: %+v", chatURI, st.Chats)
	}
	awaitFirstTurn(t, c, chatURI)

	for name, tc := range map[string]struct {
		args map[string]any
		want string
	}{
		"a workspace outside the served paths": {map[string]any{"prompt": "p", "title": "t", "relationship": "independent", "workspace": t.TempDir()}, "served paths"},
		"a worktree of no repository":          {map[string]any{"prompt": "p", "title": "t", "relationship": "independent", "worktree": true}, "git"},
		"a relative workspace":                 {map[string]any{"prompt": "p", "title": "t", "relationship": "independent", "workspace": "sub"}, "absolute"},
	} {
		text, isErr := hostTool(t, tools, "create_session", tc.args)
		if !isErr || !strings.Contains(text, tc.want) {
			t.Errorf("%s: %v %q, want a refusal naming %q", name, isErr, text, tc.want)
		}
	}

	// Each delegate delegates in turn: depth 1, 2 and 3 are made, and the
	// third may make no fourth.
	from := tools
	for depth := 1; depth <= 3; depth++ {
		s := delegate(t, from, map[string]any{"prompt": "hello", "title": "level", "relationship": "independent"})
		sst := sessionState(t, c, s)
		if by, _ := sst.Meta["agentHost/createdBySession"].(map[string]any); by["depth"] != float64(depth) {
			t.Fatalf("delegate at depth %d has _meta %v", depth, sst.Meta)
		}
		awaitFirstTurn(t, c, sst.DefaultChat)
		// The delegated turn opened the chat's conversation: its tools
		// are the newest handed out.
		opens := e.script.Opens()
		from = opens[len(opens)-1].HostTools
	}
	text, isErr := hostTool(t, from, "create_session", map[string]any{"prompt": "p", "title": "t", "relationship": "independent"})
	if !isErr || !strings.Contains(text, "deep") {
		t.Fatalf("a fourth level was made: %v %q", isErr, text)
	}
}

// TestCreateSessionToolKeepsTheSandbox: a sandboxed session's delegate
// gets the same sandbox, works only inside the caller's folders (another
// served folder is refused), and its prompt's ! command cannot write
// outside them.
func TestCreateSessionToolKeepsTheSandbox(t *testing.T) {
	requireLandlock(t)
	e := newEnv(t)
	mine, other := filepath.Join(e.workDir, "mine"), filepath.Join(e.workDir, "other")
	for _, d := range []string{mine, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	outside := t.TempDir()
	c := e.client("owner")
	owner := "ahp-session:/5c000000-0000-4000-8000-000000000001"
	c.MustCall("createSession", map[string]any{"channel": owner, "provider": "script",
		"workingDirectories": []string{ahp.FileURI(mine)}, "config": map[string]any{"sandbox": "workspace"}})
	def := sessionState(t, c, owner).DefaultChat
	c.Subscribe(def)
	tools := toolsOf(t, e, c, def)

	text, isErr := hostTool(t, tools, "create_session", map[string]any{"prompt": "p", "title": "t", "relationship": "independent", "workspace": other})
	if !isErr || !strings.Contains(text, "sandboxed") {
		t.Fatalf("a sandboxed session delegated to another folder: %v %q", isErr, text)
	}
	escape := filepath.Join(outside, "escape.txt")
	made := delegate(t, tools, map[string]any{"prompt": "!echo in > in.txt; echo out > " + escape, "title": "t", "relationship": "independent"})
	st := sessionState(t, c, made)
	if st.Config == nil || st.Config.Values["sandbox"] != "workspace" {
		t.Fatalf("the delegate's config: %+v", st.Config)
	}
	awaitFirstTurn(t, c, st.DefaultChat)
	if readFile(t, filepath.Join(mine, "in.txt")) != "in\n" {
		t.Fatal("the delegate's ! command did not run in the caller's folder")
	}
	if fileExists(escape) {
		t.Fatal("the sandboxed session's delegate wrote outside its folders")
	}
}

// TestCreateSessionToolNeedsTheOwnersGrants: the tool acts as the
// session's owner, so an owner whose token lacks chat:create may not have
// a chat made in their session (a session beside it needs session:create,
// which every owner held when they made theirs).
func TestCreateSessionToolNeedsTheOwnersGrants(t *testing.T) {
	t.Parallel()
	const chatless = "chatless-token"
	e := newEnv(t, func(c *daemon.Config) {
		c.Tokens = []daemon.TokenConfig{{Token: chatless, Principal: "user:chatless",
			Grants: []string{"session:create", "session:read", "chat:send", "chat:turns"}}}
	})
	c := ahptest.Dial(t, e.d.URL(), chatless)
	c.Initialize("chatless")
	const sess = "ahp-session:/5d000000-0000-4000-8000-000000000001"
	c.MustCall("createSession", map[string]any{"channel": sess, "provider": "script"})
	def := sessionState(t, c, sess).DefaultChat
	c.Subscribe(def)
	text, isErr := hostTool(t, toolsOf(t, e, c, def), "create_session", map[string]any{"prompt": "p", "title": "t"})
	if !isErr || !strings.Contains(text, "chat:create") {
		t.Fatalf("create_session = %v %q, want a refusal naming chat:create", isErr, text)
	}
	if st := sessionState(t, c, sess); len(st.Chats) != 1 {
		t.Fatalf("a refused create_session made a chat: %+v", st.Chats)
	}
}
