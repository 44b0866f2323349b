package cofold

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Message is one entry of a stored conversation, in cofold's own shape so
// one conversation can be sent to either API.
type Message struct {
	// Role is "user", "assistant", "tool" (results of the calls of the
	// assistant message before it) or "summary" (a compaction).
	Role string `json:"role"`
	// TurnID is the host turn the message was written in.
	TurnID string `json:"turnId,omitempty"`
	Text   string `json:"text,omitempty"`
	// Reasoning and Signature are an assistant's thinking; Anthropic wants
	// the signature back with it.
	Reasoning string `json:"reasoning,omitempty"`
	Signature string `json:"signature,omitempty"`
	// Images are a user message's image attachments.
	Images  []Image  `json:"images,omitempty"`
	Calls   []Call   `json:"calls,omitempty"`
	Results []Result `json:"results,omitempty"`
	// Keep is, on a summary, how many messages just before it stay
	// verbatim after it; everything earlier is replaced by Text.
	Keep int `json:"keep,omitempty"`
}

// Image is one image a user message carries.
type Image struct {
	MimeType string `json:"mimeType"`
	Data     []byte `json:"data"`
}

// Call is one tool call of an assistant message.
type Call struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Input string `json:"input"`
}

// Result is one tool call's result.
type Result struct {
	CallID  string `json:"callId"`
	Name    string `json:"name"`
	Output  string `json:"output"`
	IsError bool   `json:"isError,omitempty"`
}

// toolSpec describes one tool to the model.
type toolSpec struct {
	Name        string
	Description string
	Properties  map[string]any
	Required    []string
}

// request is one model call.
type request struct {
	Model     string
	System    string
	Messages  []Message
	Tools     []toolSpec
	MaxTokens int
	Effort    string
}

// sink receives a streamed answer as it comes. It is called from the
// streaming goroutine only.
type sink interface {
	text(s string)
	reasoning(s string)
	toolStart(id, name string)
	toolInput(s string)
}

// response is a model call's whole answer.
type response struct {
	Message      Message
	InputTokens  int
	OutputTokens int
	CacheRead    int
}

// modelAPI is one provider's API.
type modelAPI interface {
	stream(ctx context.Context, req request, s sink) (response, error)
	listModels(ctx context.Context) ([]string, error)
}

// modelError is a failed model call as the turn reports it.
type modelError struct {
	Status  int
	Type    string
	Message string
	err     error
}

func (e *modelError) Error() string {
	var b strings.Builder
	b.WriteString("model call failed")
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Type != "" {
		fmt.Fprintf(&b, " %s", e.Type)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	} else if e.err != nil {
		fmt.Fprintf(&b, ": %v", e.err)
	}
	return b.String()
}

func (e *modelError) Unwrap() error { return e.err }

// resumable: the same request may well succeed later (overloaded, rate
// limited, a server error or a dropped stream), so the turn is offered as
// resumable.
func (e *modelError) resumable() bool {
	switch {
	case e.Status == 429, e.Status == 529, e.Status >= 500:
		return true
	case e.Status == 0:
		return true
	}
	return strings.Contains(e.Type, "overloaded")
}

// errorFields pulls the provider's own message out of an API error body
// ({"error": {"message", "type"}}), the same in both APIs.
func errorFields(raw string) (typ, msg string) {
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &body) == nil {
		return body.Error.Type, body.Error.Message
	}
	return "", ""
}

// isCancel reports whether err is a stop's cancellation, not a model fault.
func isCancel(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, context.Canceled)
}

// contextFor is what is sent for a stored conversation: the latest
// compaction's summary and what it kept, then everything after it.
func contextFor(msgs []Message) []Message {
	last := -1
	for i, m := range msgs {
		if m.Role == "summary" {
			last = i
		}
	}
	if last < 0 {
		return dropDangling(msgs)
	}
	s := msgs[last]
	out := []Message{{Role: "user", Text: "Summary of the earlier conversation:\n\n" + s.Text}}
	from := max(last-s.Keep, 0)
	for _, m := range msgs[from:] {
		if m.Role != "summary" {
			out = append(out, m)
		}
	}
	return dropDangling(out)
}

// dropDangling keeps a conversation sendable: a stop can leave an
// assistant message whose calls got no results; they are answered as
// cancelled so both APIs accept the history.
func dropDangling(msgs []Message) []Message {
	out := make([]Message, 0, len(msgs))
	for i, m := range msgs {
		out = append(out, m)
		if m.Role != "assistant" || len(m.Calls) == 0 {
			continue
		}
		if i+1 < len(msgs) && msgs[i+1].Role == "tool" {
			continue
		}
		res := Message{Role: "tool", TurnID: m.TurnID}
		for _, c := range m.Calls {
			res.Results = append(res.Results, Result{CallID: c.ID, Name: c.Name, Output: "cancelled: the turn was stopped", IsError: true})
		}
		out = append(out, res)
	}
	return out
}

// estimateTokens is a rough count, four bytes a token, used to decide on
// compaction the same way for every provider.
func estimateTokens(system string, msgs []Message) int {
	n := len(system)
	for _, m := range msgs {
		// An image counts as about a thousand tokens.
		n += len(m.Text) + len(m.Reasoning) + 8 + 4000*len(m.Images)
		for _, c := range m.Calls {
			n += len(c.Name) + len(c.Input)
		}
		for _, r := range m.Results {
			n += len(r.Output)
		}
	}
	return n/4 + 1
}
