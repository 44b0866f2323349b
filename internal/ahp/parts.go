package ahp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unsafe"
)

// StringOrMarkdown is a plain string or {"markdown": "..."} on the wire.
type StringOrMarkdown struct {
	Value      string
	IsMarkdown bool
}

// Plain returns a plain-text StringOrMarkdown.
func Plain(s string) *StringOrMarkdown { return &StringOrMarkdown{Value: s} }

// MarkdownText returns a markdown StringOrMarkdown.
func MarkdownText(s string) *StringOrMarkdown { return &StringOrMarkdown{Value: s, IsMarkdown: true} }

// String returns the text, markdown or not.
func (s *StringOrMarkdown) String() string {
	if s == nil {
		return ""
	}
	return s.Value
}

// MarshalJSON writes a string, or {"markdown": ...} when IsMarkdown.
func (s StringOrMarkdown) MarshalJSON() ([]byte, error) {
	if s.IsMarkdown {
		return json.Marshal(struct {
			Markdown string `json:"markdown"`
		}{s.Value})
	}
	return json.Marshal(s.Value)
}

// UnmarshalJSON reads a string or {"markdown": ...}.
func (s *StringOrMarkdown) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var m struct {
			Markdown string `json:"markdown"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		*s = StringOrMarkdown{Value: m.Markdown, IsMarkdown: true}
		return nil
	}
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = StringOrMarkdown{Value: v}
	return nil
}

// Response part kinds (ResponsePart.Kind).
const (
	PartMarkdown           = "markdown"
	PartContentRef         = "contentRef"
	PartToolCall           = "toolCall"
	PartReasoning          = "reasoning"
	PartSystemNotification = "systemNotification"
	PartInputRequest       = "inputRequest"
	PartError              = "error"
)

// ResponsePart is one part of a turn's response: a union on Kind held in one
// struct. Which fields a kind uses:
//   - markdown, reasoning: ID, Content
//   - contentRef: URI, SizeHint, ContentType, Nonce
//   - toolCall: ToolCall (its ToolCallID identifies the part)
//   - systemNotification: Content (ContentIsMarkdown for {"markdown":...}), Meta
//   - inputRequest: Request, Response
//   - error: Error, Resumable
//
// A part of a kind ahpd does not know keeps its JSON in Raw and is written
// back unchanged.
type ResponsePart struct {
	Kind string

	ID                string
	Content           string
	ContentIsMarkdown bool

	URI         URI
	SizeHint    *int64
	ContentType string
	Nonce       string

	ToolCall *ToolCallState

	Request  *ChatInputRequest
	Response string

	Error     *ErrorInfo
	Resumable *bool

	Meta map[string]any

	Raw json.RawMessage

	// grown is the buffer AppendContent grows Content in; Content's bytes
	// are its first len(Content) bytes while the two agree.
	grown []byte
}

// AppendContent appends text to Content in amortized constant time, as a
// stream's deltas arrive: Content grows in a buffer of the part's own with
// room to spare, instead of being copied whole for every delta (a 2,000
// delta answer copied 130 MB). Only bytes past every string already taken
// from the buffer are ever written, so a Content read earlier (a snapshot
// being marshalled, a copy of the part) never changes; a part whose Content
// was set by other means starts a buffer of its own.
func (p *ResponsePart) AppendContent(text string) {
	if text == "" {
		return
	}
	n := len(p.Content)
	if n == 0 || len(p.grown) != n || unsafe.StringData(p.Content) != &p.grown[0] {
		buf := make([]byte, n, max(2*(n+len(text)), 64))
		copy(buf, p.Content)
		p.grown = buf
	}
	p.grown = append(p.grown, text...)
	p.Content = unsafe.String(&p.grown[0], len(p.grown))
}

// MarkdownPart returns a markdown part.
func MarkdownPart(id, content string) ResponsePart {
	return ResponsePart{Kind: PartMarkdown, ID: id, Content: content}
}

// ReasoningPart returns a reasoning part.
func ReasoningPart(id, content string) ResponsePart {
	return ResponsePart{Kind: PartReasoning, ID: id, Content: content}
}

// SystemNotificationPart returns a plain-text system notification part.
func SystemNotificationPart(content string, meta map[string]any) ResponsePart {
	return ResponsePart{Kind: PartSystemNotification, Content: content, Meta: meta}
}

// ToolCallPart returns a tool call part.
func ToolCallPart(tc *ToolCallState) ResponsePart {
	return ResponsePart{Kind: PartToolCall, ToolCall: tc}
}

// ErrorPart returns an error part. Only resumable=true is written; false
// leaves the key out.
func ErrorPart(info ErrorInfo, resumable bool) ResponsePart {
	p := ResponsePart{Kind: PartError, Error: &info}
	if resumable {
		t := true
		p.Resumable = &t
	}
	return p
}

// IsResumableError reports whether p is an error part with resumable:true.
func (p *ResponsePart) IsResumableError() bool {
	return p.Kind == PartError && p.Resumable != nil && *p.Resumable
}

// MarshalJSON writes exactly the keys of p's kind.
func (p ResponsePart) MarshalJSON() ([]byte, error) {
	switch p.Kind {
	case PartMarkdown, PartReasoning:
		return json.Marshal(struct {
			Kind    string `json:"kind"`
			ID      string `json:"id"`
			Content string `json:"content"`
		}{p.Kind, p.ID, p.Content})
	case PartContentRef:
		return json.Marshal(struct {
			Kind        string `json:"kind"`
			URI         URI    `json:"uri"`
			SizeHint    *int64 `json:"sizeHint,omitempty"`
			ContentType string `json:"contentType,omitempty"`
			Nonce       string `json:"nonce,omitempty"`
		}{p.Kind, p.URI, p.SizeHint, p.ContentType, p.Nonce})
	case PartToolCall:
		tc := p.ToolCall
		if tc == nil {
			tc = &ToolCallState{}
		}
		return json.Marshal(struct {
			Kind     string         `json:"kind"`
			ToolCall *ToolCallState `json:"toolCall"`
		}{p.Kind, tc})
	case PartSystemNotification:
		return json.Marshal(struct {
			Kind    string           `json:"kind"`
			Content StringOrMarkdown `json:"content"`
			Meta    map[string]any   `json:"_meta,omitempty"`
		}{p.Kind, StringOrMarkdown{p.Content, p.ContentIsMarkdown}, p.Meta})
	case PartInputRequest:
		req := p.Request
		if req == nil {
			req = &ChatInputRequest{}
		}
		return json.Marshal(struct {
			Kind     string            `json:"kind"`
			Request  *ChatInputRequest `json:"request"`
			Response string            `json:"response,omitempty"`
		}{p.Kind, req, p.Response})
	case PartError:
		info := p.Error
		if info == nil {
			info = &ErrorInfo{}
		}
		return json.Marshal(struct {
			Kind      string     `json:"kind"`
			Error     *ErrorInfo `json:"error"`
			Resumable *bool      `json:"resumable,omitempty"`
		}{p.Kind, info, p.Resumable})
	}
	if len(p.Raw) > 0 {
		return p.Raw, nil
	}
	return json.Marshal(struct {
		Kind string `json:"kind"`
	}{p.Kind})
}

// UnmarshalJSON reads any response part; unknown kinds keep their JSON in Raw.
func (p *ResponsePart) UnmarshalJSON(b []byte) error {
	var w struct {
		Kind        string            `json:"kind"`
		ID          string            `json:"id"`
		Content     json.RawMessage   `json:"content"`
		URI         URI               `json:"uri"`
		SizeHint    *int64            `json:"sizeHint"`
		ContentType string            `json:"contentType"`
		Nonce       string            `json:"nonce"`
		ToolCall    *ToolCallState    `json:"toolCall"`
		Request     *ChatInputRequest `json:"request"`
		Response    string            `json:"response"`
		Error       *ErrorInfo        `json:"error"`
		Resumable   *bool             `json:"resumable"`
		Meta        map[string]any    `json:"_meta"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*p = ResponsePart{Kind: w.Kind}
	switch w.Kind {
	case PartMarkdown, PartReasoning:
		p.ID = w.ID
		if len(w.Content) > 0 && string(w.Content) != "null" {
			if err := json.Unmarshal(w.Content, &p.Content); err != nil {
				return fmt.Errorf("%s part content: %w", w.Kind, err)
			}
		}
	case PartContentRef:
		p.URI, p.SizeHint, p.ContentType, p.Nonce = w.URI, w.SizeHint, w.ContentType, w.Nonce
	case PartToolCall:
		p.ToolCall = w.ToolCall
	case PartSystemNotification:
		if len(w.Content) > 0 && string(w.Content) != "null" {
			var sm StringOrMarkdown
			if err := json.Unmarshal(w.Content, &sm); err != nil {
				return fmt.Errorf("systemNotification part content: %w", err)
			}
			p.Content, p.ContentIsMarkdown = sm.Value, sm.IsMarkdown
		}
		p.Meta = w.Meta
	case PartInputRequest:
		p.Request, p.Response = w.Request, w.Response
	case PartError:
		p.Error, p.Resumable = w.Error, w.Resumable
	default:
		p.Raw = append(json.RawMessage(nil), b...)
	}
	return nil
}

// Tool call statuses (ToolCallState.Status).
const (
	ToolStreaming                 = "streaming"
	ToolPendingConfirmation       = "pending-confirmation"
	ToolRunning                   = "running"
	ToolAuthRequired              = "auth-required"
	ToolPendingResultConfirmation = "pending-result-confirmation"
	ToolCompleted                 = "completed"
	ToolCancelled                 = "cancelled"
)

// How a tool call was confirmed (ToolCallState.Confirmed).
const (
	ConfirmedNotNeeded  = "not-needed"
	ConfirmedUserAction = "user-action"
	ConfirmedSetting    = "setting"
)

// Why a tool call was cancelled (ToolCallState.Reason).
const (
	CancelDenied       = "denied"
	CancelSkipped      = "skipped"
	CancelResultDenied = "result-denied"
)

// ToolCallState is the lifecycle state of a tool call, flattened: the wire
// union on Status is one struct, and each status uses a subset of fields.
//   - streaming: PartialInput, InvocationMessage?
//   - pending-confirmation: InvocationMessage, ToolInput, ConfirmationTitle,
//     RiskAssessment, Edits, Editable, Options
//   - running / auth-required: Confirmed, SelectedOption, Content (+ Auth)
//   - pending-result-confirmation / completed: Success, PastTenseMessage,
//     Content, StructuredContent, Error, Confirmed, SelectedOption
//   - cancelled: Reason, ReasonMessage, UserSuggestion, SelectedOption
type ToolCallState struct {
	Status            string               `json:"status"`
	ToolCallID        string               `json:"toolCallId"`
	ToolName          string               `json:"toolName"`
	DisplayName       string               `json:"displayName"`
	Intention         string               `json:"intention,omitempty"`
	Contributor       *ToolCallContributor `json:"contributor,omitempty"`
	Meta              map[string]any       `json:"_meta,omitempty"`
	PartialInput      *string              `json:"partialInput,omitempty"`
	InvocationMessage *StringOrMarkdown    `json:"invocationMessage,omitempty"`
	// ToolInput is a string or a ContentRef object, kept verbatim.
	ToolInput         json.RawMessage         `json:"toolInput,omitempty"`
	ConfirmationTitle *StringOrMarkdown       `json:"confirmationTitle,omitempty"`
	RiskAssessment    *ToolCallRiskAssessment `json:"riskAssessment,omitempty"`
	Edits             json.RawMessage         `json:"edits,omitempty"`
	Editable          *bool                   `json:"editable,omitempty"`
	Options           []ConfirmationOption    `json:"options,omitempty"`
	Confirmed         string                  `json:"confirmed,omitempty"`
	SelectedOption    *ConfirmationOption     `json:"selectedOption,omitempty"`
	Auth              *McpAuthRequirement     `json:"auth,omitempty"`
	Success           *bool                   `json:"success,omitempty"`
	PastTenseMessage  *StringOrMarkdown       `json:"pastTenseMessage,omitempty"`
	Content           []ToolResultContent     `json:"content,omitempty"`
	StructuredContent map[string]any          `json:"structuredContent,omitempty"`
	Error             json.RawMessage         `json:"error,omitempty"`
	Reason            string                  `json:"reason,omitempty"`
	ReasonMessage     *StringOrMarkdown       `json:"reasonMessage,omitempty"`
	UserSuggestion    *Message                `json:"userSuggestion,omitempty"`
}

// ToolInputString returns ToolInput as JSON text for a string value.
func ToolInputString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// ToolCallContributor says who implements a tool: {kind:"client", clientId}
// or {kind:"mcp", customizationId}.
type ToolCallContributor struct {
	Kind            string `json:"kind"`
	ClientID        string `json:"clientId,omitempty"`
	CustomizationID string `json:"customizationId,omitempty"`
}

// Tool call contributor kinds.
const (
	ContributorClient = "client"
	ContributorMCP    = "mcp"
)

// ToolCallRiskAssessment is a model judge's assessment: status "loading" or
// "complete" (with Reason and Safety).
type ToolCallRiskAssessment struct {
	Kind   string            `json:"kind"`
	Status string            `json:"status"`
	Reason *StringOrMarkdown `json:"reason,omitempty"`
	Safety *float64          `json:"safety,omitempty"`
}

// ConfirmationOption is a richer approve/deny choice.
type ConfirmationOption struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Kind  string `json:"kind"`
	Group *int   `json:"group,omitempty"`
}

// McpAuthRequirement is the authentication challenge of an auth-required
// tool call.
type McpAuthRequirement struct {
	Reason         string                    `json:"reason"`
	Resource       ProtectedResourceMetadata `json:"resource"`
	RequiredScopes []string                  `json:"requiredScopes,omitempty"`
	Description    string                    `json:"description,omitempty"`
}

// Tool result content types (ToolResultContent.Type).
const (
	ContentText             = "text"
	ContentEmbeddedResource = "embeddedResource"
	ContentResource         = "resource"
	ContentFileEdit         = "fileEdit"
	ContentTerminal         = "terminal"
	ContentSubagent         = "subagent"
)

// ToolResultContent is a content block of a tool result: a union on Type in
// one struct.
//   - text: Text
//   - embeddedResource: Data, ContentType
//   - resource: URI, SizeHint, ContentType, Nonce
//   - fileEdit: Before, After, Diff (verbatim JSON)
//   - terminal: Resource, Title, IsPty, Result (verbatim JSON)
//   - subagent: Resource, Title, AgentName, Description
type ToolResultContent struct {
	Type        string          `json:"type"`
	Text        string          `json:"text,omitempty"`
	Data        string          `json:"data,omitempty"`
	ContentType string          `json:"contentType,omitempty"`
	URI         URI             `json:"uri,omitempty"`
	SizeHint    *int64          `json:"sizeHint,omitempty"`
	Nonce       string          `json:"nonce,omitempty"`
	Before      json.RawMessage `json:"before,omitempty"`
	After       json.RawMessage `json:"after,omitempty"`
	Diff        json.RawMessage `json:"diff,omitempty"`
	Resource    URI             `json:"resource,omitempty"`
	Title       string          `json:"title,omitempty"`
	IsPty       *bool           `json:"isPty,omitempty"`
	Result      json.RawMessage `json:"result,omitempty"`
	AgentName   string          `json:"agentName,omitempty"`
	Description string          `json:"description,omitempty"`
}

// MarshalJSON keeps the required "text" key of an empty text block.
func (c ToolResultContent) MarshalJSON() ([]byte, error) {
	type plain ToolResultContent
	if c.Type == ContentText && c.Text == "" {
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{c.Type, ""})
	}
	return json.Marshal(plain(c))
}

// TextContent returns a text content block.
func TextContent(text string) ToolResultContent {
	return ToolResultContent{Type: ContentText, Text: text}
}

// ToolCallResult is the result carried by chat/toolCallComplete.
type ToolCallResult struct {
	Success           bool                `json:"success"`
	PastTenseMessage  *StringOrMarkdown   `json:"pastTenseMessage,omitempty"`
	Content           []ToolResultContent `json:"content,omitempty"`
	StructuredContent map[string]any      `json:"structuredContent,omitempty"`
	Error             json.RawMessage     `json:"error,omitempty"`
}

// ChatInputRequest is an elicitation carried by an inputRequest part.
type ChatInputRequest struct {
	ID        string                     `json:"id"`
	Message   string                     `json:"message,omitempty"`
	URL       string                     `json:"url,omitempty"`
	Questions []ChatInputQuestion        `json:"questions,omitempty"`
	Answers   map[string]ChatInputAnswer `json:"answers,omitempty"`
}

// ChatInputQuestion is a question of an input request: a union on Kind
// ("text", "number", "integer", "boolean", "single-select",
// "multi-select") in one struct. DefaultValue is kept verbatim.
type ChatInputQuestion struct {
	ID                 string            `json:"id"`
	Kind               string            `json:"kind"`
	Title              string            `json:"title,omitempty"`
	Message            string            `json:"message"`
	Required           *bool             `json:"required,omitempty"`
	Format             string            `json:"format,omitempty"`
	Min                *float64          `json:"min,omitempty"`
	Max                *float64          `json:"max,omitempty"`
	DefaultValue       json.RawMessage   `json:"defaultValue,omitempty"`
	Options            []ChatInputOption `json:"options,omitempty"`
	AllowFreeformInput *bool             `json:"allowFreeformInput,omitempty"`
}

// ChatInputOption is a choice of a select question.
type ChatInputOption struct {
	ID          string `json:"id"`
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
	Recommended *bool  `json:"recommended,omitempty"`
}

// ChatInputAnswer is a draft, submitted or skipped answer.
type ChatInputAnswer struct {
	State          string                `json:"state"`
	Value          *ChatInputAnswerValue `json:"value,omitempty"`
	FreeformValues []string              `json:"freeformValues,omitempty"`
}

// ChatInputAnswerValue is an answer's value; Value is kept verbatim (string,
// number, boolean or string array by Kind).
type ChatInputAnswerValue struct {
	Kind           string          `json:"kind"`
	Value          json.RawMessage `json:"value"`
	FreeformValues []string        `json:"freeformValues,omitempty"`
}
