package bus

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

type sink struct {
	id string
	// mu guards got.
	mu  sync.Mutex
	got []json.RawMessage
}

func (s *sink) Deliver(method string, params json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, params)
}
func (s *sink) Knows(string) bool { return true }
func (s *sink) ClientID() string  { return s.id }

func delta(text string) ahp.Action {
	return ahp.ChatDelta{TurnID: "t", PartID: "p", Content: text}
}

// TestReplayBoundedByCount: the log keeps the newest envelopes; a client
// that last saw one still kept replays from it, an older one gets no
// replay (snapshots instead).
func TestReplayBoundedByCount(t *testing.T) {
	b := NewBus(4)
	for i := range 10 {
		b.Publish("c", delta(strings.Repeat("x", i)), nil)
	}
	s := &sink{id: "a"}
	if envs, ok := b.Replay(s, 6, []string{"c"}); !ok || len(envs) != 4 {
		t.Fatalf("replay after 6: %d envelopes, ok %v; want 4", len(envs), ok)
	}
	if _, ok := b.Replay(s, 5, []string{"c"}); ok {
		t.Fatal("replay after 5 should need snapshots: 6 was dropped")
	}
	if envs, ok := b.Replay(s, 10, []string{"c"}); !ok || len(envs) != 0 {
		t.Fatalf("replay after the newest: %d, %v", len(envs), ok)
	}
}

// TestReplayBoundedByBytes: large envelopes leave the log early, so it never
// holds more than its byte budget (one envelope always stays).
func TestReplayBoundedByBytes(t *testing.T) {
	b := NewBus(1000)
	b.logMaxBytes = 10_000
	for range 50 {
		b.Publish("c", delta(strings.Repeat("y", 3000)), nil)
	}
	if b.logBytes > b.logMaxBytes {
		t.Fatalf("log holds %d bytes, budget %d", b.logBytes, b.logMaxBytes)
	}
	if n := len(b.log) - b.logHead; n < 1 || n > 4 {
		t.Fatalf("log holds %d envelopes", n)
	}
	s := &sink{id: "a"}
	if _, ok := b.Replay(s, 40, []string{"c"}); ok {
		t.Fatal("replay reached past the byte budget")
	}
	if envs, ok := b.Replay(s, 49, []string{"c"}); !ok || len(envs) != 1 {
		t.Fatalf("replay of the newest: %d, %v", len(envs), ok)
	}
}

// TestRefusalGoesToItsSender: a refusal moves serverSeq (C-TURN-122) but
// only its sender receives or replays it.
func TestRefusalGoesToItsSender(t *testing.T) {
	b := NewBus(16)
	a, other := &sink{id: "a"}, &sink{id: "o"}
	b.Subscribe(a, "c")
	b.Subscribe(other, "c")
	before := b.Seq()
	b.Refuse(a, "c", delta("no"), &ahp.ActionOrigin{ClientID: "a", ClientSeq: 1}, "refused")
	if b.Seq() != before+1 {
		t.Fatal("a refusal did not move serverSeq")
	}
	if len(a.got) != 1 || len(other.got) != 0 {
		t.Fatalf("sender got %d, other got %d", len(a.got), len(other.got))
	}
	if envs, _ := b.Replay(other, before, []string{"c"}); len(envs) != 0 {
		t.Fatal("another client replays a refusal")
	}
	if envs, _ := b.Replay(&sink{id: "a"}, before, []string{"c"}); len(envs) != 1 {
		t.Fatal("the sender does not replay its refusal")
	}
}

// TestEnvelopeShape: a stamped envelope is the ActionEnvelope JSON, with
// origin and rejectionReason only when present.
func TestEnvelopeShape(t *testing.T) {
	cases := []struct {
		name      string
		origin    *ahp.ActionOrigin
		rejection string
		want      string
	}{
		{"server action", nil, "", `{"channel":"ahp-chat:/c","action":{"type":"chat/delta","turnId":"t","partId":"p","content":"x\"y"},"serverSeq":42}`},
		{"client action", &ahp.ActionOrigin{ClientID: "a", ClientSeq: 3}, "", `{"channel":"ahp-chat:/c","action":{"type":"chat/delta","turnId":"t","partId":"p","content":"x\"y"},"serverSeq":42,"origin":{"clientId":"a","clientSeq":3}}`},
		{"refusal", &ahp.ActionOrigin{ClientID: "a", ClientSeq: 3}, "no", `{"channel":"ahp-chat:/c","action":{"type":"chat/delta","turnId":"t","partId":"p","content":"x\"y"},"serverSeq":42,"origin":{"clientId":"a","clientSeq":3},"rejectionReason":"no"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := newEnvelope("ahp-chat:/c", delta(`x"y`), c.origin, c.rejection).stamp(42)
			if string(got) != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
			var env ahp.ActionEnvelope
			if err := json.Unmarshal(got, &env); err != nil || env.ServerSeq != 42 {
				t.Fatalf("does not decode as an ActionEnvelope: %v", err)
			}
		})
	}
}

// oldSink is a subscriber whose version knows only chat/delta.
type oldSink struct{ sink }

func (s *oldSink) Knows(t string) bool { return t == ahp.ActionChatDelta }

// TestVersionFilterOnPublishAndReplay: an action a subscriber's version
// does not know is neither delivered live nor replayed on reconnect; the
// filter is the subscriber's Knows in both paths.
func TestVersionFilterOnPublishAndReplay(t *testing.T) {
	b := NewBus(16)
	live := &oldSink{sink{id: "live"}}
	b.Subscribe(live, "c")
	b.Publish("c", delta("a"), nil)
	b.Publish("c", ahp.ChatDraftChanged{}, nil)
	b.Publish("c", delta("b"), nil)
	if n := len(live.got); n != 2 {
		t.Fatalf("live: %d envelopes, want the 2 deltas", n)
	}
	back := &oldSink{sink{id: "back"}}
	envs, ok := b.Replay(back, 0, []string{"c"})
	if !ok || len(envs) != 2 {
		t.Fatalf("replay: %d envelopes, ok %v; want the 2 deltas", len(envs), ok)
	}
	for _, e := range envs {
		if strings.Contains(string(e), "draftChanged") {
			t.Fatalf("replayed an action the version does not know: %s", e)
		}
	}
}

// frameSink is an ActionSubscriber that keeps the frames it is handed.
type frameSink struct {
	sink
	frames [][]byte
	envs   []json.RawMessage
}

func (s *frameSink) DeliverAction(_ string, _ ahp.Action, _ int64, env json.RawMessage, frame []byte, _ bool) {
	s.frames = append(s.frames, frame)
	s.envs = append(s.envs, env)
}

// TestActionFrameBuiltOncePerPublish: every subscriber of a publish is
// handed the same notification frame (one encoding, however many watch),
// a JSON-RPC "action" notification whose params are the envelope the
// replay log keeps.
func TestActionFrameBuiltOncePerPublish(t *testing.T) {
	b := NewBus(16)
	a, c := &frameSink{sink: sink{id: "a"}}, &frameSink{sink: sink{id: "c"}}
	b.Subscribe(a, "ch")
	b.Subscribe(c, "ch")
	b.Publish("ch", delta("hi"), nil)
	if len(a.frames) != 1 || len(c.frames) != 1 {
		t.Fatalf("frames: %d and %d", len(a.frames), len(c.frames))
	}
	if &a.frames[0][0] != &c.frames[0][0] {
		t.Fatal("each subscriber got a frame of its own: the frame is built per subscriber")
	}
	var note struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(a.frames[0], &note); err != nil || note.JSONRPC != "2.0" || note.Method != "action" {
		t.Fatalf("frame %s: %v", a.frames[0], err)
	}
	if string(note.Params) != string(a.envs[0]) {
		t.Fatalf("params %s, envelope %s", note.Params, a.envs[0])
	}
	envs, ok := b.Replay(&sink{id: "late"}, 0, []string{"ch"})
	if !ok || len(envs) != 1 || string(envs[0]) != string(a.envs[0]) {
		t.Fatalf("replay %q, %v", envs, ok)
	}
	// The envelope a subscriber keeps cannot grow into the frame's tail.
	if cap(a.envs[0]) != len(a.envs[0]) {
		t.Fatalf("envelope cap %d, len %d", cap(a.envs[0]), len(a.envs[0]))
	}
}
