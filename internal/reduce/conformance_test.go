package reduce

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/sourcegraph/jsonrpc2"
)

// The conformance fixtures are copied into testdata/conformance (see
// testdata/conformance/README.md). They are the upstream 0.8
// fixtures; where 1.0 changed a behaviour, the tables below say so.

// deviation names top-level state keys whose 0.8 expectation differs from
// 1.0; they are removed from both sides before comparing. The rest of the
// fixture must still match, and the keys must really differ (a deviation
// that is no longer needed fails the test).
type deviation struct {
	keys   []string
	reason string
}

const mockClock = "the 0.8 fixtures stamp modifiedAt from a mocked clock (9999 ms); 1.0 reducers derive it from " +
	"action data: startedAt on chat/turnStarted, startedAt+duration when a turn ends, unchanged otherwise " +
	"(AHP.md §3, 0.9.0; TestModifiedAtComesFromActionData)"

const terminalLifecycle = "terminal/exited sets 0.8's exitCode and, beside it, the later protocol's lifecycle " +
	"{status: exited, exitCode} that VS Code's host sends and its conformance suite reads (TestTerminalReducer)"

var reducerDeviations = map[string]deviation{
	// The 0.8 fixture's chat/error carries a top-level error and the turn
	// gets an error field; 1.0 appends an error part and Turn has no error
	// field. The turn is compared by its own 1.0 test.
	"016-session-error-finalizes-turn-with-error.json": {[]string{"turns"},
		"0.8 chat/error sets Turn.error; 1.0 appends an error part instead (AHP-1.0.md §2; TestChatErrorAppendsErrorPartAndEndsTurn)"},
	"004-session-creationfailed.json": {[]string{"lifecycle"},
		"0.8 lifecycle \"creationFailed\" is \"failed\" since 0.9 (AHP.md §3; TestCreationFailedSetsLifecycleFailed)"},
	"081-terminal-exited.json":                                                     {[]string{"lifecycle"}, terminalLifecycle},
	"083-terminal-full-lifecycle.json":                                             {[]string{"lifecycle"}, terminalLifecycle},
	"005-session-turnstarted.json":                                                 {[]string{"modifiedAt"}, mockClock},
	"006-turnstarted-with-queuedmessageid-removes-from-queuedmessages.json":        {[]string{"modifiedAt"}, mockClock},
	"007-turnstarted-with-queuedmessageid-removes-last-queued-message.json":        {[]string{"modifiedAt"}, mockClock},
	"008-turnstarted-with-queuedmessageid-removes-matching-steering-message.json":  {[]string{"modifiedAt"}, mockClock},
	"009-turnstarted-without-queuedmessageid-does-not-touch-pending-messages.json": {[]string{"modifiedAt"}, mockClock},
	"063-session-truncated-keeps-turns-up-to-turnid.json":                          {[]string{"modifiedAt"}, mockClock},
	"064-session-truncated-keeps-all-when-turnid-is-last.json":                     {[]string{"modifiedAt"}, mockClock},
	"065-session-truncated-keeps-only-first-when-turnid-is-first.json":             {[]string{"modifiedAt"}, mockClock},
	"066-session-truncated-clears-all-when-turnid-omitted.json":                    {[]string{"modifiedAt"}, mockClock},
	"067-session-truncated-drops-active-turn.json":                                 {[]string{"modifiedAt"}, mockClock},
	"068-session-truncated-drops-active-turn-even-when-clearing-all.json":          {[]string{"modifiedAt"}, mockClock},
	"075-turnstarted-clears-isread.json":                                           {[]string{"modifiedAt"}, mockClock},
	"105-session-input-full-draft-and-complete-flow.json":                          {[]string{"modifiedAt"}, mockClock},
	"106-session-input-requested-with-drafts-status.json":                          {[]string{"modifiedAt"}, mockClock},
	"108-session-input-upsert-and-clear-answer.json":                               {[]string{"modifiedAt"}, mockClock},
	"110-session-input-completion-and-truncation-filtering.json":                   {[]string{"modifiedAt"}, mockClock},
	"234-chat-truncated-clears-turns-next-cursor-when-clearing-all.json":           {[]string{"modifiedAt"}, mockClock},
	"235-session-input-completion-records-declined-request-in-turn.json":           {[]string{"modifiedAt"}, mockClock},
	"240-turn-duration-is-clamped-to-zero.json":                                    {[]string{"modifiedAt"}, mockClock},
	"250-turncomplete-force-cancels-auth-required-tool-call.json":                  {[]string{"modifiedAt"}, mockClock},
}

// fixtureDir finds testdata/conformance/test-cases/<sub> by walking up
// from the working directory.
func fixtureDir(t *testing.T, sub string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		candidate := filepath.Join(dir, "testdata", "conformance", "test-cases", sub)
		if fi, err := os.Stat(candidate); err == nil && fi.IsDir() {
			return candidate
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("conformance fixtures not found: no testdata/conformance/test-cases/%s above the working directory", sub)
		}
		dir = parent
	}
}

func jsonFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// tally counts outcomes per group for the summary line.
type tally struct {
	order  []string
	counts map[string]*[4]int // passed, deviated, skipped, failed
}

func (ty *tally) add(group string, outcome int) {
	if ty.counts == nil {
		ty.counts = map[string]*[4]int{}
	}
	c, ok := ty.counts[group]
	if !ok {
		c = new([4]int)
		ty.counts[group] = c
		ty.order = append(ty.order, group)
	}
	c[outcome]++
}

const (
	outPassed = iota
	outDeviated
	outSkipped
	outFailed
)

func (ty *tally) log(t *testing.T, what string) {
	sort.Strings(ty.order)
	var total [4]int
	for _, g := range ty.order {
		c := ty.counts[g]
		t.Logf("CONFORMANCE %s %-24s passed=%d passed-with-deviation=%d skipped=%d failed=%d", what, g, c[0], c[1], c[2], c[3])
		for i := range total {
			total[i] += c[i]
		}
	}
	t.Logf("CONFORMANCE %s %-24s passed=%d passed-with-deviation=%d skipped=%d failed=%d", what, "total", total[0], total[1], total[2], total[3])
}

type reducerFixture struct {
	Description string            `json:"description"`
	Reducer     string            `json:"reducer"`
	Initial     json.RawMessage   `json:"initial"`
	Actions     []json.RawMessage `json:"actions"`
	Expected    json.RawMessage   `json:"expected"`
}

// TestReducerConformance runs every reducer fixture: decode initial into the
// typed state and check it re-encodes to the same JSON (nulls removed),
// apply the actions, and compare with expected (nulls removed).
func TestReducerConformance(t *testing.T) {
	dir := fixtureDir(t, "reducers")
	names := jsonFiles(t, dir)
	for name := range reducerDeviations {
		if !slices.Contains(names, name) {
			t.Errorf("deviation table names %s, which is not a fixture", name)
		}
	}
	var ty tally
	for _, name := range names {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var fx reducerFixture
		if err := json.Unmarshal(raw, &fx); err != nil {
			t.Errorf("%s: %v", name, err)
			ty.add("unreadable", outFailed)
			continue
		}
		outcome := outPassed
		t.Run(name, func(t *testing.T) {
			defer func() {
				switch {
				case t.Failed():
					outcome = outFailed
				case t.Skipped():
					outcome = outSkipped
				}
			}()
			dev, hasDev := reducerDeviations[name]
			var got []byte
			switch fx.Reducer {
			case "root":
				got = runFixture(t, fx, Root)
			case "session":
				got = runFixture(t, fx, Session)
			case "chat":
				got = runFixture(t, fx, Chat)
			case "terminal":
				got = runFixture(t, fx, Terminal)
			case "changeset":
				got = runFixture(t, fx, Changeset)
			case "annotations":
				got = runFixture(t, fx, Annotations)
			case "resourceWatch":
				got = runFixture(t, fx, ResourceWatch)
			default:
				t.Fatalf("reducer %q has no Go reducer", fx.Reducer)
			}
			if t.Failed() {
				return
			}
			actual, want := normalize(t, got), normalize(t, fx.Expected)
			if hasDev {
				if reflect.DeepEqual(actual, want) {
					t.Fatalf("deviation %v is stale: the fixture passes unchanged", dev.keys)
				}
				for _, k := range dev.keys {
					a, aok := actual.(map[string]any)[k]
					w, wok := want.(map[string]any)[k]
					if aok == wok && reflect.DeepEqual(a, w) {
						t.Errorf("deviation key %q is stale: it matches (%v)", k, a)
					}
					delete(actual.(map[string]any), k)
					delete(want.(map[string]any), k)
				}
				t.Logf("deviation %v: %s", dev.keys, dev.reason)
				outcome = outDeviated
			}
			if !reflect.DeepEqual(actual, want) {
				t.Fatalf("state mismatch\n got: %s\nwant: %s", pretty(actual), pretty(want))
			}
		})
		ty.add(fx.Reducer, outcome)
	}
	ty.log(t, "reducers")
}

// runFixture decodes the initial state, checks its round trip, applies the
// actions and returns the final state's JSON.
func runFixture[S any](t *testing.T, fx reducerFixture, reduce func(*S, ahp.Action)) []byte {
	t.Helper()
	var s S
	if err := json.Unmarshal(fx.Initial, &s); err != nil {
		t.Fatalf("decode initial: %v", err)
	}
	again, err := json.Marshal(&s)
	if err != nil {
		t.Fatalf("encode initial: %v", err)
	}
	if a, w := normalize(t, again), normalize(t, fx.Initial); !reflect.DeepEqual(a, w) {
		t.Fatalf("initial state does not survive a round trip\n got: %s\nwant: %s", pretty(a), pretty(w))
	}
	for i, raw := range fx.Actions {
		a, err := ahp.DecodeAction(raw)
		if err != nil {
			t.Fatalf("decode action %d: %v", i, err)
		}
		reduce(&s, a)
	}
	out, err := json.Marshal(&s)
	if err != nil {
		t.Fatalf("encode final state: %v", err)
	}
	return out
}

// normalize parses JSON with exact numbers and drops null-valued keys.
func normalize(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("parse %s: %v", raw, err)
	}
	return clean(v)
}

func clean(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if e != nil {
				out[k] = clean(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = clean(e)
		}
		return out
	case json.Number:
		// Compare numbers by value: 0 and 0.0 are equal, and 64-bit
		// integers stay exact.
		r, ok := new(big.Rat).SetString(x.String())
		if !ok {
			return x.String()
		}
		return r.RatString()
	}
	return v
}

func pretty(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// roundTripTypes maps a round-trip fixture's wire type to a decoder that
// returns the typed value to re-encode.
var roundTripTypes = map[string]func(json.RawMessage) (any, error){
	"ActionEnvelope":           decodeInto[ahp.ActionEnvelope],
	"StateAction":              func(raw json.RawMessage) (any, error) { return ahp.DecodeAction(raw) },
	"ChatSource":               decodeInto[ahp.ChatSource],
	"JsonRpcMessage":           decodeJSONRPC,
	"ChangesetOperationTarget": decodeInto[ahp.ChangesetOperationTarget],
	"InitializeResult":         decodeInitializeResult,
	"SessionStatus":            decodeInto[ahp.SessionStatus],
	"SessionSummary":           decodeInto[ahp.SessionSummary],
	"PartialSessionSummary":    decodeInto[ahp.PartialSessionSummary],
	"Implementation":           decodeInto[ahp.Implementation],
	"SessionAddedParams":       decodeInto[ahp.SessionAddedParams],
	"Customization":            decodeInto[ahp.Customization],
	"StringOrMarkdown":         decodeInto[ahp.StringOrMarkdown],
	"ChatInputQuestion":        decodeInto[ahp.ChatInputQuestion],
}

// decodeJSONRPC decodes a JSON-RPC message the way internal/rpc reads one
// off the wire (sourcegraph/jsonrpc2): a message with a method is a
// request or, without an id, a notification; the rest is a response.
func decodeJSONRPC(raw json.RawMessage) (any, error) {
	var head struct {
		Method *string `json:"method"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	if head.Method != nil {
		var r jsonrpc2.Request
		err := json.Unmarshal(raw, &r)
		return &r, err
	}
	var r jsonrpc2.Response
	err := json.Unmarshal(raw, &r)
	return &r, err
}

func decodeInto[T any](raw json.RawMessage) (any, error) {
	var v T
	err := json.Unmarshal(raw, &v)
	return &v, err
}

// decodeInitializeResult decodes snapshot states into their typed state, so
// the round trip covers RootState and AgentInfo too.
func decodeInitializeResult(raw json.RawMessage) (any, error) {
	var r ahp.InitializeResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	for i, snap := range r.Snapshots {
		state, _ := snap.State.(json.RawMessage)
		if !ahp.IsRootURI(snap.Resource) || state == nil {
			continue
		}
		var root ahp.RootState
		if err := json.Unmarshal(state, &root); err != nil {
			return nil, fmt.Errorf("snapshot %d: %w", i, err)
		}
		r.Snapshots[i].State = root
	}
	return r, nil
}

type roundTripFixture struct {
	Name              string            `json:"name"`
	Group             string            `json:"group"`
	Type              string            `json:"type"`
	Input             json.RawMessage   `json:"input"`
	AcceptableOutputs []json.RawMessage `json:"acceptableOutputs"`
	NotApplicable     []string          `json:"notApplicable"`
}

// TestRoundTripConformance decodes every round-trip fixture's input as its
// wire type, re-encodes it and compares with acceptableOutputs[0]. Keys must
// match exactly (no null stripping); numbers compare by value.
func TestRoundTripConformance(t *testing.T) {
	dir := fixtureDir(t, "round-trips")
	var ty tally
	for _, name := range jsonFiles(t, dir) {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var fx roundTripFixture
		if err := json.Unmarshal(raw, &fx); err != nil {
			t.Errorf("%s: %v", name, err)
			ty.add("unreadable", outFailed)
			continue
		}
		outcome := outPassed
		t.Run(name, func(t *testing.T) {
			defer func() {
				switch {
				case t.Failed():
					outcome = outFailed
				case t.Skipped():
					outcome = outSkipped
				}
			}()
			if slices.Contains(fx.NotApplicable, "go") {
				t.Fatal("fixture marks the Go client not applicable: a skip here is a failure; say why in this test")
			}
			decode, ok := roundTripTypes[fx.Type]
			if !ok {
				t.Fatalf("wire type %q has no decoder in roundTripTypes", fx.Type)
			}
			if len(fx.AcceptableOutputs) != 1 {
				t.Fatalf("want exactly one acceptable output, have %d", len(fx.AcceptableOutputs))
			}
			v, err := decode(fx.Input)
			if err != nil {
				t.Fatalf("decode %s: %v", fx.Type, err)
			}
			out, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("encode %s: %v", fx.Type, err)
			}
			got, want := normalizeKeepNull(t, out), normalizeKeepNull(t, fx.AcceptableOutputs[0])
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round trip mismatch\n got: %s\nwant: %s", out, fx.AcceptableOutputs[0])
			}
		})
		ty.add(fx.Type, outcome)
	}
	ty.log(t, "round-trips")
}

// normalizeKeepNull is normalize without dropping nulls.
func normalizeKeepNull(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("parse %s: %v", raw, err)
	}
	return cleanNumbers(v)
}

func cleanNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = cleanNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = cleanNumbers(e)
		}
	case json.Number:
		return clean(x)
	}
	return v
}
