package rpc

import (
	"errors"
	"strings"
	"testing"
)

// step is one operation on an outbox in TestOutbox.
type step struct {
	op    string // "notify", "reply", "hold", "unhold", "close", "write"
	frame string
}

func TestOutbox(t *testing.T) {
	tests := []struct {
		name      string
		budget    int
		steps     []step
		wantQueue string // frames queued for the writer, in order, joined by " "
		wantErr   string // frame whose push fails
	}{
		{
			name:      "replies and notifications keep their order",
			budget:    100,
			steps:     []step{{"notify", "n1"}, {"reply", "r1"}, {"notify", "n2"}},
			wantQueue: "n1 r1 n2",
		},
		{
			name:   "held notifications follow the reply",
			budget: 100,
			steps: []step{{"notify", "n0"}, {"hold", ""}, {"notify", "n1"}, {"notify", "n2"},
				{"reply", "r1"}, {"unhold", ""}, {"notify", "n3"}},
			wantQueue: "n0 r1 n1 n2 n3",
		},
		{
			name:   "overlapping holds release when the last ends",
			budget: 100,
			steps: []step{{"hold", ""}, {"notify", "n1"}, {"hold", ""}, {"reply", "r1"}, {"unhold", ""},
				{"notify", "n2"}, {"reply", "r2"}, {"unhold", ""}, {"notify", "n3"}},
			wantQueue: "r1 r2 n1 n2 n3",
		},
		{
			name:      "an unhold without a hold does nothing",
			budget:    100,
			steps:     []step{{"unhold", ""}, {"notify", "n1"}, {"reply", "r1"}},
			wantQueue: "n1 r1",
		},
		{
			name:      "without a hold nothing is held",
			budget:    100,
			steps:     []step{{"notify", "n1"}, {"reply", "r1"}},
			wantQueue: "n1 r1",
		},
		{
			name:      "close releases held notifications behind the queue",
			budget:    100,
			steps:     []step{{"hold", ""}, {"notify", "n1"}, {"reply", "r1"}, {"close", ""}},
			wantQueue: "r1 n1",
		},
		{
			name:      "over budget is refused",
			budget:    5,
			steps:     []step{{"notify", "aaa"}, {"notify", "bbb"}},
			wantQueue: "aaa",
			wantErr:   "bbb",
		},
		{
			name:      "held bytes count against the budget",
			budget:    5,
			steps:     []step{{"hold", ""}, {"notify", "aaaaaa"}, {"reply", "rrr"}, {"close", ""}},
			wantQueue: "aaaaaa", // released by the close that follows a refusal
			wantErr:   "rrr",
		},
		{
			name:      "a reply larger than the budget passes while what waits fits",
			budget:    5,
			steps:     []step{{"notify", "aaa"}, {"reply", "a-big-snapshot"}},
			wantQueue: "aaa a-big-snapshot",
		},
		{
			name:      "a single frame over budget passes when nothing is pending",
			budget:    2,
			steps:     []step{{"notify", "big-frame"}},
			wantQueue: "big-frame",
		},
		{
			name:      "written bytes free the budget",
			budget:    5,
			steps:     []step{{"notify", "aaa"}, {"write", ""}, {"notify", "bbb"}},
			wantQueue: "bbb",
		},
		{
			name:      "nothing is queued after close",
			budget:    100,
			steps:     []step{{"notify", "n1"}, {"close", ""}, {"notify", "n2"}},
			wantQueue: "n1",
			wantErr:   "n2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOutbox(tt.budget, nil)
			var taken [][]byte
			failed := ""
			for _, s := range tt.steps {
				var err error
				switch s.op {
				case "notify":
					err = o.push([]byte(s.frame), false)
				case "reply":
					err = o.push([]byte(s.frame), true)
				case "hold":
					o.hold()
				case "unhold":
					o.unhold()
				case "close":
					o.close()
				case "write":
					for _, f := range o.take(nil) {
						o.written(len(f))
					}
				}
				if err != nil {
					var over *overBudgetError
					if !errors.As(err, &over) && !errors.Is(err, ErrConnClosed) {
						t.Fatalf("push %s: unexpected error %v", s.frame, err)
					}
					if failed == "" {
						failed = s.frame
					}
				}
			}
			taken = o.take(nil)
			var got []string
			for _, f := range taken {
				got = append(got, string(f))
			}
			if strings.Join(got, " ") != tt.wantQueue {
				t.Errorf("queue %q, want %q", strings.Join(got, " "), tt.wantQueue)
			}
			if failed != tt.wantErr {
				t.Errorf("refused %q, want %q", failed, tt.wantErr)
			}
		})
	}
}

func TestCloseReasonString(t *testing.T) {
	for r := CloseClientClosed; r <= CloseInternalError; r++ {
		if s := r.String(); s == "" || strings.HasPrefix(s, "CloseReason(") {
			t.Errorf("CloseReason %d has no name", int(r))
		}
	}
	if s := CloseReason(0).String(); s != "CloseReason(0)" {
		t.Errorf("zero CloseReason = %q", s)
	}
}

func TestNotificationFrame(t *testing.T) {
	tests := []struct {
		name, method, params, want string
	}{
		{name: "plain method is quoted as is", method: "action", params: `{"a":1}`, want: `{"jsonrpc":"2.0","method":"action","params":{"a":1}}`},
		{name: "no params omits the member", method: "root/sessionAdded", want: `{"jsonrpc":"2.0","method":"root/sessionAdded"}`},
		{name: "odd method goes through encoding/json", method: "a\"b<\n", params: `[]`, want: `{"jsonrpc":"2.0","method":"a\"b\u003c\n","params":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var params []byte
			if tt.params != "" {
				params = []byte(tt.params)
			}
			if got := string(notificationFrame(tt.method, params)); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}
