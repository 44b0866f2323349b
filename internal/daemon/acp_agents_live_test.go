package daemon_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

// realACPAgent is one real ACP agent CLI driven through ahpd's ACP backend
// against the fake model server: how it is launched, the settings of its
// agents.acp entry (env only, its config in a temporary home), the wire
// it speaks, and a read and a shell call of tools it has (steps of the
// fake's [[call NAME ARGS]] script).
type realACPAgent struct {
	// provider is the agents.acp entry's name; bin the installed command
	// (testdata/agents/node_modules/.bin, make agents).
	provider, bin string
	args          []string
	// env is the entry's env for a fake at url, with home a fresh
	// directory of the test's for the CLI's HOME and config.
	env func(t *testing.T, url, home string) []string
	// speaks reports whether a logged request is of the CLI's model API.
	speaks func(fakemodel.Request) bool
	// read reads notes.txt in the working directory; shell runs a command
	// that writes made.txt, which the CLI asks permission for. Both are
	// [[call NAME ARGS]] steps.
	read, shell string
	// unasked: the CLI runs shell without asking (a mode that asks
	// nothing; see TestRealCodexACP).
	unasked bool
}

// firstTurnWithin bounds a real CLI's first turn: it starts the CLI (a
// fresh home makes each unpack or index itself first).
const firstTurnWithin = 2 * time.Minute

// TestRealGeminiACP drives Gemini CLI (gemini --acp) through ahpd against
// the fake's Gemini API (GOOGLE_GEMINI_BASE_URL; streamGenerateContent).
func TestRealGeminiACP(t *testing.T) {
	t.Parallel()
	runRealACP(t, realACPAgent{
		provider: "gemini", bin: "gemini", args: []string{"--acp"},
		env: func(t *testing.T, url, home string) []string {
			// Usage statistics and update checks would reach Google.
			settings := filepath.Join(home, ".gemini", "settings.json")
			writeFile(t, settings, `{"privacy":{"usageStatisticsEnabled":false},"general":{"disableAutoUpdate":true,"disableUpdateNag":true},"telemetry":{"enabled":false}}`)
			return []string{
				"HOME=" + home, "GEMINI_CLI_HOME=" + home,
				"GOOGLE_GEMINI_BASE_URL=" + url, "GEMINI_API_KEY=dummy", "GEMINI_MODEL=gemini-2.5-flash",
			}
		},
		speaks: func(r fakemodel.Request) bool { return r.GeminiMethod() == "streamGenerateContent" },
		read:   `[[call read_file {"file_path":"notes.txt"}]]`,
		shell:  `[[call run_shell_command {"command":"touch made.txt","description":"make a file"}]]`,
	})
}

// TestRealCodexACP drives Codex's ACP adapter (codex-acp) through ahpd
// against the fake's Responses API (a provider in $CODEX_HOME/config.toml).
//
// Sandboxed by ahpd (AHPD_TEST_SANDBOX), Codex's own sandbox cannot start
// (it builds a mount namespace, which Landlock forbids), so its commands
// would fail: it runs in its full-access mode, which asks nothing, and
// ahpd's Landlock is what confines it (docs/BACKENDS.md).
func TestRealCodexACP(t *testing.T) {
	t.Parallel()
	sandboxed := os.Getenv("AHPD_TEST_SANDBOX") != ""
	mode := "INITIAL_AGENT_MODE=workspace-write"
	shell := `[[call exec_command {"cmd":"touch made.txt","sandbox_permissions":"require_escalated","justification":"make a file"}]]`
	if sandboxed {
		// Full access asks nothing, and escalates nothing.
		mode = "INITIAL_AGENT_MODE=agent-full-access"
		shell = `[[call exec_command {"cmd":"touch made.txt"}]]`
	}
	runRealACP(t, realACPAgent{
		unasked:  sandboxed,
		provider: "codex", bin: "codex-acp",
		env: func(t *testing.T, url, home string) []string {
			codexHome := filepath.Join(home, ".codex")
			writeFile(t, filepath.Join(codexHome, "config.toml"), fmt.Sprintf(`model = "fake-model"
model_provider = "fake"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.fake]
name = "fake"
base_url = "%s/v1"
env_key = "FAKE_MODEL_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`, url))
			return []string{
				"HOME=" + home, "CODEX_HOME=" + codexHome, "FAKE_MODEL_KEY=dummy",
				// The adapter's default mode has a model review each
				// approval (the fake cannot); workspace-write asks the user.
				mode,
			}
		},
		speaks: fakemodel.Request.IsResponses,
		read:   `[[call exec_command {"cmd":"cat notes.txt"}]]`,
		// Inside its sandbox the write needs no approval; an escalated
		// command is asked for.
		shell: shell,
	})
}

// TestRealCopilotACP drives GitHub Copilot CLI (copilot --acp) through
// ahpd against the fake's Chat Completions (its bring-your-own-model
// provider, offline).
func TestRealCopilotACP(t *testing.T) {
	t.Parallel()
	runRealACP(t, realACPAgent{
		provider: "copilot", bin: "copilot", args: []string{"--acp"},
		env: func(t *testing.T, url, home string) []string {
			return []string{
				"HOME=" + home, "COPILOT_HOME=" + filepath.Join(home, ".copilot"),
				"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_STATE_HOME=" + filepath.Join(home, ".state"),
				"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
				"COPILOT_PROVIDER_BASE_URL=" + url + "/v1", "COPILOT_PROVIDER_TYPE=openai",
				"COPILOT_PROVIDER_API_KEY=dummy", "COPILOT_MODEL=fake-model",
				"COPILOT_OFFLINE=true", "COPILOT_AUTO_UPDATE=false",
			}
		},
		speaks: fakemodel.Request.IsChatCompletions,
		read:   `[[call view {"path":"notes.txt"}]]`,
		shell:  `[[call bash {"command":"touch made.txt","description":"make a file"}]]`,
	})
}

// realACPTests are the real ACP agent tests TestRealACPLoopbackOnly re-runs
// with loopback alone.
var realACPTests = []string{"TestRealGeminiACP", "TestRealCodexACP", "TestRealCopilotACP"}

// TestRealACPLoopbackOnly proves the real ACP agent tests need nothing but
// 127.0.0.1: it re-runs them in a new network namespace whose only
// interface is loopback (as TestClaudeLoopbackOnly does for claude; that
// test's re-run checks the namespace has no other interface). A CLI that
// reached for the network (a login, an update check, telemetry it waits
// for) would fail there.
func TestRealACPLoopbackOnly(t *testing.T) {
	t.Parallel()
	if os.Getenv(netnsEnv) != "" {
		return
	}
	fakemodel.Agent(t, "gemini") // make check only, and skips with the install hint
	runLoopbackOnly(t, "the real ACP agent tests", realACPTests, 8*time.Minute)
}

// runRealACP configures ra as an agents.acp entry and, through the
// daemon's websocket: a turn answers; a turn reads a file and runs a
// command the CLI asks permission for, confirmed by a second client, while
// that client queues a message, which runs as the next turn; a stop ends a
// streaming turn cancelled within a second; a turn after the stop answers;
// and the fake saw the CLI's requests on its wire, with the file read.
func runRealACP(t *testing.T, ra realACPAgent) {
	bin := fakemodel.Agent(t, ra.bin)
	fake := fakemodel.Start(t)
	cfg := daemon.Defaults()
	cfg.DataDir = t.TempDir()
	entry, err := json.Marshal([]map[string]any{{
		"name": ra.provider, "command": bin, "args": ra.args,
		"env": ra.env(t, fake.URL, t.TempDir()),
	}})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Agents = map[string]json.RawMessage{"acp": entry}
	reg, err := daemon.BuiltinAgents(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dataDir := cfg.DataDir
	e := newEnvWith(t, reg, func(c *daemon.Config) { c.DataDir = dataDir; c.Agents = cfg.Agents })
	notes := "notes of " + ra.provider + " 7f3a"
	writeFile(t, filepath.Join(e.workDir, "notes.txt"), notes+"\n")

	a := e.client("a")
	sess := "ahp-session:/acc0de00-0000-4000-8000-0000000000a1"
	a.MustCall("createSession", map[string]any{"channel": sess, "provider": ra.provider})
	def := sessionState(t, a, sess).DefaultChat
	a.Subscribe(def)

	a.Dispatch(def, turnStarted("t1", "hello "+ra.provider))
	if end := awaitEndWithin(t, a, def, "t1", firstTurnWithin); end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended with %s: %s", end.Type(), end.Action)
	}
	if got := clMarkdown(chatOf(t, a, def).Turns[0]); !strings.Contains(got, "fake reply: ") || !strings.Contains(got, "hello "+ra.provider) {
		t.Fatalf("t1 answered %q", got)
	}

	// The read runs unasked; the command is asked for. While it waits, the
	// second client queues a message, then confirms.
	b := e.client("b")
	b.Subscribe(def)
	a.Dispatch(def, turnStarted("tp", ra.read+" "+ra.shell))
	call := ""
	if !ra.unasked {
		call = clAwaitAsk(t, b, def, "tp")
	} else {
		// Queued behind tp: b must see it run first (a and b are two
		// connections; nothing orders what each sends).
		awaitTyped(t, b, def, "chat/turnStarted", "tp")
	}
	if env := b.AwaitEcho(setPending(b, def, "queued", "q1", "queued words")); env.RejectionReason != "" {
		t.Fatalf("queueing refused: %s", env.RejectionReason)
	}
	if call != "" {
		if env := b.AwaitEcho(b.Dispatch(def, map[string]any{"type": "chat/toolCallConfirmed", "turnId": "tp", "toolCallId": call, "approved": true})); env.RejectionReason != "" {
			t.Fatalf("confirmation refused: %s", env.RejectionReason)
		}
	}
	if end := awaitEnd(t, a, def, "tp"); end.Type() != "chat/turnComplete" {
		t.Fatalf("tp ended with %s: %s", end.Type(), end.Action)
	}
	if _, err := os.Stat(filepath.Join(e.workDir, "made.txt")); err != nil {
		t.Errorf("the confirmed command did not run: %v", err)
	}
	q := awaitStartOf(t, a, def, "q1")
	if end := awaitEnd(t, a, def, turnID(q)); end.Type() != "chat/turnComplete" {
		t.Fatalf("the queued turn ended with %s: %s", end.Type(), end.Action)
	}
	st := chatOf(t, a, def)
	if len(st.Turns) != 3 {
		t.Fatalf("%d turns after the queued one, want 3", len(st.Turns))
	}
	if calls := clToolCalls(st.Turns[1]); len(calls) < 2 {
		raw, _ := json.Marshal(st.Turns[1])
		t.Errorf("the tool turn shows %d tool calls, want the read and the command: %s", len(calls), raw)
	}
	if got := clMarkdown(st.Turns[2]); !strings.Contains(got, "fake reply: ") || !strings.Contains(got, "queued words") {
		t.Errorf("the queued turn answered %q", got)
	}

	a.Dispatch(def, turnStarted("ts", "talk slowly [slow]"))
	clAwaitAction(t, a, def, "ts", "chat/delta")
	stopped := time.Now()
	a.AwaitEcho(a.Dispatch(def, map[string]any{"type": "chat/turnCancelled", "turnId": "ts"}))
	if end := awaitEnd(t, a, def, "ts"); end.Type() != "chat/turnCancelled" {
		t.Fatalf("ts ended with %s", end.Type())
	}
	if d := time.Since(stopped); d > time.Second {
		t.Errorf("the stop took %v", d)
	}

	// After a stop the chat goes on (in the same process, or a new one
	// that loaded the session).
	a.Dispatch(def, turnStarted("ta", "after the stop"))
	if end := awaitEndWithin(t, a, def, "ta", firstTurnWithin); end.Type() != "chat/turnComplete" {
		t.Fatalf("ta ended with %s: %s", end.Type(), end.Action)
	}
	if got := clMarkdown(chatOf(t, a, def).Turns[4]); !strings.Contains(got, "fake reply: ") || !strings.Contains(got, "after the stop") {
		t.Errorf("ta answered %q", got)
	}

	// The fake saw every turn on the CLI's wire, and the file's content
	// came back to it as the read's result.
	saw := map[string]bool{}
	for _, r := range fake.Requests(t) {
		if !ra.speaks(r) {
			continue
		}
		saw["wire"] = true
		words := strings.Join(r.Texts(), "\n")
		for _, w := range []string{"hello " + ra.provider, "queued words", "talk slowly", "after the stop"} {
			if strings.Contains(words, w) {
				saw[w] = true
			}
		}
		if strings.Contains(string(r.Body), notes) {
			saw["read result"] = true
		}
	}
	for _, w := range []string{"wire", "hello " + ra.provider, "queued words", "talk slowly", "after the stop", "read result"} {
		if !saw[w] {
			t.Errorf("the fake saw no %s request with %q", ra.provider, w)
		}
	}
}

// awaitEndWithin waits up to d for turn id to end (longer than the
// client's own bound, for a turn that starts a CLI).
func awaitEndWithin(t *testing.T, c *ahptest.Client, chat, id string, d time.Duration) ahptest.Envelope {
	t.Helper()
	return c.AwaitEnvelopeWithin("end of turn "+id, d, func(e ahptest.Envelope) bool {
		return e.Channel == chat && isEnding(e.Type()) && turnID(e) == id
	})
}
