package fakemodel

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// responsesEvent is one server-sent event of a Responses stream.
type responsesEvent struct {
	name string
	data map[string]any
}

// readResponsesSSE decodes a Responses stream: each event's name must be
// its data's type, and sequence numbers count up from 0.
func readResponsesSSE(t *testing.T, r io.Reader) []responsesEvent {
	t.Helper()
	var out []responsesEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
			continue
		}
		raw, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var d map[string]any
		if err := json.Unmarshal([]byte(raw), &d); err != nil {
			t.Fatalf("bad data line %q: %v", line, err)
		}
		if d["type"] != name {
			t.Errorf("event %q carries data of type %v", name, d["type"])
		}
		if seq, _ := d["sequence_number"].(float64); int(seq) != len(out) {
			t.Errorf("event %d has sequence_number %v", len(out), d["sequence_number"])
		}
		out = append(out, responsesEvent{name: name, data: d})
	}
	return out
}

var responsesTools = []any{
	map[string]any{"type": "function", "name": "exec_command", "parameters": map[string]any{"type": "object"}},
	map[string]any{"type": "function", "name": "write_stdin", "parameters": map[string]any{"type": "object"}},
}

func inputText(role, text string) map[string]any {
	typ := "input_text"
	if role == "assistant" {
		typ = "output_text"
	}
	return map[string]any{"type": "message", "role": role, "content": []any{map[string]any{"type": typ, "text": text}}}
}

// TestResponsesStream: POST /v1/responses answers in response.* events:
// text as output_text deltas, a tool call as a function_call item with its
// arguments in deltas, thinking as a reasoning summary, and always
// response.completed with usage; the scripted answers follow the same
// markers as the other APIs.
func TestResponsesStream(t *testing.T) {
	s := Start(t)
	call := map[string]any{"type": "function_call", "name": "exec_command", "arguments": `{"cmd":"ls"}`, "call_id": "c1"}
	output := map[string]any{"type": "function_call_output", "call_id": "c1", "output": "notes.txt"}
	tests := []struct {
		name  string
		input any
		// items are the output item types in order; text is the output
		// text, args the function call's arguments and tool its name.
		items            []string
		text, args, tool string
		reasoning        string
	}{
		{name: "a string input is the user's words", input: "hello codex",
			items: []string{"message"}, text: "fake reply: hello codex"},
		{name: "developer and environment messages are read past",
			input: []any{inputText("developer", "rules [error]"), inputText("user", "<environment_context>cwd</environment_context>"), inputText("user", "hi there")},
			items: []string{"message"}, text: "fake reply: hi there"},
		{name: "the tool marker calls the offered shell tool", input: []any{inputText("user", "go [bash:ls -a]")},
			items: []string{"function_call"}, tool: "exec_command", args: `{"cmd":"ls -a"}`},
		{name: "a call script sends its calls in order", input: []any{inputText("user", `[[call view {"path":"a"}]] [[call exec_command {"cmd":"pwd"}]]`), call, output},
			items: []string{"function_call"}, tool: "exec_command", args: `{"cmd":"pwd"}`},
		{name: "a call's output is answered with tool done", input: []any{inputText("user", "go [tool]"), call, output},
			items: []string{"message"}, text: "tool done"},
		{name: "think marker reasons first", input: []any{inputText("user", "ponder [think]")},
			items: []string{"reasoning", "message"}, reasoning: "Thinking about: ponder [think]", text: "fake reply: ponder [think]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp := post(t, ctx, s, "/v1/responses", map[string]any{
				"model": "fake-model", "stream": true, "instructions": "be brief", "input": tc.input, "tools": responsesTools,
			})
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			evs := readResponsesSSE(t, resp.Body)
			if len(evs) < 3 || evs[0].name != "response.created" || evs[len(evs)-1].name != "response.completed" {
				t.Fatalf("events %v", evs)
			}
			var items []string
			var text, args, tool, reasoning string
			for _, e := range evs {
				switch e.name {
				case "response.output_item.done":
					it, _ := e.data["item"].(map[string]any)
					items = append(items, it["type"].(string))
					if it["type"] == "function_call" {
						tool, _ = it["name"].(string)
						if it["arguments"] != args {
							t.Errorf("done arguments %v, deltas %q", it["arguments"], args)
						}
						if id, _ := it["call_id"].(string); id == "" {
							t.Error("function call without call_id")
						}
					}
				case "response.output_text.delta":
					text += e.data["delta"].(string)
				case "response.function_call_arguments.delta":
					args += e.data["delta"].(string)
				case "response.reasoning_summary_text.delta":
					reasoning += e.data["delta"].(string)
				}
			}
			if strings.Join(items, ",") != strings.Join(tc.items, ",") {
				t.Errorf("items %v, want %v", items, tc.items)
			}
			if text != tc.text || args != tc.args || tool != tc.tool || reasoning != tc.reasoning {
				t.Errorf("text %q args %q tool %q reasoning %q", text, args, tool, reasoning)
			}
			done, _ := evs[len(evs)-1].data["response"].(map[string]any)
			usage, _ := done["usage"].(map[string]any)
			if done["status"] != "completed" || usage["input_tokens"] == nil || usage["output_tokens"] == nil || usage["total_tokens"] == nil {
				t.Errorf("completed response %v", done)
			}
			if out, _ := done["output"].([]any); len(out) != len(tc.items) {
				t.Errorf("completed response holds %d items, want %d", len(out), len(tc.items))
			}
		})
	}
}

// TestResponsesNotStreamed: without stream the answer is one response
// object holding the items; [error] is a 500 with an OpenAI error body.
func TestResponsesNotStreamed(t *testing.T) {
	s := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp := post(t, ctx, s, "/v1/responses", map[string]any{"model": "m", "input": "name it"})
	var body struct {
		Object string `json:"object"`
		Status string `json:"status"`
		Output []struct {
			Type    string `json:"type"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Object != "response" || body.Status != "completed" || len(body.Output) != 1 || body.Output[0].Content[0].Text != "fake reply: name it" {
		t.Errorf("response %+v", body)
	}
	er := post(t, ctx, s, "/v1/responses", map[string]any{"model": "m", "stream": true, "input": "boom [error]"})
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if er.StatusCode != http.StatusInternalServerError || json.NewDecoder(er.Body).Decode(&e) != nil || e.Error.Message == "" {
		t.Errorf("[error]: status %d, body %+v", er.StatusCode, e)
	}
}
