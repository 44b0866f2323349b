package claude

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// This file holds the CLI's stream-json wire (stdin frames, stdout lines)
// and its transcript's message shapes, as measured against claude 2.1.197.

// outLine is one stdout line, every type's fields in one struct.
type outLine struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	UUID      string `json:"uuid"`
	// ParentToolUseID is set on a subagent's messages.
	ParentToolUseID *string `json:"parent_tool_use_id"`
	// IsReplay marks a user frame echoed as the CLI takes it in
	// (--replay-user-messages); UUID is the frame's own uuid.
	IsReplay bool `json:"isReplay"`

	// system/init
	Model string `json:"model"`
	// system/compact_boundary
	CompactMetadata *compactMetadata `json:"compact_metadata"`
	// system/api_retry
	Attempt     int `json:"attempt"`
	MaxRetries  int `json:"max_retries"`
	ErrorStatus int `json:"error_status"`

	// stream_event
	Event *streamEvent `json:"event"`
	// assistant, user
	Message *wireMessage `json:"message"`
	// Error is set on the CLI's synthetic assistant message for an API error.
	Error json.RawMessage `json:"error"`

	// result
	IsError        bool            `json:"is_error"`
	Result         string          `json:"result"`
	Errors         json.RawMessage `json:"errors"`
	APIErrorStatus *int            `json:"api_error_status"`
	TerminalReason string          `json:"terminal_reason"`

	// control_request, control_response
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Response  *struct {
		Subtype   string `json:"subtype"`
		RequestID string `json:"request_id"`
		Error     string `json:"error"`
		// Response is a success's payload: initialize answers the
		// session's commands.
		Response *struct {
			Commands []struct {
				Name        string `json:"name"`
				Description string `json:"description"`
			} `json:"commands"`
		} `json:"response"`
	} `json:"response"`
}

// streamEvent is a raw Anthropic SSE event inside a stream_event line.
type streamEvent struct {
	Type         string        `json:"type"`
	Index        int           `json:"index"`
	Message      *wireMessage  `json:"message"`
	ContentBlock *contentBlock `json:"content_block"`
	Delta        *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		PartialJSON string `json:"partial_json"`
	} `json:"delta"`
	Usage *wireUsage `json:"usage"`
}

// wireMessage is an Anthropic message as the CLI prints and stores it.
type wireMessage struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
	Usage   *wireUsage      `json:"usage"`
}

type wireUsage struct {
	InputTokens          int `json:"input_tokens"`
	OutputTokens         int `json:"output_tokens"`
	CacheReadInputTokens int `json:"cache_read_input_tokens"`
}

// contentBlock is one block of a message's content.
type contentBlock struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking string          `json:"thinking"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	// tool_result
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// toolResult is a tool_result block.
type toolResult = contentBlock

// blocks returns the content as blocks; string content is one text block.
func (m *wireMessage) blocks() []contentBlock {
	if m == nil || len(m.Content) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []contentBlock{{Type: "text", Text: s}}
	}
	var bs []contentBlock
	_ = json.Unmarshal(m.Content, &bs)
	return bs
}

// texts returns the text of the text blocks.
func (m *wireMessage) texts() []string {
	var out []string
	for _, b := range m.blocks() {
		if b.Type == "text" && b.Text != "" {
			out = append(out, b.Text)
		}
	}
	return out
}

// userContent splits a user message into what was said (host blocks left
// out) and its tool results.
func (m *wireMessage) userContent() (texts []string, results []toolResult) {
	for _, b := range m.blocks() {
		switch b.Type {
		case "text":
			if isHostBlock(b.Text) || strings.TrimSpace(b.Text) == "" {
				continue
			}
			texts = append(texts, b.Text)
		case "tool_result":
			results = append(results, b)
		}
	}
	return texts, results
}

func isHostBlock(text string) bool {
	for _, p := range hostBlockPrefixes {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return false
}

// text is a tool result's content as text.
func (b contentBlock) text() string {
	if len(b.Content) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var parts []contentBlock
	if json.Unmarshal(b.Content, &parts) == nil {
		var out []string
		for _, p := range parts {
			if p.Type == "text" {
				out = append(out, p.Text)
			}
		}
		return strings.Join(out, "\n")
	}
	return string(b.Content)
}

// compactMetadata describes a compaction; stdout spells it snake_case,
// the transcript camelCase.
type compactMetadata struct {
	Trigger         string `json:"trigger"`
	PreTokens       *int   `json:"pre_tokens"`
	PostTokens      *int   `json:"post_tokens"`
	PreTokensCamel  *int   `json:"preTokens"`
	PostTokensCamel *int   `json:"postTokens"`
}

// notice says what a compaction did, for a systemNotification part.
func (m *compactMetadata) notice() string {
	pre, post := m.PreTokens, m.PostTokens
	if pre == nil {
		pre = m.PreTokensCamel
	}
	if post == nil {
		post = m.PostTokensCamel
	}
	how := "Conversation compacted"
	if m.Trigger != "" {
		how += " (" + m.Trigger + ")"
	}
	switch {
	case pre != nil && post != nil:
		return fmt.Sprintf("%s: %d tokens before, %d after.", how, *pre, *post)
	case pre != nil:
		return fmt.Sprintf("%s: %d tokens before.", how, *pre)
	}
	return how + "."
}

// canUseTool is a can_use_tool control request.
type canUseTool struct {
	Subtype     string          `json:"subtype"`
	ToolName    string          `json:"tool_name"`
	DisplayName string          `json:"display_name"`
	Input       json.RawMessage `json:"input"`
	ToolUseID   string          `json:"tool_use_id"`
	Description string          `json:"description"`
}

// userFrame is a user message written to stdin: a turn's prompt or a
// steering message. UUID names the frame; the CLI echoes it on the replay
// and keeps it as the transcript entry's uuid.
type userFrame struct {
	Type            string      `json:"type"`
	Message         userMessage `json:"message"`
	ParentToolUseID *string     `json:"parent_tool_use_id"`
	SessionID       string      `json:"session_id"`
	UUID            string      `json:"uuid"`
}

type userMessage struct {
	Role string `json:"role"`
	// Content is a string or a list of content blocks.
	Content any `json:"content"`
}

type controlRequestFrame struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	Request   any    `json:"request"`
}

type controlResponseFrame struct {
	Type     string          `json:"type"`
	Response controlResponse `json:"response"`
}

type controlResponse struct {
	Subtype   string `json:"subtype"`
	RequestID string `json:"request_id"`
	Response  any    `json:"response,omitempty"`
	Error     string `json:"error,omitempty"`
}

// permissionAllow and permissionDeny answer can_use_tool.
type permissionAllow struct {
	Behavior     string          `json:"behavior"`
	UpdatedInput json.RawMessage `json:"updatedInput"`
}

type permissionDeny struct {
	Behavior  string `json:"behavior"`
	Message   string `json:"message"`
	Interrupt bool   `json:"interrupt,omitempty"`
}

// hasValue reports whether a raw field is present and not null.
func hasValue(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null"
}

// toolInputFields are the input fields invocation and pastTense read.
type toolInputFields struct {
	Command     string `json:"command"`
	Description string `json:"description"`
	FilePath    string `json:"file_path"`
	Path        string `json:"path"`
	Pattern     string `json:"pattern"`
	URL         string `json:"url"`
	Query       string `json:"query"`
}

// invocation is a one-line description of what a call does.
func invocation(name string, input json.RawMessage) string {
	var in toolInputFields
	_ = json.Unmarshal(input, &in)
	switch name {
	case "Bash":
		if in.Command != "" {
			return "Run `" + oneLine(in.Command) + "`"
		}
	case "Read", "Write", "Edit", "MultiEdit", "NotebookEdit":
		if p := firstNonEmpty(in.FilePath, in.Path); p != "" {
			return name + " " + p
		}
	case "Glob", "Grep":
		if in.Pattern != "" {
			return "Search for `" + oneLine(in.Pattern) + "`"
		}
	case "WebFetch":
		if in.URL != "" {
			return "Fetch " + in.URL
		}
	case "WebSearch":
		if in.Query != "" {
			return "Search the web for " + oneLine(in.Query)
		}
	case "Task", "Agent":
		if in.Description != "" {
			return "Run agent: " + oneLine(in.Description)
		}
	}
	return name
}

// pastTense describes what a finished call did.
func pastTense(name string, input json.RawMessage) string {
	var in toolInputFields
	_ = json.Unmarshal(input, &in)
	switch name {
	case "Bash":
		if in.Command != "" {
			return "Ran `" + oneLine(in.Command) + "`"
		}
	case "Read":
		return "Read " + firstNonEmpty(in.FilePath, in.Path, "a file")
	case "Write":
		return "Wrote " + firstNonEmpty(in.FilePath, in.Path, "a file")
	case "Edit", "MultiEdit", "NotebookEdit":
		return "Edited " + firstNonEmpty(in.FilePath, in.Path, "a file")
	case "Glob", "Grep":
		return "Searched for `" + oneLine(in.Pattern) + "`"
	case "WebFetch":
		return "Fetched " + in.URL
	case "WebSearch":
		return "Searched the web for " + oneLine(in.Query)
	case "Task", "Agent":
		return "Ran agent: " + oneLine(in.Description)
	}
	return "Used " + name
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > 200 {
		cut := 200
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
