package daemon_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/google/uuid"
)

// Ports of VS Code's own host conformance suite (microsoft/vscode,
// src/vs/platform/agentHost/test/node/e2e/suites): each subtest carries the
// name of the conformanceTest it ports, written in our own words against
// the daemon on port 0 with the script agent standing in for the model.
// docs/CONFORMANCE.md lists every case: passed, or not applicable and why.
//
// Read from: protocolContractsSuite.ts @ 732376451bd82c6b6a7b3c27f44ae376175fc1c3
// (61 cases, the newest stored version) and protocolLifecycleSuite.ts @
// 07b7fd2981dbd648e17a301ca99b16a3bf83dbfe (5 cases, the version trimmed to
// "complement protocolContractsSuite.ts"). The three cases only the earlier
// lifecycle version 6bd60b563fd56d5b0041fd45b58312b596d7ad01 holds are ported
// too, marked where they are.

// pendingIssue31 holds the ported cases, of every suite, that ahpd does not
// pass yet, each with what ahpd does against what the suite wants (the
// names are unique across the suites). Such a case stays in its suite and
// skips (conformanceCase); the one who fixes ahpd deletes its entry.
// AHPD_ISSUE31_PENDING=run runs them all the same, to see them fail.
var pendingIssue31 = map[string]string{}

// conformanceCase runs one ported case as a subtest named as upstream, or
// skips it while pendingIssue31 holds it.
func conformanceCase(t *testing.T, name string, fn func(t *testing.T)) bool {
	t.Helper()
	return t.Run(name, func(t *testing.T) {
		if why, ok := pendingIssue31[name]; ok && os.Getenv("AHPD_ISSUE31_PENDING") != "run" {
			t.Skip("issue 31 pending: " + why)
		}
		fn(t)
	})
}

// conformance is conformanceCase for a suite whose cases each get the
// suite's daemon through an env of their own: its t, and a shared client
// of its own, so a failure ends that case alone.
func conformance(t *testing.T, v *vscodeEnv, seen map[string]bool, name string, fn func(t *testing.T, v *vscodeEnv)) {
	t.Helper()
	seen[name] = true
	conformanceCase(t, name, func(t *testing.T) {
		te := *v.testEnv
		te.t = t
		fn(t, &vscodeEnv{testEnv: &te, c: te.client(fmt.Sprintf("vscode-suite-%d", len(seen))), dir: v.dir})
	})
}

// checkPendingNames fails when a pendingIssue31 entry of this suite names
// no case (a typo would skip nothing and hide nothing).
func checkPendingNames(t *testing.T, seen map[string]bool, suite []string) {
	t.Helper()
	for _, name := range suite {
		if _, ok := pendingIssue31[name]; ok && !seen[name] {
			t.Errorf("pendingIssue31 names %q, which this suite does not run", name)
		}
	}
}

// vscodeEnv is one daemon for a suite, and a client named after it.
type vscodeEnv struct {
	*testEnv
	c   *ahptest.Client
	dir string
}

func newVSCodeEnv(t *testing.T) *vscodeEnv {
	e := newEnv(t)
	return &vscodeEnv{testEnv: e, c: e.client("vscode-suite"), dir: e.workDir}
}

// fresh is a connection that has not initialized.
func (v *vscodeEnv) fresh() *ahptest.Client {
	return ahptest.Dial(v.t, v.d.URL(), v.cfg.ConnectionToken)
}

// initialized is a second connection, initialized as clientID with no
// subscriptions (the suite's initializeAdditionalClient).
func (v *vscodeEnv) initialized(clientID string) *ahptest.Client {
	c := v.fresh()
	c.Initialize(clientID)
	return c
}

// vscodeSession numbers the sessions of every test; tests run in parallel.
var vscodeSession atomic.Int64

// session creates a session in the served directory and returns it and
// its default chat.
func (v *vscodeEnv) session() (string, string) {
	return v.createSession(v.c, fmt.Sprintf("ahp-session:/5c0de000-0000-4000-8000-%012d", vscodeSession.Add(1)))
}

// completedTurn runs one turn on the session (meaning its default chat).
func (v *vscodeEnv) completedTurn(session, chat, id, text string) {
	v.t.Helper()
	v.c.Subscribe(chat)
	v.c.Dispatch(session, turnStarted(id, text))
	awaitEnd(v.t, v.c, chat, id)
}

// afterDrop initializes a connection as clientID, runs body on it, drops it
// and returns what body returned and a fresh connection that has not
// initialized (the suite's afterConnectionDrop: reconnect is answered only
// before a handshake).
func (v *vscodeEnv) afterDrop(clientID string, body func(c *ahptest.Client) int64) (int64, *ahptest.Client) {
	first := v.fresh()
	first.Initialize(clientID)
	seen := body(first)
	first.Close()
	return seen, v.fresh()
}

// droppedWatching is afterDrop whose body subscribes the connection to
// channels, in order; the seq returned is the newest fromSeq it was given.
func (v *vscodeEnv) droppedWatching(clientID string, channels ...string) (int64, *ahptest.Client) {
	return v.afterDrop(clientID, func(c *ahptest.Client) int64 {
		var through int64
		for _, ch := range channels {
			_, from := c.Subscribe(ch)
			through = max(through, from)
		}
		return through
	})
}

func wantCode(t *testing.T, err *ahptest.RPCError, code int, contains string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %d", code)
	}
	if err.Code != code {
		t.Fatalf("error %d %q, want %d", err.Code, err.Message, code)
	}
	if contains != "" && !strings.Contains(strings.ToLower(err.Message), strings.ToLower(contains)) {
		t.Fatalf("error %q does not say %q", err.Message, contains)
	}
}

// sameWire is sameJSON for a raw answer: got decoded, so both sides
// marshal with their keys sorted (the suite's deepStrictEqual over decoded
// JSON). want is maps and slices, not structs, whose fields keep their
// order.
func sameWire(t *testing.T, what string, got json.RawMessage, want any) {
	t.Helper()
	sameJSON(t, what, decode[any](t, got), want)
}

// replayAnswer is reconnect's answer as 1.0 gives it.
type replayAnswer struct {
	Type    string `json:"type"`
	Actions []struct {
		Channel   string          `json:"channel"`
		Action    json.RawMessage `json:"action"`
		ServerSeq int64           `json:"serverSeq"`
	} `json:"actions"`
	Missing   []string          `json:"missing"`
	Snapshots []json.RawMessage `json:"snapshots"`
}

func decodeReconnect(t *testing.T, raw json.RawMessage) replayAnswer {
	t.Helper()
	var r replayAnswer
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("reconnect answered %s: %v", raw, err)
	}
	return r
}

// replayed is the channel and type of each replayed action, in order.
func (r replayAnswer) replayed() []string {
	var out []string
	for _, a := range r.Actions {
		var typ struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(a.Action, &typ)
		out = append(out, a.Channel+" "+typ.Type)
	}
	return out
}

func reconnect(c *ahptest.Client, clientID string, seen int64, subs ...string) (json.RawMessage, *ahptest.RPCError) {
	if subs == nil {
		subs = []string{}
	}
	return c.Call("reconnect", map[string]any{"channel": ahp.RootURI, "clientId": clientID, "lastSeenServerSeq": seen, "subscriptions": subs})
}

// mustReconnect is reconnect's answer, the test failing on an error.
func mustReconnect(t *testing.T, c *ahptest.Client, clientID string, seen int64, subs ...string) json.RawMessage {
	t.Helper()
	raw, err := reconnect(c, clientID, seen, subs...)
	if err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	return raw
}

func userDraft(text string) map[string]any {
	return map[string]any{"text": text, "origin": map[string]any{"kind": "user"}}
}

func draftChanged(text string) map[string]any {
	return map[string]any{"type": "chat/draftChanged", "draft": userDraft(text)}
}

func titleChanged(title string) map[string]any {
	return map[string]any{"type": "session/titleChanged", "title": title}
}

// newSessionURI is a session URI as VS Code names one: <provider>:/<uuid>.
func newSessionURI() string { return "script:/" + uuid.NewString() }

// nodeArch is Go's GOARCH as Node's process.arch names it.
func nodeArch() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x64"
	case "386":
		return "ia32"
	}
	return runtime.GOARCH
}

var lifecycleCases = []string{
	"ping succeeds before initialize",
	"fetchTurns rejects an unknown chat",
	"fetchTurns rejects an unrecognized cursor",
	// 6bd60b56 only:
	"ping succeeds after initialize",
	"fetchTurns acknowledges completed turn history loading",
	"reconnect replays missed actions",
}

// TestVSCodeProtocolLifecycle ports protocolLifecycleSuite. Its two OTLP
// cases are in TestVSCodeProtocolLifecycleOTLP (vscode_otlp_test.go).
func TestVSCodeProtocolLifecycle(t *testing.T) {
	t.Parallel()
	v := newVSCodeEnv(t)
	seen := map[string]bool{}
	defer checkPendingNames(t, seen, lifecycleCases)
	conformance(t, v, seen, "ping succeeds before initialize", func(t *testing.T, v *vscodeEnv) {
		c := v.fresh()
		defer c.Close()
		res, err := c.Call("ping", nil)
		if err != nil || string(res) != "null" {
			t.Fatalf("ping = %s, %v", res, err)
		}
	})
	conformance(t, v, seen, "fetchTurns rejects an unknown chat", func(t *testing.T, v *vscodeEnv) {
		// CHATS.md wins over the suite's text: an unknown chat is "Resource
		// not found: <chat>" (C-FIRST-10); the suite matches "session not
		// found". The code is the same -32001.
		_, err := v.c.Call("fetchTurns", map[string]any{"channel": "ahp-chat:/missing-session/missing-chat"})
		wantCode(t, err, ahp.ErrResourceNotFound.Code, "not found")
	})
	conformance(t, v, seen, "fetchTurns rejects an unrecognized cursor", func(t *testing.T, v *vscodeEnv) {
		_, chat := v.session()
		_, err := v.c.Call("fetchTurns", map[string]any{"channel": chat, "cursor": "unknown-cursor"})
		wantCode(t, err, ahp.ErrInvalidParams.Code, "unrecognized fetchTurns cursor")
	})

	// The earlier stored version (6bd60b56) held three more cases, which
	// the trimmed one leaves to protocolContractsSuite; ported all the same.
	conformance(t, v, seen, "ping succeeds after initialize", func(t *testing.T, v *vscodeEnv) {
		c := v.initialized("ping-after-init")
		defer c.Close()
		res, err := c.Call("ping", map[string]any{"channel": ahp.RootURI})
		if err != nil || string(res) != "null" {
			t.Fatalf("ping = %s, %v", res, err)
		}
	})
	conformance(t, v, seen, "fetchTurns acknowledges completed turn history loading", func(t *testing.T, v *vscodeEnv) {
		sess, chat, _ := v.workspaceSession("lifecycle-fetch-turns")
		v.completedTurn(sess, chat, "turn-ft-1", "/rename Fetch Turns One")
		v.completedTurn(sess, chat, "turn-ft-2", "/rename Fetch Turns Two")
		res := v.c.MustCall("fetchTurns", map[string]any{"channel": chat})
		if string(res) != "{}" {
			t.Fatalf("fetchTurns answered %s", res)
		}
		env := v.c.AwaitAction(chat, "chat/turnsLoaded")
		sameWire(t, "turnsLoaded", env.Action, map[string]any{"type": "chat/turnsLoaded", "turns": []any{}})
	})
	conformance(t, v, seen, "reconnect replays missed actions", func(t *testing.T, v *vscodeEnv) {
		// The suite drops its shared connection; this drops one of its own.
		sess, _, _ := v.workspaceSession("lifecycle-reconnect")
		const id = "reconnect-lifecycle"
		c := v.initialized(id)
		c.Subscribe(sess)
		n := len(c.Envelopes())
		seq := c.Dispatch(sess, titleChanged("Reconnect Title"))
		c.AwaitEcho(seq)
		missedFrom := c.Envelopes()[n].ServerSeq - 1
		c.Close()
		secondary := v.fresh()
		defer secondary.Close()
		raw := mustReconnect(t, secondary, id, missedFrom, sess)
		r := decodeReconnect(t, raw)
		switch r.Type {
		case "replay":
			if !slices.Contains(r.replayed(), sess+" session/titleChanged") {
				t.Fatalf("the replay misses the title change: %s", raw)
			}
		case "snapshot":
			if len(r.Snapshots) == 0 {
				t.Fatalf("a snapshot reconnect without snapshots: %s", raw)
			}
		default:
			t.Fatalf("reconnect answered %s", raw)
		}
		secondary.MustCall("disposeSession", map[string]any{"channel": sess})
	})
}

var contractCases = []string{
	"ping answers while the connection is live",
	"ping answers before the client initializes",
	"management diagnostics report providers and network endpoints",
	"diagnostics fetch reports a refused local connection",
	"initialize rejects incompatible protocol versions",
	"initialize rejects an empty protocol version list",
	"initialize without subscriptions returns no snapshots",
	"initialize reports the negotiated protocol and sequence",
	"initialize selects a supported fallback protocol version",
	"initialize accepts informational client identity",
	"initialize accepts locale metadata",
	"initialize accepts declared client capabilities",
	"initialize cannot be repeated after the handshake",
	"listSessions includes provider-backed session metadata",
	"listSessions reflects live title and status changes",
	"disposing a session removes it from listSessions",
	"fetchTurns currently emits an empty loaded-turns page",
	"fetchTurns rejects a cursor the host did not issue",
	"fetchTurns rejects an unknown chat channel",
	"initialize returns snapshots for initial subscriptions",
	"a session action is broadcast to every subscribed client",
	"a chat action is broadcast to every subscribed client",
	"an unsubscribed client stops receiving channel actions",
	"initial subscriptions include current session and chat state",
	"terminal output is streamed to every subscribed client",
	"session disposal invalidates another client subscription",
	"root session summaries are broadcast to every subscribed client",
	"reconnect replays only the actions a dropped client missed",
	"reconnect with no missed actions returns an empty replay",
	"reconnect excludes actions from channels the client did not restore",
	"reconnect replays missed session and chat actions together",
	"reconnected state subscriptions receive subsequent live actions",
	"reconnect reports a subscription it cannot resume as missing",
	"resource requests before initialize are rejected",
	"unknown requests after initialize are rejected",
	"reconnect rejects an unknown client",
	"creating a session with an unknown provider is rejected",
	"creating a duplicate session resource is rejected",
	"a session cannot fork onto its own resource",
	"forking from a missing session is rejected",
	"createSession rejects an active client owned by another connection",
	"createSession seeds a matching active client into session state",
	"creating a chat for a missing session is rejected",
	"subscribing twice does not duplicate action delivery",
	"resubscribing receives state changed while unsubscribed",
	"session/workingDirectorySet is rejected rather than silently dropped",
	"session/workingDirectoryRemoved is rejected rather than silently dropped",
	"chat/workingDirectorySet is rejected rather than silently dropped",
	"chat/workingDirectoryRemoved is rejected rather than silently dropped",
}

// TestVSCodeProtocolContracts ports protocolContractsSuite. Its twelve OTLP
// log cases are in TestVSCodeProtocolContractsOTLP (vscode_otlp_test.go).
func TestVSCodeProtocolContracts(t *testing.T) {
	t.Setenv("SHELL", "/bin/sh") // the terminal case types shell, not node
	v := newVSCodeEnv(t)
	seen := map[string]bool{}
	defer checkPendingNames(t, seen, contractCases)
	conformance(t, v, seen, "ping answers while the connection is live", func(t *testing.T, v *vscodeEnv) {
		v.c.MustCall("ping", map[string]any{"channel": ahp.RootURI})
	})
	conformance(t, v, seen, "ping answers before the client initializes", func(t *testing.T, v *vscodeEnv) {
		c := v.fresh()
		defer c.Close()
		res, err := c.Call("ping", map[string]any{"channel": ahp.RootURI})
		if err != nil || string(res) != "null" {
			t.Fatalf("ping = %s, %v", res, err)
		}
	})

	conformance(t, v, seen, "management diagnostics report providers and network endpoints", func(t *testing.T, v *vscodeEnv) {
		c := v.initialized("management-diagnostics")
		defer c.Close()
		network := c.MustCall("getNetworkDiagnosticsInfo", map[string]any{})
		managed := c.MustCall("getManagedSettingsDiagnostics", map[string]any{})
		var n struct {
			Version   string            `json:"version"`
			OS        string            `json:"os"`
			Arch      string            `json:"arch"`
			Endpoints []json.RawMessage `json:"endpoints"`
		}
		var m []struct {
			Provider string `json:"provider"`
		}
		if err := json.Unmarshal(network, &n); err != nil {
			t.Fatalf("getNetworkDiagnosticsInfo %s: %v", network, err)
		}
		if err := json.Unmarshal(managed, &m); err != nil {
			t.Fatalf("getManagedSettingsDiagnostics %s: %v", managed, err)
		}
		if n.Version == "" || n.OS != runtime.GOOS || n.Arch != nodeArch() || len(n.Endpoints) == 0 {
			t.Fatalf("network diagnostics %s", network)
		}
		if !slices.ContainsFunc(m, func(e struct {
			Provider string `json:"provider"`
		}) bool {
			return e.Provider == "script"
		}) {
			t.Fatalf("managed settings diagnostics name no script provider: %s", managed)
		}
	})
	conformance(t, v, seen, "diagnostics fetch reports a refused local connection", func(t *testing.T, v *vscodeEnv) {
		c := v.initialized("diagnostics-fetch")
		defer c.Close()
		raw := c.MustCall("diagnosticsFetch", map[string]any{"url": "http://127.0.0.1:1/"})
		var r struct {
			URL        string   `json:"url"`
			Error      string   `json:"error"`
			DurationMs *float64 `json:"durationMs"`
		}
		if err := json.Unmarshal(raw, &r); err != nil || r.URL != "http://127.0.0.1:1/" || r.Error == "" || r.DurationMs == nil {
			t.Fatalf("diagnosticsFetch answered %s (%v)", raw, err)
		}
	})

	for name, versions := range map[string][]string{
		"initialize rejects incompatible protocol versions": {"999.0.0"},
		"initialize rejects an empty protocol version list": {},
	} {
		conformance(t, v, seen, name, func(t *testing.T, v *vscodeEnv) {
			c := v.fresh()
			defer c.Close()
			_, err := c.Call("initialize", map[string]any{"channel": ahp.RootURI, "protocolVersions": versions, "clientId": "versions"})
			wantCode(t, err, ahp.ErrUnsupportedProtocolVersion.Code, "")
		})
	}
	conformance(t, v, seen, "initialize without subscriptions returns no snapshots", func(t *testing.T, v *vscodeEnv) {
		c := v.fresh()
		defer c.Close()
		res := c.MustCall("initialize", map[string]any{"channel": ahp.RootURI, "protocolVersions": []string{"1.0.0"}, "clientId": "no-subs"})
		var r struct {
			Snapshots json.RawMessage `json:"snapshots"`
		}
		if err := json.Unmarshal(res, &r); err != nil || string(r.Snapshots) != "[]" {
			t.Fatalf("snapshots = %s (%v)", r.Snapshots, err)
		}
	})
	// initializeWith initializes a fresh connection with params beside the
	// channel and clientId, and returns the negotiated result.
	initializeWith := func(t *testing.T, v *vscodeEnv, clientID string, params map[string]any) ahp.InitializeResult {
		t.Helper()
		c := v.fresh()
		defer c.Close()
		p := map[string]any{"channel": ahp.RootURI, "protocolVersions": []string{"1.0.0"}, "clientId": clientID}
		for k, val := range params {
			p[k] = val
		}
		raw := c.MustCall("initialize", p)
		var r ahp.InitializeResult
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("initialize answered %s: %v", raw, err)
		}
		return r
	}
	conformance(t, v, seen, "initialize reports the negotiated protocol and sequence", func(t *testing.T, v *vscodeEnv) {
		r := initializeWith(t, v, "server-identity", map[string]any{"clientInfo": map[string]any{"name": "agent-host-e2e", "version": "1.0.0"}})
		if r.ProtocolVersion != "1.0.0" || r.ServerSeq < 0 {
			t.Fatalf("negotiated %q at serverSeq %d", r.ProtocolVersion, r.ServerSeq)
		}
	})
	conformance(t, v, seen, "initialize selects a supported fallback protocol version", func(t *testing.T, v *vscodeEnv) {
		if r := initializeWith(t, v, "fallback-version", map[string]any{"protocolVersions": []string{"999.0.0", "1.0.0"}}); r.ProtocolVersion != "1.0.0" {
			t.Fatalf("negotiated %q, want the supported 1.0.0", r.ProtocolVersion)
		}
	})
	conformance(t, v, seen, "initialize accepts informational client identity", func(t *testing.T, v *vscodeEnv) {
		info := map[string]any{"name": "agent-host-e2e", "version": "1.2.3", "title": "Agent Host E2E"}
		if r := initializeWith(t, v, "client-info", map[string]any{"clientInfo": info}); r.ProtocolVersion != "1.0.0" {
			t.Fatalf("negotiated %q", r.ProtocolVersion)
		}
	})
	conformance(t, v, seen, "initialize accepts locale metadata", func(t *testing.T, v *vscodeEnv) {
		if r := initializeWith(t, v, "locale", map[string]any{"locale": "ja-JP"}); r.ProtocolVersion != "1.0.0" {
			t.Fatalf("negotiated %q", r.ProtocolVersion)
		}
	})
	conformance(t, v, seen, "initialize accepts declared client capabilities", func(t *testing.T, v *vscodeEnv) {
		if r := initializeWith(t, v, "capabilities", map[string]any{"capabilities": map[string]any{"mcpApps": map[string]any{}}}); r.ProtocolVersion != "1.0.0" {
			t.Fatalf("negotiated %q", r.ProtocolVersion)
		}
	})
	conformance(t, v, seen, "initialize cannot be repeated after the handshake", func(t *testing.T, v *vscodeEnv) {
		c := v.initialized("repeat-initialize")
		defer c.Close()
		_, err := c.Call("initialize", map[string]any{"channel": ahp.RootURI, "protocolVersions": []string{"1.0.0"}, "clientId": "repeat-initialize-again"})
		wantCode(t, err, ahp.CodeMethodNotFound, "")
	})

	conformance(t, v, seen, "listSessions includes provider-backed session metadata", func(t *testing.T, v *vscodeEnv) {
		sess, chat := v.session()
		v.completedTurn(sess, chat, "turn-list-session-metadata", "/rename Listed Session")
		item := listedSession(t, v.c, sess)
		if item.Provider != "script" || item.Title == "" || item.CreatedAt == "" || item.ModifiedAt == "" {
			t.Fatalf("listed %+v", item)
		}
		for _, ts := range []string{item.CreatedAt, item.ModifiedAt} {
			if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
				t.Fatalf("listed a date %q: %v", ts, err)
			}
		}
		if want := []string{ahp.FileURI(v.dir)}; !slices.Equal(item.WorkingDirectories, want) {
			t.Fatalf("workingDirectories %v, want %v", item.WorkingDirectories, want)
		}
	})
	conformance(t, v, seen, "listSessions reflects live title and status changes", func(t *testing.T, v *vscodeEnv) {
		// "/rename" is answered by the host itself, as VS Code's host does.
		sess, chat := v.session()
		v.completedTurn(sess, chat, "turn-list-session-live-state", "/rename Catalog Title")
		for _, a := range []map[string]any{
			{"type": "session/isReadChanged", "isRead": true},
			{"type": "session/isArchivedChanged", "isArchived": true},
		} {
			v.c.Subscribe(sess)
			if env := v.c.AwaitEcho(v.c.Dispatch(sess, a)); env.RejectionReason != "" {
				t.Fatalf("%v refused: %s", a["type"], env.RejectionReason)
			}
		}
		item := listedSession(t, v.c, sess)
		if item.Title != "Catalog Title" || item.Status&ahp.StatusIsRead == 0 || item.Status&ahp.StatusIsArchived == 0 {
			t.Fatalf("listed %+v", item)
		}
	})
	conformance(t, v, seen, "disposing a session removes it from listSessions", func(t *testing.T, v *vscodeEnv) {
		sess, chat := v.session()
		v.completedTurn(sess, chat, "turn-list-session-dispose", "/rename Disposable Session")
		listedSession(t, v.c, sess)
		v.c.MustCall("disposeSession", map[string]any{"channel": sess})
		if sessionListed(t, v.c, sess) {
			t.Fatal("disposed session still listed")
		}
	})
	conformance(t, v, seen, "fetchTurns currently emits an empty loaded-turns page", func(t *testing.T, v *vscodeEnv) {
		sess, chat := v.session()
		v.completedTurn(sess, chat, "turn-fetch", "/rename Fetch Turns")
		// A subscribe that named no view holds every turn: nothing is
		// older, so the page is empty (CHATS.md "fetchTurns", C-CMD-12).
		res := v.c.MustCall("fetchTurns", map[string]any{"channel": chat})
		if string(res) != "{}" {
			t.Fatalf("fetchTurns answered %s", res)
		}
		env := v.c.AwaitAction(chat, "chat/turnsLoaded")
		sameWire(t, "turnsLoaded", env.Action, map[string]any{"type": "chat/turnsLoaded", "turns": []any{}})
	})
	conformance(t, v, seen, "fetchTurns rejects a cursor the host did not issue", func(t *testing.T, v *vscodeEnv) {
		_, chat := v.session()
		v.c.Subscribe(chat)
		_, err := v.c.Call("fetchTurns", map[string]any{"channel": chat, "cursor": "not-a-host-cursor"})
		wantCode(t, err, ahp.ErrInvalidParams.Code, "")
	})
	conformance(t, v, seen, "fetchTurns rejects an unknown chat channel", func(t *testing.T, v *vscodeEnv) {
		sess, _ := v.session()
		_, err := v.c.Call("fetchTurns", map[string]any{"channel": ahp.DerivedChatURI(sess, "missing")})
		if err == nil {
			t.Fatal("fetchTurns of an unknown chat answered")
		}
	})
	conformance(t, v, seen, "initialize returns snapshots for initial subscriptions", func(t *testing.T, v *vscodeEnv) {
		sess, chat := v.session()
		c := v.fresh()
		defer c.Close()
		res := c.MustCall("initialize", map[string]any{"channel": ahp.RootURI, "protocolVersions": []string{"1.0.0"}, "clientId": "initial-subs",
			"initialSubscriptions": []string{sess, chat}})
		var r ahp.InitializeResult
		if err := json.Unmarshal(res, &r); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range r.Snapshots {
			got = append(got, s.Resource)
		}
		slices.Sort(got)
		want := []string{sess, chat}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("snapshots of %v, want %v", got, want)
		}
	})

	// Several clients on one channel. Upstream registers the chat-action,
	// unsubscribe, terminal and root-summary cases disabled (its host's
	// known multi-client isolation gaps, KNOWN_ISSUES.md); ahpd runs them.
	conformance(t, v, seen, "a session action is broadcast to every subscribed client", func(t *testing.T, v *vscodeEnv) {
		sess, _, _ := v.workspaceSession("multi-client-session-action")
		other := v.initialized("multi-client-session-action")
		defer other.Close()
		other.Subscribe(sess)
		seq := v.c.Dispatch(sess, titleChanged("Shared Title"))
		env := other.AwaitAction(sess, "session/titleChanged")
		var title string
		_ = env.Field("title", &title)
		if title != "Shared Title" || env.Origin == nil || env.Origin.ClientSeq != seq {
			t.Fatalf("the other client saw %s", env.Raw)
		}
		if st := sessionState(t, other, sess); st.Title != "Shared Title" {
			t.Fatalf("snapshot title %q", st.Title)
		}
	})
	conformance(t, v, seen, "a chat action is broadcast to every subscribed client", func(t *testing.T, v *vscodeEnv) {
		_, chat, _ := v.workspaceSession("multi-client-chat-action")
		other := v.initialized("multi-client-chat-action")
		defer other.Close()
		other.Subscribe(chat)
		v.dispatchOK(chat, draftChanged("shared draft"))
		env := other.AwaitAction(chat, "chat/draftChanged")
		var draft json.RawMessage
		_ = env.Field("draft", &draft)
		sameWire(t, "the broadcast draft", draft, userDraft("shared draft"))
		raw, _ := other.Subscribe(chat)
		var st struct {
			Draft json.RawMessage `json:"draft"`
		}
		_ = json.Unmarshal(raw, &st)
		sameWire(t, "the snapshot's draft", st.Draft, userDraft("shared draft"))
	})
	conformance(t, v, seen, "an unsubscribed client stops receiving channel actions", func(t *testing.T, v *vscodeEnv) {
		sess, _, _ := v.workspaceSession("multi-client-unsubscribe")
		other := v.initialized("multi-client-unsubscribe")
		defer other.Close()
		other.Subscribe(sess)
		other.Notify("unsubscribe", map[string]any{"channel": sess})
		other.MustCall("ping", map[string]any{"channel": ahp.RootURI})
		n := len(other.Envelopes())
		v.dispatchOK(sess, titleChanged("After Unsubscribe"))
		other.MustCall("ping", map[string]any{"channel": ahp.RootURI})
		for _, e := range other.Envelopes()[n:] {
			if e.Channel == sess && e.Type() == "session/titleChanged" {
				t.Fatalf("an unsubscribed client was sent %s", e.Raw)
			}
		}
	})
	conformance(t, v, seen, "initial subscriptions include current session and chat state", func(t *testing.T, v *vscodeEnv) {
		sess, chat, _ := v.workspaceSession("multi-client-initial-state")
		v.dispatchOK(sess, titleChanged("Initial Snapshot Title"))
		v.dispatchOK(chat, draftChanged("initial snapshot draft"))
		c := v.fresh()
		defer c.Close()
		raw := c.MustCall("initialize", map[string]any{"channel": ahp.RootURI, "protocolVersions": []string{"1.0.0"},
			"clientId": "multi-client-initial-state", "initialSubscriptions": []string{sess, chat}})
		var r struct {
			Snapshots []struct {
				Resource string          `json:"resource"`
				State    json.RawMessage `json:"state"`
			} `json:"snapshots"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		var title string
		var draft json.RawMessage = []byte("null")
		for _, s := range r.Snapshots {
			var st struct {
				Title string          `json:"title"`
				Draft json.RawMessage `json:"draft"`
			}
			_ = json.Unmarshal(s.State, &st)
			switch s.Resource {
			case sess:
				title = st.Title
			case chat:
				if st.Draft != nil {
					draft = st.Draft
				}
			}
		}
		if title != "Initial Snapshot Title" {
			t.Fatalf("session snapshot title %q in %s", title, raw)
		}
		sameWire(t, "chat snapshot draft", draft, userDraft("initial snapshot draft"))
	})
	conformance(t, v, seen, "terminal output is streamed to every subscribed client", func(t *testing.T, v *vscodeEnv) {
		sess, _, dir := v.workspaceSession("multi-client-terminal")
		uri := newTerminalURI()
		other := v.initialized("multi-client-terminal")
		defer other.Close()
		v.c.MustCall("createTerminal", map[string]any{"channel": uri, "claim": map[string]any{"kind": "session", "session": sess},
			"name": "Multi-client Terminal", "cwd": ahp.FileURI(dir), "cols": 90, "rows": 30})
		defer v.c.Call("disposeTerminal", map[string]any{"channel": uri})
		v.c.Subscribe(uri)
		other.Subscribe(uri)
		seenShared, seenOther := len(v.c.Envelopes()), len(other.Envelopes())
		// The marker is typed split so the echo of the typed line is not it.
		v.c.Dispatch(uri, map[string]any{"type": "terminal/input", "data": `echo MULTI_CLIENT_"OUTPUT"` + "\r"})
		marker := regexp.MustCompile(`MULTI_CLIENT_OUTPUT`)
		deadline := time.Now().Add(ahptest.Timeout)
		for !streamed(v.c.Envelopes(), uri, seenShared, marker) || !streamed(other.Envelopes(), uri, seenOther, marker) {
			if time.Now().After(deadline) {
				t.Fatalf("the output reached the creating client: %v, the other: %v",
					streamed(v.c.Envelopes(), uri, seenShared, marker), streamed(other.Envelopes(), uri, seenOther, marker))
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	conformance(t, v, seen, "session disposal invalidates another client subscription", func(t *testing.T, v *vscodeEnv) {
		sess, chat, _ := v.workspaceSession("multi-client-dispose")
		other := v.initialized("multi-client-dispose")
		defer other.Close()
		other.Subscribe(sess)
		other.Subscribe(chat)
		v.c.MustCall("disposeSession", map[string]any{"channel": sess})
		for _, ch := range []string{sess, chat} {
			if _, err := other.Call("subscribe", map[string]any{"channel": ch}); err == nil {
				t.Fatalf("subscribe to %s answered after the session was disposed", ch)
			}
		}
	})
	conformance(t, v, seen, "root session summaries are broadcast to every subscribed client", func(t *testing.T, v *vscodeEnv) {
		sess, _, _ := v.workspaceSession("multi-client-root-summary")
		other := v.initialized("multi-client-root-summary")
		defer other.Close()
		other.Subscribe(ahp.RootURI)
		v.dispatchOK(sess, titleChanged("Broadcast Summary"))
		n := other.AwaitNotificationWhere("root/sessionSummaryChanged", func(p json.RawMessage) bool {
			var s struct {
				Session string `json:"session"`
			}
			_ = json.Unmarshal(p, &s)
			return s.Session == sess
		})
		var p struct {
			Changes ahp.PartialSessionSummary `json:"changes"`
		}
		if err := json.Unmarshal(n.Params, &p); err != nil || p.Changes.Title == nil || *p.Changes.Title != "Broadcast Summary" {
			t.Fatalf("the first summary change of the session is %s", n.Params)
		}
	})

	// Reconnect. The cutoff is the subscribe's fromSeq, as the suite takes it.
	conformance(t, v, seen, "reconnect replays only the actions a dropped client missed", func(t *testing.T, v *vscodeEnv) {
		_, chat := v.session()
		through, revived := v.droppedWatching("reconnect-dropped", chat)
		defer revived.Close()
		v.c.Subscribe(chat)
		v.dispatchOK(chat, draftChanged("missed while disconnected"))
		raw := mustReconnect(t, revived, "reconnect-dropped", through, chat)
		r := decodeReconnect(t, raw)
		if r.Type != "replay" || len(r.Actions) == 0 {
			t.Fatalf("reconnect %s", raw)
		}
		for _, a := range r.Actions {
			if a.ServerSeq <= through {
				t.Fatalf("replayed serverSeq %d, already seen through %d", a.ServerSeq, through)
			}
		}
	})
	conformance(t, v, seen, "reconnect with no missed actions returns an empty replay", func(t *testing.T, v *vscodeEnv) {
		_, chat, _ := v.workspaceSession("reconnect-empty")
		through, revived := v.droppedWatching("reconnect-empty-dropped", chat)
		defer revived.Close()
		raw := mustReconnect(t, revived, "reconnect-empty-dropped", through, chat)
		sameWire(t, "reconnect", raw, map[string]any{"type": "replay", "actions": []any{}, "missing": []any{}})
	})
	conformance(t, v, seen, "reconnect excludes actions from channels the client did not restore", func(t *testing.T, v *vscodeEnv) {
		_, firstChat, _ := v.workspaceSession("reconnect-filter-first")
		second := newSessionURI()
		secondDir := filepath.Join(v.dir, "reconnect-filter-second")
		if err := os.MkdirAll(secondDir, 0o755); err != nil {
			t.Fatal(err)
		}
		v.c.MustCall("createSession", map[string]any{"channel": second, "provider": "script",
			"workingDirectories": []string{ahp.FileURI(secondDir)}, "config": map[string]any{"isolation": "folder"}})
		v.c.Subscribe(second)
		secondChat := ahp.DefaultChatURI(second)
		v.c.Subscribe(secondChat)
		through, revived := v.droppedWatching("reconnect-filter", firstChat)
		defer revived.Close()
		v.dispatchOK(firstChat, draftChanged("included"))
		v.dispatchOK(secondChat, draftChanged("excluded"))
		raw := mustReconnect(t, revived, "reconnect-filter", through, firstChat)
		r := decodeReconnect(t, raw)
		if got, want := r.replayed(), []string{firstChat + " chat/draftChanged"}; r.Type != "replay" || !slices.Equal(got, want) {
			t.Fatalf("replayed %v, want %v: %s", got, want, raw)
		}
	})
	conformance(t, v, seen, "reconnect replays missed session and chat actions together", func(t *testing.T, v *vscodeEnv) {
		sess, chat, _ := v.workspaceSession("reconnect-state-snapshots")
		through, revived := v.droppedWatching("reconnect-state-snapshots-dropped", sess, chat)
		defer revived.Close()
		v.dispatchOK(sess, titleChanged("Replay Session"))
		v.dispatchOK(chat, draftChanged("replay draft"))
		raw := mustReconnect(t, revived, "reconnect-state-snapshots-dropped", through, sess, chat)
		r := decodeReconnect(t, raw)
		if got, want := r.replayed(), []string{sess + " session/titleChanged", chat + " chat/draftChanged"}; r.Type != "replay" || !slices.Equal(got, want) {
			t.Fatalf("replayed %v, want %v: %s", got, want, raw)
		}
	})
	conformance(t, v, seen, "reconnected state subscriptions receive subsequent live actions", func(t *testing.T, v *vscodeEnv) {
		sess, chat, _ := v.workspaceSession("reconnect-live")
		through, revived := v.droppedWatching("reconnect-live-dropped", sess, chat)
		defer revived.Close()
		mustReconnect(t, revived, "reconnect-live-dropped", through, sess, chat)
		v.c.Dispatch(sess, titleChanged("Reconnected Live"))
		v.c.Dispatch(chat, draftChanged("live"))
		revived.AwaitEnvelope("the live title change", func(e ahptest.Envelope) bool {
			var title string
			_ = e.Field("title", &title)
			return e.Channel == sess && e.Type() == "session/titleChanged" && title == "Reconnected Live"
		})
		revived.AwaitEnvelope("the live draft", func(e ahptest.Envelope) bool {
			return e.Channel == chat && e.Type() == "chat/draftChanged" && e.Origin != nil && e.Origin.ClientID == v.c.ID
		})
	})
	conformance(t, v, seen, "reconnect reports a subscription it cannot resume as missing", func(t *testing.T, v *vscodeEnv) {
		_, chat := v.session()
		gone := "agenthost-terminal://e2e/never-existed"
		through, revived := v.droppedWatching("reconnect-missing-dropped", chat)
		defer revived.Close()
		raw := mustReconnect(t, revived, "reconnect-missing-dropped", through, chat, gone)
		if r := decodeReconnect(t, raw); r.Type != "replay" || !slices.Equal(r.Missing, []string{gone}) {
			t.Fatalf("reconnect %s", raw)
		}
	})

	// Requests the host refuses, and with which code.
	conformance(t, v, seen, "resource requests before initialize are rejected", func(t *testing.T, v *vscodeEnv) {
		c := v.fresh()
		defer c.Close()
		_, err := c.Call("resourceResolve", map[string]any{"channel": ahp.RootURI, "uri": ahp.FileURI(os.TempDir())})
		wantCode(t, err, ahp.CodeMethodNotFound, "")
	})
	conformance(t, v, seen, "unknown requests after initialize are rejected", func(t *testing.T, v *vscodeEnv) {
		c := v.initialized("unknown-request")
		defer c.Close()
		_, err := c.Call("agentHostE2E/unknownRequest", map[string]any{"channel": ahp.RootURI})
		wantCode(t, err, ahp.CodeMethodNotFound, "")
	})
	conformance(t, v, seen, "reconnect rejects an unknown client", func(t *testing.T, v *vscodeEnv) {
		c := v.fresh()
		defer c.Close()
		res, err := reconnect(c, "unknown-reconnect-script", 0)
		if err == nil {
			t.Fatalf("reconnect of a client the host never saw answered %s, want -32008", res)
		}
		wantCode(t, err, ahp.CodeNotFound, "")
	})
	conformance(t, v, seen, "creating a session with an unknown provider is rejected", func(t *testing.T, v *vscodeEnv) {
		c := v.initialized("unknown-provider")
		defer c.Close()
		_, err := c.Call("createSession", map[string]any{"channel": "missing-provider:/session", "provider": "missing-provider"})
		wantCode(t, err, ahp.CodeProviderNotFound, "")
	})
	conformance(t, v, seen, "creating a duplicate session resource is rejected", func(t *testing.T, v *vscodeEnv) {
		// Upstream runs it only with AGENT_HOST_RUN_KNOWN_ISSUES (its host's
		// known issue); ahpd runs it.
		sess, _, dir := v.workspaceSession("duplicate-session")
		_, err := v.c.Call("createSession", map[string]any{"channel": sess, "provider": "script",
			"workingDirectories": []string{ahp.FileURI(dir)}, "config": map[string]any{"isolation": "folder"}})
		wantCode(t, err, ahp.CodeSessionAlreadyExists, "")
	})
	conformance(t, v, seen, "a session cannot fork onto its own resource", func(t *testing.T, v *vscodeEnv) {
		sess, _, _ := v.workspaceSession("self-fork")
		_, err := v.c.Call("createSession", map[string]any{"channel": sess, "provider": "script",
			"fork": map[string]any{"session": sess, "turnId": "irrelevant"}})
		wantCode(t, err, ahp.CodeSessionAlreadyExists, "")
	})
	conformance(t, v, seen, "forking from a missing session is rejected", func(t *testing.T, v *vscodeEnv) {
		// The suite initializes its shared connection a second time here,
		// which its own "initialize cannot be repeated after the handshake"
		// refuses; this initializes a connection of its own.
		c := v.initialized("missing-fork-source-script")
		defer c.Close()
		target := newSessionURI()
		_, err := c.Call("createSession", map[string]any{"channel": target, "provider": "script",
			"fork": map[string]any{"session": newSessionURI(), "turnId": "missing-turn"}})
		if err == nil {
			c.Subscribe(target)
			t.Fatalf("a fork of a missing session created %s, want -32001", target)
		}
		wantCode(t, err, ahp.CodeSessionNotFound, "")
	})
	conformance(t, v, seen, "createSession rejects an active client owned by another connection", func(t *testing.T, v *vscodeEnv) {
		c := v.initialized("active-client-owner-script")
		defer c.Close()
		target := newSessionURI()
		_, err := c.Call("createSession", map[string]any{"channel": target, "provider": "script",
			"activeClient": map[string]any{"clientId": "different-client", "displayName": "Different Client", "tools": []any{}}})
		if err == nil {
			st, _ := c.Subscribe(target)
			var s struct {
				ActiveClients json.RawMessage `json:"activeClients"`
			}
			_ = json.Unmarshal(st, &s)
			t.Fatalf("createSession took another client's activeClient; activeClients %s, want -32602", s.ActiveClients)
		}
		wantCode(t, err, ahp.CodeInvalidParams, "")
	})
	conformance(t, v, seen, "createSession seeds a matching active client into session state", func(t *testing.T, v *vscodeEnv) {
		// The suite authenticates for its Copilot provider first; the
		// script agent needs no account, so that step is left out.
		dir := filepath.Join(v.dir, "active-client-create")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		const id = "active-client-create-script"
		c := v.initialized(id)
		defer c.Close()
		sess := newSessionURI()
		c.MustCall("createSession", map[string]any{"channel": sess, "provider": "script",
			"workingDirectories": []string{ahp.FileURI(dir)}, "config": map[string]any{"isolation": "folder"},
			"activeClient": map[string]any{"clientId": id, "displayName": "Creating Client", "tools": []any{}}})
		defer c.Call("disposeSession", map[string]any{"channel": sess})
		raw, _ := c.Subscribe(sess)
		var st struct {
			ActiveClients json.RawMessage `json:"activeClients"`
		}
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatal(err)
		}
		sameWire(t, "activeClients", st.ActiveClients, []any{map[string]any{"clientId": id, "displayName": "Creating Client", "tools": []any{}}})
	})
	conformance(t, v, seen, "creating a chat for a missing session is rejected", func(t *testing.T, v *vscodeEnv) {
		c := v.initialized("missing-chat-session")
		defer c.Close()
		missing := "script:/missing-chat-session"
		_, err := c.Call("createChat", map[string]any{"channel": missing, "chat": ahp.DerivedChatURI(missing, "peer")})
		wantCode(t, err, ahp.CodeSessionNotFound, "")
	})

	// Subscriptions.
	conformance(t, v, seen, "subscribing twice does not duplicate action delivery", func(t *testing.T, v *vscodeEnv) {
		_, chat, _ := v.workspaceSession("duplicate-subscription")
		v.c.Subscribe(chat)
		v.c.Subscribe(chat)
		n := len(v.c.Envelopes())
		seq := v.c.Dispatch(chat, draftChanged("single delivery"))
		v.c.AwaitEcho(seq)
		v.c.MustCall("ping", map[string]any{"channel": ahp.RootURI})
		deliveries := 0
		for _, e := range v.c.Envelopes()[n:] {
			if e.Channel == chat && e.Type() == "chat/draftChanged" && e.Origin != nil && e.Origin.ClientID == v.c.ID && e.Origin.ClientSeq == seq {
				deliveries++
			}
		}
		if deliveries != 1 {
			t.Fatalf("the action was delivered %d times", deliveries)
		}
	})
	conformance(t, v, seen, "resubscribing receives state changed while unsubscribed", func(t *testing.T, v *vscodeEnv) {
		_, chat, _ := v.workspaceSession("resubscribe-snapshot")
		v.c.Notify("unsubscribe", map[string]any{"channel": chat})
		v.c.Dispatch(chat, draftChanged("changed while unsubscribed"))
		v.c.MustCall("ping", map[string]any{"channel": ahp.RootURI})
		if st := chatOf(t, v.c, chat); st.Draft == nil || st.Draft.Text != "changed while unsubscribed" {
			t.Fatalf("resubscribed draft %+v", st.Draft)
		}
	})

	for _, tc := range []struct{ typ, on string }{
		{"session/workingDirectorySet", "session"},
		{"session/workingDirectoryRemoved", "session"},
		{"chat/workingDirectorySet", "chat"},
		{"chat/workingDirectoryRemoved", "chat"},
	} {
		conformance(t, v, seen, tc.typ+" is rejected rather than silently dropped", func(t *testing.T, v *vscodeEnv) {
			// For chat/workingDirectoryRemoved CHATS.md wins: "A change to a
			// chat's directories starts that one chat again, resumed"; a chat
			// may narrow to a subset of its session's directories, so a
			// removal is not refused (docs/CONFORMANCE.md). What must hold:
			// the directory it names, never the session's, is not added.
			sess, chat := v.session()
			channel := sess
			if tc.on == "chat" {
				channel = chat
			}
			v.c.Subscribe(channel)
			dir := ahp.FileURI(v.dir + "/second-root")
			seq := v.c.Dispatch(channel, map[string]any{"type": tc.typ, "directory": dir})
			env := v.c.AwaitEcho(seq)
			if tc.typ != "chat/workingDirectoryRemoved" && env.RejectionReason == "" {
				t.Fatalf("%s of a directory that does not exist was taken", tc.typ)
			}
			st, _ := v.c.Subscribe(channel)
			var s struct {
				WorkingDirectories []string `json:"workingDirectories"`
			}
			_ = json.Unmarshal(st, &s)
			if slices.Contains(s.WorkingDirectories, dir) {
				t.Fatalf("directory applied: %v", s.WorkingDirectories)
			}
		})
	}
}

func listedSession(t *testing.T, c *ahptest.Client, uri string) ahp.SessionSummary {
	t.Helper()
	res := c.MustCall("listSessions", map[string]any{"channel": ahp.RootURI})
	var r struct {
		Items []ahp.SessionSummary `json:"items"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	for _, it := range r.Items {
		if it.Resource == uri {
			return it
		}
	}
	t.Fatalf("listSessions does not list %s", uri)
	return ahp.SessionSummary{}
}

func sessionListed(t *testing.T, c *ahptest.Client, uri string) bool {
	t.Helper()
	res := c.MustCall("listSessions", map[string]any{"channel": ahp.RootURI})
	var r struct {
		Items []ahp.SessionSummary `json:"items"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(r.Items, func(s ahp.SessionSummary) bool { return s.Resource == uri })
}
