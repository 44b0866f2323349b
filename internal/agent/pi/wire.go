package pi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/ahpd/ahpd/internal/agent"
)

// outLine is one line pi prints: a response to a command, or an event.
type outLine struct {
	Type string `json:"type"`
	// Responses.
	ID      string          `json:"id"`
	Command string          `json:"command"`
	Success bool            `json:"success"`
	Error   string          `json:"error"`
	Data    json.RawMessage `json:"data"`
	// message_start, message_update, message_end.
	Message *agentMessage `json:"message"`
	Event   *messageEvent `json:"assistantMessageEvent"`
	// tool_execution_*.
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Args       json.RawMessage `json:"args"`
	Result     *toolResult     `json:"result"`
	IsError    bool            `json:"isError"`
	// queue_update.
	Steering []string `json:"steering"`
	FollowUp []string `json:"followUp"`
	// compaction_end, auto_retry_*, extension_*.
	Reason     string `json:"reason"`
	Aborted    bool   `json:"aborted"`
	ErrorMsg   string `json:"errorMessage"`
	Attempt    int    `json:"attempt"`
	MaxAttempt int    `json:"maxAttempts"`
	Method     string `json:"method"`
}

// agentMessage is the part of pi's AgentMessage the backend reads.
type agentMessage struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	Provider     string          `json:"provider"`
	Model        string          `json:"model"`
	Usage        *usage          `json:"usage"`
	StopReason   string          `json:"stopReason"`
	ErrorMessage string          `json:"errorMessage"`
	ToolCallID   string          `json:"toolCallId"`
	ToolName     string          `json:"toolName"`
	IsError      bool            `json:"isError"`
	// Summary and TokensBefore are a compactionSummary message's.
	Summary      string `json:"summary"`
	TokensBefore int    `json:"tokensBefore"`
}

type usage struct {
	Input     int `json:"input"`
	Output    int `json:"output"`
	CacheRead int `json:"cacheRead"`
}

// block is one content block of a message.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// blocks decodes a message's content: a string or a list of blocks.
func (m *agentMessage) blocks() []block {
	return contentBlocks(m.Content)
}

func contentBlocks(raw json.RawMessage) []block {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	var bs []block
	_ = json.Unmarshal(raw, &bs)
	return bs
}

// text is the message's text blocks joined.
func (m *agentMessage) text() string {
	var out []string
	for _, b := range m.blocks() {
		if b.Type == "text" && b.Text != "" {
			out = append(out, b.Text)
		}
	}
	return strings.Join(out, "\n")
}

// messageEvent is a message_update's assistantMessageEvent.
type messageEvent struct {
	Type         string          `json:"type"`
	ContentIndex int             `json:"contentIndex"`
	Delta        string          `json:"delta"`
	Partial      json.RawMessage `json:"partial"`
	ToolCall     *block          `json:"toolCall"`
}

// partialBlock is the content block contentIndex of the event's partial
// message (a tool call's id and name at toolcall_start).
func (e *messageEvent) partialBlock() block {
	var m struct {
		Content []block `json:"content"`
	}
	if json.Unmarshal(e.Partial, &m) != nil || e.ContentIndex < 0 || e.ContentIndex >= len(m.Content) {
		return block{}
	}
	return m.Content[e.ContentIndex]
}

type toolResult struct {
	Content json.RawMessage `json:"content"`
}

func (r *toolResult) text() string {
	if r == nil {
		return ""
	}
	var out []string
	for _, b := range contentBlocks(r.Content) {
		if b.Type == "text" {
			out = append(out, b.Text)
		}
	}
	return strings.Join(out, "")
}

type compactionResult struct {
	Summary      string `json:"summary"`
	TokensBefore int    `json:"tokensBefore"`
}

// compactionEnd is compaction_end's result.
type compactionEnd struct {
	Result *compactionResult `json:"result"`
}

// stateData is get_state's data.
type stateData struct {
	Model *struct {
		ID       string `json:"id"`
		Provider string `json:"provider"`
	} `json:"model"`
	SessionFile string `json:"sessionFile"`
	SessionID   string `json:"sessionId"`
	IsStreaming bool   `json:"isStreaming"`
}

// image is an entry of a prompt's images.
type image struct {
	Type     string `json:"type"`
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
}

// Host context and attachments are wrapped in tags in the prompt, so a
// read-back can tell them from what was said.
const (
	hostContextOpen  = "<host-context>\n"
	hostContextClose = "\n</host-context>"
)

var (
	hostContextRE = regexp.MustCompile(`(?s)<host-context>\n.*?\n</host-context>\s*`)
	attachmentRE  = regexp.MustCompile(`(?s)\s*(<attachment label="[^"]*" path="[^"]*" />|<attachment label="[^"]*" path="[^"]*">\n.*?\n</attachment>)`)
)

// promptOf is a turn's prompt: what the host has to say first
// (C-TURN-111), then what was said, then the attachments: inlined text in
// an attachment tag, a path as a tag naming it (pi reads it with its read
// tool), an image in the prompt's images.
func promptOf(t agent.Turn) (string, []image) {
	var b strings.Builder
	if t.HostContext != "" {
		b.WriteString(hostContextOpen + t.HostContext + hostContextClose + "\n\n")
	}
	b.WriteString(t.Text)
	var imgs []image
	for _, a := range t.Attachments {
		switch {
		case a.As == "image" && len(a.Data) > 0:
			imgs = append(imgs, image{Type: "image", Data: base64.StdEncoding.EncodeToString(a.Data), MimeType: a.MimeType})
		case a.As == "inline":
			fmt.Fprintf(&b, "\n\n<attachment label=%q path=%q>\n%s\n</attachment>", a.Label, a.Path, a.Text)
		default:
			fmt.Fprintf(&b, "\n\n<attachment label=%q path=%q />", a.Label, a.Path)
		}
	}
	return b.String(), imgs
}

// saidOf is what was said in a prompt read back: the host's context and
// the attachments taken out.
func saidOf(prompt string) string {
	s := hostContextRE.ReplaceAllString(prompt, "")
	s = attachmentRE.ReplaceAllString(s, "")
	return strings.TrimSpace(s)
}
