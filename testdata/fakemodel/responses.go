package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// openaiResponses answers POST /v1/responses (the OpenAI Responses API,
// which Codex speaks): streamed as server-sent response.* events, one
// output item per answer (a message, a function call, or a reasoning item
// then a message), ending with response.completed and its usage.
func (s *server) openaiResponses(w http.ResponseWriter, r *http.Request, req map[string]any) {
	p := decide(parseResponses(req))
	n := s.next()

	switch p.kind {
	case replyError:
		writeJSON(w, http.StatusInternalServerError, map[string]any{
			"error": map[string]any{"message": "fake server error", "type": "server_error", "code": "server_error"},
		})
		return
	case replyOverloaded:
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{
			"error": map[string]any{"message": "Overloaded", "type": "server_error", "code": "overloaded"},
		})
		return
	}

	model, _ := req["model"].(string)
	respID := fmt.Sprintf("resp_fake%06d", n)
	var items []responsesItem
	switch p.kind {
	case replyCall:
		items = append(items, responsesItem{kind: "function_call", id: fmt.Sprintf("fc_fake%06d", n),
			callID: fmt.Sprintf("call_fake%06d", n), name: p.callName, deltas: pieces(p.callArgs, 12)})
	case replyTool:
		name, args := shellCall(responsesToolNames(req), p.command)
		items = append(items, responsesItem{kind: "function_call", id: fmt.Sprintf("fc_fake%06d", n),
			callID: fmt.Sprintf("call_fake%06d", n), name: name, deltas: pieces(args, 12)})
	case replySlow:
		d := make([]string, slowDeltas)
		for i := range d {
			d[i] = "slow "
		}
		items = append(items, responsesItem{kind: "message", id: fmt.Sprintf("msg_fake%06d", n), deltas: d, slow: true})
	case replyThink:
		items = append(items,
			responsesItem{kind: "reasoning", id: fmt.Sprintf("rs_fake%06d", n), deltas: pieces("Thinking about: "+p.text, 8)},
			responsesItem{kind: "message", id: fmt.Sprintf("msg_fake%06d", n), deltas: pieces(p.reply(), 5)},
		)
	default:
		items = append(items, responsesItem{kind: "message", id: fmt.Sprintf("msg_fake%06d", n), deltas: pieces(p.reply(), 5)})
	}

	inputTokens := 10*len(responsesInput(req)) + 2
	outputTokens := 0
	for _, it := range items {
		outputTokens += len(it.deltas)
	}
	usage := map[string]any{
		"input_tokens": inputTokens, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": outputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": inputTokens + outputTokens,
	}
	response := func(status string, output []any) map[string]any {
		return map[string]any{
			"id": respID, "object": "response", "created_at": 1735689600, "status": status,
			"model": model, "output": output, "usage": usage,
		}
	}

	if stream, _ := req["stream"].(bool); !stream {
		output := make([]any, 0, len(items))
		for _, it := range items {
			output = append(output, it.final())
		}
		writeJSON(w, http.StatusOK, response("completed", output))
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	seq := 0
	event := func(typ string, data map[string]any) {
		data["type"] = typ
		data["sequence_number"] = seq
		seq++
		sseWriter{w: w, f: f}.event(typ, data)
	}

	started := response("in_progress", []any{})
	delete(started, "usage")
	event("response.created", map[string]any{"response": started})
	event("response.in_progress", map[string]any{"response": started})
	output := make([]any, 0, len(items))
	for i, it := range items {
		event("response.output_item.added", map[string]any{"output_index": i, "item": it.start()})
		if it.kind == "message" {
			event("response.content_part.added", map[string]any{"item_id": it.id, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		}
		deltas := it.deltas
		if p.kind == replyDrop {
			deltas = deltas[:len(deltas)/2]
		}
		for j, d := range deltas {
			if it.slow && !p.pace(r.Context().Done(), j) {
				return
			}
			switch it.kind {
			case "function_call":
				event("response.function_call_arguments.delta", map[string]any{"item_id": it.id, "output_index": i, "delta": d})
			case "reasoning":
				event("response.reasoning_summary_text.delta", map[string]any{"item_id": it.id, "output_index": i, "summary_index": 0, "delta": d})
			default:
				event("response.output_text.delta", map[string]any{"item_id": it.id, "output_index": i, "content_index": 0, "delta": d, "logprobs": []any{}})
			}
		}
		if p.kind == replyDrop {
			// The stream ends mid-answer: no item done, no response.completed.
			panic(http.ErrAbortHandler)
		}
		text := strings.Join(it.deltas, "")
		switch it.kind {
		case "function_call":
			event("response.function_call_arguments.done", map[string]any{"item_id": it.id, "output_index": i, "arguments": text})
		case "reasoning":
			event("response.reasoning_summary_text.done", map[string]any{"item_id": it.id, "output_index": i, "summary_index": 0, "text": text})
		default:
			event("response.output_text.done", map[string]any{"item_id": it.id, "output_index": i, "content_index": 0, "text": text, "logprobs": []any{}})
			event("response.content_part.done", map[string]any{"item_id": it.id, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": text, "annotations": []any{}}})
		}
		final := it.final()
		event("response.output_item.done", map[string]any{"output_index": i, "item": final})
		output = append(output, final)
	}
	event("response.completed", map[string]any{"response": response("completed", output)})
}

// responsesItem is one output item of a scripted Responses answer.
type responsesItem struct {
	kind   string // "message", "function_call" or "reasoning"
	id     string
	deltas []string
	// slow: pace each delta (plan.pace).
	slow bool
	// callID and name describe a function call; its arguments are the
	// deltas, sent as written.
	callID string
	name   string
}

func (it responsesItem) start() map[string]any {
	switch it.kind {
	case "function_call":
		return map[string]any{"type": "function_call", "id": it.id, "call_id": it.callID, "name": it.name, "arguments": "", "status": "in_progress"}
	case "reasoning":
		return map[string]any{"type": "reasoning", "id": it.id, "summary": []any{}}
	}
	return map[string]any{"type": "message", "id": it.id, "role": "assistant", "status": "in_progress", "content": []any{}}
}

// final is the item as response.output_item.done and the completed
// response hold it.
func (it responsesItem) final() map[string]any {
	text := strings.Join(it.deltas, "")
	switch it.kind {
	case "function_call":
		return map[string]any{"type": "function_call", "id": it.id, "call_id": it.callID, "name": it.name, "arguments": text, "status": "completed"}
	case "reasoning":
		return map[string]any{"type": "reasoning", "id": it.id, "summary": []any{map[string]any{"type": "summary_text", "text": text}}}
	}
	return map[string]any{"type": "message", "id": it.id, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
}

// responsesInput is the request's input as a list of items; a plain
// string input is one user message.
func responsesInput(req map[string]any) []any {
	switch in := req["input"].(type) {
	case string:
		return []any{map[string]any{"type": "message", "role": "user", "content": in}}
	case []any:
		return in
	}
	return nil
}

// parseResponses reduces a Responses request: a message item is a message
// of its role; a call item (function_call, custom_tool_call,
// local_shell_call) is an assistant step; a call's output is a tool
// result. Reasoning items are left out.
func parseResponses(req map[string]any) []message {
	var out []message
	for _, it := range responsesInput(req) {
		im, _ := it.(map[string]any)
		if im == nil {
			continue
		}
		typ, _ := im["type"].(string)
		role, _ := im["role"].(string)
		switch {
		case typ == "message" || (typ == "" && role != ""):
			msg := message{role: role}
			switch c := im["content"].(type) {
			case string:
				msg.texts = append(msg.texts, stripReminders(c))
			case []any:
				for _, b := range c {
					bm, _ := b.(map[string]any)
					switch bm["type"] {
					case "input_text", "output_text", "text":
						t, _ := bm["text"].(string)
						msg.texts = append(msg.texts, stripReminders(t))
					}
				}
			}
			out = append(out, msg)
		case strings.HasSuffix(typ, "_call_output"):
			out = append(out, message{role: "tool", toolResult: true})
		case strings.HasSuffix(typ, "_call"):
			out = append(out, message{role: "assistant"})
		}
	}
	return out
}

// responsesToolNames lists the names of a Responses request's tools
// ({type:"function", name, parameters} and the like).
func responsesToolNames(req map[string]any) []string {
	tools, _ := req["tools"].([]any)
	var out []string
	for _, t := range tools {
		tm, _ := t.(map[string]any)
		if n, _ := tm["name"].(string); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// shellTools are the shell tools the agent CLIs offer, in the order the
// fake prefers them, with the arguments each takes for a command.
var shellTools = []struct {
	name string
	args func(command string) any
}{
	{"bash", func(c string) any { return map[string]any{"command": c} }},
	{"Bash", func(c string) any { return map[string]any{"command": c} }},
	{"shell_command", func(c string) any { return map[string]any{"command": c} }},
	{"run_shell_command", func(c string) any { return map[string]any{"command": c} }},
	{"exec_command", func(c string) any { return map[string]any{"cmd": c} }},
	{"shell", func(c string) any { return map[string]any{"command": []string{"bash", "-lc", c}} }},
}

// shellCall is the call of the first shell tool offered that runs
// command: its name and JSON arguments ("bash" when none is offered).
func shellCall(offered []string, command string) (name, args string) {
	for _, st := range shellTools {
		for _, o := range offered {
			if o == st.name {
				b, _ := json.Marshal(st.args(command))
				return o, string(b)
			}
		}
	}
	b, _ := json.Marshal(shellTools[0].args(command))
	return shellTools[0].name, string(b)
}
