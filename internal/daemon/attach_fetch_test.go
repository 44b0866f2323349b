package daemon_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/attach"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// answerReads makes c answer resourceRead with what files holds by URI,
// after delay; a URI it does not hold is -32008.
func answerReads(c *ahptest.Client, delay time.Duration, files map[string]string) *[]string {
	var mu sync.Mutex
	var asked []string
	c.OnRequest(func(method string, params json.RawMessage) (any, *ahptest.RPCError) {
		var p struct {
			URI string `json:"uri"`
		}
		_ = json.Unmarshal(params, &p)
		mu.Lock()
		asked = append(asked, method+" "+p.URI)
		mu.Unlock()
		time.Sleep(delay) // deliberate: a client slow to answer
		body, ok := files[p.URI]
		if method != "resourceRead" || !ok {
			return nil, &ahptest.RPCError{Code: ahp.CodeNotFound, Message: "no such resource"}
		}
		return map[string]any{"data": base64.StdEncoding.EncodeToString([]byte(body)), "encoding": "base64"}, nil
	})
	return &asked
}

// TestAttachmentReadThroughClient: a resource only the sending client holds
// is read through that client with a server→client resourceRead and written
// as inline bytes are, reaching the agent (C-ATT-11, 12); the client's later
// actions keep their order behind the read.
func TestAttachmentReadThroughClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	_, def := e.createSession(a, "ahp-session:/fe7c0000-0000-4000-8000-000000000001")
	b := e.client("b")
	b.Subscribe(def)
	uri := "vscode-userdata:/b-only/notes.txt"
	asked := answerReads(b, 300*time.Millisecond, map[string]string{uri: "ONLY B HAS THIS"})
	b.Dispatch(def, turnWith("t1", "read my notes", map[string]any{"type": "resource", "label": "notes.txt", "uri": uri, "contentType": "text/plain"}))
	// Sent while the read is in flight: said after the turn, not before.
	draftSeq := b.Dispatch(def, map[string]any{"type": "chat/draftChanged", "draft": userMessage("next")})
	awaitEnd(t, b, def, "t1")
	b.AwaitEcho(draftSeq)
	var order []string
	for _, env := range b.Envelopes() {
		if env.Channel == def && (env.Type() == "chat/turnStarted" || env.Type() == "chat/draftChanged") {
			order = append(order, env.Type())
		}
	}
	if strings.Join(order, ",") != "chat/turnStarted,chat/draftChanged" {
		t.Fatalf("order %v", order)
	}
	if strings.Join(*asked, "|") != "resourceRead "+uri {
		t.Fatalf("asked %v", *asked)
	}
	got := sentTurn(t, e, "t1").Attachments
	if len(got) != 1 || got[0].Text != "ONLY B HAS THIS" && got[0].Path == "" {
		t.Fatalf("the agent was handed %+v", got)
	}
	files := filesUnder(t, filepath.Join(e.cfg.DataDir, "attachments"))
	if len(files) != 1 {
		t.Fatalf("written %v", files)
	}
	if body, _ := os.ReadFile(files[0]); string(body) != "ONLY B HAS THIS" {
		t.Fatalf("written %q", body)
	}
	if got[0].As == attach.AsPath && got[0].Path != files[0] {
		t.Fatalf("handed path %s, written %s", got[0].Path, files[0])
	}
}

// TestAttachmentFetchBounds: a resource over attachmentFetchLimitBytes once
// read, or one the client cannot give, is left as sent (C-ATT-14, 17); a
// client that closes while asked ends the wait at once, not after the 30 s
// timeout.
func TestAttachmentFetchBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *daemon.Config) { c.AttachmentFetchLimitBytes = 8 })
	a := e.client("a")
	_, def := e.createSession(a, "ahp-session:/fe7c0000-0000-4000-8000-000000000002")
	a.Subscribe(def)
	b := e.client("b")
	big := "vscode-userdata:/b-only/big.txt"
	answerReads(b, 0, map[string]string{big: "far more than eight bytes"})
	b.Dispatch(def, turnWith("t1", "big", map[string]any{"type": "resource", "label": "big.txt", "uri": big}))
	awaitEnd(t, a, def, "t1")
	if got := sentTurn(t, e, "t1").Attachments; len(got) != 1 || got[0].Path != big {
		t.Fatalf("an over-limit resource went as %+v", got)
	}
	if files := filesUnder(t, filepath.Join(e.cfg.DataDir, "attachments")); len(files) != 0 {
		t.Fatalf("written %v", files)
	}

	gone := e.client("gone")
	held, done := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(done) })
	gone.OnRequest(func(string, json.RawMessage) (any, *ahptest.RPCError) {
		close(held)
		<-done // never answers while the test runs
		return nil, nil
	})
	start := time.Now()
	gone.Dispatch(def, turnWith("t2", "from a client that leaves", map[string]any{"type": "resource", "label": "x.txt", "uri": "vscode-userdata:/gone/x.txt"}))
	<-held
	gone.Close()
	awaitEnd(t, a, def, "t2")
	if waited := time.Since(start); waited > 10*time.Second {
		t.Fatalf("the turn waited %s for a client that had closed", waited)
	}
	if got := sentTurn(t, e, "t2").Attachments; len(got) != 1 || got[0].Path != "vscode-userdata:/gone/x.txt" {
		t.Fatalf("an unread resource went as %+v", got)
	}
}

// TestAttachmentFetchFromASilentClient: a client that stays connected and
// never answers the resourceRead is given clientFileTimeoutSeconds, the
// bound of every request to a client's files; its turn then goes on with
// the resource left as sent.
func TestAttachmentFetchFromASilentClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *daemon.Config) { c.ClientFileTimeoutSeconds = 1 })
	a := e.client("a")
	_, def := e.createSession(a, "ahp-session:/fe7c0000-0000-4000-8000-000000000003")
	a.Subscribe(def)
	silent := e.client("silent")
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	silent.OnRequest(func(string, json.RawMessage) (any, *ahptest.RPCError) {
		<-done // never answers while the test runs
		return nil, nil
	})
	const uri = "vscode-userdata:/silent/x.txt"
	silent.Dispatch(def, turnWith("t1", "from a silent client", map[string]any{"type": "resource", "label": "x.txt", "uri": uri}))
	if end := awaitEnd(t, a, def, "t1"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended %s", end.Raw)
	}
	if got := sentTurn(t, e, "t1").Attachments; len(got) != 1 || got[0].Path != uri {
		t.Fatalf("an unanswered resource went as %+v", got)
	}
}
