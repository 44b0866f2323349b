package main

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// sseWriter writes Anthropic-style server-sent events and flushes each one.
type sseWriter struct {
	w http.ResponseWriter
	f http.Flusher
}

func (s sseWriter) event(name string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		b = []byte(`{}`)
	}
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b)
	if s.f != nil {
		s.f.Flush()
	}
}

// anthropicBlock is one content block of a scripted answer.
type anthropicBlock struct {
	kind   string // "text", "thinking" or "tool_use"
	deltas []string
	// slow: pace each delta (plan.pace).
	slow bool
	// toolID, toolName and input describe a tool_use block.
	toolID   string
	toolName string
	input    map[string]any
}

func (s *server) anthropicMessages(w http.ResponseWriter, r *http.Request, req map[string]any) {
	p := decide(parseAnthropic(req))
	n := s.next()
	w.Header().Set("request-id", fmt.Sprintf("req_fake%06d", n))

	switch p.kind {
	case replyError:
		writeJSON(w, http.StatusInternalServerError, map[string]any{
			"type": "error", "error": map[string]any{"type": "api_error", "message": "fake server error"},
		})
		return
	case replyOverloaded:
		writeJSON(w, 529, map[string]any{
			"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "Overloaded"},
		})
		return
	}

	var blocks []anthropicBlock
	stop := "end_turn"
	switch p.kind {
	case replyCall:
		// The input is streamed as written; a non-object input is kept raw
		// in the non-streamed answer.
		var in map[string]any
		_ = json.Unmarshal([]byte(p.callArgs), &in)
		blocks = append(blocks, anthropicBlock{
			kind: "tool_use", toolID: fmt.Sprintf("toolu_fake%06d", n), toolName: p.callName, input: in,
			deltas: pieces(p.callArgs, 12),
		})
		stop = "tool_use"
	case replyTool:
		name, desc := bashTool(req)
		in := toolInput(p.command, desc)
		js, _ := json.Marshal(in)
		blocks = append(blocks, anthropicBlock{
			kind: "tool_use", toolID: fmt.Sprintf("toolu_fake%06d", n), toolName: name, input: in,
			deltas: pieces(string(js), 12),
		})
		stop = "tool_use"
	case replyTask:
		name := subagentTool(req)
		if name == "" {
			// A subagent's own request offers no subagent tool: it answers.
			blocks = append(blocks, anthropicBlock{kind: "text", deltas: pieces("fake reply: "+p.command, 5)})
			break
		}
		in := map[string]any{"description": "fake subagent", "prompt": p.command, "subagent_type": "general-purpose"}
		js, _ := json.Marshal(in)
		blocks = append(blocks, anthropicBlock{
			kind: "tool_use", toolID: fmt.Sprintf("toolu_fake%06d", n), toolName: name, input: in,
			deltas: pieces(string(js), 12),
		})
		stop = "tool_use"
	case replySlow:
		d := make([]string, slowDeltas)
		for i := range d {
			d[i] = "slow "
		}
		blocks = append(blocks, anthropicBlock{kind: "text", deltas: d, slow: true})
	case replyThink:
		blocks = append(blocks,
			anthropicBlock{kind: "thinking", deltas: pieces("Thinking about: "+p.text, 8)},
			anthropicBlock{kind: "text", deltas: pieces(p.reply(), 5)},
		)
	default:
		blocks = append(blocks, anthropicBlock{kind: "text", deltas: pieces(p.reply(), 5)})
	}

	model, _ := req["model"].(string)
	msgID := fmt.Sprintf("msg_fake%06d", n)
	msgs, _ := req["messages"].([]any)
	inputTokens := 10*len(msgs) + 2
	outputTokens := 0
	for _, b := range blocks {
		outputTokens += len(b.deltas)
	}

	if stream, _ := req["stream"].(bool); !stream {
		content := make([]map[string]any, 0, len(blocks))
		for _, b := range blocks {
			content = append(content, b.final())
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": model,
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": inputTokens, "output_tokens": outputTokens},
		})
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	sse := sseWriter{w: w, f: f}

	sse.event("message_start", map[string]any{
		"type": "message_start",
		"message": map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": model,
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{
				"input_tokens": inputTokens, "output_tokens": 1,
				"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
			},
		},
	})
	sse.event("ping", map[string]any{"type": "ping"})
	if p.kind == replyDrop {
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": blocks[0].start()})
		for _, d := range blocks[0].deltas[:len(blocks[0].deltas)/2] {
			sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": blocks[0].delta(d)})
		}
		// The stream ends mid-answer: no message_stop.
		panic(http.ErrAbortHandler)
	}
	for i, b := range blocks {
		sse.event("content_block_start", map[string]any{
			"type": "content_block_start", "index": i, "content_block": b.start(),
		})
		for j, d := range b.deltas {
			if b.slow && !p.pace(r.Context().Done(), j) {
				return
			}
			sse.event("content_block_delta", map[string]any{
				"type": "content_block_delta", "index": i, "delta": b.delta(d),
			})
		}
		if b.kind == "thinking" {
			sse.event("content_block_delta", map[string]any{
				"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "signature_delta", "signature": "fakesig"},
			})
		}
		sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	sse.event("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": outputTokens},
	})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
}

func (b anthropicBlock) start() map[string]any {
	switch b.kind {
	case "tool_use":
		return map[string]any{"type": "tool_use", "id": b.toolID, "name": b.toolName, "input": map[string]any{}}
	case "thinking":
		return map[string]any{"type": "thinking", "thinking": "", "signature": ""}
	}
	return map[string]any{"type": "text", "text": ""}
}

func (b anthropicBlock) delta(d string) map[string]any {
	switch b.kind {
	case "tool_use":
		return map[string]any{"type": "input_json_delta", "partial_json": d}
	case "thinking":
		return map[string]any{"type": "thinking_delta", "thinking": d}
	}
	return map[string]any{"type": "text_delta", "text": d}
}

// final is the block as a non-streamed response holds it.
func (b anthropicBlock) final() map[string]any {
	text := ""
	for _, d := range b.deltas {
		text += d
	}
	switch b.kind {
	case "tool_use":
		return map[string]any{"type": "tool_use", "id": b.toolID, "name": b.toolName, "input": b.input}
	case "thinking":
		return map[string]any{"type": "thinking", "thinking": text, "signature": "fakesig"}
	}
	return map[string]any{"type": "text", "text": text}
}
