package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// openaiChat answers POST /v1/chat/completions, streamed as
// chat.completion.chunk events ending with "data: [DONE]".
func (s *server) openaiChat(w http.ResponseWriter, r *http.Request, req map[string]any) {
	p := decide(parseOpenAI(req))
	n := s.next()

	switch p.kind {
	case replyError:
		writeJSON(w, http.StatusInternalServerError, map[string]any{
			"error": map[string]any{"message": "fake server error", "type": "server_error"},
		})
		return
	case replyOverloaded:
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{
			"error": map[string]any{"message": "Overloaded", "type": "overloaded_error"},
		})
		return
	}

	model, _ := req["model"].(string)
	id := fmt.Sprintf("chatcmpl-fake%06d", n)
	msgs, _ := req["messages"].([]any)
	promptTokens := 10*len(msgs) + 2

	var (
		reasoning []string
		text      []string
		slow      bool
		toolID    string
		toolName  string
		args      string
		finish    = "stop"
	)
	switch p.kind {
	case replyCall:
		toolID, toolName, args, finish = fmt.Sprintf("call_fake%06d", n), p.callName, p.callArgs, "tool_calls"
	case replyTool:
		name, desc := bashTool(req)
		js, _ := json.Marshal(toolInput(p.command, desc))
		toolID, toolName, args, finish = fmt.Sprintf("call_fake%06d", n), name, string(js), "tool_calls"
	case replySlow:
		for range slowDeltas {
			text = append(text, "slow ")
		}
		slow = true
	case replyThink:
		reasoning = pieces("Thinking about: "+p.text, 8)
		text = pieces(p.reply(), 5)
	default:
		text = pieces(p.reply(), 5)
	}
	completionTokens := len(reasoning) + len(text) + len(pieces(args, 12))
	usage := map[string]any{
		"prompt_tokens": promptTokens, "completion_tokens": completionTokens,
		"total_tokens": promptTokens + completionTokens,
	}

	if stream, _ := req["stream"].(bool); !stream {
		msg := map[string]any{"role": "assistant", "content": strings.Join(text, "")}
		if toolID != "" {
			msg["content"] = nil
			msg["tool_calls"] = []any{map[string]any{
				"id": toolID, "type": "function",
				"function": map[string]any{"name": toolName, "arguments": args},
			}}
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": 1735689600, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   usage,
		})
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	chunk := func(delta map[string]any, finishReason any) {
		b, _ := json.Marshal(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": 1735689600, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finishReason}},
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
		if f != nil {
			f.Flush()
		}
	}

	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	if p.kind == replyDrop {
		for _, d := range text[:len(text)/2] {
			chunk(map[string]any{"content": d}, nil)
		}
		// The stream ends mid-answer: no finish, no [DONE].
		panic(http.ErrAbortHandler)
	}
	for _, d := range reasoning {
		chunk(map[string]any{"reasoning_content": d}, nil)
	}
	for i, d := range text {
		if slow && !p.pace(r.Context().Done(), i) {
			return
		}
		chunk(map[string]any{"content": d}, nil)
	}
	if toolID != "" {
		chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": 0, "id": toolID, "type": "function",
			"function": map[string]any{"name": toolName, "arguments": ""},
		}}}, nil)
		for _, a := range pieces(args, 12) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": 0, "function": map[string]any{"arguments": a},
			}}}, nil)
		}
	}
	chunk(map[string]any{}, finish)
	if so, _ := req["stream_options"].(map[string]any); so["include_usage"] == true {
		b, _ := json.Marshal(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": 1735689600, "model": model,
			"choices": []any{}, "usage": usage,
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if f != nil {
		f.Flush()
	}
}
