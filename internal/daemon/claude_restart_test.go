package daemon_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent/claude"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/store"
)

// TestClaudeRestartForkRewind: a claude chat of three turns comes back
// from a daemon restart with the same turns; the CLI's transcript reads
// back as those turns, with the same points (C-COMP-07); after the
// restart a fork at turn 1 (C-COMP-09) and a rewind to turn 1 (C-COMP-08)
// each resume the real CLI at turn 1's point, and the fake model server's
// request log shows the cut history.
func TestClaudeRestartForkRewind(t *testing.T) {
	ce := newClaudeEnv(t, claude.StopEndsTurn)
	a := ce.client("a")
	const sess = "ahp-session:/c1a0de00-0000-4000-8000-000000000002"
	def, conv := ce.session(a, sess)
	a.Subscribe(def)
	for _, turn := range [][2]string{{"t1", "one"}, {"t2", "two [tool]"}, {"t3", "three"}} {
		if end := sendTurn(t, a, def, turn[0], turn[1]); end.Type() != "chat/turnComplete" {
			t.Fatalf("%s ended with %s: %s", turn[0], end.Type(), end.Action)
		}
	}
	before := chatOf(t, a, def).Turns
	points := clPoints(ce.storedTurns(def))
	if len(points) != 3 || slices.Contains(points, "") {
		t.Fatalf("stored points %q, want one per turn", points)
	}

	ce.restart()
	a = ce.client("a2")
	after := chatOf(t, a, def).Turns
	if got, want := canon(t, after), canon(t, before); got != want {
		t.Fatalf("turns after the restart:\n%s\nwant\n%s", got, want)
	}
	if got := clPoints(ce.storedTurns(def)); !slices.Equal(got, points) {
		t.Fatalf("points after the restart %q, want %q", got, points)
	}

	t.Run("transcript reads back the stored turns", func(t *testing.T) {
		tts, err := ce.claude.ReadTurns(t.Context(), conv, []string{ce.workDir})
		if err != nil {
			t.Fatal(err)
		}
		back := chat.TranscriptTurns(tts)
		var backPoints []string
		for _, tt := range tts {
			backPoints = append(backPoints, tt.Point)
		}
		clCompareTurns(t, after, points, back, backPoints)
	})

	t.Run("fork at turn 1", func(t *testing.T) {
		fork := "ahp-chat:/c1a0de00-0000-4000-8000-00000000f001"
		a.MustCall("createChat", map[string]any{"channel": sess, "chat": fork,
			"source": map[string]any{"kind": "fork", "chat": def, "turnId": "t1"}})
		if got := texts(chatOf(t, a, fork).Turns); !slices.Equal(got, []string{"one"}) {
			t.Fatalf("fork holds %q", got)
		}
		if end := sendTurn(t, a, fork, "f1", "forked"); end.Type() != "chat/turnComplete" {
			t.Fatalf("f1 ended with %s: %s", end.Type(), end.Action)
		}
		forkConv := ce.chatRecord(fork).ConversationID
		if forkConv == conv || forkConv == "" {
			t.Fatalf("the fork writes under conversation %q (source %s)", forkConv, conv)
		}
		want := []string{"user:one", "assistant:fake reply: one", "user:forked"}
		if got := ce.history(forkConv); !slices.Equal(got, want) {
			t.Errorf("the fork's CLI sent %q, want %q", got, want)
		}
		// C-FROM-05: the source is untouched.
		if got := canon(t, chatOf(t, a, def).Turns); got != canon(t, before) {
			t.Errorf("the source chat changed: %s", got)
		}
	})

	t.Run("rewind to turn 1", func(t *testing.T) {
		seq := a.Dispatch(def, map[string]any{"type": "chat/truncated", "turnId": "t1"})
		if env := a.AwaitEcho(seq); env.RejectionReason != "" {
			t.Fatalf("truncate refused: %s", env.RejectionReason)
		}
		if got := texts(chatOf(t, a, def).Turns); !slices.Equal(got, []string{"one"}) {
			t.Fatalf("after the rewind the chat holds %q", got)
		}
		if end := sendTurn(t, a, def, "r1", "rewound"); end.Type() != "chat/turnComplete" {
			t.Fatalf("r1 ended with %s: %s", end.Type(), end.Action)
		}
		want := []string{"user:one", "assistant:fake reply: one", "user:rewound"}
		if got := ce.history(conv); !slices.Equal(got, want) {
			t.Errorf("the rewound CLI sent %q, want %q", got, want)
		}
		if got := texts(chatOf(t, a, def).Turns); !slices.Equal(got, []string{"one", "rewound"}) {
			t.Errorf("chat holds %q", got)
		}
	})
}

// TestClaudeReadBackWhenStoreLost: a chat whose store rows are gone comes
// back from the CLI's transcript. A live run through the daemon (text, an
// auto-allowed tool, reasoning, a denied tool call, a stop, an API error)
// is read back after a restart with the chat's turns deleted from the
// store: same turn count, texts, states, parts and points (C-TURN-113,
// C-TURN-115, C-COMP-07); the call denied live reads back denied, and the
// turns read back can be forked (C-COMP-09) and rewound (C-COMP-08).
func TestClaudeReadBackWhenStoreLost(t *testing.T) {
	t.Parallel()
	ce := newClaudeEnv(t, claude.StopEndsTurn)
	a := ce.client("a")
	const sess = "ahp-session:/c1a0de00-0000-4000-8000-000000000003"
	def, conv := ce.session(a, sess)
	a.Subscribe(def)

	complete := func(id, text string) {
		t.Helper()
		if end := sendTurn(t, a, def, id, text); end.Type() != "chat/turnComplete" {
			t.Fatalf("%s ended with %s: %s", id, end.Type(), end.Action)
		}
	}
	complete("t1", "plain words")
	complete("t2", "use a tool [tool]")
	complete("t3", "ponder [think]")

	a.Dispatch(def, turnStarted("t4", "make a file [bash:touch denied.txt]"))
	call := clAwaitAsk(t, a, def, "t4")
	a.AwaitEcho(a.Dispatch(def, map[string]any{"type": "chat/toolCallConfirmed", "turnId": "t4", "toolCallId": call, "approved": false}))
	if end := awaitEnd(t, a, def, "t4"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t4 ended with %s", end.Type())
	}

	a.Dispatch(def, turnStarted("t5", "talk slowly [slow]"))
	clAwaitAction(t, a, def, "t5", "chat/delta")
	a.Dispatch(def, map[string]any{"type": "chat/turnCancelled", "turnId": "t5"})
	if end := awaitEnd(t, a, def, "t5"); end.Type() != "chat/turnCancelled" {
		t.Fatalf("t5 ended with %s", end.Type())
	}
	if end := sendTurn(t, a, def, "t6", "boom [error]"); end.Type() != "chat/error" {
		t.Fatalf("t6 ended with %s", end.Type())
	}
	complete("t7", "after all that")

	live := chatOf(t, a, def).Turns
	points := clPoints(ce.storedTurns(def))
	if len(live) != 7 || len(points) != 7 {
		t.Fatalf("%d turns, %d points", len(live), len(points))
	}
	if clExists(filepath.Join(ce.workDir, "denied.txt")) {
		t.Fatal("the denied call ran")
	}

	// The chat's rows go; the daemon comes back on the transcript alone.
	ce.stop()
	clDropTurns(t, filepath.Join(ce.cfg.DataDir, "ahpd.db"), def)
	ce.start()
	a = ce.client("a2")
	back := chatOf(t, a, def).Turns
	backPoints := clPoints(ce.storedTurns(def))
	clCompareTurns(t, live, points, back, backPoints)
	for _, turn := range back {
		if _, ok := turn.Message.Meta[chat.SenderMetaKey]; ok {
			t.Errorf("turn %s read back says a sender", turn.ID)
		}
	}
	if calls := clToolCalls(back[3]); len(calls) != 1 || calls[0].Status != ahp.ToolCancelled || calls[0].Reason != ahp.CancelDenied {
		t.Errorf("the denied call reads back %s", clJSON(t, calls))
	}

	t.Run("fork a turn read back", func(t *testing.T) {
		fork := "ahp-chat:/c1a0de00-0000-4000-8000-00000000f002"
		a.MustCall("createChat", map[string]any{"channel": sess, "chat": fork,
			"source": map[string]any{"kind": "fork", "chat": def, "turnId": back[0].ID}})
		if got := texts(chatOf(t, a, fork).Turns); !slices.Equal(got, []string{"plain words"}) {
			t.Fatalf("fork holds %q", got)
		}
		if end := sendTurn(t, a, fork, "f1", "forked"); end.Type() != "chat/turnComplete" {
			t.Fatalf("f1 ended with %s: %s", end.Type(), end.Action)
		}
		want := []string{"user:plain words", "assistant:fake reply: plain words", "user:forked"}
		if got := ce.history(ce.chatRecord(fork).ConversationID); !slices.Equal(got, want) {
			t.Errorf("the fork's CLI sent %q, want %q", got, want)
		}
	})

	t.Run("rewind to a turn read back", func(t *testing.T) {
		seq := a.Dispatch(def, map[string]any{"type": "chat/truncated", "turnId": back[0].ID})
		if env := a.AwaitEcho(seq); env.RejectionReason != "" {
			t.Fatalf("truncate refused: %s", env.RejectionReason)
		}
		if end := sendTurn(t, a, def, "r1", "rewound"); end.Type() != "chat/turnComplete" {
			t.Fatalf("r1 ended with %s: %s", end.Type(), end.Action)
		}
		want := []string{"user:plain words", "assistant:fake reply: plain words", "user:rewound"}
		if got := ce.history(conv); !slices.Equal(got, want) {
			t.Errorf("the rewound CLI sent %q, want %q", got, want)
		}
	})
}

// dropTurns deletes a chat's turns from a stopped daemon's store.
func clDropTurns(t *testing.T, db, chat string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := store.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.TruncateTurns(ctx, chat, -1); err != nil {
		t.Fatal(err)
	}
	if n, err := st.CountTurns(ctx, chat); err != nil || n != 0 {
		t.Fatalf("%d turns left (%v)", n, err)
	}
}

func clPoints(recs []store.TurnRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Point)
	}
	return out
}

// compareTurns compares turns read back with the turns a live run left:
// count, what was said, state, each part, and point. A stopped turn's
// answer reads back as the CLI kept it, which may run on past where the
// host cut it at the stop.
func clCompareTurns(t *testing.T, live []ahp.Turn, livePoints []string, back []ahp.Turn, backPoints []string) {
	t.Helper()
	if len(back) != len(live) {
		t.Fatalf("%d turns read back, want %d:\n%s", len(back), len(live), clJSON(t, back))
	}
	if !slices.Equal(backPoints, livePoints) {
		t.Errorf("points read back %q, want %q", backPoints, livePoints)
	}
	for i := range live {
		l, b := live[i], back[i]
		if b.Message.Text != l.Message.Text || b.State != l.State {
			t.Errorf("turn %d reads back %q %s, want %q %s", i, b.Message.Text, b.State, l.Message.Text, l.State)
			continue
		}
		lp, bp := clParts(l), clParts(b)
		if len(lp) != len(bp) {
			t.Errorf("turn %d (%q) reads back parts %q, want %q", i, l.Message.Text, bp, lp)
			continue
		}
		for j := range lp {
			same := lp[j] == bp[j]
			if l.State == ahp.TurnCancelled && strings.HasPrefix(lp[j], "markdown:") {
				same = strings.HasPrefix(bp[j], lp[j])
			}
			if !same {
				t.Errorf("turn %d (%q) part %d reads back %q, want %q", i, l.Message.Text, j, bp[j], lp[j])
			}
		}
	}
}

// partsOf describes what a client shows of each response part.
func clParts(turn ahp.Turn) []string {
	var out []string
	for _, p := range turn.ResponseParts {
		switch p.Kind {
		case ahp.PartMarkdown, ahp.PartReasoning, ahp.PartSystemNotification:
			out = append(out, p.Kind+":"+p.Content)
		case ahp.PartToolCall:
			tc := p.ToolCall
			ok := "-"
			if tc.Success != nil {
				ok = fmt.Sprint(*tc.Success)
			}
			var content []string
			for _, c := range tc.Content {
				content = append(content, c.Text)
			}
			out = append(out, fmt.Sprintf("tool:%s %s %s reason=%s ok=%s in=%s inv=%q past=%q out=%q err=%s",
				tc.ToolCallID, tc.ToolName, tc.Status, tc.Reason, ok, tc.ToolInput,
				tc.InvocationMessage.String(), tc.PastTenseMessage.String(), content, tc.Error))
		case ahp.PartError:
			out = append(out, "error:"+p.Error.Message)
		default:
			out = append(out, p.Kind)
		}
	}
	return out
}
