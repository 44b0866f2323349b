package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// geminiGenerate answers the Gemini API's POST models/{model}:generateContent
// and :streamGenerateContent (server-sent with ?alt=sse, else a JSON array
// of chunks): text parts in a few chunks, thought parts, or one
// functionCall part; the last chunk carries finishReason and usage.
func (s *server) geminiGenerate(w http.ResponseWriter, r *http.Request, model string, stream bool, req map[string]any) {
	p := decide(parseGemini(req))
	n := s.next()

	switch p.kind {
	case replyError:
		writeJSON(w, http.StatusInternalServerError, map[string]any{
			"error": map[string]any{"code": 500, "message": "fake server error", "status": "INTERNAL"},
		})
		return
	case replyOverloaded:
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{
			"error": map[string]any{"code": 503, "message": "Overloaded", "status": "UNAVAILABLE"},
		})
		return
	}

	// Each entry is the parts of one chunk.
	var chunks [][]map[string]any
	slow := false
	switch p.kind {
	case replyCall:
		chunks = append(chunks, []map[string]any{{"functionCall": map[string]any{"name": p.callName, "args": geminiArgs(p.callArgs)}}})
	case replyTool:
		name, args := shellCall(geminiToolNames(req), p.command)
		chunks = append(chunks, []map[string]any{{"functionCall": map[string]any{"name": name, "args": geminiArgs(args)}}})
	case replySlow:
		for range slowDeltas {
			chunks = append(chunks, []map[string]any{{"text": "slow "}})
		}
		slow = true
	case replyThink:
		for _, d := range pieces("Thinking about: "+p.text, 8) {
			chunks = append(chunks, []map[string]any{{"text": d, "thought": true}})
		}
		for _, d := range pieces(p.reply(), 5) {
			chunks = append(chunks, []map[string]any{{"text": d}})
		}
	default:
		for _, d := range pieces(p.reply(), 5) {
			chunks = append(chunks, []map[string]any{{"text": d}})
		}
	}

	contents, _ := req["contents"].([]any)
	promptTokens := 10*len(contents) + 2
	usage := map[string]any{
		"promptTokenCount": promptTokens, "candidatesTokenCount": len(chunks),
		"totalTokenCount": promptTokens + len(chunks),
	}
	respID := fmt.Sprintf("fake%06d", n)
	chunk := func(parts []map[string]any, last bool) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		out := map[string]any{"candidates": []any{cand}, "modelVersion": model, "responseId": respID}
		if last {
			cand["finishReason"] = "STOP"
			out["usageMetadata"] = usage
		}
		return out
	}

	if !stream {
		var all []map[string]any
		for _, c := range chunks {
			all = append(all, c...)
		}
		writeJSON(w, http.StatusOK, chunk(mergeTextParts(all), true))
		return
	}

	sse := r.URL.Query().Get("alt") == "sse"
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	write := func(i int, c map[string]any) {
		b, _ := json.Marshal(c)
		switch {
		case sse:
			fmt.Fprintf(w, "data: %s\n\n", b)
		case i == 0:
			fmt.Fprintf(w, "[%s", b)
		default:
			fmt.Fprintf(w, ",\n%s", b)
		}
		if f != nil {
			f.Flush()
		}
	}
	if p.kind == replyDrop {
		for i, c := range chunks[:len(chunks)/2] {
			write(i, chunk(c, false))
		}
		// The stream ends mid-answer: no finishReason.
		panic(http.ErrAbortHandler)
	}
	for i, c := range chunks {
		if slow && !p.pace(r.Context().Done(), i) {
			return
		}
		write(i, chunk(c, i == len(chunks)-1))
	}
	if !sse {
		fmt.Fprint(w, "]")
	}
}

// geminiArgs is a call's arguments as the object functionCall.args holds;
// arguments that are not a JSON object are sent as an empty object (the
// Gemini API has no raw form).
func geminiArgs(raw string) map[string]any {
	var m map[string]any
	if json.Unmarshal([]byte(raw), &m) != nil || m == nil {
		return map[string]any{}
	}
	return m
}

// mergeTextParts joins adjacent text parts of the same kind (thought or
// not), as a non-streamed answer holds them.
func mergeTextParts(parts []map[string]any) []map[string]any {
	var out []map[string]any
	for _, p := range parts {
		t, isText := p["text"].(string)
		if isText && len(out) > 0 {
			prev := out[len(out)-1]
			if pt, ok := prev["text"].(string); ok && prev["thought"] == p["thought"] {
				prev["text"] = pt + t
				continue
			}
		}
		cp := make(map[string]any, len(p))
		for k, v := range p {
			cp[k] = v
		}
		out = append(out, cp)
	}
	return out
}

// parseGemini reduces a Gemini request's contents: role "model" is the
// assistant; a user entry with a functionResponse part is a tool result.
func parseGemini(req map[string]any) []message {
	raw, _ := req["contents"].([]any)
	out := make([]message, 0, len(raw))
	for _, c := range raw {
		cm, _ := c.(map[string]any)
		if cm == nil {
			continue
		}
		role, _ := cm["role"].(string)
		if role == "model" {
			role = "assistant"
		}
		msg := message{role: role}
		parts, _ := cm["parts"].([]any)
		for _, p := range parts {
			pm, _ := p.(map[string]any)
			if _, ok := pm["functionResponse"]; ok {
				msg.toolResult = true
			}
			if t, ok := pm["text"].(string); ok && pm["thought"] != true {
				msg.texts = append(msg.texts, stripReminders(t))
			}
		}
		out = append(out, msg)
	}
	return out
}

// geminiToolNames lists the function declarations of a Gemini request's
// tools.
func geminiToolNames(req map[string]any) []string {
	tools, _ := req["tools"].([]any)
	var out []string
	for _, t := range tools {
		tm, _ := t.(map[string]any)
		decls, _ := tm["functionDeclarations"].([]any)
		for _, d := range decls {
			dm, _ := d.(map[string]any)
			if n, _ := dm["name"].(string); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}

// geminiRoute splits a Gemini API path, .../models/{model}:{method}, into
// the model and the method; ok is false for any other path.
func geminiRoute(path string) (model, method string, ok bool) {
	i := strings.LastIndex(path, "/models/")
	if i < 0 {
		return "", "", false
	}
	model, method, ok = strings.Cut(path[i+len("/models/"):], ":")
	if !ok || model == "" || strings.Contains(model, "/") {
		return "", "", false
	}
	return model, method, true
}
