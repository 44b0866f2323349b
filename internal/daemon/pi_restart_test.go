package daemon_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/pi"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/store"
)

// storedTurns reads a chat's turns from the daemon's store, once what was
// queued is written.
func (pe *piEnv) storedTurns(chatURI string) []store.TurnRecord {
	pe.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pe.d.Store().Flush(ctx); err != nil {
		pe.t.Fatal(err)
	}
	recs, err := pe.d.Store().Turns(ctx, chatURI)
	if err != nil {
		pe.t.Fatal(err)
	}
	return recs
}

// reader is the daemon's pi backend as a transcript reader.
func (pe *piEnv) reader() agent.TranscriptReader {
	pe.t.Helper()
	a, ok := pe.agents.Get(pi.Provider)
	if !ok {
		pe.t.Fatal("no pi backend")
	}
	return a.(agent.TranscriptReader)
}

// TestPiRestartForkRewind: a pi chat of three turns (text, a tool call,
// text) stores each turn's point, pi's last session entry of it. After a
// daemon restart the turns are there with the same points, pi's session
// file reads back as the same turns and points (C-COMP-07), and the next
// turn resumes pi's session (--session): the model sees the history. A
// fork at turn 1 of 3 (C-COMP-09, C-FROM-04) runs on a pi session cut at
// turn 1's point, which the fake's request log shows; the source chat is
// untouched (C-FROM-05). A rewind to turn 1 (C-COMP-08) resumes pi cut
// there.
func TestPiRestartForkRewind(t *testing.T) {
	pe := newPiEnv(t, piOpenAI)
	a := pe.client("a")
	const sess = "ahp-session:/9100de00-0000-4000-8000-000000000008"
	def := pe.session(a, sess)
	for _, turn := range [][2]string{{"t1", "one"}, {"t2", "two [tool]"}, {"t3", "three"}} {
		if end := sendTurn(t, a, def, turn[0], turn[1]); end.Type() != "chat/turnComplete" {
			t.Fatalf("%s ended with %s: %s", turn[0], end.Type(), end.Action)
		}
	}
	before := chatOf(t, a, def).Turns
	points := clPoints(pe.storedTurns(def))
	if len(points) != 3 || slices.Contains(points, "") {
		t.Fatalf("stored points %q, want one per turn", points)
	}

	pe.restart()
	a = pe.client("a2")
	after := chatOf(t, a, def).Turns
	if got, want := canon(t, after), canon(t, before); got != want {
		t.Fatalf("turns after the restart:\n%s\nwant\n%s", got, want)
	}
	if got := clPoints(pe.storedTurns(def)); !slices.Equal(got, points) {
		t.Fatalf("points after the restart %q, want %q", got, points)
	}

	t.Run("session file reads back the turns", func(t *testing.T) {
		tts, err := pe.reader().ReadTurns(t.Context(), strings.TrimPrefix(sess, "ahp-session:/"), []string{pe.workDir})
		if err != nil {
			t.Fatal(err)
		}
		var backPoints []string
		for _, tt := range tts {
			backPoints = append(backPoints, tt.Point)
		}
		clCompareTurns(t, after, points, chat.TranscriptTurns(tts), backPoints)
	})

	t.Run("fork at turn 1", func(t *testing.T) {
		fork := "ahp-chat:/9100de00-0000-4000-8000-00000000f001"
		a.MustCall("createChat", map[string]any{"channel": sess, "chat": fork,
			"source": map[string]any{"kind": "fork", "chat": def, "turnId": "t1"}})
		a.Subscribe(fork)
		if got := texts(chatOf(t, a, fork).Turns); !slices.Equal(got, []string{"one"}) {
			t.Fatalf("fork holds %q", got)
		}
		if end := sendTurn(t, a, fork, "f1", "forked"); end.Type() != "chat/turnComplete" {
			t.Fatalf("f1 ended with %s: %s", end.Type(), end.Action)
		}
		want := []string{"user:one", "assistant:fake reply: one", "user:forked"}
		if got := pe.history(); !slices.Equal(got, want) {
			t.Errorf("the fork's pi sent %q, want %q", got, want)
		}
		if got := canon(t, chatOf(t, a, def).Turns); got != canon(t, before) {
			t.Errorf("the source chat changed: %s", got)
		}
	})

	t.Run("resume after the restart", func(t *testing.T) {
		a.Subscribe(def)
		if end := sendTurn(t, a, def, "t4", "four"); end.Type() != "chat/turnComplete" {
			t.Fatalf("t4 ended with %s: %s", end.Type(), end.Action)
		}
		h := pe.history()
		if len(h) < 7 || h[0] != "user:one" || !slices.Contains(h, "user:three") || h[len(h)-1] != "user:four" {
			t.Errorf("the resumed pi sent %q", h)
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
		if got := pe.history(); !slices.Equal(got, want) {
			t.Errorf("the rewound pi sent %q, want %q", got, want)
		}
		if got := texts(chatOf(t, a, def).Turns); !slices.Equal(got, []string{"one", "rewound"}) {
			t.Errorf("chat holds %q", got)
		}
	})
}
