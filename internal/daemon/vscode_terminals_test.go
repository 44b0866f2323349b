package daemon_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/google/uuid"
)

// The terminal cases of stateOperationsSuite and the whole of
// terminalResilienceSuite, against real ptys. The terminals run /bin/sh so
// what is typed is the same everywhere; each marker is typed split
// (CWD_"READY") so the echo of the typed line never matches the output.

var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][0-9A-B]`)

// terminalText is the terminal's output as text (the suite's terminalText).
func terminalText(st ahp.TerminalState) string {
	var b strings.Builder
	for _, p := range st.Content {
		if p.Type == ahp.TerminalPartCommand {
			b.WriteString(p.CommandLine + "\n" + p.Output)
		} else {
			b.WriteString(p.Value)
		}
	}
	return ansi.ReplaceAllString(b.String(), "")
}

func terminalState(t *testing.T, c *ahptest.Client, uri string) ahp.TerminalState {
	t.Helper()
	raw, _ := c.Subscribe(uri)
	var st ahp.TerminalState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("terminal state %s: %v", raw, err)
	}
	return st
}

// awaitOutput polls the terminal's state until its output holds marker.
func awaitOutput(t *testing.T, c *ahptest.Client, uri, marker string) string {
	t.Helper()
	deadline := time.Now().Add(ahptest.Timeout)
	for {
		text := terminalText(terminalState(t, c, uri))
		if strings.Contains(text, marker) {
			return text
		}
		if time.Now().After(deadline) {
			t.Fatalf("terminal %s never printed %s; output: %q", uri, marker, text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func newTerminalURI() string { return "agenthost-terminal://e2e/" + uuid.NewString() }

// typeInto sends a line of input to the terminal.
func typeInto(c *ahptest.Client, uri, line string) int64 {
	return c.Dispatch(uri, map[string]any{"type": "terminal/input", "data": line + "\r"})
}

type termsEnv struct {
	*vscodeEnv
	n int
}

func newTermsEnv(t *testing.T) *termsEnv {
	t.Setenv("SHELL", "/bin/sh")
	return &termsEnv{vscodeEnv: newVSCodeEnv(t)}
}

func (e *termsEnv) workspace() string {
	e.t.Helper()
	e.n++
	dir := filepath.Join(e.dir, fmt.Sprintf("ahp-terminal-%d", e.n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	return dir
}

// create opens a client-claimed terminal in dir, as the suites do.
func (e *termsEnv) create(t *testing.T, c *ahptest.Client, clientID, dir string) string {
	t.Helper()
	uri := newTerminalURI()
	c.MustCall("createTerminal", map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": clientID},
		"name": "E2E", "cwd": ahp.FileURI(dir), "cols": 90, "rows": 30})
	t.Cleanup(func() { _, _ = c.Call("disposeTerminal", map[string]any{"channel": uri}) })
	terminalState(t, c, uri)
	return uri
}

// TestVSCodeStateOperationsTerminals ports stateOperationsSuite's 20
// terminal cases, in the suite's order (microsoft/vscode,
// stateOperationsSuite.ts, the newest stored version: index id 57711248623).
// That version speaks the protocol after 1.0: a session's claim names its
// chat, and an exit is the terminal's lifecycle (status exited, exitCode) in
// its state and in the root's list.
func TestVSCodeStateOperationsTerminals(t *testing.T) {
	e := newTermsEnv(t)
	const clientID = "vscode-suite"
	withTerminal := func(t *testing.T) (string, string, string) {
		sess, _, dir := e.workspaceSession("terminal")
		return e.create(t, e.c, clientID, dir), sess, dir
	}
	// sessionClaim is the claim the suite hands a terminal: the session and
	// its default chat, and the turn and tool call when it names them.
	sessionClaim := func(sess, turn, tool string) ahp.TerminalClaim {
		return ahp.TerminalClaim{Kind: "session", Session: sess, Chat: ahp.DefaultChatURI(sess), TurnID: turn, ToolCallID: tool}
	}
	clientClaim := ahp.TerminalClaim{Kind: "client", ClientID: clientID}
	// claimed hands the terminal to claim and checks its state holds the
	// claim whole.
	claimed := func(t *testing.T, uri string, claim ahp.TerminalClaim) {
		t.Helper()
		e.dispatchOK(uri, map[string]any{"type": "terminal/claimed", "claim": claim})
		if st := terminalState(t, e.c, uri); st.Claim != claim {
			t.Fatalf("claim %+v, want %+v", st.Claim, claim)
		}
	}
	// awaitStreamed waits for the terminal/data on uri after the first seen
	// envelopes to print what re matches.
	awaitStreamed := func(t *testing.T, uri string, seen int, re *regexp.Regexp) {
		t.Helper()
		for deadline := time.Now().Add(ahptest.Timeout); !streamed(e.c.Envelopes(), uri, seen, re); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no terminal/data on %s matching %s", uri, re)
			}
		}
	}
	// awaitExited types exit and returns the terminal/exited the host says.
	awaitExited := func(t *testing.T, uri string) ahp.TerminalExited {
		t.Helper()
		typeInto(e.c, uri, "exit")
		env := e.c.AwaitEnvelope("terminal/exited of "+uri, func(env ahptest.Envelope) bool {
			return env.Channel == uri && env.Type() == ahp.ActionTerminalExited
		})
		var a ahp.TerminalExited
		if err := json.Unmarshal(env.Action, &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	conformanceCase(t, "createTerminal exposes requested dimensions cwd and claim", func(t *testing.T) {
		uri, _, dir := withTerminal(t)
		st := terminalState(t, e.c, uri)
		if st.Cwd != dir || st.Cols == nil || *st.Cols != 90 || st.Rows == nil || *st.Rows != 30 || st.Claim != clientClaim {
			t.Fatalf("state cwd %q %vx%v claim %+v", st.Cwd, st.Cols, st.Rows, st.Claim)
		}
	})
	conformanceCase(t, "terminal resize updates terminal dimensions", func(t *testing.T) {
		uri, _, _ := withTerminal(t)
		e.dispatchOK(uri, map[string]any{"type": "terminal/resized", "cols": 120, "rows": 40})
		if st := terminalState(t, e.c, uri); *st.Cols != 120 || *st.Rows != 40 {
			t.Fatalf("size %dx%d", *st.Cols, *st.Rows)
		}
	})
	conformanceCase(t, "successive terminal resizes retain the latest dimensions", func(t *testing.T) {
		uri, _, _ := withTerminal(t)
		e.dispatchOK(uri, map[string]any{"type": "terminal/resized", "cols": 100, "rows": 35})
		e.dispatchOK(uri, map[string]any{"type": "terminal/resized", "cols": 140, "rows": 50})
		if st := terminalState(t, e.c, uri); *st.Cols != 140 || *st.Rows != 50 {
			t.Fatalf("size %dx%d, want 140x50", *st.Cols, *st.Rows)
		}
	})
	conformanceCase(t, "terminal claim transfer preserves dimensions and cwd", func(t *testing.T) {
		uri, sess, dir := withTerminal(t)
		e.dispatchOK(uri, map[string]any{"type": "terminal/claimed", "claim": sessionClaim(sess, "", "")})
		if st := terminalState(t, e.c, uri); st.Cwd != dir || *st.Cols != 90 || *st.Rows != 30 {
			t.Fatalf("after the claim: cwd %q, size %dx%d", st.Cwd, *st.Cols, *st.Rows)
		}
	})
	conformanceCase(t, "terminal title change is broadcast", func(t *testing.T) {
		uri, _, _ := withTerminal(t)
		e.c.Dispatch(uri, map[string]any{"type": "terminal/titleChanged", "title": "Renamed Terminal"})
		e.c.AwaitEnvelope("terminal/titleChanged", func(env ahptest.Envelope) bool {
			var title string
			_ = env.Field("title", &title)
			return env.Channel == uri && env.Type() == "terminal/titleChanged" && title == "Renamed Terminal" && env.RejectionReason == ""
		})
	})
	conformanceCase(t, "terminal claim can transfer from the client to the session", func(t *testing.T) {
		uri, sess, _ := withTerminal(t)
		claimed(t, uri, sessionClaim(sess, "", ""))
	})
	conformanceCase(t, "terminal claim can transfer back to the client", func(t *testing.T) {
		uri, sess, _ := withTerminal(t)
		e.dispatchOK(uri, map[string]any{"type": "terminal/claimed", "claim": sessionClaim(sess, "", "")})
		claimed(t, uri, clientClaim)
	})
	conformanceCase(t, "session terminal claims preserve turn and tool identifiers", func(t *testing.T) {
		uri, sess, _ := withTerminal(t)
		claimed(t, uri, sessionClaim(sess, "turn-claim", "tool-claim"))
	})
	conformanceCase(t, "terminal input reaches the shell and produces output", func(t *testing.T) {
		uri, _, _ := withTerminal(t)
		seen := len(e.c.Envelopes())
		typeInto(e.c, uri, "echo $((40+2))")
		fortyTwo := regexp.MustCompile(`(^|\D)42(\D|$)`)
		awaitStreamed(t, uri, seen, fortyTwo)
		if out := terminalText(terminalState(t, e.c, uri)); !fortyTwo.MatchString(out) {
			t.Fatalf("state output %q", out)
		}
	})
	conformanceCase(t, "terminal input preserves Unicode output", func(t *testing.T) {
		// The suite has node print SNOWMAN_ and U+2603; printf prints the
		// same bytes from their octal escapes, so the typed line's echo
		// never holds the marker.
		uri, _, _ := withTerminal(t)
		seen := len(e.c.Envelopes())
		typeInto(e.c, uri, `printf 'SNOWMAN_\342\230\203\n'`)
		snowman := regexp.MustCompile("SNOWMAN_\u2603")
		awaitStreamed(t, uri, seen, snowman)
		if out := terminalText(terminalState(t, e.c, uri)); !snowman.MatchString(out) {
			t.Fatalf("state output %q", out)
		}
	})
	conformanceCase(t, "clearing a terminal drops the scrollback the client already saw", func(t *testing.T) {
		uri, _, _ := withTerminal(t)
		seen := len(e.c.Envelopes())
		typeInto(e.c, uri, `echo CLEAR_"MARKER"`)
		awaitStreamed(t, uri, seen, regexp.MustCompile("CLEAR_MARKER"))
		before := terminalText(terminalState(t, e.c, uri))
		e.dispatchOK(uri, map[string]any{"type": "terminal/cleared"})
		// The shell may print after the clear (its prompt); what the
		// client had already seen must be gone.
		after := terminalText(terminalState(t, e.c, uri))
		if !strings.Contains(before, "CLEAR_MARKER") || strings.Contains(after, "CLEAR_MARKER") {
			t.Fatalf("before the clear %q, after it %q", before, after)
		}
	})
	conformanceCase(t, "clearing a terminal preserves dimensions and claim", func(t *testing.T) {
		uri, _, _ := withTerminal(t)
		e.dispatchOK(uri, map[string]any{"type": "terminal/resized", "cols": 111, "rows": 37})
		e.dispatchOK(uri, map[string]any{"type": "terminal/cleared"})
		if st := terminalState(t, e.c, uri); *st.Cols != 111 || *st.Rows != 37 || st.Claim != clientClaim {
			t.Fatalf("after the clear: %dx%d, claim %+v", *st.Cols, *st.Rows, st.Claim)
		}
	})
	conformanceCase(t, "a terminal whose shell exits reports its exit code", func(t *testing.T) {
		uri, _, _ := withTerminal(t)
		exited := awaitExited(t, uri)
		l := terminalState(t, e.c, uri).Lifecycle
		if exited.ExitCode == nil || l == nil || l.Status != ahp.TerminalStatusExited || l.ExitCode == nil || *l.ExitCode != *exited.ExitCode {
			t.Fatalf("terminal/exited %+v, state lifecycle %+v", exited, l)
		}
	})
	conformanceCase(t, "root state tracks terminals as they appear and disappear", func(t *testing.T) {
		_, _, dir := withTerminal(t)
		e.c.Subscribe(ahp.RootURI)
		observed := newTerminalURI()
		e.c.MustCall("createTerminal", map[string]any{"channel": observed, "claim": map[string]any{"kind": "client", "clientId": clientID},
			"name": "E2E terminal-root-observed", "cwd": ahp.FileURI(dir), "cols": 90, "rows": 30})
		disposed := false
		t.Cleanup(func() {
			if !disposed {
				_, _ = e.c.Call("disposeTerminal", map[string]any{"channel": observed})
			}
		})
		added := awaitTerminalsChanged(t, e.c, 0, "listing "+observed, func(infos []ahp.TerminalInfo) bool { return infoOf(infos, observed) != nil })
		e.c.MustCall("disposeTerminal", map[string]any{"channel": observed})
		disposed = true
		awaitTerminalsChanged(t, e.c, added, "without "+observed, func(infos []ahp.TerminalInfo) bool { return infoOf(infos, observed) == nil })
	})
	conformanceCase(t, "root terminal metadata reflects title changes", func(t *testing.T) {
		uri, _, _ := withTerminal(t)
		from := rootSeq(t, e.c)
		e.c.Dispatch(uri, map[string]any{"type": "terminal/titleChanged", "title": "Root Metadata Title"})
		awaitTerminalsChanged(t, e.c, from, "the new title", func(infos []ahp.TerminalInfo) bool {
			i := infoOf(infos, uri)
			return i != nil && i.Title == "Root Metadata Title"
		})
	})
	conformanceCase(t, "root terminal metadata reflects claim transfers", func(t *testing.T) {
		uri, sess, _ := withTerminal(t)
		from := rootSeq(t, e.c)
		claim := sessionClaim(sess, "turn-root-claim", "")
		e.c.Dispatch(uri, map[string]any{"type": "terminal/claimed", "claim": claim})
		awaitTerminalsChanged(t, e.c, from, "the session's claim", func(infos []ahp.TerminalInfo) bool {
			i := infoOf(infos, uri)
			return i != nil && i.Claim != nil && i.Claim.Kind == "session" && i.Claim.Session == claim.Session && i.Claim.TurnID == claim.TurnID
		})
	})
	conformanceCase(t, "an exited terminal remains discoverable with its exit code until disposal", func(t *testing.T) {
		uri, _, _ := withTerminal(t)
		exited := awaitExited(t, uri)
		i := infoOf(rootTerminals(t, e.c), uri)
		if i == nil || exited.ExitCode == nil || i.Lifecycle == nil || i.Lifecycle.Status != ahp.TerminalStatusExited ||
			i.Lifecycle.ExitCode == nil || *i.Lifecycle.ExitCode != *exited.ExitCode {
			t.Fatalf("terminal/exited %+v; root lists %+v", exited, i)
		}
	})
	conformanceCase(t, "disposeTerminal removes the terminal from root state", func(t *testing.T) {
		_, _, dir := e.workspaceSession("terminal")
		uri := newTerminalURI()
		e.c.MustCall("createTerminal", map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": clientID}, "cwd": ahp.FileURI(dir)})
		if infoOf(rootTerminals(t, e.c), uri) == nil {
			t.Fatal("the new terminal is not in root state")
		}
		e.c.MustCall("disposeTerminal", map[string]any{"channel": uri})
		if infoOf(rootTerminals(t, e.c), uri) != nil {
			t.Fatal("the disposed terminal is still in root state")
		}
	})
	conformanceCase(t, "creating a duplicate terminal resource is rejected", func(t *testing.T) {
		uri, _, _ := withTerminal(t)
		if _, err := e.c.Call("createTerminal", map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": clientID}}); err == nil {
			t.Fatal("a second terminal took the same URI")
		}
	})
	conformanceCase(t, "subscribing to an unknown terminal is rejected", func(t *testing.T) {
		e.workspaceSession("terminal-unknown")
		if _, err := e.c.Call("subscribe", map[string]any{"channel": newTerminalURI()}); err == nil {
			t.Fatal("an unknown terminal was subscribed")
		}
	})
}

// infoOf is the root's entry of terminal uri, nil when root lists none.
func infoOf(infos []ahp.TerminalInfo, uri string) *ahp.TerminalInfo {
	for i := range infos {
		if infos[i].Resource == uri {
			return &infos[i]
		}
	}
	return nil
}

// rootSeq subscribes c to root and returns the serverSeq its snapshot was
// taken at: every root action after it carries a greater one.
func rootSeq(t *testing.T, c *ahptest.Client) int64 {
	t.Helper()
	_, seq := c.Subscribe(ahp.RootURI)
	return seq
}

// awaitTerminalsChanged waits for a root/terminalsChanged after serverSeq
// from whose list match holds, and returns its serverSeq.
func awaitTerminalsChanged(t *testing.T, c *ahptest.Client, from int64, what string, match func([]ahp.TerminalInfo) bool) int64 {
	t.Helper()
	env := c.AwaitEnvelope("root/terminalsChanged "+what, func(env ahptest.Envelope) bool {
		if env.Channel != ahp.RootURI || env.Type() != ahp.ActionRootTerminalsChanged || env.ServerSeq <= from {
			return false
		}
		var infos []ahp.TerminalInfo
		return env.Field("terminals", &infos) == nil && match(infos)
	})
	return env.ServerSeq
}

// streamed reports whether the terminal/data envelopes on uri after the
// first seen ones, joined, match re.
func streamed(envs []ahptest.Envelope, uri string, seen int, re *regexp.Regexp) bool {
	var b strings.Builder
	for i, env := range envs {
		if i < seen || env.Channel != uri || env.Type() != "terminal/data" {
			continue
		}
		var d string
		_ = env.Field("data", &d)
		b.WriteString(d)
	}
	return re.MatchString(ansi.ReplaceAllString(b.String(), ""))
}

// rootTerminals is the root's list of terminals, read from a fresh
// subscribe's snapshot.
func rootTerminals(t *testing.T, c *ahptest.Client) []ahp.TerminalInfo {
	t.Helper()
	raw, _ := c.Subscribe(ahp.RootURI)
	var root ahp.RootState
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	return root.Terminals
}

// TestVSCodeTerminalResilience ports terminalResilienceSuite's 6 cases
// (microsoft/vscode 0334cc07, the newest of the three stored versions: it
// makes its folders with createTestDirectory; 8228e9f1 before it has the
// same cases, 70935341652 the older UTF-8 arguments case).
func TestVSCodeTerminalResilience(t *testing.T) {
	e := newTermsEnv(t)
	const clientID = "vscode-suite"
	conformanceCase(t, "regression coverage: a client-owned terminal launches in its requested working directory", func(t *testing.T) {
		dir := e.workspace()
		uri := e.create(t, e.c, clientID, dir)
		typeInto(e.c, uri, `pwd -P > cwd.txt; echo CWD_"READY"`)
		awaitOutput(t, e.c, uri, "CWD_READY")
		got, _ := os.Stat(strings.TrimSpace(readText(t, filepath.Join(dir, "cwd.txt"))))
		want, _ := os.Stat(dir)
		if got == nil || !os.SameFile(got, want) {
			t.Fatalf("ran in %q, want %s", readText(t, filepath.Join(dir, "cwd.txt")), dir)
		}
	})
	conformanceCase(t, "regression coverage: terminal input preserves UTF-8 bytes for a running child process", func(t *testing.T) {
		dir := e.workspace()
		uri := e.create(t, e.c, clientID, dir)
		typeInto(e.c, uri, `echo INPUT_"READY"; read line; printf %s "$line" > unicode.txt; echo UNICODE_"DONE"`)
		awaitOutput(t, e.c, uri, "INPUT_READY")
		typeInto(e.c, uri, "caf\u00e9")
		awaitOutput(t, e.c, uri, "UNICODE_DONE")
		if got := readText(t, filepath.Join(dir, "unicode.txt")); got != "caf\u00e9" {
			t.Fatalf("the child read %q", got)
		}
	})
	conformanceCase(t, "regression coverage: terminal resizing reaches the real child process", func(t *testing.T) {
		uri := e.create(t, e.c, clientID, e.workspace())
		e.dispatchOK(uri, map[string]any{"type": "terminal/resized", "cols": 73, "rows": 19})
		if st := terminalState(t, e.c, uri); *st.Cols != 73 || *st.Rows != 19 {
			t.Fatalf("size %dx%d", *st.Cols, *st.Rows)
		}
		typeInto(e.c, uri, `set -- $(stty size); echo SIZE_"$2"x"$1"`)
		awaitOutput(t, e.c, uri, "SIZE_73x19")
	})
	conformanceCase(t, "regression coverage: terminal scrollback preserves a large fragmented process output", func(t *testing.T) {
		uri := e.create(t, e.c, clientID, e.workspace())
		typeInto(e.c, uri, `head -c 40000 /dev/zero | tr '\0' x; echo LONG_"DONE"`)
		text := awaitOutput(t, e.c, uri, "LONG_DONE")
		run := 0
		for _, m := range regexp.MustCompile(`x{20,}`).FindAllString(text, -1) {
			run += len(m)
		}
		if run != 40000 {
			t.Fatalf("%d x's in runs, want 40000", run)
		}
	})
	conformanceCase(t, "regression coverage: terminal input and output stay isolated between two claimed processes", func(t *testing.T) {
		d1, d2 := e.workspace(), e.workspace()
		first, second := e.create(t, e.c, clientID, d1), e.create(t, e.c, clientID, d2)
		typeInto(e.c, first, `echo first > owner.txt; echo FIRST_"DONE"`)
		awaitOutput(t, e.c, first, "FIRST_DONE")
		if exists(filepath.Join(d2, "owner.txt")) || strings.Contains(terminalText(terminalState(t, e.c, second)), "FIRST_DONE") {
			t.Fatal("the first terminal's command reached the second")
		}
		typeInto(e.c, second, `echo second > owner.txt; echo SECOND_"DONE"`)
		awaitOutput(t, e.c, second, "SECOND_DONE")
		if a, b := readText(t, filepath.Join(d1, "owner.txt")), readText(t, filepath.Join(d2, "owner.txt")); a != "first\n" || b != "second\n" ||
			strings.Contains(terminalText(terminalState(t, e.c, first)), "SECOND_DONE") {
			t.Fatalf("owner files %q %q", a, b)
		}
	})
	conformanceCase(t, "regression coverage: terminal process output remains readable after an unsubscribed interval", func(t *testing.T) {
		dir := e.workspace()
		uri := e.create(t, e.c, clientID, dir)
		typeInto(e.c, uri, `echo WAIT_"READY"; while [ ! -e trigger.txt ]; do sleep 0.05; done; echo done > witness.txt; echo LATER_"OUTPUT"`)
		awaitOutput(t, e.c, uri, "WAIT_READY")
		e.c.Notify("unsubscribe", map[string]any{"channel": uri})
		e.c.MustCall("listSessions", map[string]any{"channel": ahp.RootURI})
		writeFile(t, filepath.Join(dir, "trigger.txt"), "after")
		deadline := time.Now().Add(ahptest.Timeout)
		for !exists(filepath.Join(dir, "witness.txt")) {
			if time.Now().After(deadline) {
				t.Fatal("the command never saw the trigger")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if text := awaitOutput(t, e.c, uri, "LATER_OUTPUT"); !strings.Contains(text, "WAIT_READY") {
			t.Fatalf("the output before the interval is gone: %q", text)
		}
	})
}
