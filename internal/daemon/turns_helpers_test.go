package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/script"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/reduce"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/google/uuid"
)

// The providers a turns env offers: the script agent under one capability
// combination each, so a test runs a rule against every combination it
// depends on.
const (
	provScript     = "script"            // every capability
	provNoSteer    = "script-nosteer"    // takes no steering
	provNoWithdraw = "script-nowithdraw" // steering it cannot withdraw
	provConcurrent = "script-concurrent" // no OneTurnAtATime: the host holds a turn sent while another runs
	provNoResume   = "script-noresume"   // cannot resume
	// The same with a SlowDelay of slowDelay, for a [prep] or a [stubborn]
	// stop a test has to act inside of.
	provSlow           = "script-slow"
	provSlowConcurrent = "script-slow-concurrent"
)

// turnsEnv is a daemon whose registry holds one script agent per provider
// above.
type turnsEnv struct {
	*testEnv
	scripts map[string]*script.Script
}

// scriptSlow is the script agents' SlowDelay in turns tests: [slow] answers
// stream 20 deltas this far apart and [prep] prepares three times as long.
// The slow providers use slowDelay.
const (
	scriptSlow = 15 * time.Millisecond
	slowDelay  = 250 * time.Millisecond
)

func newTurnsEnv(t *testing.T, mutate ...func(*daemon.Config)) *turnsEnv {
	t.Helper()
	return newTurnsEnvDelays(t, scriptSlow, slowDelay, 300*time.Millisecond, false, mutate...)
}

// newTurnsEnvDelays is newTurnsEnv with the script agents' SlowDelay (fast
// and slow providers) and LateDelay given; quiet logs warnings only (the
// env then cannot restart).
func newTurnsEnvDelays(t *testing.T, fast, slow, late time.Duration, quiet bool, mutate ...func(*daemon.Config)) *turnsEnv {
	t.Helper()
	caps := map[string]func(*agent.Capabilities){
		provScript:         func(*agent.Capabilities) {},
		provNoSteer:        func(c *agent.Capabilities) { c.Steering, c.Withdraw = false, false },
		provNoWithdraw:     func(c *agent.Capabilities) { c.Withdraw = false },
		provConcurrent:     func(c *agent.Capabilities) { c.OneTurnAtATime = false },
		provNoResume:       func(c *agent.Capabilities) { c.Resume = false },
		provSlow:           func(*agent.Capabilities) {},
		provSlowConcurrent: func(c *agent.Capabilities) { c.OneTurnAtATime = false },
	}
	e := &turnsEnv{scripts: make(map[string]*script.Script)}
	var agents []agent.Agent
	for prov, off := range caps {
		c := script.DefaultCapabilities()
		off(&c)
		delay := fast
		if strings.HasPrefix(prov, provSlow) {
			delay = slow
		}
		sc := script.New(script.Options{Provider: prov, Caps: c, ExactCaps: true, SlowDelay: delay, LateDelay: late})
		e.scripts[prov] = sc
		agents = append(agents, sc)
	}
	reg, err := agent.NewRegistry(agents...)
	if err != nil {
		t.Fatal(err)
	}
	e.testEnv = &testEnv{t: t, agents: reg, script: e.scripts[provScript], workDir: t.TempDir()}
	e.cfg = daemon.Defaults()
	e.cfg.Port = 0
	e.cfg.DataDir = t.TempDir()
	e.cfg.Paths = []string{e.workDir}
	for _, m := range mutate {
		m(&e.cfg)
	}
	if len(e.cfg.Tokens) > 0 && e.cfg.ConnectionToken == "" {
		e.cfg.ConnectionToken = "root-token" // see newEnvWith
	}
	if quiet {
		log := slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
		d, err := daemon.Start(context.Background(), e.cfg, daemon.Options{Agents: e.agents, Logger: log})
		if err != nil {
			t.Fatalf("start daemon: %v", err)
		}
		e.d = d
	} else {
		e.start()
	}
	t.Cleanup(func() { e.stop() })
	return e
}

// newSession creates a session on provider and returns its default chat.
func (e *turnsEnv) newSession(t testing.TB, c *ahptest.Client, provider string) (sess, chat string) {
	t.Helper()
	sess = "ahp-session:/" + uuid.NewString()
	c.MustCall("createSession", map[string]any{"channel": sess, "provider": provider})
	st, _ := c.Subscribe(sess)
	var s ahp.SessionState
	if err := json.Unmarshal(st, &s); err != nil {
		t.Fatalf("session state: %v", err)
	}
	if s.DefaultChat == "" {
		t.Fatalf("session %s has no default chat: %s", sess, st)
	}
	return sess, s.DefaultChat
}

// watcher is one client watching a chat from its first snapshot on.
type watcher struct {
	*ahptest.Client
	chat    string
	first   json.RawMessage
	fromSeq int64
}

// dial is a client of t (whose waits fail t, not the env's test),
// initialized and subscribed to the root channel.
func (e *turnsEnv) dial(t testing.TB, id string) *ahptest.Client {
	t.Helper()
	c := ahptest.Dial(t, e.d.URL(), e.cfg.ConnectionToken)
	c.Initialize(id, ahp.RootURI)
	return c
}

// watchers dials a client of t per name and subscribes each to chat.
func (e *turnsEnv) watchers(t testing.TB, chat string, names ...string) []*watcher {
	t.Helper()
	var out []*watcher
	for _, n := range names {
		c := e.dial(t, n)
		st, seq := c.Subscribe(chat)
		out = append(out, &watcher{Client: c, chat: chat, first: st, fromSeq: seq})
	}
	return out
}

// twoWatchers is a session on provider and two clients, a and b, watching
// its default chat; a created it.
func (e *turnsEnv) twoWatchers(t *testing.T, provider string) (chat string, a, b *watcher) {
	t.Helper()
	creator := e.dial(t, "creator-"+uuid.NewString()[:8])
	_, chat = e.newSession(t, creator, provider)
	w := e.watchers(t, chat, "a-"+uuid.NewString()[:8], "b-"+uuid.NewString()[:8])
	return chat, w[0], w[1]
}

// fold applies every envelope w received on its chat after its first
// snapshot, up to and including serverSeq upTo, to that snapshot, as a
// client's reducer does. Refusals were never applied by anyone.
func (w *watcher) fold(t testing.TB, upTo int64) ahp.ChatState {
	t.Helper()
	st := chatState(t, w.first)
	for _, env := range w.Envelopes() {
		if env.Channel != w.chat || env.ServerSeq <= w.fromSeq || env.ServerSeq > upTo || env.RejectionReason != "" {
			continue
		}
		a, err := ahp.DecodeAction(env.Action)
		if err != nil {
			t.Fatalf("decode %s: %v", env.Raw, err)
		}
		reduce.Chat(&st, a)
	}
	return st
}

// awaitSettled waits until w's chat, as w folds it, runs no turn and holds
// no pending message.
func (w *watcher) awaitSettled(t testing.TB) {
	t.Helper()
	st := chatState(t, w.first)
	folded := w.fromSeq
	settled := func() bool {
		return st.ActiveTurn == nil && st.SteeringMessage == nil && len(st.QueuedMessages) == 0
	}
	if settled() && len(chatEnvelopes(w.Client, w.chat)) == 0 {
		return
	}
	w.AwaitEnvelope("the chat to settle", func(env ahptest.Envelope) bool {
		if env.Channel != w.chat || env.ServerSeq <= folded {
			return false
		}
		folded = env.ServerSeq
		if env.RejectionReason == "" {
			a, err := ahp.DecodeAction(env.Action)
			if err != nil {
				return false
			}
			reduce.Chat(&st, a)
		}
		return settled()
	})
}

// settle waits until every watcher's chat is settled (awaitSettled).
// caughtUp waits until every watcher has received the envelope at seq on
// chat: what one client saw is not yet what another has.
func caughtUp(t testing.TB, chat string, seq int64, ws ...*watcher) {
	t.Helper()
	for _, w := range ws {
		w.AwaitEnvelope("envelope "+fmt.Sprint(seq), func(env ahptest.Envelope) bool { return env.Channel == chat && env.ServerSeq >= seq })
	}
}

func settle(t testing.TB, ws ...*watcher) {
	t.Helper()
	for _, w := range ws {
		w.awaitSettled(t)
	}
}

// comparable is a chat state as JSON for comparison. The title is left
// out: the host names a chat without a chat action (the session's chat
// summary carries it), so a client's folded title lags its snapshot's.
func comparable(t testing.TB, st ahp.ChatState) string {
	t.Helper()
	st.Title = ""
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameState checks that every watcher ends with the same chat state: each
// one's fresh snapshot, and what each built by folding the envelopes it
// received through reduce.Chat from its first snapshot, are all equal. It
// returns that state.
func sameState(t testing.TB, ws ...*watcher) ahp.ChatState {
	t.Helper()
	var want string
	var wantFrom string
	var out ahp.ChatState
	for _, w := range ws {
		raw, seq := w.Subscribe(w.chat)
		fresh := chatState(t, raw)
		folded := w.fold(t, seq)
		f, g := comparable(t, fresh), comparable(t, folded)
		if f != g {
			t.Fatalf("client %s: folded state differs from its fresh snapshot at serverSeq %d:\nfolded:   %s\nsnapshot: %s", w.ID, seq, g, f)
		}
		if want == "" {
			want, wantFrom, out = f, w.ID, fresh
			continue
		}
		if f != want {
			t.Fatalf("clients %s and %s end with different states:\n%s: %s\n%s: %s", wantFrom, w.ID, wantFrom, want, w.ID, f)
		}
	}
	return out
}

func userMessage(text string) map[string]any {
	return map[string]any{"text": text, "origin": map[string]any{"kind": "user"}}
}

func startTurn(c *ahptest.Client, chat, id, text string) int64 {
	return c.Dispatch(chat, turnStarted(id, text))
}

func setPending(c *ahptest.Client, chat, kind, id, text string) int64 {
	return c.Dispatch(chat, map[string]any{"type": "chat/pendingMessageSet", "kind": kind, "id": id, "message": userMessage(text)})
}

func removePending(c *ahptest.Client, chat, kind, id string) int64 {
	return c.Dispatch(chat, map[string]any{"type": "chat/pendingMessageRemoved", "kind": kind, "id": id})
}

func reorderQueued(c *ahptest.Client, chat string, order ...string) int64 {
	return c.Dispatch(chat, map[string]any{"type": "chat/queuedMessagesReordered", "order": order})
}

func stopTurn(c *ahptest.Client, chat, id string) int64 {
	return c.Dispatch(chat, map[string]any{"type": "chat/turnCancelled", "turnId": id, "duration": 1})
}

func resumeTurn(c *ahptest.Client, chat, id string) int64 {
	return c.Dispatch(chat, map[string]any{"type": "chat/turnResume", "turnId": id})
}

// turnID is an envelope's turnId ("" when it has none).
func turnID(e ahptest.Envelope) string {
	var id string
	_ = e.Field("turnId", &id)
	return id
}

func field(e ahptest.Envelope, name string) string {
	var s string
	_ = e.Field(name, &s)
	return s
}

func isEnding(typ string) bool {
	return typ == "chat/turnComplete" || typ == "chat/error" || typ == "chat/turnCancelled"
}

// chatEnvelopes is every envelope c received on chat, refusals left out.
func chatEnvelopes(c *ahptest.Client, chat string) []ahptest.Envelope {
	var out []ahptest.Envelope
	for _, e := range c.Envelopes() {
		if e.Channel == chat && e.RejectionReason == "" {
			out = append(out, e)
		}
	}
	return out
}

// awaitStartOf waits for the chat/turnStarted that starts pending message
// id as a turn of its own and returns it.
func awaitStartOf(t testing.TB, c *ahptest.Client, chat, id string) ahptest.Envelope {
	t.Helper()
	return c.AwaitEnvelope("turn of pending message "+id, func(e ahptest.Envelope) bool {
		return e.Channel == chat && e.Type() == "chat/turnStarted" && field(e, "queuedMessageId") == id
	})
}

// awaitTyped waits for an action of typ on chat naming turn id.
func awaitTyped(t testing.TB, c *ahptest.Client, chat, typ, id string) ahptest.Envelope {
	t.Helper()
	return c.AwaitEnvelope(typ+" of "+id, func(e ahptest.Envelope) bool {
		return e.Channel == chat && e.Type() == typ && turnID(e) == id
	})
}

// awaitRemoval waits for a chat/pendingMessageRemoved of id.
func awaitRemoval(t testing.TB, c *ahptest.Client, chat, id string) ahptest.Envelope {
	t.Helper()
	return c.AwaitEnvelope("removal of "+id, func(e ahptest.Envelope) bool {
		return e.Channel == chat && e.Type() == "chat/pendingMessageRemoved" && field(e, "id") == id && e.RejectionReason == ""
	})
}

// awaitEcho waits for the echo of c's action seq and fails on a refusal.
func awaitAccepted(t testing.TB, c *ahptest.Client, seq int64) ahptest.Envelope {
	t.Helper()
	e := c.AwaitEcho(seq)
	if e.RejectionReason != "" {
		t.Fatalf("client %s: action %d refused: %s (%s)", c.ID, seq, e.RejectionReason, e.Raw)
	}
	return e
}

// awaitRefused waits for the echo of c's action seq and fails unless it was
// refused with reason.
func awaitRefused(t testing.TB, c *ahptest.Client, seq int64, reason string) ahptest.Envelope {
	t.Helper()
	e := c.AwaitEcho(seq)
	if e.RejectionReason != reason {
		t.Fatalf("client %s: action %d answered %q, want refused with %q (%s)", c.ID, seq, e.RejectionReason, reason, e.Raw)
	}
	return e
}

// turnOf finds turn id in st's transcript.
func turnOf(t testing.TB, st ahp.ChatState, id string) ahp.Turn {
	t.Helper()
	for _, tr := range st.Turns {
		if tr.ID == id {
			return tr
		}
	}
	t.Fatalf("no turn %s in %d turns", id, len(st.Turns))
	return ahp.Turn{}
}

// answerOf joins the markdown parts of a turn.
func answerOf(tr ahp.Turn) string {
	var b strings.Builder
	for _, p := range tr.ResponseParts {
		if p.Kind == ahp.PartMarkdown {
			b.WriteString(p.Content)
		}
	}
	return b.String()
}

// sequence is the types of envs, with the turnId or pending id each names,
// for failure messages and order checks.
func sequence(envs []ahptest.Envelope) []string {
	var out []string
	for _, e := range envs {
		name := turnID(e)
		if name == "" {
			name = field(e, "id")
		}
		out = append(out, fmt.Sprintf("%s(%s)", strings.TrimPrefix(e.Type(), "chat/"), name))
	}
	return out
}

// indexOf is the index of the first of envs that matches, or -1.
func indexOf(envs []ahptest.Envelope, match func(ahptest.Envelope) bool) int {
	for i, e := range envs {
		if match(e) {
			return i
		}
	}
	return -1
}

func isType(typ, id string) func(ahptest.Envelope) bool {
	return func(e ahptest.Envelope) bool {
		if e.Type() != typ {
			return false
		}
		return id == "" || turnID(e) == id || field(e, "id") == id
	}
}

// ends counts the ending actions each turn got.
func ends(envs []ahptest.Envelope) map[string]int {
	out := make(map[string]int)
	for _, e := range envs {
		if isEnding(e.Type()) {
			out[turnID(e)]++
		}
	}
	return out
}

// sentTexts is the text of every turn the provider's script was handed.
func (e *turnsEnv) sentTexts(provider string) []string {
	var out []string
	for _, tr := range e.scripts[provider].Sent() {
		out = append(out, tr.Text)
	}
	return out
}
