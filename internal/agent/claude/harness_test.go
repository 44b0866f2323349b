package claude

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

func TestMain(m *testing.M) { fakemodel.Main(m) }

// waitFor bounds every wait on the CLI.
const waitFor = 90 * time.Second

// harness is one test's CLI setup: a fake model server, its own
// CLAUDE_CONFIG_DIR, HOME and working directory, and the backend.
type harness struct {
	t      *testing.T
	fake   *fakemodel.Server
	claude *Claude
	cwd    string
	cfg    string
}

func newHarness(t *testing.T, stopEnds string) *harness {
	t.Helper()
	bin := fakemodel.Agent(t, "claude")
	fake := fakemodel.Start(t)
	h := &harness{t: t, fake: fake, cwd: t.TempDir(), cfg: t.TempDir()}
	env := []string{
		"HOME=" + t.TempDir(),
		"CLAUDE_CONFIG_DIR=" + h.cfg,
		"ANTHROPIC_BASE_URL=" + fake.URL,
		"ANTHROPIC_API_KEY=dummy",
		"IS_SANDBOX=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_MAX_RETRIES=0",
	}
	h.claude = New(Options{Binary: bin, Env: env, StopEnds: stopEnds})
	return h
}

// testLogger writes the backend's log to t.Log while the test runs.
func testLogger(t *testing.T) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(w.stop)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	t *testing.T
	// mu guards done; Write holds it across t.Log so nothing logs once
	// the test has ended.
	mu   sync.Mutex
	done bool
}

func (w *testWriter) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
}

func (w *testWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(b), "\n"))
	}
	return len(b), nil
}

// driver drives one open conversation and records its events.
type driver struct {
	t    *testing.T
	h    *harness
	id   string
	conv agent.Conversation
	seen []agent.Event
}

func (h *harness) open(mode agent.OpenMode, id, source, point string) *driver {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	conv, err := h.claude.Open(ctx, agent.OpenParams{
		Mode: mode, ConversationID: id, Source: source, Point: point,
		Directories: []string{h.cwd}, Logger: testLogger(h.t),
	})
	if err != nil {
		h.t.Fatalf("open %v %s: %v", mode, id, err)
	}
	d := &driver{t: h.t, h: h, id: id, conv: conv}
	h.t.Cleanup(func() { _ = conv.Close() })
	return d
}

func (h *harness) openNew() *driver { return h.open(agent.OpenNew, uuid.NewString(), "", "") }

func (d *driver) send(turnID, text string) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := d.conv.Send(ctx, agent.Turn{ID: turnID, Text: text}); err != nil {
		d.t.Fatalf("send %s: %v", turnID, err)
	}
}

// until reads events until pred holds, failing at the deadline or when the
// stream closes.
func (d *driver) until(what string, pred func(agent.Event) bool) agent.Event {
	d.t.Helper()
	deadline := time.NewTimer(waitFor)
	defer deadline.Stop()
	for {
		select {
		case ev, ok := <-d.conv.Events():
			if !ok {
				d.t.Fatalf("events closed while waiting for %s; seen:\n%s", what, d.dump())
			}
			d.seen = append(d.seen, ev)
			if ev.Kind == agent.EventExited {
				d.t.Fatalf("claude exited while waiting for %s: %v", what, ev.Err)
			}
			if pred(ev) {
				return ev
			}
		case <-deadline.C:
			d.t.Fatalf("no %s within %v; seen:\n%s", what, waitFor, d.dump())
		}
	}
}

// end waits for the turn's end.
func (d *driver) end(turnID string) *agent.End {
	d.t.Helper()
	ev := d.until("end of "+turnID, func(ev agent.Event) bool {
		return ev.Kind == agent.EventTurnEnd && ev.TurnID == turnID
	})
	return ev.End
}

// complete runs one turn to its end and wants it complete.
func (d *driver) complete(turnID, text string) *agent.End {
	d.t.Helper()
	d.send(turnID, text)
	end := d.end(turnID)
	if end.Outcome != agent.OutcomeComplete {
		d.t.Fatalf("turn %s ended %v: %s", turnID, end.Outcome, end.Message)
	}
	if end.Point == "" {
		d.t.Fatalf("turn %s ended with no point", turnID)
	}
	return end
}

// of returns the events seen for a turn.
func (d *driver) of(turnID string) []agent.Event {
	var out []agent.Event
	for _, ev := range d.seen {
		if ev.TurnID == turnID {
			out = append(out, ev)
		}
	}
	return out
}

// text is the markdown a turn's events said, parts joined by "|".
func (d *driver) text(turnID string) string {
	var parts []string
	last := ""
	for _, ev := range d.of(turnID) {
		if ev.Kind != agent.EventText {
			continue
		}
		if ev.PartID != last || len(parts) == 0 {
			parts = append(parts, "")
			last = ev.PartID
		}
		parts[len(parts)-1] += ev.Text
	}
	return strings.Join(parts, "|")
}

func (d *driver) count(turnID string, kind agent.EventKind) int {
	n := 0
	for _, ev := range d.of(turnID) {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

func (d *driver) close() {
	d.t.Helper()
	if err := d.conv.Close(); err != nil {
		d.t.Fatalf("close: %v", err)
	}
	// Events closes once the conversation is closed.
	deadline := time.NewTimer(waitFor)
	defer deadline.Stop()
	for {
		select {
		case _, ok := <-d.conv.Events():
			if !ok {
				return
			}
		case <-deadline.C:
			d.t.Fatal("events not closed after Close")
		}
	}
}

func (d *driver) dump() string {
	var b strings.Builder
	for _, ev := range d.seen {
		fmt.Fprintf(&b, "  %s\n", describe(ev))
	}
	return b.String()
}

func describe(ev agent.Event) string {
	s := fmt.Sprintf("kind=%d turn=%s", ev.Kind, ev.TurnID)
	if ev.Text != "" {
		s += fmt.Sprintf(" text=%q", ev.Text)
	}
	if ev.SteeringID != "" {
		s += " steering=" + ev.SteeringID
	}
	if tc := ev.ToolCall; tc != nil {
		s += fmt.Sprintf(" tool=%+v", *tc)
	}
	if e := ev.End; e != nil {
		s += fmt.Sprintf(" end=%+v", *e)
	}
	if ev.Err != nil {
		s += " err=" + ev.Err.Error()
	}
	return s
}

// conversationRequests are the fake's Messages requests for one session.
func (h *harness) conversationRequests(sessionID string) []fakemodel.Request {
	var out []fakemodel.Request
	for _, r := range h.fake.Requests(h.t) {
		if r.IsMessages() && r.SessionID == sessionID {
			out = append(out, r)
		}
	}
	return out
}

// history is what the last request of a session sent: each non-system
// message as role:text (its texts joined by " + ").
func (h *harness) history(sessionID string) []string {
	h.t.Helper()
	reqs := h.conversationRequests(sessionID)
	if len(reqs) == 0 {
		h.t.Fatalf("no requests for session %s", sessionID)
	}
	var out []string
	for _, m := range reqs[len(reqs)-1].Messages() {
		if m.Role == "system" {
			continue
		}
		out = append(out, m.Role+":"+strings.Join(m.Texts(), " + "))
	}
	return out
}

// headCount is how many CLI processes reached the fake (each sends one
// HEAD / preflight when it starts).
func (h *harness) headCount() int {
	n := 0
	for _, r := range h.fake.Requests(h.t) {
		if r.Method == "HEAD" {
			n++
		}
	}
	return n
}

func fileExistsT(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	return err == nil
}
