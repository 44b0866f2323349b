package rpc

import (
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/sourcegraph/jsonrpc2"
)

type badMarshaler struct{}

func (badMarshaler) MarshalJSON() ([]byte, error) { return []byte(`{"oops"`), nil }

// TestResultFrameIsTheReplyJSONRPC2WouldSend: a reply framed in one pass
// (resultFrame) decodes to what jsonrpc2's own Response would, for a plain
// value, a protocol Marshaler, and both kinds of id; a foreign Marshaler
// that writes invalid JSON is not sent.
func TestResultFrameIsTheReplyJSONRPC2WouldSend(t *testing.T) {
	c := &Conn{log: slog.New(slog.DiscardHandler)}
	for _, tc := range []struct {
		name   string
		id     jsonrpc2.ID
		result any
	}{
		{"number id, plain map", jsonrpc2.ID{Num: 7}, map[string]int{"a": 1}},
		{"string id, protocol marshaler", jsonrpc2.ID{Str: "x\"y", IsString: true}, ahp.ListSessionsResult{}},
		{"nil result", jsonrpc2.ID{Num: 0}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frame, ok := c.resultFrame(&jsonrpc2.Request{ID: tc.id}, tc.result)
			if !ok {
				t.Fatal("not framed")
			}
			raw, _ := json.Marshal(tc.result)
			rm := json.RawMessage(raw)
			want, err := json.Marshal(&jsonrpc2.Response{ID: tc.id, Result: &rm})
			if err != nil {
				t.Fatal(err)
			}
			var got, exp any
			if err := json.Unmarshal(frame, &got); err != nil {
				t.Fatalf("frame %s: %v", frame, err)
			}
			_ = json.Unmarshal(want, &exp)
			g, _ := json.Marshal(got)
			e, _ := json.Marshal(exp)
			if string(g) != string(e) {
				t.Fatalf("frame %s, jsonrpc2 would send %s", frame, want)
			}
		})
	}
	if frame, ok := c.resultFrame(&jsonrpc2.Request{ID: jsonrpc2.ID{Num: 1}}, badMarshaler{}); ok {
		t.Fatalf("an invalid result was framed: %s", frame)
	}
}
