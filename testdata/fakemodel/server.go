package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// server routes the endpoints the agent CLIs call.
type server struct {
	log *requestLog
	// seq numbers messages and tool calls so ids are unique per process and
	// the same for the same sequence of requests.
	seq atomic.Int64
}

func newServer(rl *requestLog) *server { return &server{log: rl} }

func (s *server) next() int64 { return s.seq.Add(1) }

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.log.write(r, body)

	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case r.Method == http.MethodHead || (r.Method == http.MethodGet && path == ""):
		// claude probes ANTHROPIC_BASE_URL with HEAD / before its first call.
		w.WriteHeader(http.StatusOK)
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages/count_tokens"):
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": countTokens(body)})
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages"):
		req, ok := decodeRequest(w, body)
		if ok {
			s.anthropicMessages(w, r, req)
		}
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/chat/completions"):
		req, ok := decodeRequest(w, body)
		if ok {
			s.openaiChat(w, r, req)
		}
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/responses"):
		req, ok := decodeRequest(w, body)
		if ok {
			s.openaiResponses(w, r, req)
		}
	case r.Method == http.MethodPost && isGeminiRoute(path):
		model, method, _ := geminiRoute(path)
		req, ok := decodeRequest(w, body)
		if !ok {
			break
		}
		if method == "countTokens" {
			writeJSON(w, http.StatusOK, map[string]any{"totalTokens": countTokens(body)})
			break
		}
		s.geminiGenerate(w, r, model, method == "streamGenerateContent", req)
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/models"):
		writeJSON(w, http.StatusOK, modelList())
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{
			"type":  "error",
			"error": map[string]any{"type": "not_found_error", "message": "fakemodel: no route for " + r.Method + " " + r.URL.Path},
		})
	}
}

// isGeminiRoute: a Gemini API call the fake answers
// (models/{model}:generateContent, :streamGenerateContent, :countTokens).
func isGeminiRoute(path string) bool {
	_, method, ok := geminiRoute(path)
	return ok && (method == "generateContent" || method == "streamGenerateContent" || method == "countTokens")
}

func decodeRequest(w http.ResponseWriter, body []byte) (map[string]any, bool) {
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{
			"type":  "error",
			"error": map[string]any{"type": "invalid_request_error", "message": "fakemodel: body is not JSON: " + err.Error()},
		})
		return nil, false
	}
	return req, true
}

// countTokens is a rough, deterministic estimate: four bytes a token.
func countTokens(body []byte) int { return len(body)/4 + 1 }

func modelList() map[string]any {
	ids := []string{"claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5", "fake-model"}
	data := make([]map[string]any, 0, len(ids))
	for _, id := range ids {
		data = append(data, map[string]any{
			"id": id, "type": "model", "object": "model", "display_name": id,
			"created_at": "2025-01-01T00:00:00Z", "created": 1735689600, "owned_by": "fakemodel",
		})
	}
	return map[string]any{
		"object": "list", "data": data, "has_more": false,
		"first_id": ids[0], "last_id": ids[len(ids)-1],
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// requestLog appends one JSON object per request. A nil log drops them.
type requestLog struct {
	// mu guards w.
	mu sync.Mutex
	w  io.Writer
}

type logLine struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Query  string `json:"query,omitempty"`
	// SessionID is claude's X-Claude-Code-Session-Id header, which tells
	// the requests of one conversation apart from side calls.
	SessionID string          `json:"session_id,omitempty"`
	Body      json.RawMessage `json:"body,omitempty"`
	// RawBody holds a body that is not JSON.
	RawBody string `json:"raw_body,omitempty"`
}

func (l *requestLog) write(r *http.Request, body []byte) {
	if l == nil {
		return
	}
	line := logLine{
		Method:    r.Method,
		Path:      r.URL.Path,
		Query:     r.URL.RawQuery,
		SessionID: r.Header.Get("X-Claude-Code-Session-Id"),
	}
	if len(body) > 0 {
		if json.Valid(body) {
			line.Body = json.RawMessage(body)
		} else {
			line.RawBody = string(body)
		}
	}
	b, err := json.Marshal(line)
	if err != nil {
		b = []byte(fmt.Sprintf(`{"method":%q,"path":%q,"error":%q}`, r.Method, r.URL.Path, err.Error()))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(append(b, '\n'))
}
