package daemon_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/bot"
	"github.com/ahpd/ahpd/internal/agent/claude"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

// A bot whose agent is the real claude CLI, against the fake model: its
// instructions run first in its work session, a turn of the bot's chat is
// answered there, and a steering message is handed to the work session
// behind its running turn and answered in the bot's turn (C-TURN-94, 97).
func TestBotOnClaude(t *testing.T) {
	t.Parallel()
	bin := fakemodel.Agent(t, "claude") // skips with the install hint when missing
	fake := fakemodel.Start(t)
	cl := claude.New(claude.Options{
		Binary:   bin,
		StopEnds: claude.StopEndsTurn,
		Env: []string{
			"HOME=" + t.TempDir(),
			"CLAUDE_CONFIG_DIR=" + t.TempDir(),
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
	reg, err := agent.NewRegistry(cl, bot.New(bot.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, reg)
	c := e.client("c1")
	b := createBot(t, c, map[string]any{"slug": "claudebot", "name": "Claude Bot", "instructions": "You are the bot.", "agent": claude.Provider})
	work := workChat(t, c, b.Session)
	_, chat := botChat(t, c, "claudebot")

	t.Run("one turn", func(t *testing.T) {
		if end := sendTurn(t, c, chat, "t1", "hello bot"); end.Type() != "chat/turnComplete" {
			t.Fatalf("bot turn ended %s", end.Raw)
		}
		if got := answerOf(turnOf(t, stateOf(t, c, chat), "t1")); got != "fake reply: hello bot" {
			t.Fatalf("bot turn answered %q", got)
		}
		ws := stateOf(t, c, work)
		if got := texts(ws.Turns); !slices.Equal(got, []string{"You are the bot.", "hello bot"}) {
			t.Fatalf("work session turns %q", got)
		}
		if got := answerOf(ws.Turns[0]); got != "fake reply: You are the bot." {
			t.Fatalf("the instructions were answered %q", got)
		}
	})

	t.Run("steering hand-off", func(t *testing.T) {
		startTurn(c, chat, "t2", "[slow] long work")
		awaitPart(t, c, chat, "t2")
		awaitAccepted(t, c, setPending(c, chat, ahp.PendingSteering, "s1", "and then this"))
		queued := c.AwaitEnvelope("the hand-off in the work session", func(e ahptest.Envelope) bool {
			return e.Channel == work && e.Type() == "chat/pendingMessageSet" && field(e, "id") == "s1"
		})
		if field(queued, "kind") != ahp.PendingQueued {
			t.Fatalf("hand-off %s", queued.Raw)
		}
		taken := awaitStartOf(t, c, work, "s1")
		removed := awaitRemoval(t, c, chat, "s1")
		if removed.ServerSeq < taken.ServerSeq {
			t.Fatal("steering taken out before the work session took it up")
		}
		if end := awaitEnd(t, c, chat, "t2"); end.Type() != "chat/turnComplete" {
			t.Fatalf("bot turn ended %s", end.Raw)
		}
		tr := turnOf(t, stateOf(t, c, chat), "t2")
		if a := answerOf(tr); !strings.Contains(a, "slow") || !strings.Contains(a, "fake reply: and then this") {
			t.Fatalf("bot turn answered %q", a)
		}
		if ns := notices(tr); !slices.Contains(ns, "Steering: and then this") {
			t.Fatalf("turn notices %q", ns)
		}
	})
}
