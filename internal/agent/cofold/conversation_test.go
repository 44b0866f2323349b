package cofold

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

func TestMain(m *testing.M) { fakemodel.Main(m) }

// apis are the two API styles every loop test runs in.
var apis = []string{"openai", "anthropic"}

func baseURL(srv *fakemodel.Server, api string) string {
	if api == "openai" {
		return srv.URL + "/v1"
	}
	return srv.URL
}

func testAgent(t *testing.T, srv *fakemodel.Server, api, mode string) *Agent {
	t.Helper()
	raw, _ := json.Marshal(map[string]any{
		"providers": []any{map[string]any{
			"name": "fake", "api": api, "baseUrl": baseURL(srv, api),
			"models": []any{map[string]any{"id": "fake-model"}},
		}},
		"permissionMode": mode,
		"maxRetries":     0,
	})
	s, err := ParseSettings(raw)
	if err != nil {
		t.Fatal(err)
	}
	return New(s)
}

func openConv(t *testing.T, a *Agent, id string, mode agent.OpenMode) agent.Conversation {
	t.Helper()
	conv, err := a.Open(context.Background(), agent.OpenParams{Mode: mode, ConversationID: id, Directories: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conv.Close() })
	return conv
}

// turnEvents sends a turn and collects its events up to its end.
func turnEvents(t *testing.T, conv agent.Conversation, turn agent.Turn) []agent.Event {
	t.Helper()
	if err := conv.Send(context.Background(), turn); err != nil {
		t.Fatal(err)
	}
	var out []agent.Event
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-conv.Events():
			if !ok {
				t.Fatalf("events closed before the turn ended: %+v", out)
			}
			out = append(out, ev)
			if ev.Kind == agent.EventTurnEnd && ev.TurnID == turn.ID {
				return out
			}
		case <-timeout:
			t.Fatalf("turn %s did not end: %+v", turn.ID, out)
		}
	}
}

func joined(evs []agent.Event, kind agent.EventKind) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Kind == kind {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

func endOf(evs []agent.Event) agent.End { return *evs[len(evs)-1].End }

func TestCofoldTextReasoningAndHostContext(t *testing.T) {
	srv := fakemodel.Start(t)
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			conv := openConv(t, testAgent(t, srv, api, ModeDefault), "c-"+api, agent.OpenNew)
			evs := turnEvents(t, conv, agent.Turn{ID: "t1", Text: "[think] hello", HostContext: "words of the host"})
			if end := endOf(evs); end.Outcome != agent.OutcomeComplete || end.Point != "2" {
				t.Fatalf("end = %+v", end)
			}
			if got := joined(evs, agent.EventText); got != "fake reply: [think] hello" {
				t.Errorf("text = %q", got)
			}
			if got := joined(evs, agent.EventReasoning); !strings.Contains(got, "Thinking about") {
				t.Errorf("reasoning = %q", got)
			}
			// C-TURN-110: the host's words go in the system prompt, not the
			// message.
			reqs := srv.Requests(t)
			body := string(reqs[len(reqs)-1].Body)
			if !strings.Contains(body, "words of the host") {
				t.Fatalf("host context not sent: %s", body)
			}
			msgs := reqs[len(reqs)-1].Messages()
			last := msgs[len(msgs)-1].Texts()
			if len(last) != 1 || last[0] != "[think] hello" {
				t.Errorf("the message carries %q", last)
			}
		})
	}
}

// Malformed tool arguments go back to the model as the call's error and
// the turn goes on.
func TestCofoldMalformedToolArgs(t *testing.T) {
	srv := fakemodel.Start(t)
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			conv := openConv(t, testAgent(t, srv, api, ModeBypass), "m-"+api, agent.OpenNew)
			evs := turnEvents(t, conv, agent.Turn{ID: "t1", Text: `[[call read_file {"path": oops]]`})
			if end := endOf(evs); end.Outcome != agent.OutcomeComplete {
				t.Fatalf("end = %+v", end)
			}
			var done *agent.ToolCall
			for _, ev := range evs {
				if ev.Kind == agent.EventToolDone {
					done = ev.ToolCall
				}
			}
			if done == nil || done.Success || !strings.Contains(done.Error, "malformed arguments") {
				t.Fatalf("tool result = %+v", done)
			}
			if got := joined(evs, agent.EventText); got != "tool done" {
				t.Errorf("text = %q", got)
			}
		})
	}
}

func TestCofoldNoProvider(t *testing.T) {
	a := New(Settings{})
	conv := openConv(t, a, "none", agent.OpenNew)
	evs := turnEvents(t, conv, agent.Turn{ID: "t1", Text: "hi"})
	end := endOf(evs)
	if end.Outcome != agent.OutcomeError || !strings.Contains(end.Message, `"agents": {"cofold"`) {
		t.Fatalf("end = %+v", end)
	}
}

// TestCofoldPlanMode: plan mode offers the model only what reads, and a
// write it asks for all the same is refused, not run.
func TestCofoldPlanMode(t *testing.T) {
	for _, s := range offeredTools(ModePlan, nil) {
		if c := toolClass(s.Name); c != "read" {
			t.Errorf("plan mode offers %s (%s)", s.Name, c)
		}
	}
	srv := fakemodel.Start(t)
	a := testAgent(t, srv, "openai", ModePlan)
	dir := t.TempDir()
	conv, err := a.Open(context.Background(), agent.OpenParams{ConversationID: "plan", Directories: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	evs := turnEvents(t, conv, agent.Turn{ID: "t1", Text: `[[call write_file {"path":"x.txt","content":"x"}]]`})
	var done *agent.ToolCall
	for _, ev := range evs {
		if ev.Kind == agent.EventToolDone {
			done = ev.ToolCall
		}
		if ev.Kind == agent.EventToolReady && ev.ToolCall.NeedsConfirmation {
			t.Error("plan mode asked instead of refusing")
		}
	}
	if done == nil || done.Success || !strings.Contains(done.Error, "plan mode") {
		t.Fatalf("write in plan mode: %+v", done)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.txt")); err == nil {
		t.Error("plan mode wrote the file")
	}
}

// TestCofoldImages: an image attachment goes to the model as an image in
// either API; one of a type the APIs do not take is named in the text.
func TestCofoldImages(t *testing.T) {
	srv := fakemodel.Start(t)
	png := []byte("\x89PNG fake image bytes")
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			conv := openConv(t, testAgent(t, srv, api, ModeDefault), "img-"+api, agent.OpenNew)
			evs := turnEvents(t, conv, agent.Turn{ID: "t1", Text: "look", Attachments: []agent.Attachment{
				{As: "image", Label: "shot.png", MimeType: "image/png", Data: png},
				{As: "image", Label: "pic.tiff", MimeType: "image/tiff", Data: png},
			}})
			if end := endOf(evs); end.Outcome != agent.OutcomeComplete {
				t.Fatalf("end = %+v", end)
			}
			reqs := srv.Requests(t)
			body := string(reqs[len(reqs)-1].Body)
			b64 := "iVBORyBmYWtlIGltYWdlIGJ5dGVz"
			want := map[string]string{"openai": "data:image/png;base64," + b64, "anthropic": `"media_type":"image/png"`}[api]
			if !strings.Contains(body, want) || !strings.Contains(body, b64) {
				t.Errorf("no image sent: %s", body)
			}
			if !strings.Contains(body, "pic.tiff") || strings.Count(body, b64) != 1 {
				t.Errorf("the tiff was sent or not named: %s", body)
			}
		})
	}
}

// TestCofoldConfirmAtOnce: a call that asks is waiting for Confirm by the
// time its ToolReady arrives, so a client that answers at once is heard
// (it was registered after ToolReady went out: an answer quick enough found
// "no such call waits", and the call waited for ever).
func TestCofoldConfirmAtOnce(t *testing.T) {
	srv := fakemodel.Start(t)
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			conv := openConv(t, testAgent(t, srv, api, ModeDefault), "confirm-"+api, agent.OpenNew)
			turn := agent.Turn{ID: "t1", Text: `[[call write_file {"path":"a.txt","content":"a"}]][[call write_file {"path":"b.txt","content":"b"}]]`}
			if err := conv.Send(context.Background(), turn); err != nil {
				t.Fatal(err)
			}
			asked := 0
			timeout := time.After(30 * time.Second)
			for {
				select {
				case ev, ok := <-conv.Events():
					if !ok {
						t.Fatal("events closed before the turn ended")
					}
					if ev.Kind == agent.EventToolReady && ev.ToolCall.NeedsConfirmation {
						asked++
						if err := conv.Confirm(turn.ID, ev.ToolCall.ID, true); err != nil {
							t.Fatalf("confirm at once: %v", err)
						}
					}
					if ev.Kind == agent.EventTurnEnd {
						if asked != 2 || ev.End.Outcome != agent.OutcomeComplete {
							t.Fatalf("turn ended %+v after %d asks, want complete after 2", ev.End, asked)
						}
						return
					}
				case <-timeout:
					t.Fatalf("turn did not end (%d asks)", asked)
				}
			}
		})
	}
}
