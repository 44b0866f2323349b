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

// TestVSCodeStateOperationsTerminals ports stateOperationsSuite's terminal
// cases.
func TestVSCodeStateOperationsTerminals(t *testing.T) {
	e := newTermsEnv(t)
	const clientID = "vscode-suite"
	withTerminal := func(t *testing.T) (string, string, string) {
		sess, _, dir := e.workspaceSession("terminal")
		return e.create(t, e.c, clientID, dir), sess, dir
	}
	t.Run("createTerminal exposes requested dimensions cwd and claim", func(t *testing.T) {
		uri, _, dir := withTerminal(t)
		st := terminalState(t, e.c, uri)
		if st.Cwd != dir || st.Cols == nil || *st.Cols != 90 || st.Rows == nil || *st.Rows != 30 ||
			st.Claim != (ahp.TerminalClaim{Kind: "client", ClientID: clientID}) {
			t.Fatalf("state cwd %q %vx%v claim %+v", st.Cwd, st.Cols, st.Rows, st.Claim)
		}
	})
	t.Run("terminal resize updates terminal dimensions", func(t *testing.T) {
		uri, _, _ := withTerminal(t)
		e.dispatchOK(uri, map[string]any{"type": "terminal/resized", "cols": 120, "rows": 40})
		if st := terminalState(t, e.c, uri); *st.Cols != 120 || *st.Rows != 40 {
			t.Fatalf("size %dx%d", *st.Cols, *st.Rows)
		}
	})
	t.Run("terminal title change is broadcast", func(t *testing.T) {
		uri, _, _ := withTerminal(t)
		e.c.Dispatch(uri, map[string]any{"type": "terminal/titleChanged", "title": "Renamed Terminal"})
		e.c.AwaitEnvelope("terminal/titleChanged", func(env ahptest.Envelope) bool {
			var title string
			_ = env.Field("title", &title)
			return env.Channel == uri && env.Type() == "terminal/titleChanged" && title == "Renamed Terminal" && env.RejectionReason == ""
		})
	})
	t.Run("terminal claim can transfer from the client to the session", func(t *testing.T) {
		uri, sess, _ := withTerminal(t)
		claim := ahp.TerminalClaim{Kind: "session", Session: sess}
		e.dispatchOK(uri, map[string]any{"type": "terminal/claimed", "claim": claim})
		if st := terminalState(t, e.c, uri); st.Claim != claim {
			t.Fatalf("claim %+v", st.Claim)
		}
	})
	t.Run("terminal input reaches the shell and produces output", func(t *testing.T) {
		uri, _, _ := withTerminal(t)
		seen := len(e.c.Envelopes())
		typeInto(e.c, uri, "echo $((40+2))")
		fortyTwo := regexp.MustCompile(`(^|\D)42(\D|$)`)
		for deadline := time.Now().Add(ahptest.Timeout); !streamed(e.c.Envelopes(), uri, seen, fortyTwo); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no terminal/data with 42")
			}
		}
		if out := terminalText(terminalState(t, e.c, uri)); !fortyTwo.MatchString(out) {
			t.Fatalf("state output %q", out)
		}
	})
	t.Run("disposeTerminal removes the terminal from root state", func(t *testing.T) {
		_, _, dir := e.workspaceSession("terminal")
		uri := newTerminalURI()
		e.c.MustCall("createTerminal", map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": clientID}, "cwd": ahp.FileURI(dir)})
		if !rootHasTerminal(t, e.c, uri) {
			t.Fatal("the new terminal is not in root state")
		}
		e.c.MustCall("disposeTerminal", map[string]any{"channel": uri})
		if rootHasTerminal(t, e.c, uri) {
			t.Fatal("the disposed terminal is still in root state")
		}
	})
	t.Run("creating a duplicate terminal resource is rejected", func(t *testing.T) {
		uri, _, _ := withTerminal(t)
		if _, err := e.c.Call("createTerminal", map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": clientID}}); err == nil {
			t.Fatal("a second terminal took the same URI")
		}
	})
	t.Run("subscribing to an unknown terminal is rejected", func(t *testing.T) {
		e.workspaceSession("terminal-unknown")
		if _, err := e.c.Call("subscribe", map[string]any{"channel": newTerminalURI()}); err == nil {
			t.Fatal("an unknown terminal was subscribed")
		}
	})
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

func rootHasTerminal(t *testing.T, c *ahptest.Client, uri string) bool {
	t.Helper()
	raw, _ := c.Subscribe(ahp.RootURI)
	var root ahp.RootState
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	for _, ti := range root.Terminals {
		if ti.Resource == uri {
			return true
		}
	}
	return false
}

// TestVSCodeTerminalResilience ports terminalResilienceSuite.
func TestVSCodeTerminalResilience(t *testing.T) {
	e := newTermsEnv(t)
	const clientID = "vscode-suite"
	t.Run("regression coverage: a client-owned terminal launches in its requested working directory", func(t *testing.T) {
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
	t.Run("regression coverage: terminal input preserves UTF-8 bytes for a running child process", func(t *testing.T) {
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
	t.Run("regression coverage: terminal resizing reaches the real child process", func(t *testing.T) {
		uri := e.create(t, e.c, clientID, e.workspace())
		e.dispatchOK(uri, map[string]any{"type": "terminal/resized", "cols": 73, "rows": 19})
		if st := terminalState(t, e.c, uri); *st.Cols != 73 || *st.Rows != 19 {
			t.Fatalf("size %dx%d", *st.Cols, *st.Rows)
		}
		typeInto(e.c, uri, `set -- $(stty size); echo SIZE_"$2"x"$1"`)
		awaitOutput(t, e.c, uri, "SIZE_73x19")
	})
	t.Run("regression coverage: terminal scrollback preserves a large fragmented process output", func(t *testing.T) {
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
	t.Run("regression coverage: terminal input and output stay isolated between two claimed processes", func(t *testing.T) {
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
	t.Run("regression coverage: terminal process output remains readable after an unsubscribed interval", func(t *testing.T) {
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
