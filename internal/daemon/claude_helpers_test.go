package daemon_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/claude"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/sandbox"
	"github.com/ahpd/ahpd/internal/store"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

// The claude_*_test.go files drive the real claude CLI (testdata/agents,
// `make agents`) through the daemon's websocket, against the fake model
// server on 127.0.0.1. They skip with an install hint when the CLI is not
// installed. TestMain removes the fake's binary, built once per test run.

// TestMain runs the sandbox launcher when the daemon under test started
// this binary as one (a sandboxed session's process), else the tests.
func TestMain(m *testing.M) {
	sandbox.RunIfLauncher()
	fakemodel.Main(m)
}

// Tokens the claude tests configure: a second client that may answer tool
// calls (and read), and one that may only read.
const (
	answererToken = "answerer-token"
	readerToken   = "claude-reader-token"
)

// claudeEnv is a daemon whose registry holds the claude backend, pointed
// at its own fake model server, CLAUDE_CONFIG_DIR and HOME.
type claudeEnv struct {
	*testEnv
	fake      *fakemodel.Server
	claude    *claude.Claude
	configDir string
}

// newClaudeEnv starts a daemon offering claude (stopEnds "turn" or
// "query"), with the answerer and reader tokens configured.
func newClaudeEnv(t *testing.T, stopEnds string, mutate ...func(*daemon.Config)) *claudeEnv {
	t.Helper()
	bin := fakemodel.Agent(t, "claude")
	fake := fakemodel.Start(t)
	ce := &claudeEnv{fake: fake, configDir: t.TempDir()}
	ce.claude = claude.New(claude.Options{
		Binary:   bin,
		StopEnds: stopEnds,
		Env: []string{
			"HOME=" + t.TempDir(),
			"CLAUDE_CONFIG_DIR=" + ce.configDir,
			"ANTHROPIC_BASE_URL=" + fake.URL,
			"ANTHROPIC_API_KEY=dummy",
			"IS_SANDBOX=1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"DISABLE_TELEMETRY=1",
			"DISABLE_ERROR_REPORTING=1",
			"DISABLE_AUTOUPDATER=1",
			"CLAUDE_CODE_MAX_RETRIES=0",
		},
	})
	reg, err := agent.NewRegistry(ce.claude)
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{t: t, agents: reg, workDir: t.TempDir()}
	e.cfg = daemon.Defaults()
	e.cfg.Port = 0
	e.cfg.DataDir = t.TempDir()
	e.cfg.Paths = []string{e.workDir}
	e.cfg.Tokens = []daemon.TokenConfig{
		{Token: answererToken, Principal: "user:answerer", Grants: []string{"session:read", "chat:turns", "chat:answer"}},
		{Token: readerToken, Principal: "user:reader", Grants: []string{"session:read", "chat:turns"}},
	}
	e.cfg.ConnectionToken = "root-token"
	for _, m := range mutate {
		m(&e.cfg)
	}
	e.start()
	t.Cleanup(func() { e.stop() })
	ce.testEnv = e
	return ce
}

// session creates a claude session and returns its default chat. The
// chat's backend conversation id is the session URI's id.
func (ce *claudeEnv) session(c *ahptest.Client, uri string) (chat, conversation string) {
	ce.t.Helper()
	c.MustCall("createSession", map[string]any{"channel": uri, "provider": claude.Provider})
	st := sessionState(ce.t, c, uri)
	if st.DefaultChat == "" {
		ce.t.Fatalf("session %s has no default chat", uri)
	}
	return st.DefaultChat, strings.TrimPrefix(uri, "ahp-session:/")
}

// dial connects a client presenting token, subscribed to the root.
func (ce *claudeEnv) dial(id, token string) *ahptest.Client {
	ce.t.Helper()
	if token == "" {
		token = ce.cfg.ConnectionToken
	}
	c := ahptest.Dial(ce.t, ce.d.URL(), token)
	c.Initialize(id, ahp.RootURI)
	return c
}

// history is what the last Messages request of a conversation sent the
// model: each non-system message as role:text.
func (ce *claudeEnv) history(conversation string) []string {
	ce.t.Helper()
	var last *fakemodel.Request
	for _, r := range ce.fake.Requests(ce.t) {
		if r.IsMessages() && r.SessionID == conversation {
			last = &r
		}
	}
	if last == nil {
		ce.t.Fatalf("the fake saw no request of conversation %s", conversation)
	}
	var out []string
	for _, m := range last.Messages() {
		if m.Role == "system" {
			continue
		}
		out = append(out, m.Role+":"+strings.Join(m.Texts(), " + "))
	}
	return out
}

// requestSays reports whether the last request of conversation carried
// text anywhere in its messages (a steering message arrives as a system
// message).
func (ce *claudeEnv) requestSays(conversation, text string) bool {
	ce.t.Helper()
	var last *fakemodel.Request
	for _, r := range ce.fake.Requests(ce.t) {
		if r.IsMessages() && r.SessionID == conversation {
			last = &r
		}
	}
	if last == nil {
		return false
	}
	for _, m := range last.Messages() {
		for _, s := range m.Texts() {
			if strings.Contains(s, text) {
				return true
			}
		}
	}
	return false
}

// processes is how many CLI processes reached the fake: each sends one
// HEAD / preflight when it starts.
func (ce *claudeEnv) processes() int {
	n := 0
	for _, r := range ce.fake.Requests(ce.t) {
		if r.Method == "HEAD" {
			n++
		}
	}
	return n
}

// storedTurns reads a chat's turns from the daemon's store, once what was
// queued is written.
func (ce *claudeEnv) storedTurns(chat string) []store.TurnRecord {
	ce.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ce.d.Store().Flush(ctx); err != nil {
		ce.t.Fatal(err)
	}
	recs, err := ce.d.Store().Turns(ctx, chat)
	if err != nil {
		ce.t.Fatal(err)
	}
	return recs
}

// chatRecord reads a chat's record from the daemon's store.
func (ce *claudeEnv) chatRecord(chat string) store.ChatRecord {
	ce.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ce.d.Store().Flush(ctx); err != nil {
		ce.t.Fatal(err)
	}
	rec, ok, err := ce.d.Store().Chat(ctx, chat)
	if err != nil || !ok {
		ce.t.Fatalf("chat record %s: %v (found %v)", chat, err, ok)
	}
	return rec
}

// turnEnvs returns the envelopes a client got on chat that name turn id.
func clTurnEnvs(c *ahptest.Client, chat, id string) []ahptest.Envelope {
	var out []ahptest.Envelope
	for _, env := range c.Envelopes() {
		if env.Channel != chat {
			continue
		}
		var tid string
		if env.Field("turnId", &tid) == nil && tid == id {
			out = append(out, env)
		}
	}
	return out
}

// awaitTurnAction waits for an action of type typ on chat naming turn id.
func clAwaitAction(t testing.TB, c *ahptest.Client, chat, id, typ string) ahptest.Envelope {
	t.Helper()
	return c.AwaitEnvelope(typ+" of "+id, func(env ahptest.Envelope) bool {
		if env.Channel != chat || env.Type() != typ {
			return false
		}
		var tid string
		_ = env.Field("turnId", &tid)
		return tid == id
	})
}

// awaitConfirmationAsk waits for the tool call of turn id that waits for
// confirmation (a chat/toolCallReady that says nothing of confirmed) and
// returns its toolCallId.
func clAwaitAsk(t testing.TB, c *ahptest.Client, chat, id string) string {
	t.Helper()
	env := c.AwaitEnvelope("a tool call of "+id+" waiting for confirmation", func(env ahptest.Envelope) bool {
		if env.Channel != chat || env.Type() != "chat/toolCallReady" {
			return false
		}
		var tid, confirmed string
		_ = env.Field("turnId", &tid)
		_ = env.Field("confirmed", &confirmed)
		return tid == id && confirmed == ""
	})
	var call string
	if err := env.Field("toolCallId", &call); err != nil {
		t.Fatal(err)
	}
	return call
}

// markdown is the text of a turn's markdown parts, joined by "|".
func clMarkdown(t ahp.Turn) string {
	var out []string
	for _, p := range t.ResponseParts {
		if p.Kind == ahp.PartMarkdown {
			out = append(out, p.Content)
		}
	}
	return strings.Join(out, "|")
}

// toolCalls lists a turn's tool call parts.
func clToolCalls(t ahp.Turn) []*ahp.ToolCallState {
	var out []*ahp.ToolCallState
	for _, p := range t.ResponseParts {
		if p.Kind == ahp.PartToolCall && p.ToolCall != nil {
			out = append(out, p.ToolCall)
		}
	}
	return out
}

func clPending(kind, id, text string) map[string]any {
	return map[string]any{
		"type": "chat/pendingMessageSet", "kind": kind, "id": id,
		"message": map[string]any{"text": text, "origin": map[string]any{"kind": "user"}},
	}
}

func clExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func clJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
