package daemon_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/sandbox"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

// acpFakeEnv is a daemon whose one provider, "fake-acp", is the in-repo
// fake ACP agent (testdata/acpagent) configured through agents.acp, with
// extra arguments. restart starts the daemon again with agents built anew
// from the config, as a real restart does.
type acpFakeEnv struct {
	*testEnv
	cfg daemon.Config
	bin string // the fake agent's executable
}

func newACPFakeEnv(t *testing.T, args ...string) *acpFakeEnv {
	t.Helper()
	return newACPFakeEnvWith(t, nil, nil, args...)
}

// newACPFakeEnvWith is newACPFakeEnv with more keys in the agents.acp
// entry (beside name, command and args) and the daemon's config changed
// by mutate (nil: as it is).
func newACPFakeEnvWith(t *testing.T, extra map[string]any, mutate func(*daemon.Config), args ...string) *acpFakeEnv {
	t.Helper()
	bin := fakemodel.Build(t, "acpagent")
	fields := map[string]any{"name": "fake-acp", "command": bin, "args": args}
	for k, v := range extra {
		fields[k] = v
	}
	entry, _ := json.Marshal([]map[string]any{fields})
	cfg := daemon.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.Agents = map[string]json.RawMessage{"acp": entry}
	reg, err := daemon.BuiltinAgents(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Sandboxed (AHPD_TEST_SANDBOX), the fake's -state and -log paths
	// are its own directories: the config gives them.
	var own sandbox.Paths
	for i, a := range args {
		if (a == "-state" || a == "-log") && i+1 < len(args) {
			path := args[i+1]
			if a == "-log" {
				path = filepath.Dir(path)
			}
			own.ReadWrite = append(own.ReadWrite, path)
		}
	}
	e := newEnvWith(t, reg, func(c *daemon.Config) {
		c.DataDir, c.Agents = cfg.DataDir, cfg.Agents
		c.Sandbox.Backends = map[string]sandbox.Paths{"fake-acp": own}
		if mutate != nil {
			mutate(c)
		}
	})
	return &acpFakeEnv{testEnv: e, cfg: cfg, bin: bin}
}

func (e *acpFakeEnv) restartFresh() {
	e.t.Helper()
	e.stop()
	reg, err := daemon.BuiltinAgents(e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.agents = reg
	e.start()
}

// TestACPFakeAgentWire drives the in-repo fake ACP agent (testdata/acpagent)
// through the daemon's websocket: text streams; a permission is asked and
// confirmed by a second client; a read outside the chat's directories is
// refused and nothing is read; a stop ends the turn cancelled within a
// second; after a restart (agents built anew) the turns are there, the next
// turn's process loaded the session with session/load, and the agents list
// shows the models and modes the agent offered.
func TestACPFakeAgentWire(t *testing.T) {
	t.Parallel()
	e := newACPFakeEnv(t, "-state", t.TempDir())
	a := e.client("a")
	const sess = "ahp-session:/acc0de00-0000-4000-8000-0000000000fa"
	a.MustCall("createSession", map[string]any{"channel": sess, "provider": "fake-acp"})
	def := sessionState(t, a, sess).DefaultChat
	a.Subscribe(def)
	b := e.client("b")
	b.Subscribe(def)

	if end := sendTurn(t, a, def, "t1", "hello"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended with %s: %s", end.Type(), end.Action)
	}
	if got := clMarkdown(chatOf(t, a, def).Turns[0]); got != "fake acp: hello" {
		t.Errorf("t1 answered %q", got)
	}

	a.Dispatch(def, turnStarted("t2", "[perm]"))
	call := clAwaitAsk(t, b, def, "t2")
	if env := b.AwaitEcho(b.Dispatch(def, map[string]any{"type": "chat/toolCallConfirmed", "turnId": "t2", "toolCallId": call, "approved": true})); env.RejectionReason != "" {
		t.Fatalf("confirmation refused: %s", env.RejectionReason)
	}
	if end := awaitEnd(t, a, def, "t2"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t2 ended with %s", end.Type())
	}
	if got := clMarkdown(chatOf(t, a, def).Turns[1]); !strings.Contains(got, "picked allow") {
		t.Errorf("t2 answered %q", got)
	}

	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if end := sendTurn(t, a, def, "t3", "[read:"+secret+"]"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t3 ended with %s", end.Type())
	}
	if got := clMarkdown(chatOf(t, a, def).Turns[2]); !strings.HasPrefix(got, "read refused:") || strings.Contains(got, "read: secret") {
		t.Errorf("t3 answered %q", got)
	}

	a.Dispatch(def, turnStarted("t4", "[slow]"))
	clAwaitAction(t, a, def, "t4", "chat/delta")
	stopped := time.Now()
	a.AwaitEcho(a.Dispatch(def, map[string]any{"type": "chat/turnCancelled", "turnId": "t4"}))
	if end := awaitEnd(t, a, def, "t4"); end.Type() != "chat/turnCancelled" {
		t.Fatalf("t4 ended with %s", end.Type())
	}
	if d := time.Since(stopped); d > time.Second {
		t.Errorf("the stop took %v", d)
	}

	e.restartFresh()
	a = e.client("a2")
	if turns := chatOf(t, a, def).Turns; len(turns) != 4 || turns[0].Message.Text != "hello" {
		t.Fatalf("after the restart: %d turns", len(turns))
	}
	// The agents list of the restarted daemon names what the agent offered.
	var root ahp.RootState
	raw, _ := a.Subscribe(ahp.RootURI)
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	var listed *ahp.AgentInfo
	for i := range root.Agents {
		if root.Agents[i].Provider == "fake-acp" {
			listed = &root.Agents[i]
		}
	}
	if listed == nil || len(listed.Models) != 2 || listed.Models[0].ID != "fake-small" || listed.Models[1].Name != "Fake Large" ||
		!strings.Contains(listed.Description, "modes: ask, code") {
		t.Fatalf("agents list after the restart: %+v", listed)
	}
	a.Subscribe(def)
	// The fake replays the three turns it completed (the stopped one it
	// did not keep) only when session/load asks for them.
	if end := sendTurn(t, a, def, "t5", "[history]"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t5 ended with %s: %s", end.Type(), end.Action)
	}
	if got := clMarkdown(chatOf(t, a, def).Turns[4]); got != "loaded 3 turns" {
		t.Errorf("t5 answered %q, want the session loaded", got)
	}
}

// promptLog reads the fake agent's -log file: "start TEXT", "end TEXT" and
// "overlap TEXT" lines, in the order the agent saw them.
func promptLog(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(b) == 0 {
		return nil
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "initialize" {
			out = append(out, l)
		}
	}
	return out
}

// awaitInitialize waits until the fake ACP agent logging to path has begun
// to initialize n times.
func awaitInitialize(t *testing.T, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(ahptest.Timeout)
	for {
		b, _ := os.ReadFile(path)
		if strings.Count(string(b), "initialize\n") >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fake ACP agent never began to initialize: %q", b)
		}
		time.Sleep(10 * time.Millisecond) // polls the log
	}
}

// TestACPOneTurnAtATime drives the fake ACP agent through the daemon's
// websocket with two clients. The agent refuses a prompt that arrives while
// another runs, and logs each prompt's start and end.
//   - C-TURN-103, C-TURN-104: a turn sent by the second client while the
//     first runs reaches the agent only once the first ended, and completes.
//   - C-TURN-105, C-TURN-106: a stop of the running turn runs none of the
//     two turns sent behind it, and both end cancelled in both clients'
//     states.
func TestACPOneTurnAtATime(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "prompts.log")
	e := newACPFakeEnv(t, "-log", log)
	a := e.client("a")
	const sess = "ahp-session:/acc0de00-0000-4000-8000-0000000000fb"
	a.MustCall("createSession", map[string]any{"channel": sess, "provider": "fake-acp"})
	def := sessionState(t, a, sess).DefaultChat
	a.Subscribe(def)
	b := e.client("b")
	b.Subscribe(def)

	t.Run("a turn sent while another runs runs after it", func(t *testing.T) {
		// t1 runs until the test opens its gate, once t2 has reached the
		// chat (the draft barrier).
		gate := filepath.Join(t.TempDir(), "gate")
		first := "first [wait:" + gate + "]"
		startTurn(a, def, "t1", first)
		awaitTyped(t, b, def, "chat/responsePart", "t1")
		startTurn(b, def, "t2", "second")
		draftBarrier(t, b, def, "x")
		writeFile(t, gate, "")
		if end := awaitEnd(t, a, def, "t1"); end.Type() != "chat/turnComplete" {
			t.Fatalf("t1 ended with %s: %s", end.Type(), end.Action)
		}
		if end := awaitEnd(t, b, def, "t2"); end.Type() != "chat/turnComplete" {
			t.Fatalf("t2 ended with %s: %s", end.Type(), end.Action)
		}
		want := []string{"start " + first, "end " + first, "start second", "end second"}
		if got := promptLog(t, log); !slices.Equal(got, want) {
			t.Fatalf("the agent saw %v, want %v", got, want)
		}
		if got := clMarkdown(chatOf(t, b, def).Turns[1]); got != "fake acp: second" {
			t.Errorf("t2 answered %q", got)
		}
	})

	t.Run("a stop runs none of the turns sent behind", func(t *testing.T) {
		if err := os.Remove(log); err != nil {
			t.Fatal(err)
		}
		startTurn(a, def, "t3", "third [slow]")
		awaitTyped(t, b, def, "chat/delta", "t3")
		startTurn(b, def, "t4", "fourth")
		draftBarrier(t, b, def, "x")
		startTurn(a, def, "t5", "fifth")
		draftBarrier(t, a, def, "y")
		awaitAccepted(t, a, stopTurn(a, def, "t3"))
		for _, c := range []*ahptest.Client{a, b} {
			awaitTyped(t, c, def, "chat/turnCancelled", "t5")
		}
		for _, c := range []*ahptest.Client{a, b} {
			st := chatOf(t, c, def)
			for _, id := range []string{"t3", "t4", "t5"} {
				if tr := turnOf(t, st, id); tr.State != ahp.TurnCancelled {
					t.Errorf("client %s: %s is %s, want cancelled", c.ID, id, tr.State)
				}
			}
		}
		if end := sendTurn(t, a, def, "t6", "sixth"); end.Type() != "chat/turnComplete" {
			t.Fatalf("t6 ended with %s: %s", end.Type(), end.Action)
		}
		got := promptLog(t, log)
		if len(got) < 2 || got[0] != "start third [slow]" || slices.Contains(got, "start fourth") || slices.Contains(got, "start fifth") ||
			got[len(got)-2] != "start sixth" {
			t.Fatalf("the agent saw %v", got)
		}
	})
}

// TestACPStopWhilePreparing: C-TURN-107, C-TURN-108 through the daemon's
// websocket. A turn stopped while the fake ACP agent still initializes
// (it waits on a gate the test opens after the stop) ends cancelled within
// a second, its prompt never reaches the agent, and the next turn runs.
func TestACPStopWhilePreparing(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "prompts.log")
	gate := filepath.Join(t.TempDir(), "initialized")
	e := newACPFakeEnv(t, "-log", log, "-init-gate", gate)
	a := e.client("a")
	const sess = "ahp-session:/acc0de00-0000-4000-8000-0000000000fc"
	a.MustCall("createSession", map[string]any{"channel": sess, "provider": "fake-acp"})
	def := sessionState(t, a, sess).DefaultChat
	a.Subscribe(def)
	awaitAccepted(t, a, startTurn(a, def, "t1", "never sent"))
	awaitInitialize(t, log, 1)
	stopped := time.Now()
	awaitAccepted(t, a, stopTurn(a, def, "t1"))
	if end := awaitEnd(t, a, def, "t1"); end.Type() != "chat/turnCancelled" {
		t.Fatalf("t1 ended with %s: %s", end.Type(), end.Action)
	}
	if d := time.Since(stopped); d > time.Second {
		t.Errorf("the stop took %v", d)
	}
	writeFile(t, gate, "")
	if end := sendTurn(t, a, def, "t2", "sent"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t2 ended with %s: %s", end.Type(), end.Action)
	}
	if got := promptLog(t, log); !slices.Equal(got, []string{"start sent", "end sent"}) {
		t.Fatalf("the agent saw %v", got)
	}
}

// TestACPHostWordsFirst: C-TURN-111 through the daemon's websocket. A side
// chat's first prompt carries what the host has to say (the source turn);
// the fake ACP agent sees it as the prompt's first block, ahead of the
// message, and the next prompt carries the message alone.
func TestACPHostWordsFirst(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "prompts.log")
	e := newACPFakeEnv(t, "-log", log)
	a := e.client("a")
	const sess = "ahp-session:/acc0de00-0000-4000-8000-0000000000fd"
	a.MustCall("createSession", map[string]any{"channel": sess, "provider": "fake-acp"})
	def := sessionState(t, a, sess).DefaultChat
	a.Subscribe(def)
	if end := sendTurn(t, a, def, "t1", "the question"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended with %s: %s", end.Type(), end.Action)
	}
	side := "ahp-chat:/acc0de00-0000-4000-8000-0000000000fe"
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": side,
		"source": map[string]any{"kind": "sideChat", "chat": def, "turnId": "t1"}})
	a.Subscribe(side)
	if end := sendTurn(t, a, side, "s1", "about it [blocks]"); end.Type() != "chat/turnComplete" {
		t.Fatalf("s1 ended with %s: %s", end.Type(), end.Action)
	}
	if end := sendTurn(t, a, side, "s2", "and more [blocks]"); end.Type() != "chat/turnComplete" {
		t.Fatalf("s2 ended with %s: %s", end.Type(), end.Action)
	}
	var blocks []string
	for _, l := range promptLog(t, log) {
		if strings.HasPrefix(l, "blocks ") {
			blocks = append(blocks, l)
		}
	}
	if want := []string{"blocks host text", "blocks text"}; !slices.Equal(blocks, want) {
		t.Fatalf("the agent saw %v, want %v", blocks, want)
	}
	if got := clMarkdown(chatOf(t, a, side).Turns[0]); got != "fake acp: about it [blocks]" {
		t.Errorf("s1 answered %q (the host's words are not the message)", got)
	}
}

// TestACPFilesAndTerminal drives the fake ACP agent's fs/write_text_file and
// terminal/* requests through the daemon's websocket: a write inside the
// chat's directory lands; a write outside it is refused and nothing is
// written; a terminal runs in the chat's first directory and its exit code
// and output come back; a terminal asked to run outside the chat's
// directories is refused.
func TestACPFilesAndTerminal(t *testing.T) {
	t.Parallel()
	e := newACPFakeEnv(t)
	a := e.client("a")
	const sess = "ahp-session:/acc0de00-0000-4000-8000-0000000000ff"
	a.MustCall("createSession", map[string]any{"channel": sess, "provider": "fake-acp"})
	def := sessionState(t, a, sess).DefaultChat
	a.Subscribe(def)
	answer := func(id, text string) string {
		t.Helper()
		if end := sendTurn(t, a, def, id, text); end.Type() != "chat/turnComplete" {
			t.Fatalf("%s ended with %s: %s", id, end.Type(), end.Action)
		}
		st := chatOf(t, a, def)
		return clMarkdown(turnOf(t, st, id))
	}

	inside := filepath.Join(e.workDir, "made.txt")
	if got := answer("w1", "[write:"+inside+"]"); got != "wrote" {
		t.Errorf("write inside answered %q", got)
	}
	if b, err := os.ReadFile(inside); err != nil || string(b) != "written by the fake" {
		t.Errorf("write inside left %q, %v", b, err)
	}
	outside := filepath.Join(t.TempDir(), "never.txt")
	if got := answer("w2", "[write:"+outside+"]"); !strings.HasPrefix(got, "write refused:") {
		t.Errorf("write outside answered %q", got)
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Errorf("write outside left a file: %v", err)
	}
	dotdot := filepath.Join(e.workDir, "..", "never-either.txt")
	if got := answer("w3", "[write:"+dotdot+"]"); !strings.HasPrefix(got, "write refused:") {
		t.Errorf("write through .. answered %q", got)
	}

	real, err := filepath.EvalSymlinks(e.workDir)
	if err != nil {
		t.Fatal(err)
	}
	if got := answer("x1", "[term:|pwd; exit 3]"); got != "term exit 3: "+real {
		t.Errorf("terminal answered %q, want it run in %s", got, real)
	}
	if got := answer("x2", "[term:"+t.TempDir()+"|pwd]"); !strings.HasPrefix(got, "term refused:") {
		t.Errorf("terminal outside answered %q", got)
	}
}

// TestACPSessionConfig: once an ACP agent has said its models and modes,
// resolveSessionConfig offers them, and a session created with a model and
// a mode runs its turns on both (the fake answers "[model]" with them).
func TestACPSessionConfig(t *testing.T) {
	t.Parallel()
	e := newACPFakeEnv(t, "-state", t.TempDir())
	a := e.client("a")
	first := "ahp-session:/acc0de00-0000-4000-8000-0000000000c1"
	a.MustCall("createSession", map[string]any{"channel": first, "provider": "fake-acp"})
	def := sessionState(t, a, first).DefaultChat
	a.Subscribe(def)
	if end := sendTurn(t, a, def, "learn", "[model]"); end.Type() != "chat/turnComplete" {
		t.Fatalf("first turn ended %s", end.Type())
	}
	var res struct {
		Schema struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		} `json:"schema"`
		Values map[string]any `json:"values"`
	}
	if err := json.Unmarshal(a.MustCall("resolveSessionConfig", map[string]any{"channel": ahp.RootURI, "provider": "fake-acp"}), &res); err != nil {
		t.Fatal(err)
	}
	if got := res.Schema.Properties["mode"].Enum; strings.Join(got, ",") != "ask,code" {
		t.Fatalf("mode enum %v", got)
	}
	if got := res.Schema.Properties["model"].Enum; strings.Join(got, ",") != "fake-small,fake-large" {
		t.Fatalf("model enum %v", got)
	}
	second := "ahp-session:/acc0de00-0000-4000-8000-0000000000c2"
	a.MustCall("createSession", map[string]any{"channel": second, "provider": "fake-acp", "config": map[string]any{"model": "fake-large", "mode": "code"}})
	def2 := sessionState(t, a, second).DefaultChat
	a.Subscribe(def2)
	if end := sendTurn(t, a, def2, "configured", "[model]"); end.Type() != "chat/turnComplete" {
		t.Fatalf("configured turn ended %s", end.Type())
	}
	if got := clMarkdown(chatOf(t, a, def2).Turns[0]); !strings.Contains(got, "model fake-large, mode code") {
		t.Fatalf("configured session answered %q", got)
	}
}
