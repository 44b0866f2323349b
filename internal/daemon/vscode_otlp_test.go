package daemon_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/otlp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// The OTLP log channel (internal/otlp, internal/host/logs.go): the cases of
// VS Code's suites that exercise it, ported as the rest of
// vscode_protocol_test.go is (same versions read: protocolContractsSuite @
// 73237645, protocolLifecycleSuite @ 07b7fd29), and ahpd's own tests of
// its grant and its subscriptions' lifetime.
//
// Where a case asserts that nothing was exported, the suite clears what the
// client got, triggers activity and counts at once; this port waits instead
// until a witness subscribed at trace got the export of that very activity,
// then pings the client, so an export wrongly sent would have had the time
// to arrive (noExport).

const otlpTraceLogs = "ahp-otlp://logs/trace"

// otlpExport is the params of an otlp/exportLogs notification, decoded as
// far as these tests read it.
type otlpExport struct {
	Channel string `json:"channel"`
	Payload struct {
		ResourceLogs []struct {
			ScopeLogs []struct {
				LogRecords []otlpRecord `json:"logRecords"`
			} `json:"scopeLogs"`
		} `json:"resourceLogs"`
	} `json:"payload"`
}

type otlpRecord struct {
	SeverityNumber int `json:"severityNumber"`
	Body           struct {
		StringValue string `json:"stringValue"`
	} `json:"body"`
	Attributes []struct {
		Key   string `json:"key"`
		Value struct {
			StringValue string `json:"stringValue"`
			IntValue    string `json:"intValue"`
		} `json:"value"`
	} `json:"attributes"`
}

// attr is the value of the record's attribute key, as a string.
func (r otlpRecord) attr(key string) string {
	for _, a := range r.Attributes {
		if a.Key == key {
			return a.Value.StringValue + a.Value.IntValue
		}
	}
	return ""
}

func (e otlpExport) records() []otlpRecord {
	var out []otlpRecord
	for _, rl := range e.Payload.ResourceLogs {
		for _, sl := range rl.ScopeLogs {
			out = append(out, sl.LogRecords...)
		}
	}
	return out
}

func decodeExport(t *testing.T, params json.RawMessage) otlpExport {
	t.Helper()
	var e otlpExport
	if err := json.Unmarshal(params, &e); err != nil {
		t.Fatalf("otlp/exportLogs params %s: %v", params, err)
	}
	return e
}

// exportsAfter are the otlp/exportLogs notifications c got after its first
// n frames (the suite's receivedNotifications after clearReceived).
func exportsAfter(c *ahptest.Client, n int) []ahptest.Frame {
	var out []ahptest.Frame
	for _, f := range c.Frames()[n:] {
		if f.Method == "otlp/exportLogs" {
			out = append(out, f)
		}
	}
	return out
}

// awaitExport waits for an export after c's first n frames, on channel (""
// any), holding a record match accepts (nil: any export).
func awaitExport(t *testing.T, c *ahptest.Client, n int, channel string, match func(otlpRecord) bool) otlpExport {
	t.Helper()
	f := c.AwaitFrame("an otlp/exportLogs on "+channel, n, func(f ahptest.Frame) bool {
		if f.Method != "otlp/exportLogs" {
			return false
		}
		var e otlpExport
		if json.Unmarshal(f.Params, &e) != nil || (channel != "" && e.Channel != channel) {
			return false
		}
		return match == nil || slices.ContainsFunc(e.records(), match)
	})
	return decodeExport(t, f.Params)
}

// triggerActivity is the suite's triggerServerActivity: a createSession of
// a provider that does not exist, refused (and so logged at info), then a
// ping.
func triggerActivity(c *ahptest.Client, marker string) {
	_, _ = c.Call("createSession", map[string]any{"channel": "missing-provider:/" + marker, "provider": "missing-provider"})
	c.MustCall("ping", map[string]any{"channel": ahp.RootURI})
}

// refusedCreate is the record of triggerActivity's refused createSession.
func refusedCreate(r otlpRecord) bool {
	return r.Body.StringValue == "request failed" && r.attr("method") == "createSession"
}

// subscribeLogs subscribes c to the log channel ch, which answers {} (a
// stateless channel has no snapshot, and a URI naming no level is
// acknowledged all the same), and returns how many frames c had then.
func subscribeLogs(t *testing.T, c *ahptest.Client, ch string) int {
	t.Helper()
	sameWire(t, "subscribe "+ch, c.MustCall("subscribe", map[string]any{"channel": ch}), map[string]any{})
	return len(c.Frames())
}

// tracing is a connection initialized as clientID (with subs) and
// subscribed at trace, and how many frames it had then.
func (v *vscodeEnv) tracing(clientID string, subs ...string) (*ahptest.Client, int) {
	c := v.fresh()
	c.Initialize(clientID, subs...)
	return c, subscribeLogs(v.t, c, otlpTraceLogs)
}

// wantLogsTelemetry initializes c as clientID (with subs) and checks that
// the result's telemetry advertises the logs channel template alone.
func wantLogsTelemetry(t *testing.T, c *ahptest.Client, clientID string, subs ...string) {
	t.Helper()
	res := decode[map[string]json.RawMessage](t, c.Initialize(clientID, subs...))
	sameWire(t, "telemetry", res["telemetry"], map[string]any{"logs": "ahp-otlp://logs/{level}"})
}

// otlpGrace is how long noExport gives an export wrongly sent to
// arrive once the witness got its own: ten times the hub's linger (each
// subscription batches for otlp.DefaultLinger on its own timer, so a
// second subscriber's export of the same record trails the witness's).
const otlpGrace = 10 * otlp.DefaultLinger

// noExport triggers activity on c (marked marker) and fails when c got an
// export after its first n frames: once a witness subscribed at trace got
// the export of the activity, c answers a ping and has otlpGrace more for
// one to arrive.
func (v *vscodeEnv) noExport(t *testing.T, c *ahptest.Client, n int, marker string) {
	t.Helper()
	w, wn := v.tracing(marker + "-witness")
	defer w.Close()
	triggerActivity(c, marker)
	awaitExport(t, w, wn, otlpTraceLogs, refusedCreate)
	c.MustCall("ping", map[string]any{"channel": ahp.RootURI})
	for deadline := time.Now().Add(otlpGrace); ; time.Sleep(5 * time.Millisecond) {
		if got := exportsAfter(c, n); len(got) != 0 {
			t.Fatalf("%d otlp/exportLogs arrived, want none; the first: %s", len(got), got[0].Params)
		}
		if time.Now().After(deadline) {
			return
		}
	}
}

var otlpContractCases = []string{
	"subscribed client receives OTLP log exports from the real server",
	"initialize advertises the OTLP log channel template",
	"initialize ignores an unknown OTLP log level",
	"subscribe acknowledges an unknown OTLP log level without installing it",
	"OTLP log subscriptions route exports on their canonical channel",
	"OTLP log delivery resumes after unsubscribe and resubscribe",
	"unsubscribing from OTLP logs stops delivery",
	"info-level OTLP subscriptions receive server activity",
	"fatal-level OTLP subscriptions filter ordinary server activity",
	"OTLP logs fan out to every subscribed client",
	"initialize installs an OTLP log subscription without a snapshot",
	"reconnect restores an OTLP log subscription",
}

// TestVSCodeProtocolContractsOTLP ports the twelve OTLP log cases of
// protocolContractsSuite (the rest are in TestVSCodeProtocolContracts).
func TestVSCodeProtocolContractsOTLP(t *testing.T) {
	t.Parallel()
	v := newVSCodeEnv(t)
	seen := map[string]bool{}
	defer checkPendingNames(t, seen, otlpContractCases)

	conformance(t, v, seen, "subscribed client receives OTLP log exports from the real server", func(t *testing.T, v *vscodeEnv) {
		c, n := v.tracing("otlp-logs-script", ahp.RootURI)
		defer c.Close()
		triggerActivity(c, "otlp")
		e := awaitExport(t, c, n, otlpTraceLogs, nil)
		if len(e.Payload.ResourceLogs) == 0 || len(e.records()) == 0 {
			t.Fatalf("an export with no records: %+v", e)
		}
	})
	conformance(t, v, seen, "initialize advertises the OTLP log channel template", func(t *testing.T, v *vscodeEnv) {
		c := v.fresh()
		defer c.Close()
		wantLogsTelemetry(t, c, "otlp-capability-script")
	})
	conformance(t, v, seen, "initialize ignores an unknown OTLP log level", func(t *testing.T, v *vscodeEnv) {
		c := v.fresh()
		defer c.Close()
		res := decode[map[string]json.RawMessage](t, c.Initialize("otlp-invalid-initial-script", "ahp-otlp://logs/verbose"))
		sameWire(t, "snapshots", res["snapshots"], []any{})
		v.noExport(t, c, len(c.Frames()), "otlp-invalid-initial")
	})
	conformance(t, v, seen, "subscribe acknowledges an unknown OTLP log level without installing it", func(t *testing.T, v *vscodeEnv) {
		c := v.initialized("otlp-invalid-subscribe-script")
		defer c.Close()
		v.noExport(t, c, subscribeLogs(t, c, "ahp-otlp://logs/verbose"), "otlp-invalid-subscribe")
	})
	conformance(t, v, seen, "OTLP log subscriptions route exports on their canonical channel", func(t *testing.T, v *vscodeEnv) {
		c, n := v.tracing("otlp-canonical-script")
		defer c.Close()
		triggerActivity(c, "otlp-canonical")
		if e := awaitExport(t, c, n, "", nil); e.Channel != otlpTraceLogs {
			t.Fatalf("exported on %q, want %q", e.Channel, otlpTraceLogs)
		}
	})
	conformance(t, v, seen, "OTLP log delivery resumes after unsubscribe and resubscribe", func(t *testing.T, v *vscodeEnv) {
		c, _ := v.tracing("otlp-resubscribe-script")
		defer c.Close()
		c.Notify("unsubscribe", map[string]any{"channel": otlpTraceLogs})
		c.MustCall("ping", map[string]any{"channel": ahp.RootURI})
		n := subscribeLogs(t, c, otlpTraceLogs)
		triggerActivity(c, "otlp-resubscribe")
		awaitExport(t, c, n, otlpTraceLogs, refusedCreate)
	})
	conformance(t, v, seen, "unsubscribing from OTLP logs stops delivery", func(t *testing.T, v *vscodeEnv) {
		c, _ := v.tracing("otlp-unsubscribe-script")
		defer c.Close()
		c.Notify("unsubscribe", map[string]any{"channel": otlpTraceLogs})
		c.MustCall("ping", map[string]any{"channel": ahp.RootURI})
		v.noExport(t, c, len(c.Frames()), "otlp-unsubscribe")
	})
	conformance(t, v, seen, "info-level OTLP subscriptions receive server activity", func(t *testing.T, v *vscodeEnv) {
		const info = "ahp-otlp://logs/info"
		c := v.initialized("otlp-info-level-script")
		defer c.Close()
		n := subscribeLogs(t, c, info)
		triggerActivity(c, "otlp-info-level")
		awaitExport(t, c, n, info, refusedCreate)
		// And nothing below info: the level is a floor.
		for _, f := range exportsAfter(c, n) {
			for _, r := range decodeExport(t, f.Params).records() {
				if r.SeverityNumber < 9 {
					t.Fatalf("an info subscription got a record of severity %d: %q", r.SeverityNumber, r.Body.StringValue)
				}
			}
		}
	})
	conformance(t, v, seen, "fatal-level OTLP subscriptions filter ordinary server activity", func(t *testing.T, v *vscodeEnv) {
		c := v.initialized("otlp-fatal-level-script")
		defer c.Close()
		v.noExport(t, c, subscribeLogs(t, c, "ahp-otlp://logs/fatal"), "otlp-fatal-level")
	})
	conformance(t, v, seen, "OTLP logs fan out to every subscribed client", func(t *testing.T, v *vscodeEnv) {
		first := v.initialized("otlp-fanout-first-script")
		defer first.Close()
		second := v.initialized("otlp-fanout-second-script")
		defer second.Close()
		n2 := subscribeLogs(t, second, otlpTraceLogs)
		n1 := subscribeLogs(t, first, otlpTraceLogs)
		first.MustCall("ping", map[string]any{"channel": ahp.RootURI})
		second.MustCall("ping", map[string]any{"channel": ahp.RootURI})
		triggerActivity(first, "otlp-fanout")
		awaitExport(t, first, n1, otlpTraceLogs, refusedCreate)
		awaitExport(t, second, n2, otlpTraceLogs, refusedCreate)
	})
	conformance(t, v, seen, "initialize installs an OTLP log subscription without a snapshot", func(t *testing.T, v *vscodeEnv) {
		c := v.fresh()
		defer c.Close()
		res := decode[map[string]json.RawMessage](t, c.Initialize("otlp-initial-script", otlpTraceLogs))
		n := len(c.Frames())
		triggerActivity(c, "otlp-initial")
		e := awaitExport(t, c, n, "", nil)
		sameWire(t, "snapshots", res["snapshots"], []any{})
		if e.Channel != otlpTraceLogs {
			t.Fatalf("exported on %q, want %q", e.Channel, otlpTraceLogs)
		}
	})
	conformance(t, v, seen, "reconnect restores an OTLP log subscription", func(t *testing.T, v *vscodeEnv) {
		const id = "reconnect-otlp-script"
		through, revived := v.afterDrop(id, func(c *ahptest.Client) int64 {
			_, from := c.Subscribe(ahp.RootURI)
			c.MustCall("subscribe", map[string]any{"channel": otlpTraceLogs})
			return from
		})
		defer revived.Close()
		raw, err := reconnect(revived, id, through, otlpTraceLogs)
		if err != nil {
			t.Fatalf("reconnect: %v", err)
		}
		n := len(revived.Frames())
		triggerActivity(v.c, "otlp-reconnect")
		awaitExport(t, revived, n, otlpTraceLogs, nil)
		// Restored, not missing; nothing of it replayed (a stateless
		// channel has no actions).
		r := decodeReconnect(t, raw)
		if len(r.Missing) != 0 {
			t.Fatalf("reconnect answered the log channel missing: %s", raw)
		}
		for _, a := range r.Actions {
			if strings.HasPrefix(a.Channel, "ahp-otlp:") {
				t.Fatalf("reconnect replayed on the log channel: %s", raw)
			}
		}
	})
}

var otlpLifecycleCases = []string{
	"initialize advertises the OTLP logs channel template",
	"subscribe on the OTLP logs channel returns a stateless empty result",
}

// TestVSCodeProtocolLifecycleOTLP ports the two OTLP cases of
// protocolLifecycleSuite (the rest are in TestVSCodeProtocolLifecycle).
func TestVSCodeProtocolLifecycleOTLP(t *testing.T) {
	t.Parallel()
	v := newVSCodeEnv(t)
	seen := map[string]bool{}
	defer checkPendingNames(t, seen, otlpLifecycleCases)
	conformance(t, v, seen, "initialize advertises the OTLP logs channel template", func(t *testing.T, v *vscodeEnv) {
		c := v.fresh()
		defer c.Close()
		wantLogsTelemetry(t, c, "otlp-handshake-script", ahp.RootURI)
	})
	conformance(t, v, seen, "subscribe on the OTLP logs channel returns a stateless empty result", func(t *testing.T, v *vscodeEnv) {
		c, _ := v.tracing("otlp-subscribe-script", ahp.RootURI)
		c.Close()
	})
}

// TestOTLPLogsNeedTheirGrant: the host's logs are read with host:logs
// alone. A token without it is refused -32009 naming the grant, whether it
// subscribes (to any level, or none), lists the channel in
// initialSubscriptions, or restores it by reconnect (answered missing); its
// connection is kept. A token holding host:logs, and nothing else, gets the
// exports.
func TestOTLPLogsNeedTheirGrant(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *daemon.Config) {
		c.Tokens = []daemon.TokenConfig{
			{Token: "reader-token", Principal: "user:reader", Grants: []string{"session:read", "session:write", "host:diagnose"}},
			{Token: "logs-token", Principal: "user:logs", Grants: []string{"host:logs"}},
		}
	})
	reader := ahptest.Dial(t, e.d.URL(), "reader-token")
	reader.Initialize("otlp-reader", ahp.RootURI)
	for _, ch := range []string{otlpTraceLogs, "ahp-otlp://logs/error", "ahp-otlp://logs/verbose"} {
		_, err := reader.Call("subscribe", map[string]any{"channel": ch})
		wantCode(t, err, ahp.CodePermissionDenied, "host:logs")
		var data struct {
			Grant string `json:"grant"`
		}
		if jerr := json.Unmarshal(err.Data, &data); jerr != nil || data.Grant != "host:logs" {
			t.Fatalf("subscribe %s refused with data %s, want the grant named", ch, err.Data)
		}
	}
	reader.MustCall("ping", map[string]any{"channel": ahp.RootURI}) // the connection stays

	initial := ahptest.Dial(t, e.d.URL(), "reader-token")
	_, err := initial.Call("initialize", map[string]any{"channel": ahp.RootURI, "protocolVersions": []string{"1.0.0"},
		"clientId": "otlp-reader-initial", "initialSubscriptions": []string{otlpTraceLogs}})
	wantCode(t, err, ahp.CodePermissionDenied, "host:logs")

	revived := ahptest.Dial(t, e.d.URL(), "reader-token")
	raw, rerr := reconnect(revived, "otlp-reader", 0, otlpTraceLogs)
	if rerr != nil {
		t.Fatalf("reconnect: %v", rerr)
	}
	if r := decodeReconnect(t, raw); !slices.Equal(r.Missing, []string{otlpTraceLogs}) {
		t.Fatalf("a reconnect without host:logs restored the log channel: %s", raw)
	}

	logs := ahptest.Dial(t, e.d.URL(), "logs-token")
	logs.Initialize("otlp-logs")
	n := subscribeLogs(t, logs, otlpTraceLogs)
	triggerActivity(reader, "otlp-grant")
	awaitExport(t, logs, n, otlpTraceLogs, refusedCreate)
	if got := e.d.Stats().Logs.Subscribers; got != 1 {
		t.Fatalf("%d log subscriptions, want the logs token's alone", got)
	}
}

// TestOTLPLogSubscriptions: a connection holds one subscription per
// canonical channel (the URI in any case; subscribing again changes
// nothing), its exports go out on the canonical URI, an unsubscribe in any
// case ends it, a URI naming no level installs nothing, and the
// connection's end ends every one it held.
func TestOTLPLogSubscriptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	subscribers := func() int { return e.d.Stats().Logs.Subscribers }
	waitSubscribers := func(want int) {
		t.Helper()
		deadline := time.Now().Add(ahptest.Timeout)
		for subscribers() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%d log subscriptions, want %d", subscribers(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	c := e.client("otlp-lifetime")
	for _, ch := range []string{otlpTraceLogs, "AHP-OTLP://LOGS/TRACE", "ahp-otlp://logs/Trace", "ahp-otlp://logs/info",
		"ahp-otlp://logs/verbose", "ahp-otlp://logs", "ahp-otlp://traces/info", "ahp-otlp://logs/trace/x",
		"ahp-otlp://logs/" + strings.Repeat("trace", 1<<10)} {
		subscribeLogs(t, c, ch)
	}
	if got := subscribers(); got != 2 {
		t.Fatalf("%d log subscriptions after trace (three spellings), info and five URIs naming no level (one of 5 KiB), want 2", got)
	}

	// One trace subscription: the refused createSession is exported once,
	// on the canonical channel.
	n := len(c.Frames())
	triggerActivity(c, "otlp-lifetime")
	awaitExport(t, c, n, otlpTraceLogs, refusedCreate)
	awaitExport(t, c, n, "ahp-otlp://logs/info", refusedCreate)
	c.MustCall("ping", map[string]any{"channel": ahp.RootURI})
	count := map[string]int{}
	for _, f := range exportsAfter(c, n) {
		ex := decodeExport(t, f.Params)
		for _, r := range ex.records() {
			if refusedCreate(r) {
				count[ex.Channel]++
			}
		}
	}
	if want := map[string]int{otlpTraceLogs: 1, "ahp-otlp://logs/info": 1}; !maps.Equal(count, want) {
		t.Fatalf("the refused createSession was exported %v, want %v", count, want)
	}

	c.Notify("unsubscribe", map[string]any{"channel": "Ahp-Otlp://logs/INFO"})
	c.MustCall("ping", map[string]any{"channel": ahp.RootURI})
	waitSubscribers(1)
	c.Close()
	waitSubscribers(0)
}
