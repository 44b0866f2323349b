package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/changeset"
	"github.com/ahpd/ahpd/internal/testutil"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

// upgradeBaseline is the build an upgrade starts from until a release tag
// exists before HEAD: main as the wave before v0.1.0 left it.
const upgradeBaseline = "7347fea97ae734ddb2987169131bc4afdaf83eaf"

// upgradeBase names the build TestUpgradeKeepsEverything starts from: the
// newest tag reachable from HEAD's parent, or the pinned baseline.
func upgradeBase(t *testing.T, root string) string {
	t.Helper()
	out, err := gitIn(root, "describe", "--tags", "--abbrev=0", "HEAD^")
	if err == nil && strings.TrimSpace(out) != "" {
		return strings.TrimSpace(out)
	}
	return upgradeBaseline
}

func gitIn(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// buildAt builds cmd/ahpd as it was at rev (extracted with git archive, so
// the checkout is untouched) and returns the binary's path.
func buildAt(t *testing.T, root, rev string) string {
	t.Helper()
	src := t.TempDir()
	archive := exec.Command("git", "archive", "--format=tar", rev)
	archive.Dir = root
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	var errb bytes.Buffer
	archive.Stderr = &errb
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v: %s", rev, err, errb.String())
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("untar %s: %v", rev, err)
	}
	bin := filepath.Join(t.TempDir(), "ahpd-"+rev)
	build := exec.Command("go", "build", "-o", bin, "./cmd/ahpd")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", rev, err, out)
	}
	return bin
}

// upgradeChat is what the test told one chat before the upgrade.
type upgradeChat struct {
	uri   string
	turns []string // turn ids, in order
	texts []string // their messages
	draft string
}

// TestUpgradeKeepsEverything (issue 31): the earlier build (the newest
// release tag before HEAD, or the pinned baseline before the first) runs
// sessions, chats, turns, drafts, a title, annotations and a changeset on
// a data dir and stops; the current build starts on the same dir, and
// every one of them reads back as it was and goes on: a turn runs in the
// old chat, the changeset is undone, the annotation is resolved.
func TestUpgradeKeepsEverything(t *testing.T) {
	testutil.RequireCheck(t, "builds an earlier release with go and git")
	root, err := fakemodel.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if shallow, _ := gitIn(root, "rev-parse", "--is-shallow-repository"); strings.TrimSpace(shallow) == "true" {
		t.Fatal("a shallow clone holds no earlier build to upgrade from: clone with history (git fetch --unshallow)")
	}
	rev := upgradeBase(t, root)
	t.Logf("upgrading from %s", rev)
	old := buildAt(t, root, rev)

	fake := fakemodel.Start(t)
	cfg := writeConfig(t, fmt.Sprintf(`{"agents":{"cofold":{"providers":[{"name":"fake","api":"openai","baseUrl":%q,"apiKey":"test-key","models":[{"id":"fake-model"}]}],"maxRetries":0,"permissionMode":"acceptEdits"}}}`, fake.URL+"/v1"))
	data, work := t.TempDir(), t.TempDir()

	// Before: the earlier build.
	cmd, url := serveBuild(t, old, data, work, "--config", cfg)
	c := ahptest.Dial(t, url, "")
	c.Initialize("before", ahp.RootURI)
	const sess = "ahp-session:/0b9ade00-0000-4000-8000-000000000001"
	c.MustCall("createSession", map[string]any{"channel": sess, "provider": "script"})
	def := upgradeDefaultChat(t, c, sess)
	c.Subscribe(def)
	chats := []*upgradeChat{{uri: def}, {uri: "ahp-chat:/0b9ade00-0000-4000-8000-0000000000c2"}}
	c.MustCall("createChat", map[string]any{"channel": sess, "chat": chats[1].uri})
	c.Subscribe(chats[1].uri)
	for i, ch := range chats {
		for j := range 2 {
			id, text := fmt.Sprintf("u%d-%d", i, j), fmt.Sprintf("before the upgrade %d/%d", i, j)
			upgradeTurn(t, c, ch.uri, id, text)
			ch.turns, ch.texts = append(ch.turns, id), append(ch.texts, text)
		}
		ch.draft = fmt.Sprintf("a draft of chat %d", i)
		c.Dispatch(ch.uri, map[string]any{"type": "chat/draftChanged", "draft": map[string]any{"text": ch.draft, "origin": map[string]any{"kind": "user"}}})
	}
	c.Dispatch(sess, map[string]any{"type": "session/titleChanged", "title": "kept across the upgrade"})
	annotations := ahp.AnnotationsURI(sess)
	c.Subscribe(annotations)
	const noteID = "0b9ade00-0000-4000-8000-0000000000a1"
	c.Dispatch(annotations, map[string]any{"type": "annotations/set", "annotation": map[string]any{
		"id": noteID, "origin": map[string]any{"session": sess, "chat": def, "turnId": "u0-0"},
		"resource": ahp.FileURI(filepath.Join(work, "a.txt")), "resolved": false,
		"entries": []any{map[string]any{"id": noteID + ":0", "text": "look again"}},
	}})

	// A cofold chat whose turn writes a file: a changeset to keep.
	const csSess = "ahp-session:/0b9ade00-0000-4000-8000-000000000002"
	c.MustCall("createSession", map[string]any{"channel": csSess, "provider": "cofold"})
	csChat := upgradeDefaultChat(t, c, csSess)
	c.Subscribe(csChat)
	upgradeTurn(t, c, csChat, "w1", `[[call write_file {"path":"made.txt","content":"made before"}]]`)
	made := filepath.Join(work, "made.txt")
	if b, err := os.ReadFile(made); err != nil || string(b) != "made before" {
		t.Fatalf("the earlier build's cofold wrote %q (%v)", b, err)
	}
	csTurn := changeset.TurnURI(csChat, "w1")
	before := upgradeChangesetFiles(t, c, csTurn)
	if !slices.Contains(before, ahp.FileURI(made)) {
		t.Fatalf("the earlier build's changeset of w1: %v", before)
	}
	// Wait for what was said to be echoed, then stop gracefully.
	c.AwaitEnvelope("the annotation", func(e ahptest.Envelope) bool { return e.Channel == annotations })
	c.AwaitEnvelope("the title", func(e ahptest.Envelope) bool { return e.Type() == "session/titleChanged" })
	for _, ch := range chats {
		c.AwaitEnvelope("the draft of "+ch.uri, func(e ahptest.Envelope) bool {
			return e.Channel == ch.uri && e.Type() == "chat/draftChanged"
		})
	}
	c.Close()
	stopGracefully(t, cmd)

	// After: the current build on the same data dir.
	_, url = serveBuild(t, binary, data, work, "--config", cfg)
	a := ahptest.Dial(t, url, "")
	a.Initialize("after", ahp.RootURI)
	var list struct {
		Items []ahp.SessionSummary `json:"items"`
	}
	if err := json.Unmarshal(a.MustCall("listSessions", map[string]any{"channel": ahp.RootURI}), &list); err != nil {
		t.Fatal(err)
	}
	titles := map[string]string{}
	for _, s := range list.Items {
		titles[s.Resource] = s.Title
	}
	if len(titles) != 2 || titles[sess] != "kept across the upgrade" {
		t.Fatalf("sessions after the upgrade: %v", titles)
	}
	for _, ch := range chats {
		raw, _ := a.Subscribe(ch.uri)
		var st ahp.ChatState
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatal(err)
		}
		var ids, texts []string
		for _, tr := range st.Turns {
			ids, texts = append(ids, tr.ID), append(texts, tr.Message.Text)
			if tr.State != ahp.TurnComplete {
				t.Errorf("%s turn %s came back %s", ch.uri, tr.ID, tr.State)
			}
		}
		if !slices.Equal(ids, ch.turns) || !slices.Equal(texts, ch.texts) {
			t.Errorf("%s after the upgrade: turns %v %q, want %v %q", ch.uri, ids, texts, ch.turns, ch.texts)
		}
		if st.Draft == nil || st.Draft.Text != ch.draft {
			t.Errorf("%s draft after the upgrade: %+v, want %q", ch.uri, st.Draft, ch.draft)
		}
		// It goes on: a turn runs after the old ones.
		upgradeTurn(t, a, ch.uri, "after-"+ch.turns[0], "after the upgrade")
	}
	// What the earlier build stored is searchable (migration 7's back-fill).
	var found struct {
		Items []struct {
			Chat   string `json:"chat"`
			TurnID string `json:"turnId"`
		} `json:"items"`
	}
	if err := json.Unmarshal(a.MustCall("x-ahpd/search", map[string]any{"channel": ahp.RootURI, "query": `"before the upgrade"`, "limit": 100}), &found); err != nil {
		t.Fatal(err)
	}
	turns := 0
	for _, h := range found.Items {
		if h.TurnID != "" {
			turns++
		}
	}
	if turns != 4 {
		t.Fatalf("search for the earlier build's turns: %+v, want its 4 turns", found.Items)
	}
	raw, _ := a.Subscribe(annotations)
	if !strings.Contains(string(raw), noteID) || !strings.Contains(string(raw), "look again") {
		t.Fatalf("annotations after the upgrade: %s", raw)
	}
	a.Dispatch(annotations, map[string]any{"type": "annotations/updated", "annotationId": noteID, "resolved": true,
		"origin": map[string]any{"session": sess, "chat": def, "turnId": "u0-0"}})
	a.AwaitEnvelope("the annotation resolved", func(e ahptest.Envelope) bool {
		return e.Channel == annotations && e.Type() == "annotations/updated"
	})
	a.Subscribe(csChat)
	if after := upgradeChangesetFiles(t, a, csTurn); !slices.Equal(after, before) {
		t.Fatalf("w1's changeset after the upgrade: %v, want %v", after, before)
	}
	if _, err := a.Call("invokeChangesetOperation", map[string]any{"channel": csTurn, "operationId": "undo"}); err != nil {
		t.Fatalf("undo w1 after the upgrade: %v", err)
	}
	if _, err := os.Stat(made); !os.IsNotExist(err) {
		t.Fatalf("made.txt after undoing w1: %v, want it gone", err)
	}
}

// serveBuild starts bin serving data and work on port 0 and returns its
// websocket URL once it listens.
func serveBuild(t *testing.T, bin, data, work string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd, lines := startLinesOf(t, bin, 1, append([]string{"--data-dir", data, "--path", work}, args...)...)
	if !strings.HasPrefix(lines[0], "listening ") {
		t.Fatalf("first line %q, want listening ws://...", lines[0])
	}
	return cmd, strings.TrimPrefix(lines[0], "listening ")
}

// stopGracefully stops a serve with SIGTERM and waits for it.
func stopGracefully(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the earlier build stopped with %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the earlier build did not stop within a minute of SIGTERM")
	}
}

func upgradeDefaultChat(t *testing.T, c *ahptest.Client, sess string) string {
	t.Helper()
	raw, _ := c.Subscribe(sess)
	var s ahp.SessionState
	if err := json.Unmarshal(raw, &s); err != nil || s.DefaultChat == "" {
		t.Fatalf("session %s: %v %s", sess, err, raw)
	}
	return s.DefaultChat
}

// upgradeTurn runs one turn to a completed ending.
func upgradeTurn(t *testing.T, c *ahptest.Client, chat, id, text string) {
	t.Helper()
	c.Dispatch(chat, map[string]any{
		"type": "chat/turnStarted", "turnId": id, "startedAt": time.Now().UTC().Format(time.RFC3339Nano),
		"message": map[string]any{"text": text, "origin": map[string]any{"kind": "user"}},
	})
	end := c.AwaitEnvelope("the end of "+id, func(e ahptest.Envelope) bool {
		var tid string
		_ = e.Field("turnId", &tid)
		switch e.Type() {
		case "chat/turnComplete", "chat/error", "chat/turnCancelled":
			return e.Channel == chat && tid == id
		}
		return false
	})
	if end.Type() != "chat/turnComplete" {
		t.Fatalf("turn %s ended %s", id, end.Raw)
	}
}

// upgradeChangesetFiles subscribes to a changeset and returns its files'
// ids, sorted.
func upgradeChangesetFiles(t *testing.T, c *ahptest.Client, channel string) []string {
	t.Helper()
	raw, _ := c.Subscribe(channel)
	var st struct {
		Files []struct {
			ID string `json:"id"`
		} `json:"files"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("changeset %s: %v", raw, err)
	}
	var ids []string
	for _, f := range st.Files {
		ids = append(ids, f.ID)
	}
	slices.Sort(ids)
	return ids
}
