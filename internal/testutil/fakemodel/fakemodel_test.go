package fakemodel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

// sseEvent is one decoded server-sent event.
type sseEvent struct {
	name string
	data map[string]any
}

// post sends body to path and returns the response.
func post(t *testing.T, ctx context.Context, s *Server, path string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Claude-Code-Session-Id", "sess-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// readSSE decodes every event of an Anthropic stream.
func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	sc := bufio.NewScanner(r)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("bad data line %q: %v", line, err)
			}
			if d["type"] != name {
				t.Errorf("event %q carries data of type %v", name, d["type"])
			}
			out = append(out, sseEvent{name: name, data: d})
		}
	}
	return out
}

// summary folds a stream into its event names, the text of each block and
// the stop reason.
type summary struct {
	names  []string
	blocks []map[string]any // content_block_start blocks, with "text" accumulated
	stop   string
}

func summarize(evs []sseEvent) summary {
	var s summary
	for _, e := range evs {
		s.names = append(s.names, e.name)
		switch e.name {
		case "content_block_start":
			b, _ := e.data["content_block"].(map[string]any)
			s.blocks = append(s.blocks, map[string]any{"type": b["type"], "name": b["name"], "text": ""})
		case "content_block_delta":
			d, _ := e.data["delta"].(map[string]any)
			cur := s.blocks[len(s.blocks)-1]
			for _, k := range []string{"text", "thinking", "partial_json"} {
				if v, ok := d[k].(string); ok {
					cur["text"] = cur["text"].(string) + v
				}
			}
		case "message_delta":
			d, _ := e.data["delta"].(map[string]any)
			s.stop, _ = d["stop_reason"].(string)
		}
	}
	return s
}

func userMsg(content any) map[string]any { return map[string]any{"role": "user", "content": content} }

var bashTools = []any{map[string]any{
	"name": "Bash",
	"input_schema": map[string]any{"type": "object", "properties": map[string]any{
		"command": map[string]any{"type": "string"}, "description": map[string]any{"type": "string"},
	}},
}}

func TestAnthropicStream(t *testing.T) {
	s := Start(t)
	reminder := map[string]any{"type": "text", "text": "<system-reminder>ignore [tool] me</system-reminder>"}
	tests := []struct {
		name     string
		messages []any
		types    []string // block types in order
		texts    []string // block texts in order
		toolName string
		stop     string
	}{
		{
			name:     "plain text echoes the prompt",
			messages: []any{userMsg([]any{reminder, map[string]any{"type": "text", "text": "hello there"}})},
			types:    []string{"text"}, texts: []string{"fake reply: hello there"}, stop: "end_turn",
		},
		{
			name: "system entries are skipped",
			messages: []any{
				userMsg("say hi"),
				map[string]any{"role": "system", "content": "The user sent a new message [error]"},
			},
			types: []string{"text"}, texts: []string{"fake reply: say hi"}, stop: "end_turn",
		},
		{
			name:     "tool marker runs echo",
			messages: []any{userMsg("go [tool]")},
			types:    []string{"tool_use"}, toolName: "Bash",
			texts: []string{`{"command":"echo fake-tool-ran","description":"fake tool call"}`}, stop: "tool_use",
		},
		{
			name:     "bash marker runs its command",
			messages: []any{userMsg("make it [bash:touch x]")},
			types:    []string{"tool_use"}, toolName: "Bash",
			texts: []string{`{"command":"touch x","description":"fake tool call"}`}, stop: "tool_use",
		},
		{
			name: "a tool result is answered with tool done",
			messages: []any{
				userMsg("go [tool]"),
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": "Bash", "input": map[string]any{}}}},
				userMsg([]any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "fake-tool-ran"}}),
			},
			types: []string{"text"}, texts: []string{"tool done"}, stop: "end_turn",
		},
		{
			name:     "think marker thinks first",
			messages: []any{userMsg("ponder [think]")},
			types:    []string{"thinking", "text"},
			texts:    []string{"Thinking about: ponder [think]", "fake reply: ponder [think]"}, stop: "end_turn",
		},
		{
			name: "the newest text block of a merged message decides",
			messages: []any{userMsg([]any{
				map[string]any{"type": "text", "text": "boom [error]"},
				map[string]any{"type": "text", "text": "after"},
			})},
			types: []string{"text"}, texts: []string{"fake reply: after"}, stop: "end_turn",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp := post(t, ctx, s, "/v1/messages?beta=true", map[string]any{
				"model": "claude-test", "stream": true, "messages": tc.messages, "tools": bashTools,
			})
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("content type %q", ct)
			}
			sum := summarize(readSSE(t, resp.Body))
			if got := sum.names[:2]; got[0] != "message_start" || got[1] != "ping" {
				t.Errorf("stream starts %v", got)
			}
			if got := sum.names[len(sum.names)-2:]; got[0] != "message_delta" || got[1] != "message_stop" {
				t.Errorf("stream ends %v", got)
			}
			if len(sum.blocks) != len(tc.types) {
				t.Fatalf("blocks %v, want types %v", sum.blocks, tc.types)
			}
			for i, b := range sum.blocks {
				if b["type"] != tc.types[i] {
					t.Errorf("block %d type %v, want %s", i, b["type"], tc.types[i])
				}
				if b["text"] != tc.texts[i] {
					t.Errorf("block %d text %q, want %q", i, b["text"], tc.texts[i])
				}
				if tc.toolName != "" && b["name"] != tc.toolName {
					t.Errorf("block %d tool name %v", i, b["name"])
				}
			}
			if sum.stop != tc.stop {
				t.Errorf("stop reason %q, want %q", sum.stop, tc.stop)
			}
		})
	}
}

func TestAnthropicDeltasAreSeveral(t *testing.T) {
	s := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp := post(t, ctx, s, "/v1/messages", map[string]any{"model": "m", "stream": true, "messages": []any{userMsg("a longer prompt")}})
	n := 0
	for _, e := range readSSE(t, resp.Body) {
		if e.name == "content_block_delta" {
			n++
		}
	}
	if n < 3 {
		t.Errorf("%d text deltas, want several", n)
	}
}

func TestAnthropicSlow(t *testing.T) {
	s := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp := post(t, ctx, s, "/v1/messages", map[string]any{"model": "m", "stream": true, "messages": []any{userMsg("talk [slow]")}})
	r := bufio.NewReader(resp.Body)
	var stamps []time.Time
	for len(stamps) < 3 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if strings.Contains(line, `"text_delta"`) {
			stamps = append(stamps, time.Now())
		}
	}
	if gap := stamps[2].Sub(stamps[1]); gap < 100*time.Millisecond {
		t.Errorf("slow deltas %v apart, want about 150ms", gap)
	}
	// Hanging up ends the stream; the server must not wedge on it.
	cancel()
}

// [wait:PATH] streams its first delta, then holds the rest until PATH
// exists, in either API.
func TestWaitGate(t *testing.T) {
	s := Start(t)
	for _, path := range []string{"/v1/messages", "/v1/chat/completions"} {
		t.Run(path, func(t *testing.T) {
			gate := filepath.Join(t.TempDir(), "gate")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp := post(t, ctx, s, path, map[string]any{"model": "m", "stream": true, "messages": []any{userMsg("talk [wait:" + gate + "]")}})
			lines := make(chan string)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					if l := sc.Text(); strings.Contains(l, "slow ") || strings.Contains(l, "[DONE]") || strings.Contains(l, "message_stop") {
						lines <- l
					}
				}
			}()
			if l := <-lines; !strings.Contains(l, "slow ") {
				t.Fatalf("first line %q, want the first delta", l)
			}
			// Deliberately a stretch of time with the gate shut: nothing more comes.
			select {
			case l := <-lines:
				t.Fatalf("%q before the gate opened", l)
			case <-time.After(300 * time.Millisecond):
			}
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			n := 1
			for l := range lines {
				if strings.Contains(l, "slow ") {
					n++
				}
			}
			if n != 40 {
				t.Fatalf("%d deltas, want 40", n)
			}
		})
	}
}

func TestAnthropicError(t *testing.T) {
	s := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp := post(t, ctx, s, "/v1/messages", map[string]any{"model": "m", "stream": true, "messages": []any{userMsg("boom [error]")}})
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500", resp.StatusCode)
	}
	var body struct {
		Type  string `json:"type"`
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Type != "error" || body.Error.Type != "api_error" {
		t.Errorf("body %+v, err %v", body, err)
	}
}

func TestOtherEndpointsAndLog(t *testing.T) {
	s := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	head, err := http.NewRequestWithContext(ctx, http.MethodHead, s.URL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	hr, err := http.DefaultClient.Do(head)
	if err != nil || hr.StatusCode != http.StatusOK {
		t.Fatalf("HEAD /: %v %v", hr, err)
	}
	hr.Body.Close()

	ct := post(t, ctx, s, "/v1/messages/count_tokens?beta=true", map[string]any{"messages": []any{userMsg("count me")}})
	var tokens struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.NewDecoder(ct.Body).Decode(&tokens); err != nil || tokens.InputTokens <= 0 {
		t.Errorf("count_tokens: %+v %v", tokens, err)
	}

	mr, err := http.Get(s.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Body.Close()
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(mr.Body).Decode(&models); err != nil || len(models.Data) == 0 {
		t.Errorf("models: %+v %v", models, err)
	}

	msg := post(t, ctx, s, "/v1/messages?beta=true", map[string]any{"model": "m", "stream": true, "messages": []any{userMsg("logged")}})
	_, _ = io.Copy(io.Discard, msg.Body)

	reqs := s.Requests(t)
	if len(reqs) != 4 {
		t.Fatalf("%d logged requests, want 4: %+v", len(reqs), reqs)
	}
	last := reqs[3]
	if !last.IsMessages() || last.Query != "beta=true" || last.SessionID != "sess-1" {
		t.Errorf("last request logged as %+v", last)
	}
	if got := last.Messages(); len(got) != 1 || got[0].Texts()[0] != "logged" {
		t.Errorf("logged messages %+v", got)
	}
	if reqs[1].IsMessages() {
		t.Error("count_tokens counted as a Messages request")
	}
}

func TestOpenAIStream(t *testing.T) {
	s := Start(t)
	tools := []any{map[string]any{"type": "function", "function": map[string]any{
		"name": "bash", "parameters": map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}},
	}}}
	tests := []struct {
		name, prompt, wantText, wantArgs, finish string
	}{
		{name: "text", prompt: "hello pi", wantText: "fake reply: hello pi", finish: "stop"},
		{name: "tool", prompt: "go [tool]", wantArgs: `{"command":"echo fake-tool-ran"}`, finish: "tool_calls"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp := post(t, ctx, s, "/v1/chat/completions", map[string]any{
				"model": "fake-model", "stream": true, "tools": tools,
				"stream_options": map[string]any{"include_usage": true},
				"messages":       []any{map[string]any{"role": "system", "content": "be nice"}, userMsg(tc.prompt)},
			})
			sc := bufio.NewScanner(resp.Body)
			var text, args, finish string
			done, usage := false, false
			for sc.Scan() {
				line, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue
				}
				if line == "[DONE]" {
					done = true
					continue
				}
				var c struct {
					Choices []struct {
						Delta struct {
							Content   string `json:"content"`
							ToolCalls []struct {
								Function struct {
									Arguments string `json:"arguments"`
								} `json:"function"`
							} `json:"tool_calls"`
						} `json:"delta"`
						FinishReason *string `json:"finish_reason"`
					} `json:"choices"`
					Usage map[string]any `json:"usage"`
				}
				if err := json.Unmarshal([]byte(line), &c); err != nil {
					t.Fatalf("chunk %q: %v", line, err)
				}
				if c.Usage != nil {
					usage = true
				}
				for _, ch := range c.Choices {
					text += ch.Delta.Content
					for _, tcall := range ch.Delta.ToolCalls {
						args += tcall.Function.Arguments
					}
					if ch.FinishReason != nil {
						finish = *ch.FinishReason
					}
				}
			}
			if !done || !usage {
				t.Errorf("done %v usage %v", done, usage)
			}
			if text != tc.wantText || args != tc.wantArgs || finish != tc.finish {
				t.Errorf("text %q args %q finish %q", text, args, finish)
			}
		})
	}
}

// The server refuses every address that is not loopback.
func TestRefusesNonLoopback(t *testing.T) {
	bin := binary(t)
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := exec.CommandContext(ctx, bin, "-addr", addr).Run()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("-addr %s: %v, want exit status 2", addr, err)
		}
	}
}

// TestDroppedStream: [drop] answers 200, streams part of the reply and cuts
// the connection before the stream's end, in every API.
func TestDroppedStream(t *testing.T) {
	s := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bodies := map[string]map[string]any{
		"/v1/messages":         {"model": "m", "stream": true, "messages": []any{userMsg("cut [drop]")}},
		"/v1/chat/completions": {"model": "m", "stream": true, "messages": []any{userMsg("cut [drop]")}},
		"/v1/responses":        {"model": "m", "stream": true, "input": "cut [drop]"},
		"/v1beta/models/m:streamGenerateContent?alt=sse": {"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "cut [drop]"}}}}},
	}
	for path, body := range bodies {
		resp := post(t, ctx, s, path, body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", path, resp.StatusCode)
		}
		body, err := io.ReadAll(resp.Body)
		if err == nil {
			t.Errorf("%s: the stream ended cleanly: %s", path, body)
		}
		if !strings.Contains(string(body), "fake") || strings.Contains(string(body), "message_stop") || strings.Contains(string(body), "[DONE]") ||
			strings.Contains(string(body), "response.completed") || strings.Contains(string(body), "finishReason") {
			t.Errorf("%s: body %s", path, body)
		}
	}
}
