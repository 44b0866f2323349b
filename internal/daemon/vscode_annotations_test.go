package daemon_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// annotationsOf reads an annotations channel back.
func annotationsOf(t *testing.T, c *ahptest.Client, uri string) []ahp.Annotation {
	t.Helper()
	raw, _ := c.Subscribe(uri)
	var st ahp.AnnotationsState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("annotations state: %v\n%s", err, raw)
	}
	return st.Annotations
}

func entryTexts(a ahp.Annotation) []string {
	out := []string{}
	for _, e := range a.Entries {
		out = append(out, e.Text)
	}
	return out
}

// TestVSCodeAnnotations ports annotationsSuite's 4 cases (microsoft/vscode
// 101b2425, the one version the index serves): every annotations action is
// client-dispatchable; the host applies the same reduction the client does
// and keeps it.
func TestVSCodeAnnotations(t *testing.T) {
	t.Parallel()
	v := newVSCodeEnv(t)
	n := 0
	annotated := func(t *testing.T) (sess, uri, resource, id string) {
		sess, _, dir := v.workspaceSession("annotations")
		uri = ahp.AnnotationsURI(sess)
		v.c.Subscribe(uri)
		n++
		return sess, uri, ahp.FileURI(filepath.Join(dir, "reviewed.ts")), fmt.Sprintf("a0a0a0a0-0000-4000-8000-%012d", n)
	}
	set := func(sess, uri, resource, id, turn, text string) {
		v.dispatchOK(uri, map[string]any{"type": "annotations/set", "annotation": map[string]any{
			"id": id, "origin": map[string]any{"session": sess, "chat": ahp.DefaultChatURI(sess), "turnId": turn},
			"resource": resource, "resolved": false, "entries": []any{map[string]any{"id": id + ":0", "text": text}},
		}})
	}
	conformanceCase(t, "an annotation dispatched by a client is applied to the channel", func(t *testing.T) {
		sess, uri, resource, id := annotated(t)
		set(sess, uri, resource, id, "turn-annotate", "needs a second look")
		got := annotationsOf(t, v.c, uri)
		want := &ahp.AnnotationOrigin{Session: sess, Chat: ahp.DefaultChatURI(sess), TurnID: "turn-annotate"}
		if len(got) != 1 || got[0].ID != id || got[0].Resolved || !sameOrigin(got[0].Origin, want) || fmt.Sprint(entryTexts(got[0])) != "[needs a second look]" {
			t.Fatalf("annotations %+v", got)
		}
	})
	conformanceCase(t, "an annotation can be resolved without resending its entries", func(t *testing.T) {
		sess, uri, resource, id := annotated(t)
		set(sess, uri, resource, id, "turn-resolve", "why this branch?")
		v.dispatchOK(uri, map[string]any{"type": "annotations/updated", "annotationId": id, "resolved": true,
			"origin": map[string]any{"session": sess, "chat": ahp.DefaultChatURI(sess), "turnId": "turn-resolve"}})
		got := annotationsOf(t, v.c, uri)
		if len(got) != 1 || !got[0].Resolved || fmt.Sprint(entryTexts(got[0])) != "[why this branch?]" {
			t.Fatalf("annotations %+v", got)
		}
	})
	conformanceCase(t, "entries can be added to and removed from an annotation", func(t *testing.T) {
		sess, uri, resource, id := annotated(t)
		set(sess, uri, resource, id, "turn-entries", "original")
		v.dispatchOK(uri, map[string]any{"type": "annotations/entrySet", "annotationId": id, "entry": map[string]any{"id": id + ":1", "text": "reply"}})
		with := annotationsOf(t, v.c, uri)
		v.dispatchOK(uri, map[string]any{"type": "annotations/entryRemoved", "annotationId": id, "entryId": id + ":1"})
		without := annotationsOf(t, v.c, uri)
		if fmt.Sprint(entryTexts(with[0])) != "[original reply]" || fmt.Sprint(entryTexts(without[0])) != "[original]" {
			t.Fatalf("with %v, without %v", entryTexts(with[0]), entryTexts(without[0]))
		}
	})
	conformanceCase(t, "removing an annotation clears it from the channel", func(t *testing.T) {
		sess, uri, resource, id := annotated(t)
		set(sess, uri, resource, id, "turn-remove", "transient")
		v.dispatchOK(uri, map[string]any{"type": "annotations/removed", "annotationId": id})
		if got := annotationsOf(t, v.c, uri); len(got) != 0 {
			t.Fatalf("annotations %+v", got)
		}
	})
}

// TestAnnotationsKeptAndGuarded: annotations are stored before they are
// said, so a restart reads them back; an annotation naming another session
// is refused; a token without session:annotate is refused at the channel,
// and one without session:state cannot read it.
func TestAnnotationsKeptAndGuarded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *daemon.Config) {
		c.Tokens = []daemon.TokenConfig{
			{Token: "reader-token", Principal: "user:reader", Grants: []string{"session:state", "session:list"}},
			{Token: "blind-token", Principal: "user:blind", Grants: []string{"session:list"}},
		}
	})
	a := e.client("a")
	sess, _ := e.createSession(a, "ahp-session:/a1a1a1a1-0000-4000-8000-000000000001")
	other, _ := e.createSession(a, "ahp-session:/a1a1a1a1-0000-4000-8000-000000000002")
	uri := ahp.AnnotationsURI(sess)
	a.Subscribe(uri)
	env := a.AwaitEcho(a.Dispatch(uri, map[string]any{"type": "annotations/set", "annotation": map[string]any{
		"id": "kept", "origin": map[string]any{"session": sess}, "resolved": false, "entries": []any{map[string]any{"id": "kept:0", "text": "keep me"}}}}))
	if env.RejectionReason != "" {
		t.Fatalf("set refused: %s", env.RejectionReason)
	}
	env = a.AwaitEcho(a.Dispatch(uri, map[string]any{"type": "annotations/set", "annotation": map[string]any{
		"id": "foreign", "origin": map[string]any{"session": other}, "resolved": false, "entries": []any{}}}))
	if env.RejectionReason == "" {
		t.Fatal("an annotation of another session was taken")
	}
	// A session action on the annotations channel is not its subject's.
	env = a.AwaitEcho(a.Dispatch(uri, map[string]any{"type": "session/titleChanged", "title": "x"}))
	if env.RejectionReason == "" {
		t.Fatal("a session action was taken on the annotations channel")
	}
	e.restart()
	b := e.client("b")
	if got := annotationsOf(t, b, uri); len(got) != 1 || got[0].ID != "kept" {
		t.Fatalf("after restart: %+v", got)
	}

	reader := ahptest.Dial(t, e.d.URL(), "reader-token")
	reader.Initialize("reader")
	reader.Subscribe(uri)
	env = reader.AwaitEcho(reader.Dispatch(uri, map[string]any{"type": "annotations/removed", "annotationId": "kept"}))
	if env.RejectionReason == "" {
		t.Fatal("a client without session:annotate removed an annotation")
	}
	blind := ahptest.Dial(t, e.d.URL(), "blind-token")
	blind.Initialize("blind")
	if _, err := blind.Call("subscribe", map[string]any{"channel": uri}); err == nil || err.Code != ahp.CodePermissionDenied {
		t.Fatalf("reading annotations without session:state: %v", err)
	}
}

func sameOrigin(a, b *ahp.AnnotationOrigin) bool {
	return a != nil && b != nil && *a == *b
}
