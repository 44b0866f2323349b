package claude

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
)

// The CLI's folder for a working directory: non-alphanumerics (per UTF-16
// unit) become '-'; past 200 it is cut and suffixed with a hash of the path.
// Expected values were computed with the CLI's own function.
func TestProjectSlug(t *testing.T) {
	long := "/home/user/" + strings.Repeat("very-long-directory-name/", 10) + "project"
	tests := []struct{ cwd, want string }{
		{"/tmp/backends/proj1", "-tmp-backends-proj1"},
		{"/home/é x/Ünï😀.d", "-home---x--n----d"},
		{long, "-home-user-very-long-directory-name-very-long-directory-name-very-long-directory-name-very-long-directory-name-very-long-directory-name-very-long-directory-name-very-long-directory-name-very-long-dire-50u9ca"},
	}
	for _, tc := range tests {
		if got := projectSlug(tc.cwd); got != tc.want {
			t.Errorf("projectSlug(%q) = %q, want %q", tc.cwd, got, tc.want)
		}
	}
}

// C-TURN-113, C-TURN-114, C-TURN-115, C-COMP-07: the read-back follows the
// current branch (through a compaction), folds tool results into their
// calls, keeps a steering message taken at a tool call in its turn, ends a
// turn cancelled at [Request interrupted by user] and names each turn's
// last chain entry. C-TURN-18: the result the CLI wrote after a stop to
// the call it was stopped in (turn two) reads back unanswered.
func TestParseTranscript(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "branched.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	turns, err := parseTranscript(f)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		said     string
		state    TurnState
		point    string
		steering []string
		parts    string
	}
	wants := []want{
		{"one", TurnComplete, "a3", []string{"steer me"},
			`[reasoning{"hmm"} tool{tu1 Bash in={"command":"ls"} inv="Run ` + "`ls`" + `" done=true ok=true out="file" err="" past="Ran ` + "`ls`" + `"} markdown{"done one"}]`},
		{"two", TurnCancelled, "i2", nil,
			`[tool{tu2 Bash in={"command":"touch x"} inv="Run ` + "`touch x`" + `" done=false ok=false out="" err="" past=""}]`},
		{"three", TurnComplete, "a6", nil,
			`[notice{"Conversation compacted (manual): 1000 tokens before, 100 after."} markdown{"three answer"}]`},
		{"boom", TurnError, "a7", nil, `[]`},
		{"never answered", TurnCancelled, "u5", nil, `[]`},
	}
	if len(turns) != len(wants) {
		for _, tr := range turns {
			t.Logf("%q %v %s", tr.UserText, tr.State, partsString(tr.Parts))
		}
		t.Fatalf("%d turns, want %d", len(turns), len(wants))
	}
	for i, w := range wants {
		got := turns[i]
		if got.UserText != w.said || got.State != w.state || got.Point != w.point ||
			!slices.Equal(got.Steering, w.steering) || partsString(got.Parts) != w.parts {
			t.Errorf("turn %d:\n got %q %v %s %q %s\nwant %q %v %s %q %s", i,
				got.UserText, got.State, got.Point, got.Steering, partsString(got.Parts),
				w.said, w.state, w.point, w.steering, w.parts)
		}
	}
	if u := turns[0].Usage; u.InputTokens != 30 || u.OutputTokens != 9 || u.CacheRead != 3 || u.Model != "claude-x" {
		t.Errorf("usage of turn one counts each message once: %+v", u)
	}
	if turns[0].PromptID != "u1" || !turns[0].Started.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("turn one prompt %s at %v", turns[0].PromptID, turns[0].Started)
	}
	if turns[3].Error != "API Error: 500 fake server error" {
		t.Errorf("error turn says %q", turns[3].Error)
	}
}

func TestReadTranscriptFindsTheFile(t *testing.T) {
	cfg, cwd := t.TempDir(), t.TempDir()
	data, err := os.ReadFile(filepath.Join("testdata", "branched.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	path := transcriptPath(cfg, "conv-1", cwd)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	c := New(Options{ConfigDir: cfg})
	for _, dir := range []string{cwd, "", "/somewhere/else"} {
		turns, err := c.ReadTranscript("conv-1", dir)
		if err != nil || len(turns) != 5 {
			t.Errorf("read back from cwd %q: %d turns, %v", dir, len(turns), err)
		}
	}
	if _, err := c.ReadTranscript("conv-2", cwd); err == nil {
		t.Error("read back a conversation that is not there")
	}
	if err := c.Delete(t.Context(), "conv-1", nil); err != nil {
		t.Fatal(err)
	}
	if fileExists(path) {
		t.Error("delete left the transcript")
	}
}

func TestOptionsWithSettings(t *testing.T) {
	base := Options{Binary: "/bin/claude", Env: []string{"A=1"}, ExtraArgs: []string{"--x"}}
	got, err := base.with(json.RawMessage(`{"stopEnds":"query","env":["B=2"],"extraArgs":["--y"],"configDir":"/cfg"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Binary != "/bin/claude" || got.StopEnds != StopEndsQuery || got.ConfigDir != "/cfg" ||
		!slices.Equal(got.Env, []string{"A=1", "B=2"}) || !slices.Equal(got.ExtraArgs, []string{"--x", "--y"}) {
		t.Errorf("merged %+v", got)
	}
	if !slices.Equal(base.Env, []string{"A=1"}) {
		t.Errorf("the daemon's options changed: %+v", base)
	}
	if got, _ := base.with(nil); got.StopEnds != StopEndsTurn {
		t.Errorf("default stopEnds %q", got.StopEnds)
	}
	if _, err := base.with(json.RawMessage(`{"stopEnds":"never"}`)); err == nil {
		t.Error("took a bad stopEnds")
	}
	if got := got.configDir(); got != "/cfg" {
		t.Errorf("config dir %q", got)
	}
	home := Options{Env: []string{"HOME=/h", "CLAUDE_CONFIG_DIR="}}
	if got := home.configDir(); got != "/h/.claude" {
		t.Errorf("config dir from HOME %q", got)
	}
}

func TestInfoSaysWhyUnavailable(t *testing.T) {
	c := New(Options{Binary: filepath.Join(t.TempDir(), "no-claude-here")})
	info := c.Info(t.Context())
	if info.Provider != "claude" || info.Unavailable == "" || !strings.Contains(info.Unavailable, "make agents") || len(info.Models) == 0 {
		t.Errorf("info %+v", info)
	}
	if _, err := c.Open(t.Context(), agent.OpenParams{ConversationID: "x", Directories: []string{t.TempDir()}}); err == nil {
		t.Error("opened with no CLI")
	}
}

func TestPromptContent(t *testing.T) {
	if got := promptContent(agent.Turn{Text: "just text"}); got != "just text" {
		t.Errorf("plain turn %v", got)
	}
	got := promptContent(agent.Turn{
		Text: "look", HostContext: "from the source turn",
		Attachments: []agent.Attachment{
			{As: "image", MimeType: "image/png", Data: []byte{1, 2}},
			{As: "inline", Label: "notes", Path: "/n.txt", Text: "hello"},
			{As: "path", Label: "big", Path: "/big.log"},
		},
	})
	b, _ := json.Marshal(got)
	want := `[{"text":"\u003chost-context\u003e\nfrom the source turn\n\u003c/host-context\u003e","type":"text"},` +
		`{"source":{"data":"AQI=","media_type":"image/png","type":"base64"},"type":"image"},` +
		`{"text":"\u003cattachment label=\"notes\" path=\"/n.txt\"\u003e\nhello\n\u003c/attachment\u003e","type":"text"},` +
		`{"text":"\u003cattachment label=\"big\" path=\"/big.log\" /\u003e","type":"text"},` +
		`{"text":"look","type":"text"}]`
	if string(b) != want {
		t.Errorf("content\n got %s\nwant %s", b, want)
	}
	// Read back, only what was said is the turn's text.
	m := wireMessage{Content: b}
	if texts, _ := m.userContent(); !slices.Equal(texts, []string{"look"}) {
		t.Errorf("read back %q", texts)
	}
}

func TestInvocation(t *testing.T) {
	tests := []struct{ name, input, inv, past string }{
		{"Bash", `{"command":"ls -la"}`, "Run `ls -la`", "Ran `ls -la`"},
		{"Read", `{"file_path":"/a.go"}`, "Read /a.go", "Read /a.go"},
		{"Edit", `{"file_path":"/a.go"}`, "Edit /a.go", "Edited /a.go"},
		{"Grep", `{"pattern":"foo"}`, "Search for `foo`", "Searched for `foo`"},
		{"WebFetch", `{"url":"http://x"}`, "Fetch http://x", "Fetched http://x"},
		{"Mystery", `{}`, "Mystery", "Used Mystery"},
	}
	for _, tc := range tests {
		if got := invocation(tc.name, json.RawMessage(tc.input)); got != tc.inv {
			t.Errorf("invocation(%s) = %q, want %q", tc.name, got, tc.inv)
		}
		if got := pastTense(tc.name, json.RawMessage(tc.input)); got != tc.past {
			t.Errorf("pastTense(%s) = %q, want %q", tc.name, got, tc.past)
		}
	}
}

func TestEventQueue(t *testing.T) {
	q := newEventQueue()
	for i := range 100 {
		q.push(agent.Event{Kind: agent.EventText, Text: string(rune('a' + i%26))})
	}
	q.finish()
	q.push(agent.Event{Kind: agent.EventText, Text: "dropped"})
	n := 0
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-q.out:
			if !ok {
				if n != 100 {
					t.Errorf("delivered %d, want 100", n)
				}
				return
			}
			if want := string(rune('a' + n%26)); ev.Text != want {
				t.Fatalf("event %d is %q, want %q", n, ev.Text, want)
			}
			n++
		case <-timeout:
			t.Fatal("queue not drained")
		}
	}
}

func TestEventQueueAbandon(t *testing.T) {
	q := newEventQueue()
	q.push(agent.Event{Kind: agent.EventText})
	q.abandon()
	q.abandon()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-q.out:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("abandoned queue not closed")
		}
	}
}

// A CLI that dies is reported with what it said on stderr, and Events
// closes; nothing more is sent to it.
func TestProcessExitIsReported(t *testing.T) {
	script := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'Error: something broke' >&2\nexit 3\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	c := New(Options{Binary: script})
	conv, err := c.Open(t.Context(), agent.OpenParams{ConversationID: "x", Directories: []string{t.TempDir()}, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	var exited *agent.Event
	deadline := time.After(waitFor)
	for {
		select {
		case ev, ok := <-conv.Events():
			if !ok {
				if exited == nil {
					t.Fatal("events closed with no exit reported")
				}
				if err := conv.Send(t.Context(), agent.Turn{ID: "t1", Text: "hi"}); err == nil {
					t.Error("sent to a dead CLI")
				}
				return
			}
			if ev.Kind == agent.EventExited {
				exited = &ev
				if ev.Err == nil || !strings.Contains(ev.Err.Error(), "something broke") || !strings.Contains(ev.Err.Error(), "exit status 3") {
					t.Errorf("exit reported as %v", ev.Err)
				}
			}
		case <-deadline:
			t.Fatal("no exit reported")
		}
	}
}

// TestEventQueueBackPressure: push never blocks, but once eventHighWater
// events wait undelivered waitRoom holds the stdout reader until the
// reader of Events catches up, and abandon releases it.
func TestEventQueueBackPressure(t *testing.T) {
	q := newEventQueue()
	for i := range eventHighWater + 10 {
		q.push(agent.Event{Kind: agent.EventText, Text: strconv.Itoa(i)})
	}
	released := make(chan struct{})
	go func() { q.waitRoom(); close(released) }()
	select {
	case <-released:
		t.Fatal("waitRoom returned with the queue over its high-water mark")
	case <-time.After(100 * time.Millisecond):
	}
	for i := range 20 {
		if ev := <-q.out; ev.Text != strconv.Itoa(i) {
			t.Fatalf("event %d is %q: out of order", i, ev.Text)
		}
	}
	select {
	case <-released:
	case <-time.After(5 * time.Second):
		t.Fatal("waitRoom did not return once the reader caught up")
	}
	for range eventHighWater + 10 {
		q.push(agent.Event{Kind: agent.EventText})
	}
	done := make(chan struct{})
	go func() { q.waitRoom(); close(done) }()
	q.abandon()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("abandon did not release waitRoom")
	}
}

// TestHostToolsAllowedButThoseToConfirm: the host's tools are allowed
// without asking, but those the host names to confirm (create_session),
// which the CLI then asks about like any other tool.
func TestHostToolsAllowedButThoseToConfirm(t *testing.T) {
	args := hostToolArgs(&agent.HostTools{URL: "http://127.0.0.1:1/ahp-mcp", Token: "t", ServerName: "ahp",
		Names: []string{"rename_chat", "show_page", "create_session"}, Confirm: []string{"create_session"}})
	if len(args) != 4 || args[2] != "--allowedTools" {
		t.Fatalf("args %q", args)
	}
	if args[3] != "mcp__ahp__rename_chat,mcp__ahp__show_page" {
		t.Fatalf("allowed %q; create_session must be left to ask", args[3])
	}
	if hostToolArgs(nil) != nil {
		t.Fatal("no host tools gave arguments")
	}
}
