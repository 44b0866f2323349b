package fakemodel

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// geminiChunk is one GenerateContentResponse.
type geminiChunk struct {
	Candidates []struct {
		Content struct {
			Role  string `json:"role"`
			Parts []struct {
				Text         string `json:"text"`
				Thought      bool   `json:"thought"`
				FunctionCall *struct {
					Name string         `json:"name"`
					Args map[string]any `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *struct {
		PromptTokenCount int `json:"promptTokenCount"`
		TotalTokenCount  int `json:"totalTokenCount"`
	} `json:"usageMetadata"`
}

// folded is what a Gemini answer said: its text, thought text, function
// calls (name and JSON args), finish reason and whether usage came.
type folded struct {
	text, thought string
	calls         []string
	finish        string
	usage         bool
}

func fold(t *testing.T, chunks []geminiChunk) folded {
	t.Helper()
	var f folded
	for _, c := range chunks {
		if len(c.Candidates) != 1 {
			t.Fatalf("chunk with %d candidates", len(c.Candidates))
		}
		cand := c.Candidates[0]
		if cand.Content.Role != "model" {
			t.Errorf("chunk of role %q", cand.Content.Role)
		}
		for _, p := range cand.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				b, _ := json.Marshal(p.FunctionCall.Args)
				f.calls = append(f.calls, p.FunctionCall.Name+" "+string(b))
			case p.Thought:
				f.thought += p.Text
			default:
				f.text += p.Text
			}
		}
		if cand.FinishReason != "" {
			f.finish = cand.FinishReason
		}
		if c.UsageMetadata != nil && c.UsageMetadata.TotalTokenCount > 0 {
			f.usage = true
		}
	}
	return f
}

func geminiContent(role string, parts ...map[string]any) map[string]any {
	ps := make([]any, len(parts))
	for i, p := range parts {
		ps[i] = p
	}
	return map[string]any{"role": role, "parts": ps}
}

func textPart(s string) map[string]any { return map[string]any{"text": s} }

var geminiTools = []any{map[string]any{"functionDeclarations": []any{
	map[string]any{"name": "read_file", "parametersJsonSchema": map[string]any{"type": "object"}},
	map[string]any{"name": "run_shell_command", "parametersJsonSchema": map[string]any{"type": "object"}},
}}}

// TestGeminiStream: models/{model}:streamGenerateContent?alt=sse answers
// in data-only server-sent chunks: text parts over several chunks, thought
// parts, or a functionCall part with its args as an object; the last chunk
// says finishReason STOP and carries usage. The markers are the other
// APIs'; a functionResponse is a tool result.
func TestGeminiStream(t *testing.T) {
	s := Start(t)
	ack := geminiContent("model", textPart("Got it. Thanks for the context!"))
	setup := geminiContent("user", textPart("This is the Gemini CLI. We are setting up the context [error]"))
	call := geminiContent("model", map[string]any{"functionCall": map[string]any{"name": "read_file", "args": map[string]any{"file_path": "a"}}})
	result := geminiContent("user", map[string]any{"functionResponse": map[string]any{"name": "read_file", "response": map[string]any{"output": "x"}}})
	tests := []struct {
		name     string
		contents []any
		want     folded
	}{
		{name: "text echoes the newest user words", contents: []any{setup, ack, geminiContent("user", textPart("hello gemini"))},
			want: folded{text: "fake reply: hello gemini"}},
		{name: "the tool marker calls the offered shell tool", contents: []any{geminiContent("user", textPart("go [bash:ls]"))},
			want: folded{calls: []string{`run_shell_command {"command":"ls"}`}}},
		{name: "a call script sends its calls in order", contents: []any{
			geminiContent("user", textPart(`[[call read_file {"file_path":"a"}]] [[call list_directory {"dir_path":"."}]]`)), call, result},
			want: folded{calls: []string{`list_directory {"dir_path":"."}`}}},
		{name: "a function response is answered with tool done", contents: []any{geminiContent("user", textPart("go [tool]")), call, result},
			want: folded{text: "tool done"}},
		{name: "malformed call arguments are sent as an empty object", contents: []any{geminiContent("user", textPart(`[[call read_file {"file_path":]]`))},
			want: folded{calls: []string{`read_file {}`}}},
		{name: "think marker sends thought parts first", contents: []any{geminiContent("user", textPart("ponder [think]"))},
			want: folded{thought: "Thinking about: ponder [think]", text: "fake reply: ponder [think]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp := post(t, ctx, s, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", map[string]any{
				"contents": tc.contents, "tools": geminiTools, "systemInstruction": geminiContent("user", textPart("be brief")),
			})
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			var chunks []geminiChunk
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				line := sc.Text()
				if line == "" {
					continue
				}
				raw, ok := strings.CutPrefix(line, "data: ")
				if !ok {
					t.Fatalf("line %q is not a data line", line)
				}
				var c geminiChunk
				if err := json.Unmarshal([]byte(raw), &c); err != nil {
					t.Fatalf("chunk %q: %v", raw, err)
				}
				chunks = append(chunks, c)
			}
			if len(tc.want.text) > 10 && len(chunks) < 3 {
				t.Errorf("%d chunks, want several", len(chunks))
			}
			got := fold(t, chunks)
			tc.want.finish, tc.want.usage = "STOP", true
			if got.text != tc.want.text || got.thought != tc.want.thought || strings.Join(got.calls, "|") != strings.Join(tc.want.calls, "|") ||
				got.finish != tc.want.finish || got.usage != tc.want.usage {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestGeminiOtherMethods: :generateContent answers one JSON response with
// the text joined, :streamGenerateContent without alt=sse a JSON array of
// chunks, :countTokens a count; [error] is a 500 with a Google error body;
// the request log tells the calls apart and reads their words.
func TestGeminiOtherMethods(t *testing.T) {
	s := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body := map[string]any{"contents": []any{geminiContent("user", textPart("route me"))}}

	var one geminiChunk
	if err := json.NewDecoder(post(t, ctx, s, "/v1beta/models/m:generateContent", body).Body).Decode(&one); err != nil {
		t.Fatal(err)
	}
	if f := fold(t, []geminiChunk{one}); f.text != "fake reply: route me" || f.finish != "STOP" || !f.usage || len(one.Candidates[0].Content.Parts) != 1 {
		t.Errorf("generateContent: %+v", one)
	}

	var arr []geminiChunk
	if err := json.NewDecoder(post(t, ctx, s, "/v1beta/models/m:streamGenerateContent", body).Body).Decode(&arr); err != nil {
		t.Fatal(err)
	}
	if f := fold(t, arr); f.text != "fake reply: route me" || len(arr) < 3 {
		t.Errorf("streamGenerateContent as an array: %d chunks, %+v", len(arr), f)
	}

	var count struct {
		TotalTokens int `json:"totalTokens"`
	}
	if err := json.NewDecoder(post(t, ctx, s, "/v1beta/models/m:countTokens", body).Body).Decode(&count); err != nil || count.TotalTokens <= 0 {
		t.Errorf("countTokens: %+v %v", count, err)
	}

	er := post(t, ctx, s, "/v1beta/models/m:streamGenerateContent?alt=sse", map[string]any{"contents": []any{geminiContent("user", textPart("[error]"))}})
	var e struct {
		Error struct {
			Code   int    `json:"code"`
			Status string `json:"status"`
		} `json:"error"`
	}
	if er.StatusCode != http.StatusInternalServerError || json.NewDecoder(er.Body).Decode(&e) != nil || e.Error.Code != 500 || e.Error.Status != "INTERNAL" {
		t.Errorf("[error]: status %d, body %+v", er.StatusCode, e)
	}

	if nf := post(t, ctx, s, "/v1beta/models/m:embedContent", body); nf.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown method answered %d", nf.StatusCode)
	}

	reqs := s.Requests(t)
	if len(reqs) != 5 {
		t.Fatalf("%d requests logged", len(reqs))
	}
	for i, want := range []string{"generateContent", "streamGenerateContent", "countTokens", "streamGenerateContent", "embedContent"} {
		if got := reqs[i].GeminiMethod(); got != want {
			t.Errorf("request %d: method %q, want %q", i, got, want)
		}
	}
	if got := reqs[0].Texts(); len(got) != 1 || got[0] != "route me" {
		t.Errorf("logged words %q", got)
	}
}
