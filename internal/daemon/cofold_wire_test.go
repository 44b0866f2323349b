package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent/cofold"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

// cofoldAPIs are the two API styles every cofold wire test runs in,
// against the project's fake model server on loopback.
var cofoldAPIs = []string{"openai", "anthropic"}

// cofoldEnv is a daemon whose cofold talks to a fake model server.
type cofoldEnv struct {
	*testEnv
	fake *fakemodel.Server
	api  string
}

// newCofoldEnv starts a daemon offering the agents the config builds
// (daemon.BuiltinAgents), cofold's settings merged over a provider "fake"
// of the given API with the model fake-model.
func newCofoldEnv(t *testing.T, fake *fakemodel.Server, api string, settings map[string]any, model map[string]any) *cofoldEnv {
	t.Helper()
	base := fake.URL
	if api == "openai" {
		base += "/v1"
	}
	m := map[string]any{"id": "fake-model"}
	for k, v := range model {
		m[k] = v
	}
	s := map[string]any{
		"providers":  []any{map[string]any{"name": "fake", "api": api, "baseUrl": base, "apiKey": "test-key", "models": []any{m}}},
		"maxRetries": 0,
	}
	for k, v := range settings {
		s[k] = v
	}
	raw, _ := json.Marshal(s)
	cfg := daemon.Defaults()
	cfg.Agents = map[string]json.RawMessage{"cofold": raw}
	reg, err := daemon.BuiltinAgents(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, reg, func(c *daemon.Config) { c.Agents = cfg.Agents })
	return &cofoldEnv{testEnv: e, fake: fake, api: api}
}

// session creates a cofold session; it returns its default chat, which a
// subscribed client a watches.
func (ce *cofoldEnv) session(a *ahptest.Client, uri string) string {
	ce.t.Helper()
	a.MustCall("createSession", map[string]any{"channel": uri, "provider": cofold.Provider})
	chat := sessionState(ce.t, a, uri).DefaultChat
	a.Subscribe(chat)
	return chat
}

// lastPrompt is the text of every message of the fake's latest model
// request, by role: "user:hi", "assistant:fake reply: hi", "tool".
func (ce *cofoldEnv) lastRequest() []string {
	ce.t.Helper()
	reqs := ce.fake.Requests(ce.t)
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Method != "POST" {
			continue
		}
		var out []string
		for _, m := range reqs[i].Messages() {
			if m.Role == "system" {
				continue
			}
			texts := m.Texts()
			if len(texts) == 0 {
				out = append(out, m.Role)
				continue
			}
			out = append(out, m.Role+":"+strings.Join(texts, " "))
		}
		return out
	}
	return nil
}

// lastBody is the fake's latest model request as sent.
func (ce *cofoldEnv) lastBody() string {
	reqs := ce.fake.Requests(ce.t)
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Method == "POST" {
			return string(reqs[i].Body)
		}
	}
	return ""
}

// modelCalls counts the fake's model requests whose last message says text.
func (ce *cofoldEnv) modelCalls(text string) int {
	n := 0
	for _, r := range ce.fake.Requests(ce.t) {
		msgs := r.Messages()
		if r.Method == "POST" && len(msgs) > 0 && strings.Contains(strings.Join(msgs[len(msgs)-1].Texts(), " "), text) {
			n++
		}
	}
	return n
}

func cofoldEach(t *testing.T, run func(t *testing.T, fake *fakemodel.Server, api string)) {
	fake := fakemodel.Start(t)
	for _, api := range cofoldAPIs {
		t.Run(api, func(t *testing.T) { run(t, fake, api) })
	}
}

func mustEnd(t *testing.T, env ahptest.Envelope, typ string) {
	t.Helper()
	if env.Type() != typ {
		t.Fatalf("turn ended with %s, want %s: %s", env.Type(), typ, env.Action)
	}
}

func callJSON(name string, args map[string]any) string {
	b, _ := json.Marshal(args)
	return "[[call " + name + " " + string(b) + "]]"
}

func hasPart(tr ahp.Turn, kind string) bool {
	for _, p := range tr.ResponseParts {
		if p.Kind == kind {
			return true
		}
	}
	return false
}

// TestCofoldTextAndReasoning: a turn streams reasoning and text, and the
// root agents list shows cofold with its configured models and what the
// provider's GET /models listed.
func TestCofoldTextAndReasoning(t *testing.T) {
	t.Parallel()
	cofoldEach(t, func(t *testing.T, fake *fakemodel.Server, api string) {
		ce := newCofoldEnv(t, fake, api, nil, nil)
		a := ce.client("a")
		raw, _ := a.Subscribe(ahp.RootURI)
		var root struct {
			Agents []ahp.AgentInfo `json:"agents"`
		}
		if err := json.Unmarshal(raw, &root); err != nil {
			t.Fatal(err)
		}
		var models []string
		for _, ag := range root.Agents {
			if ag.Provider == cofold.Provider {
				for _, m := range ag.Models {
					models = append(models, m.ID)
				}
			}
		}
		if len(models) < 2 || models[0] != "fake/fake-model" || !strings.Contains(strings.Join(models, " "), "fake/claude-haiku-4-5") {
			t.Errorf("cofold's models in the agents list: %v", models)
		}

		chat := ce.session(a, "ahp-session:/c0f01d00-0000-4000-8000-000000000001")
		mustEnd(t, sendTurn(t, a, chat, "t1", "[think] hello"), "chat/turnComplete")
		tr := chatOf(t, a, chat).Turns[0]
		if got := clMarkdown(tr); got != "fake reply: [think] hello" {
			t.Errorf("answer %q", got)
		}
		if !hasPart(tr, ahp.PartReasoning) {
			t.Errorf("no reasoning part: %s", clJSON(t, tr.ResponseParts))
		}
		if tr.Usage == nil || tr.Usage.InputTokens == 0 {
			t.Errorf("no usage: %s", clJSON(t, tr))
		}
	})
}

// TestCofoldToolLoopAndAsk: in acceptEdits a multi-step tool loop writes,
// reads and edits a file in the chat's directory without asking; a bash
// call asks, and a second client's answer is the one taken (approved, then
// denied); a path outside the chat's directories is refused.
func TestCofoldToolLoopAndAsk(t *testing.T) {
	t.Parallel()
	cofoldEach(t, func(t *testing.T, fake *fakemodel.Server, api string) {
		ce := newCofoldEnv(t, fake, api, map[string]any{"permissionMode": "acceptEdits"}, nil)
		a := ce.client("a")
		chat := ce.session(a, "ahp-session:/c0f01d00-0000-4000-8000-000000000002")
		b := ce.client("b")
		b.Subscribe(chat)

		loop := callJSON("write_file", map[string]any{"path": "notes.txt", "content": "one two"}) +
			callJSON("read_file", map[string]any{"path": "notes.txt"}) +
			callJSON("edit_file", map[string]any{"path": "notes.txt", "old_string": "two", "new_string": "three"})
		mustEnd(t, sendTurn(t, a, chat, "t1", loop), "chat/turnComplete")
		if data, err := os.ReadFile(filepath.Join(ce.workDir, "notes.txt")); err != nil || string(data) != "one three" {
			t.Fatalf("notes.txt = %q, %v", data, err)
		}
		tr := chatOf(t, a, chat).Turns[0]
		calls := clToolCalls(tr)
		if len(calls) != 3 || clMarkdown(tr) != "tool done" {
			t.Fatalf("turn: %s", clJSON(t, tr.ResponseParts))
		}
		for _, c := range calls {
			if c.Status != ahp.ToolCompleted || c.Confirmed != ahp.ConfirmedNotNeeded {
				t.Errorf("call %s: %s", c.ToolName, clJSON(t, c))
			}
		}

		a.Dispatch(chat, turnStarted("t2", callJSON("bash", map[string]any{"command": "echo yes > asked.txt"})))
		call := clAwaitAsk(t, b, chat, "t2")
		if clExists(filepath.Join(ce.workDir, "asked.txt")) {
			t.Fatal("bash ran before it was confirmed")
		}
		if env := b.AwaitEcho(b.Dispatch(chat, map[string]any{"type": "chat/toolCallConfirmed", "turnId": "t2", "toolCallId": call, "approved": true})); env.RejectionReason != "" {
			t.Fatalf("confirmation refused: %s", env.RejectionReason)
		}
		mustEnd(t, awaitEnd(t, a, chat, "t2"), "chat/turnComplete")
		if !clExists(filepath.Join(ce.workDir, "asked.txt")) {
			t.Fatal("the approved bash call did not run")
		}

		a.Dispatch(chat, turnStarted("t3", callJSON("bash", map[string]any{"command": "echo no > denied.txt"})))
		call = clAwaitAsk(t, b, chat, "t3")
		b.AwaitEcho(b.Dispatch(chat, map[string]any{"type": "chat/toolCallConfirmed", "turnId": "t3", "toolCallId": call, "approved": false}))
		mustEnd(t, awaitEnd(t, a, chat, "t3"), "chat/turnComplete")
		if clExists(filepath.Join(ce.workDir, "denied.txt")) {
			t.Fatal("the denied bash call ran")
		}
		if body := ce.lastBody(); !strings.Contains(body, "the user denied this call") {
			t.Errorf("after the denial the model was sent %s", body)
		}

		// Escapes through the wire: an absolute path, .. and a symlink.
		secretDir := t.TempDir()
		secret := filepath.Join(secretDir, "secret.txt")
		if err := os.WriteFile(secret, []byte("top secret"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(secretDir, filepath.Join(ce.workDir, "link")); err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(ce.workDir, secret)
		escapes := callJSON("read_file", map[string]any{"path": secret}) +
			callJSON("read_file", map[string]any{"path": rel}) +
			callJSON("read_file", map[string]any{"path": "link/secret.txt"}) +
			callJSON("write_file", map[string]any{"path": "link/new.txt", "content": "x"})
		mustEnd(t, sendTurn(t, a, chat, "t4", escapes), "chat/turnComplete")
		tr = chatOf(t, a, chat).Turns[3]
		for _, c := range clToolCalls(tr) {
			raw := clJSON(t, c)
			if c.Status != ahp.ToolCompleted || !strings.Contains(raw, "outside the chat") || strings.Contains(raw, "top secret") {
				t.Errorf("escape %s", raw)
			}
		}
		if clExists(filepath.Join(secretDir, "new.txt")) {
			t.Error("a write through a symlink left the chat's directory")
		}
	})
}

// TestCofoldStop: a stop mid-stream ends the turn cancelled; a stop during
// bash kills its whole process group, so nothing it started is left.
func TestCofoldStop(t *testing.T) {
	t.Parallel()
	cofoldEach(t, func(t *testing.T, fake *fakemodel.Server, api string) {
		ce := newCofoldEnv(t, fake, api, map[string]any{"permissionMode": "bypassPermissions"}, nil)
		a := ce.client("a")
		chat := ce.session(a, "ahp-session:/c0f01d00-0000-4000-8000-000000000003")

		a.Dispatch(chat, turnStarted("t1", "[slow]"))
		clAwaitAction(t, a, chat, "t1", "chat/delta")
		a.AwaitEcho(a.Dispatch(chat, map[string]any{"type": "chat/turnCancelled", "turnId": "t1"}))
		mustEnd(t, awaitEnd(t, a, chat, "t1"), "chat/turnCancelled")

		pidFile := filepath.Join(ce.workDir, "sleeper.pid")
		a.Dispatch(chat, turnStarted("t2", callJSON("bash", map[string]any{"command": "sleep 300 & echo $! > sleeper.pid; wait"})))
		pid := 0
		for deadline := time.Now().Add(20 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the bash call never wrote its child's pid")
			}
			data, _ := os.ReadFile(pidFile)
			pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		}
		a.AwaitEcho(a.Dispatch(chat, map[string]any{"type": "chat/turnCancelled", "turnId": "t2"}))
		mustEnd(t, awaitEnd(t, a, chat, "t2"), "chat/turnCancelled")
		deadline := time.Now().Add(5 * time.Second)
		for alive(pid) {
			if time.Now().After(deadline) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("the bash call's child %d outlived the stop", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}

		mustEnd(t, sendTurn(t, a, chat, "t3", "after"), "chat/turnComplete")
		// The stopped turns stay in the conversation the model is sent.
		if got := ce.lastRequest(); len(got) < 5 || got[0] != "user:[slow]" || got[len(got)-1] != "user:after" {
			t.Errorf("after the stops the model was sent %q", got)
		}
	})
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// TestCofoldSteering: a steering message sent while a tool runs is written
// into the run's transcript before the model's next step (C-TURN-87) and
// taken out with chat/pendingMessageRemoved (C-TURN-90); one a client takes
// back while the run holds it is said removed (C-TURN-92) and still read
// by the run (C-TURN-93).
func TestCofoldSteering(t *testing.T) {
	t.Parallel()
	cofoldEach(t, func(t *testing.T, fake *fakemodel.Server, api string) {
		ce := newCofoldEnv(t, fake, api, map[string]any{"permissionMode": "bypassPermissions"}, nil)
		a := ce.client("a")
		chat := ce.session(a, "ahp-session:/c0f01d00-0000-4000-8000-000000000004")
		b := ce.client("b")
		b.Subscribe(chat)

		// Each tool call and the slow reply below wait on a gate the test
		// opens once the chat has handed the run what the step is about
		// (the draft barrier: every action b sent before it was handled).
		gate := func(name string) string { return filepath.Join(ce.workDir, name) }
		openGate := func(name string) {
			t.Helper()
			draftBarrier(t, b, chat, name)
			writeFile(t, gate(name), "")
		}
		waitOn := func(name string) string {
			return callJSON("bash", map[string]any{"command": "while [ ! -e " + name + " ]; do sleep 0.02; done"})
		}

		a.Dispatch(chat, turnStarted("t1", waitOn("gate1")))
		clAwaitAction(t, a, chat, "t1", "chat/toolCallReady")
		if env := b.AwaitEcho(b.Dispatch(chat, clPending("steering", "s1", "steer words"))); env.RejectionReason != "" {
			t.Fatalf("steering refused: %s", env.RejectionReason)
		}
		openGate("gate1")
		awaitRemoval(t, a, chat, "s1")
		mustEnd(t, awaitEnd(t, a, chat, "t1"), "chat/turnComplete")
		tr := chatOf(t, a, chat).Turns[0]
		if got := clMarkdown(tr); got != "fake reply: steer words" {
			t.Errorf("t1 answered %q", got)
		}
		// The tool's result (role tool, or a user message of tool_result
		// blocks), then the steering message.
		if got := ce.lastRequest(); len(got) != 4 || got[3] != "user:steer words" {
			t.Errorf("the model's next step was sent %q", got)
		}

		// C-TURN-91: a message handed while the model writes its last
		// step is given back when the run settles, and runs next.
		a.Dispatch(chat, turnStarted("t0", "[wait:"+gate("gate0")+"]"))
		clAwaitAction(t, a, chat, "t0", "chat/responsePart") // its first text, the rest held
		b.AwaitEcho(b.Dispatch(chat, clPending("steering", "s0", "late words")))
		openGate("gate0")
		mustEnd(t, awaitEnd(t, a, chat, "t0"), "chat/turnComplete")
		next := a.AwaitEnvelope("the returned message's turn", func(env ahptest.Envelope) bool {
			var queued string
			return env.Channel == chat && env.Type() == "chat/turnStarted" && env.Field("queuedMessageId", &queued) == nil && queued == "s0"
		})
		mustEnd(t, awaitEnd(t, a, chat, turnID(next)), "chat/turnComplete")
		cs := chatOf(t, a, chat)
		if got := clMarkdown(cs.Turns[len(cs.Turns)-1]); got != "fake reply: late words" {
			t.Errorf("the returned message's turn answered %q", got)
		}
		if got := clMarkdown(cs.Turns[len(cs.Turns)-2]); strings.Contains(got, "late words") {
			t.Errorf("the settled run read the late message: %q", got)
		}

		a.Dispatch(chat, turnStarted("t2", waitOn("gate2")))
		clAwaitAction(t, a, chat, "t2", "chat/toolCallReady")
		b.AwaitEcho(b.Dispatch(chat, clPending("steering", "s2", "taken back words")))
		env := b.AwaitEcho(b.Dispatch(chat, map[string]any{"type": "chat/pendingMessageRemoved", "kind": "steering", "id": "s2"}))
		if env.RejectionReason != "" {
			t.Fatalf("take-back refused: %s", env.RejectionReason)
		}
		openGate("gate2")
		mustEnd(t, awaitEnd(t, a, chat, "t2"), "chat/turnComplete")
		cs = chatOf(t, a, chat)
		if cs.SteeringMessage != nil {
			t.Errorf("the chat still shows steering %s", clJSON(t, cs.SteeringMessage))
		}
		if got := clMarkdown(cs.Turns[len(cs.Turns)-1]); got != "fake reply: taken back words" {
			t.Errorf("t2 answered %q: the run did not read the message it held", got)
		}
	})
}

// TestCofoldFaults: a 500 and an overloaded error end the turn with
// chat/error carrying the provider's message, offered as resumable; the
// SDK's retries are bounded by maxRetries.
func TestCofoldFaults(t *testing.T) {
	t.Parallel()
	cofoldEach(t, func(t *testing.T, fake *fakemodel.Server, api string) {
		ce := newCofoldEnv(t, fake, api, map[string]any{"maxRetries": 1}, nil)
		a := ce.client("a")
		chat := ce.session(a, "ahp-session:/c0f01d00-0000-4000-8000-000000000005")
		before := ce.modelCalls("[error] " + api)
		end := sendTurn(t, a, chat, "t1", "[error] "+api)
		mustEnd(t, end, "chat/error")
		if !strings.Contains(string(end.Action), "fake server error") || !strings.Contains(string(end.Action), "500") {
			t.Errorf("500: %s", end.Action)
		}
		if n := ce.modelCalls("[error] "+api) - before; n != 2 {
			t.Errorf("the failing call was sent %d times, want 2 (maxRetries 1)", n)
		}
		if tr := chatOf(t, a, chat).Turns[0]; !tr.ResponseParts[len(tr.ResponseParts)-1].IsResumableError() {
			t.Errorf("a 500 is not resumable: %s", clJSON(t, tr.ResponseParts))
		}
		// C-TURN-38: resumed, the turn is sent again from where it failed.
		a.AwaitEcho(a.Dispatch(chat, map[string]any{"type": "chat/turnResume", "turnId": "t1"}))
		mustEnd(t, awaitEnd(t, a, chat, "t1"), "chat/error")
		if got := ce.lastRequest(); len(got) != 1 {
			t.Errorf("the resumed turn was sent %q, want its prompt once", got)
		}

		chat2 := ce.session(a, "ahp-session:/c0f01d00-0000-4000-8000-000000000015")
		end = sendTurn(t, a, chat2, "t2", "[overloaded]")
		mustEnd(t, end, "chat/error")
		if !strings.Contains(string(end.Action), "Overloaded") || !strings.Contains(string(end.Action), "overloaded_error") {
			t.Errorf("overloaded: %s", end.Action)
		}

		// A stream cut mid-answer: the turn fails, resumable, with what
		// streamed before the cut still shown.
		chat3 := ce.session(a, "ahp-session:/c0f01d00-0000-4000-8000-000000000025")
		mustEnd(t, sendTurn(t, a, chat3, "t3", "[drop]"), "chat/error")
		tr := chatOf(t, a, chat3).Turns[0]
		if last := tr.ResponseParts[len(tr.ResponseParts)-1]; !last.IsResumableError() || !strings.HasPrefix(clMarkdown(tr), "fake") {
			t.Errorf("dropped stream: %s", clJSON(t, tr.ResponseParts))
		}
	})
}

// TestCofoldForkRewindRestart: a fork and a rewind cut the stored
// conversation at a turn's point (the fake's request log shows the cut
// history); after a restart the conversation resumes from SQLite; a
// clear-everything truncation deletes it.
func TestCofoldForkRewindRestart(t *testing.T) {
	cofoldEach(t, func(t *testing.T, fake *fakemodel.Server, api string) {
		ce := newCofoldEnv(t, fake, api, nil, nil)
		a := ce.client("a")
		sess := "ahp-session:/c0f01d00-0000-4000-8000-000000000006"
		chat := ce.session(a, sess)
		for i, text := range []string{"one", "two", "three"} {
			mustEnd(t, sendTurn(t, a, chat, "t"+strconv.Itoa(i+1), text), "chat/turnComplete")
		}

		fork := "ahp-chat:/c0f01d00-0000-4000-8000-00000000f001"
		a.MustCall("createChat", map[string]any{"channel": sess, "chat": fork,
			"source": map[string]any{"kind": "fork", "chat": chat, "turnId": "t1"}})
		a.Subscribe(fork)
		mustEnd(t, sendTurn(t, a, fork, "f1", "forked"), "chat/turnComplete")
		want := []string{"user:one", "assistant:fake reply: one", "user:forked"}
		if got := ce.lastRequest(); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("the fork sent %q, want %q", got, want)
		}

		if env := a.AwaitEcho(a.Dispatch(chat, map[string]any{"type": "chat/truncated", "turnId": "t1"})); env.RejectionReason != "" {
			t.Fatalf("rewind refused: %s", env.RejectionReason)
		}
		mustEnd(t, sendTurn(t, a, chat, "t4", "again"), "chat/turnComplete")
		want = []string{"user:one", "assistant:fake reply: one", "user:again"}
		if got := ce.lastRequest(); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("after the rewind the model was sent %q, want %q", got, want)
		}

		ce.restart()
		a = ce.client("a2")
		a.Subscribe(chat)
		mustEnd(t, sendTurn(t, a, chat, "t5", "after restart"), "chat/turnComplete")
		want = append(want, "assistant:fake reply: again", "user:after restart")
		if got := ce.lastRequest(); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("after the restart the model was sent %q, want %q", got, want)
		}

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := ce.d.Store().Flush(ctx); err != nil {
			t.Fatal(err)
		}
		rec, _, err := ce.d.Store().Chat(ctx, chat)
		if err != nil {
			t.Fatal(err)
		}
		if msgs, _ := ce.d.Store().Cofold().Messages(ctx, rec.ConversationID); len(msgs) != 6 {
			t.Fatalf("stored %d messages before the clear, want 6", len(msgs))
		}
		if env := a.AwaitEcho(a.Dispatch(chat, map[string]any{"type": "chat/truncated"})); env.RejectionReason != "" {
			t.Fatalf("clear refused: %s", env.RejectionReason)
		}
		// The chat's actor deletes it once the clear is said.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			msgs, _ := ce.d.Store().Cofold().Messages(ctx, rec.ConversationID)
			if len(msgs) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the cleared conversation still holds %d messages", len(msgs))
			}
		}
		mustEnd(t, sendTurn(t, a, chat, "t6", "fresh"), "chat/turnComplete")
		if got := ce.lastRequest(); strings.Join(got, "|") != "user:fresh" {
			t.Errorf("after the clear the model was sent %q", got)
		}
	})
}

// TestCofoldCompaction: on a model with a tiny context window the older
// messages are summarised with a model call; every turn stays in the
// transcript and a system notification says what went where.
func TestCofoldCompaction(t *testing.T) {
	t.Parallel()
	cofoldEach(t, func(t *testing.T, fake *fakemodel.Server, api string) {
		ce := newCofoldEnv(t, fake, api, nil, map[string]any{"contextWindow": 600})
		a := ce.client("a")
		chat := ce.session(a, "ahp-session:/c0f01d00-0000-4000-8000-000000000007")
		summaries := ce.modelCalls("Summarise the conversation above")
		long := strings.Repeat("lorem ipsum ", 120)
		mustEnd(t, sendTurn(t, a, chat, "t1", long), "chat/turnComplete")
		mustEnd(t, sendTurn(t, a, chat, "t2", "next"), "chat/turnComplete")
		cs := chatOf(t, a, chat)
		if len(cs.Turns) != 2 || cs.Turns[0].Message.Text != long {
			t.Fatalf("transcript: %v", texts(cs.Turns))
		}
		var notice string
		for _, p := range cs.Turns[1].ResponseParts {
			if p.Kind == ahp.PartSystemNotification {
				notice = clJSON(t, p)
			}
		}
		if !strings.Contains(notice, "Compacted the conversation: 2 earlier messages") || !strings.Contains(notice, "tokens") {
			t.Errorf("no compaction notice: %s", clJSON(t, cs.Turns[1].ResponseParts))
		}
		got := ce.lastRequest()
		if len(got) != 2 || !strings.HasPrefix(got[0], "user:Summary of the earlier conversation") || got[1] != "user:next" {
			t.Errorf("after the compaction the model was sent %q", got)
		}
		if ce.modelCalls("Summarise the conversation above")-summaries != 1 {
			t.Errorf("no summary call")
		}
	})
}

// TestCofoldRenameChat: asked to, the agent renames the chat with the
// rename_chat host tool (C-COMP-30).
func TestCofoldRenameChat(t *testing.T) {
	t.Parallel()
	cofoldEach(t, func(t *testing.T, fake *fakemodel.Server, api string) {
		ce := newCofoldEnv(t, fake, api, nil, nil)
		a := ce.client("a")
		chat := ce.session(a, "ahp-session:/c0f01d00-0000-4000-8000-000000000008")
		mustEnd(t, sendTurn(t, a, chat, "t1", "please rename this chat "+callJSON("rename_chat", map[string]any{"title": "Named by cofold"})), "chat/turnComplete")
		// The rename came before the turn's end, on the chat's one actor.
		if got := chatOf(t, a, chat).Title; got != "Named by cofold" {
			t.Fatalf("the title is %q", got)
		}
		ce.restart()
		a = ce.client("a2")
		if got := chatOf(t, a, chat).Title; got != "Named by cofold" {
			t.Errorf("after a restart the title is %q", got)
		}
	})
}

// TestCofoldNoProvider: with no provider configured, cofold is still
// listed and a turn fails saying where to configure one.
func TestCofoldNoProvider(t *testing.T) {
	t.Parallel()
	reg, err := daemon.BuiltinAgents(daemon.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, reg)
	a := e.client("a")
	uri := "ahp-session:/c0f01d00-0000-4000-8000-000000000009"
	a.MustCall("createSession", map[string]any{"channel": uri, "provider": cofold.Provider})
	chat := sessionState(t, a, uri).DefaultChat
	a.Subscribe(chat)
	end := sendTurn(t, a, chat, "t1", "hello")
	mustEnd(t, end, "chat/error")
	if !strings.Contains(string(end.Action), `agents`) || !strings.Contains(string(end.Action), "providers") {
		t.Errorf("error %s", end.Action)
	}
}

// TestCofoldOneTurnAtATime: cofold runs one turn at a time (C-TURN-103); a
// turn sent while another runs goes to the model once the one in front of
// it ended (C-TURN-104); a stop runs none of the turns sent behind it
// (C-TURN-105), which every client sees ended (C-TURN-106).
func TestCofoldOneTurnAtATime(t *testing.T) {
	t.Parallel()
	cofoldEach(t, func(t *testing.T, fake *fakemodel.Server, api string) {
		ce := newCofoldEnv(t, fake, api, map[string]any{"permissionMode": "bypassPermissions"}, nil)
		a := ce.client("a")
		chat := ce.session(a, "ahp-session:/c0f01d00-0000-4000-8000-00000000000a")
		b := ce.client("b")
		b.Subscribe(chat)

		a.Dispatch(chat, turnStarted("t1", callJSON("bash", map[string]any{"command": "sleep 1"})))
		clAwaitAction(t, a, chat, "t1", "chat/toolCallReady")
		a.Dispatch(chat, turnStarted("t2", "behind "+api))
		mustEnd(t, awaitEnd(t, a, chat, "t1"), "chat/turnComplete")
		mustEnd(t, awaitEnd(t, a, chat, "t2"), "chat/turnComplete")
		reqs := ce.fake.Requests(t)
		lastOfT1, firstOfT2 := -1, -1
		for i, r := range reqs {
			msgs := r.Messages()
			if len(msgs) == 0 {
				continue
			}
			said := strings.Join(msgs[len(msgs)-1].Texts(), " ")
			if strings.Contains(said, "behind "+api) && firstOfT2 < 0 {
				firstOfT2 = i
			}
			if strings.Contains(string(r.Body), "sleep 1") && firstOfT2 < 0 {
				lastOfT1 = i
			}
		}
		if firstOfT2 < 0 || firstOfT2 < lastOfT1 {
			t.Errorf("t2 went to the model at request %d, t1's last was %d", firstOfT2, lastOfT1)
		}

		a.Dispatch(chat, turnStarted("t3", callJSON("bash", map[string]any{"command": "sleep 5"})))
		clAwaitAction(t, a, chat, "t3", "chat/toolCallReady")
		a.Dispatch(chat, turnStarted("t4", "never run "+api))
		a.AwaitEcho(a.Dispatch(chat, map[string]any{"type": "chat/turnCancelled", "turnId": "t3"}))
		mustEnd(t, awaitEnd(t, a, chat, "t3"), "chat/turnCancelled")
		mustEnd(t, awaitEnd(t, b, chat, "t4"), "chat/turnCancelled")
		if n := ce.modelCalls("never run " + api); n != 0 {
			t.Errorf("the turn sent behind the stopped one reached the model %d times", n)
		}
	})
}

// TestCofoldSessionPermissionMode: the permission mode is a session config
// property resolveSessionConfig describes (default: the daemon config's);
// a session created in plan mode refuses a write the model asks for.
func TestCofoldSessionPermissionMode(t *testing.T) {
	t.Parallel()
	cofoldEach(t, func(t *testing.T, fake *fakemodel.Server, api string) {
		ce := newCofoldEnv(t, fake, api, map[string]any{"permissionMode": "acceptEdits"}, nil)
		a := ce.client("a")
		var res struct {
			Schema struct {
				Properties map[string]struct {
					Enum    []string `json:"enum"`
					Default string   `json:"default"`
				} `json:"properties"`
			} `json:"schema"`
		}
		if err := json.Unmarshal(a.MustCall("resolveSessionConfig", map[string]any{"channel": ahp.RootURI, "provider": cofold.Provider}), &res); err != nil {
			t.Fatal(err)
		}
		p := res.Schema.Properties[cofold.PermissionModeKey]
		if strings.Join(p.Enum, ",") != "default,acceptEdits,plan,bypassPermissions" || p.Default != "acceptEdits" {
			t.Fatalf("permissionMode property %+v", p)
		}

		uri := "ahp-session:/c0f01d00-0000-4000-8000-00000000000b"
		a.MustCall("createSession", map[string]any{"channel": uri, "provider": cofold.Provider, "config": map[string]any{cofold.PermissionModeKey: "plan"}})
		chat := sessionState(t, a, uri).DefaultChat
		a.Subscribe(chat)
		mustEnd(t, sendTurn(t, a, chat, "t1", callJSON("write_file", map[string]any{"path": "planned.txt", "content": "x"})), "chat/turnComplete")
		if clExists(filepath.Join(ce.workDir, "planned.txt")) {
			t.Fatal("a plan-mode session wrote a file")
		}
		if calls := clToolCalls(chatOf(t, a, chat).Turns[0]); len(calls) != 1 || !strings.Contains(clJSON(t, calls[0]), "plan mode") {
			t.Errorf("calls %s", clJSON(t, calls))
		}
	})
}

// TestCofoldSessionContext: cofold reads the chat a #chat: pointer names
// with the host's get_session_context tool.
func TestCofoldSessionContext(t *testing.T) {
	t.Parallel()
	cofoldEach(t, func(t *testing.T, fake *fakemodel.Server, api string) {
		ce := newCofoldEnv(t, fake, api, nil, nil)
		a := ce.client("a")
		sess := "ahp-session:/c0f01d00-0000-4000-8000-00000000000c"
		chat := ce.session(a, sess)
		mustEnd(t, sendTurn(t, a, chat, "t1", "the password is swordfish"), "chat/turnComplete")
		other := "ahp-chat:/c0f01d00-0000-4000-8000-00000000c0c0"
		a.MustCall("createChat", map[string]any{"channel": sess, "chat": other})
		a.Subscribe(other)
		mustEnd(t, sendTurn(t, a, other, "o1", "what did the other chat say? "+callJSON("get_session_context", map[string]any{"chat": chat})), "chat/turnComplete")
		calls := clToolCalls(chatOf(t, a, other).Turns[0])
		if len(calls) != 1 || calls[0].Status != ahp.ToolCompleted || !strings.Contains(clJSON(t, calls[0]), "swordfish") {
			t.Fatalf("get_session_context: %s", clJSON(t, calls))
		}
		if body := ce.lastBody(); !strings.Contains(body, "swordfish") {
			t.Errorf("the model was not sent the transcript: %s", body)
		}
	})
}
