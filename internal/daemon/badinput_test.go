package daemon_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// TestBadInput: every kind of bad input gets a JSON-RPC error with the right
// code, the connection stays up, nothing stored is lost, and another client
// sees nothing of it. The derived URI of a session nobody has is no chat:
// -32001 "Resource not found: <chat>" (C-FIRST-10).
func TestBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	watcher := e.client("watcher")
	sess, chat := e.createSession(a, "ahp-session:/badbadba-0000-4000-8000-000000000001")
	watcher.Subscribe(sess)
	watcher.Subscribe(chat)
	a.Subscribe(chat)
	end := sendTurn(t, a, chat, "t1", "kept")
	awaitIdle(t, watcher, sess, chat, end.ServerSeq)
	before := len(watcher.Frames())

	cases := []struct {
		name     string
		frame    string
		code     int
		contains string
	}{
		{"malformed JSON", `{"jsonrpc":"2.0","id":1,"method":`, ahp.CodeParseError, ""},
		{"not an object", `[1,2,3]`, ahp.CodeInvalidRequest, ""},
		{"no method", `{"jsonrpc":"2.0","id":2}`, ahp.CodeInvalidRequest, ""},
		{"wrong jsonrpc version", `{"jsonrpc":"1.0","id":3,"method":"ping","params":{"channel":"ahp-root://"}}`, ahp.CodeInvalidRequest, ""},
		{"method not a string", `{"jsonrpc":"2.0","id":4,"method":7}`, ahp.CodeInvalidRequest, ""},
		{"unknown method", `{"jsonrpc":"2.0","id":5,"method":"frobnicate","params":{"channel":"ahp-root://"}}`, ahp.CodeMethodNotFound, "frobnicate"},
		{"params of the wrong type", `{"jsonrpc":"2.0","id":6,"method":"subscribe","params":{"channel":42}}`, ahp.CodeInvalidParams, "channel"},
		{"missing channel", `{"jsonrpc":"2.0","id":7,"method":"subscribe","params":{}}`, ahp.CodeInvalidParams, "channel"},
		{"missing params", `{"jsonrpc":"2.0","id":8,"method":"createSession"}`, ahp.CodeInvalidParams, "params"},
		{"wrong limit type", `{"jsonrpc":"2.0","id":9,"method":"listSessions","params":{"channel":"ahp-root://","limit":"ten"}}`, ahp.CodeInvalidParams, "limit"},
		{"bad cursor", `{"jsonrpc":"2.0","id":10,"method":"listSessions","params":{"channel":"ahp-root://","cursor":"nope"}}`, ahp.CodeInvalidParams, "cursor"},
		{"unknown chat channel", `{"jsonrpc":"2.0","id":11,"method":"subscribe","params":{"channel":"ahp-chat:/no-such-chat"}}`, ahp.CodeSessionNotFound, "Resource not found: ahp-chat:/no-such-chat"},
		{"unknown session channel", `{"jsonrpc":"2.0","id":12,"method":"subscribe","params":{"channel":"ahp-session:/no-such-session"}}`, ahp.CodeSessionNotFound, "Resource not found: ahp-session:/no-such-session"},
		{"derived URI of a session nobody has", `{"jsonrpc":"2.0","id":13,"method":"subscribe","params":{"channel":"` + ahp.DefaultChatURI("copilot:/nobody") + `"}}`, ahp.CodeSessionNotFound, "Resource not found: "},
		{"duplicate session", `{"jsonrpc":"2.0","id":14,"method":"createSession","params":{"channel":"` + sess + `"}}`, ahp.CodeSessionAlreadyExists, sess},
		{"unknown provider", `{"jsonrpc":"2.0","id":15,"method":"createSession","params":{"channel":"ahp-session:/x-1","provider":"nope"}}`, ahp.CodeProviderNotFound, "nope"},
		// An unsupported version on a fresh connection is -32005
		// (TestVSCodeProtocolContracts); this connection has said who it is.
		{"second initialize", `{"jsonrpc":"2.0","id":16,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"z"}}`, ahp.CodeMethodNotFound, "already initialized"},
		{"binary-looking garbage", "\x00\x01garbage", ahp.CodeParseError, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := len(a.Frames())
			a.SendRaw(c.frame)
			got := a.AwaitFrame("error answer", n, func(f ahptest.Frame) bool { return f.Error != nil })
			if got.Error.Code != c.code {
				t.Fatalf("code %d (%s), want %d", got.Error.Code, got.Error.Message, c.code)
			}
			if c.contains != "" && !strings.Contains(got.Error.Message, c.contains) {
				t.Fatalf("message %q does not name %q", got.Error.Message, c.contains)
			}
			if c.code == ahp.CodeUnsupportedProtocolVersion {
				var data ahp.UnsupportedVersionData
				if err := json.Unmarshal(got.Error.Data, &data); err != nil || len(data.SupportedVersions) == 0 {
					t.Fatalf("-32005 without data.supportedVersions: %s", got.Error.Data)
				}
			}
			// The connection is still up and answers.
			a.MustCall("ping", map[string]any{"channel": ahp.RootURI})
		})
	}
	// A refused action comes back as an envelope with a rejection reason,
	// to its sender alone.
	seq := a.Dispatch(chat, map[string]any{"type": "chat/delta", "turnId": "t1", "partId": "x", "content": "not yours"})
	if env := a.AwaitEcho(seq); env.RejectionReason == "" {
		t.Fatalf("a server-only action was accepted: %s", env.Raw)
	}
	seq = a.Dispatch("ahp-chat:/nowhere", turnStarted("tx", "hi"))
	if env := a.AwaitEcho(seq); !strings.Contains(env.RejectionReason, "Resource not found") {
		t.Fatalf("action on an unknown chat: %s", env.Raw)
	}
	// A malformed clientSeq is refused with an envelope naming the field
	// (issue 8 §4); the action is not taken.
	for _, seqText := range []string{"1.5", "18446744073709551616", `"abc"`, "-3", "null"} {
		n := len(a.Frames())
		a.SendRaw(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"` + chat + `","clientSeq":` + seqText + `,"action":{"type":"chat/turnStarted","turnId":"bad-seq","message":{"text":"no","origin":{"kind":"user"}}}}}`)
		f := a.AwaitFrame("refusal of clientSeq "+seqText, n, func(f ahptest.Frame) bool { return f.Method == "action" })
		var env ahptest.Envelope
		if err := json.Unmarshal(f.Params, &env); err != nil {
			t.Fatal(err)
		}
		if env.Channel != chat || !strings.Contains(env.RejectionReason, "clientSeq") {
			t.Fatalf("clientSeq %s: %s, want a refusal naming clientSeq", seqText, f.Raw)
		}
		a.MustCall("ping", map[string]any{"channel": ahp.RootURI})
	}
	// Nothing stored was lost and the watcher saw none of it.
	st, _ := a.Subscribe(chat)
	if cs := chatState(t, st); len(cs.Turns) != 1 || cs.ActiveTurn != nil {
		t.Fatalf("chat lost its turn: %s", st)
	}
	for _, f := range watcher.Frames()[before:] {
		if f.Method == "root/sessionSummaryChanged" {
			continue // t1's ending still settling in the catalogue, not the bad input
		}
		t.Fatalf("watcher received %s", f.Raw)
	}
	sendTurn(t, a, chat, "t2", "still works")
}
