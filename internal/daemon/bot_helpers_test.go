package daemon_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/bot"
	"github.com/ahpd/ahpd/internal/agent/script"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/host"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/google/uuid"
)

// botEnv is a daemon offering the script agent and the bot backend.
type botEnv struct {
	*testEnv
	// arrived and release hold a steering message on its way to the work
	// session when holdHandOff is set (bot.Options.BeforeHandOff).
	arrived chan string
	release chan struct{}
}

func newBotEnv(t *testing.T, holdHandOff bool, mutate ...func(*daemon.Config)) *botEnv {
	t.Helper()
	be := &botEnv{arrived: make(chan string, 4), release: make(chan struct{})}
	sc := script.New(script.Options{SlowDelay: 30 * time.Millisecond})
	o := bot.Options{}
	if holdHandOff {
		o.BeforeHandOff = func(id string) {
			be.arrived <- id
			<-be.release
		}
	}
	reg, err := agent.NewRegistry(sc, bot.New(o))
	if err != nil {
		t.Fatal(err)
	}
	be.testEnv = newEnvWith(t, reg, mutate...)
	be.script = sc
	t.Cleanup(func() {
		select {
		case <-be.release:
		default:
			close(be.release)
		}
	})
	return be
}

// createBot makes a bot over the protocol (x-ahpd/createBot).
func createBot(t testing.TB, c *ahptest.Client, params map[string]any) host.BotInfo {
	t.Helper()
	params["channel"] = ahp.RootURI
	var b host.BotInfo
	if err := json.Unmarshal(c.MustCall(host.MethodCreateBot, params), &b); err != nil {
		t.Fatal(err)
	}
	return b
}

// botChat makes a session whose agent is the bot backend, talking to bot
// slug, and subscribes c to its chat.
func botChat(t testing.TB, c *ahptest.Client, slug string) (sess, chat string) {
	t.Helper()
	sess = "ahp-session:/" + uuid.NewString()
	c.MustCall("createSession", map[string]any{"channel": sess, "provider": bot.Provider, "config": map[string]any{bot.ConfigKey: slug}})
	raw, _ := c.Subscribe(sess)
	var s ahp.SessionState
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	c.Subscribe(s.DefaultChat)
	return sess, s.DefaultChat
}

// workChat subscribes c to the default chat of a bot's work session.
func workChat(t testing.TB, c *ahptest.Client, session string) string {
	t.Helper()
	raw, _ := c.Subscribe(session)
	var s ahp.SessionState
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if s.DefaultChat == "" {
		t.Fatalf("work session %s has no chat", session)
	}
	c.Subscribe(s.DefaultChat)
	return s.DefaultChat
}

// stateOf is chat's state as a fresh subscriber reads it.
func stateOf(t testing.TB, c *ahptest.Client, chat string) ahp.ChatState {
	t.Helper()
	raw, _ := c.Subscribe(chat)
	return chatState(t, raw)
}

// awaitPart waits until chat's turn id has said something (a part or a
// delta): its work turn runs.
func awaitPart(t testing.TB, c *ahptest.Client, chat, id string) {
	t.Helper()
	c.AwaitEnvelope("a part of "+id, func(e ahptest.Envelope) bool {
		return e.Channel == chat && (e.Type() == "chat/delta" || e.Type() == "chat/responsePart") && turnID(e) == id
	})
}

// seqOf is the serverSeq of the first envelope on chat matching match, or
// 0 for none: every channel shares one sequence, so it orders envelopes of
// different chats.
func seqOf(c *ahptest.Client, chat string, match func(ahptest.Envelope) bool) int64 {
	for _, e := range c.Envelopes() {
		if e.Channel == chat && e.RejectionReason == "" && match(e) {
			return e.ServerSeq
		}
	}
	return 0
}

func ofType(typ string) func(ahptest.Envelope) bool {
	return func(e ahptest.Envelope) bool { return e.Type() == typ }
}

// notices are the systemNotification parts of a turn.
func notices(tr ahp.Turn) []string {
	var out []string
	for _, p := range tr.ResponseParts {
		if p.Kind == ahp.PartSystemNotification {
			out = append(out, p.Content)
		}
	}
	return out
}

func countText(st ahp.ChatState, text string) int {
	n := 0
	for _, tr := range st.Turns {
		if strings.TrimSpace(tr.Message.Text) == text {
			n++
		}
	}
	return n
}
