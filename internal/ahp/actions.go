package ahp

//go:generate go run ./internal/actiongen/cmd/actiongen

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Action is a state action: one struct per action type, each a value type
// (reducers switch on the value, e.g. `case ahp.ChatDelta:`). Marshalling an
// action writes its "type" key; DecodeAction reads one back.
type Action interface {
	ActionType() string
}

// ---------------------------------------------------------------------------
// Root actions

// RootAgentsChanged replaces RootState.agents.
type RootAgentsChanged struct {
	Agents []AgentInfo `json:"agents"`
}

// RootActiveSessionsChanged sets RootState.activeSessions.
type RootActiveSessionsChanged struct {
	ActiveSessions int `json:"activeSessions"`
}

// RootTerminalsChanged replaces RootState.terminals.
type RootTerminalsChanged struct {
	Terminals []TerminalInfo `json:"terminals"`
}

// RootConfigChanged merges Config into RootState.config.values, or replaces
// them when Replace.
type RootConfigChanged struct {
	Config  map[string]any `json:"config"`
	Replace bool           `json:"replace,omitempty"`
}

// ---------------------------------------------------------------------------
// Session actions

// SessionReady: the session backend is up (lifecycle → ready).
type SessionReady struct{}

// SessionCreationFailed: the session backend failed (lifecycle → failed).
type SessionCreationFailed struct {
	Error ErrorInfo `json:"error"`
}

// SessionTitleChanged renames the session.
type SessionTitleChanged struct {
	Title string `json:"title"`
}

// SessionChatAdded upserts a chat in SessionState.chats by resource.
type SessionChatAdded struct {
	Summary ChatSummary `json:"summary"`
}

// SessionChatRemoved removes a chat from the catalogue.
type SessionChatRemoved struct {
	Chat URI `json:"chat"`
}

// SessionChatUpdated merges Changes into a chat's summary.
type SessionChatUpdated struct {
	Chat    URI                `json:"chat"`
	Changes PartialChatSummary `json:"changes"`
}

// SessionChatsReordered sets the complete catalogue order (0.9.0).
type SessionChatsReordered struct {
	Chats []URI `json:"chats"`
}

// SessionDefaultChatChanged sets the default chat; empty clears it.
type SessionDefaultChatChanged struct {
	DefaultChat URI `json:"defaultChat,omitempty"`
}

// SessionIsReadChanged flips the IsRead status bit.
type SessionIsReadChanged struct {
	IsRead bool `json:"isRead"`
}

// SessionIsArchivedChanged flips the IsArchived status bit.
type SessionIsArchivedChanged struct {
	IsArchived bool `json:"isArchived"`
}

// SessionActivityChanged sets the activity text; empty clears it.
type SessionActivityChanged struct {
	Activity string `json:"activity,omitempty"`
}

// SessionWorkingDirectorySet adds a working directory (no-op if present).
type SessionWorkingDirectorySet struct {
	Directory URI `json:"directory"`
}

// SessionWorkingDirectoryRemoved removes a working directory.
type SessionWorkingDirectoryRemoved struct {
	Directory URI `json:"directory"`
}

// SessionWorkingDirectoryReplaced swaps Directory for Replacement in place.
type SessionWorkingDirectoryReplaced struct {
	Directory   URI `json:"directory"`
	Replacement URI `json:"replacement"`
}

// SessionActiveClientSet upserts an active client by clientId.
type SessionActiveClientSet struct {
	ActiveClient ActiveClient `json:"activeClient"`
}

// SessionActiveClientRemoved removes an active client.
type SessionActiveClientRemoved struct {
	ClientID string `json:"clientId"`
}

// SessionConfigChanged merges Config into config.values (replaces when
// Replace).
type SessionConfigChanged struct {
	Config  map[string]any `json:"config"`
	Replace bool           `json:"replace,omitempty"`
}

// SessionMetaChanged replaces SessionState._meta.
type SessionMetaChanged struct {
	Meta map[string]any `json:"_meta,omitempty"`
}

// SessionInputNeededSet upserts an inputNeeded entry by id.
type SessionInputNeededSet struct {
	Request SessionInputRequest `json:"request"`
}

// SessionInputNeededRemoved removes an inputNeeded entry by id.
type SessionInputNeededRemoved struct {
	ID string `json:"id"`
}

// SessionServerToolsChanged replaces serverTools.
type SessionServerToolsChanged struct {
	Tools []ToolDefinition `json:"tools"`
}

// SessionCustomizationsChanged replaces customizations.
type SessionCustomizationsChanged struct {
	Customizations []Customization `json:"customizations"`
}

// SessionCustomizationToggled enables or disables a customization by id.
// Enabled is the 0.8 form; Enablement (1.0) is kept verbatim.
type SessionCustomizationToggled struct {
	ID         string          `json:"id"`
	Enabled    *bool           `json:"enabled,omitempty"`
	Enablement json.RawMessage `json:"enablement,omitempty"`
}

// SessionCustomizationUpdated upserts a top-level customization by id.
type SessionCustomizationUpdated struct {
	Customization Customization `json:"customization"`
}

// SessionCustomizationRemoved removes a customization (or child) by id.
type SessionCustomizationRemoved struct {
	ID string `json:"id"`
}

// SessionMcpServerStateChanged sets an MCP server's state and channel.
type SessionMcpServerStateChanged struct {
	ID      string         `json:"id"`
	State   map[string]any `json:"state"`
	Channel URI            `json:"channel,omitempty"`
}

// SessionMcpServerStartRequested asks the host to start an MCP server.
type SessionMcpServerStartRequested struct {
	ID string `json:"id"`
}

// SessionMcpServerStopRequested asks the host to stop an MCP server.
type SessionMcpServerStopRequested struct {
	ID string `json:"id"`
}

// SessionMcpServerBackgroundRequested asks the host to stop blocking on a
// starting MCP server.
type SessionMcpServerBackgroundRequested struct {
	ID string `json:"id"`
}

// SessionChangesetsChanged replaces the session's changeset catalogue.
type SessionChangesetsChanged struct {
	Changesets []Changeset `json:"changesets,omitempty"`
}

// ---------------------------------------------------------------------------
// Chat actions

// ChatTurnStarted starts a turn. It is a no-op when TurnID is already the
// active turn or a finished turn (AHP-1.0.md §5).
type ChatTurnStarted struct {
	TurnID          string         `json:"turnId"`
	StartedAt       string         `json:"startedAt"`
	Message         Message        `json:"message"`
	QueuedMessageID string         `json:"queuedMessageId,omitempty"`
	Meta            map[string]any `json:"_meta,omitempty"`
}

// ChatDelta appends text to a markdown part.
type ChatDelta struct {
	TurnID  string         `json:"turnId"`
	PartID  string         `json:"partId"`
	Content string         `json:"content"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// ChatResponsePart appends a part to the active turn. Error parts are
// ignored here; they travel in ChatError.
type ChatResponsePart struct {
	TurnID string         `json:"turnId"`
	Part   ResponsePart   `json:"part"`
	Meta   map[string]any `json:"_meta,omitempty"`
}

// ChatReasoning appends text to a reasoning part.
type ChatReasoning struct {
	TurnID  string         `json:"turnId"`
	PartID  string         `json:"partId"`
	Content string         `json:"content"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// ChatUsage sets the active turn's usage.
type ChatUsage struct {
	TurnID string         `json:"turnId"`
	Usage  UsageInfo      `json:"usage"`
	Meta   map[string]any `json:"_meta,omitempty"`
}

// ChatToolCallStart adds a streaming tool call part.
type ChatToolCallStart struct {
	TurnID      string               `json:"turnId"`
	ToolCallID  string               `json:"toolCallId"`
	ToolName    string               `json:"toolName"`
	DisplayName string               `json:"displayName"`
	Intention   string               `json:"intention,omitempty"`
	Contributor *ToolCallContributor `json:"contributor,omitempty"`
	Meta        map[string]any       `json:"_meta,omitempty"`
}

// ChatToolCallDelta streams partial tool input.
type ChatToolCallDelta struct {
	TurnID            string            `json:"turnId"`
	ToolCallID        string            `json:"toolCallId"`
	Content           string            `json:"content,omitempty"`
	InvocationMessage *StringOrMarkdown `json:"invocationMessage,omitempty"`
	Meta              map[string]any    `json:"_meta,omitempty"`
}

// ChatToolCallReady completes a tool call's input (→ pending-confirmation,
// or running when Confirmed is set) or asks a running tool to re-confirm.
type ChatToolCallReady struct {
	TurnID            string                  `json:"turnId"`
	ToolCallID        string                  `json:"toolCallId"`
	InvocationMessage *StringOrMarkdown       `json:"invocationMessage,omitempty"`
	ToolInput         json.RawMessage         `json:"toolInput,omitempty"`
	ConfirmationTitle *StringOrMarkdown       `json:"confirmationTitle,omitempty"`
	RiskAssessment    *ToolCallRiskAssessment `json:"riskAssessment,omitempty"`
	Edits             json.RawMessage         `json:"edits,omitempty"`
	Editable          *bool                   `json:"editable,omitempty"`
	Confirmed         string                  `json:"confirmed,omitempty"`
	Options           []ConfirmationOption    `json:"options,omitempty"`
	Intention         string                  `json:"intention,omitempty"`
	Contributor       *ToolCallContributor    `json:"contributor,omitempty"`
	Meta              map[string]any          `json:"_meta,omitempty"`
}

// ChatToolCallConfirmed approves (→ running) or denies (→ cancelled) a
// pending tool call.
type ChatToolCallConfirmed struct {
	TurnID           string            `json:"turnId"`
	ToolCallID       string            `json:"toolCallId"`
	Approved         bool              `json:"approved"`
	Confirmed        string            `json:"confirmed,omitempty"`
	Reason           string            `json:"reason,omitempty"`
	EditedToolInput  *string           `json:"editedToolInput,omitempty"`
	UserSuggestion   *Message          `json:"userSuggestion,omitempty"`
	ReasonMessage    *StringOrMarkdown `json:"reasonMessage,omitempty"`
	SelectedOptionID string            `json:"selectedOptionId,omitempty"`
	Meta             map[string]any    `json:"_meta,omitempty"`
}

// ChatToolCallComplete finishes a tool call (→ completed, or
// pending-result-confirmation).
type ChatToolCallComplete struct {
	TurnID                     string         `json:"turnId"`
	ToolCallID                 string         `json:"toolCallId"`
	Result                     ToolCallResult `json:"result"`
	RequiresResultConfirmation bool           `json:"requiresResultConfirmation,omitempty"`
	Meta                       map[string]any `json:"_meta,omitempty"`
}

// ChatToolCallResultConfirmed approves or denies a tool result.
type ChatToolCallResultConfirmed struct {
	TurnID     string         `json:"turnId"`
	ToolCallID string         `json:"toolCallId"`
	Approved   bool           `json:"approved"`
	Meta       map[string]any `json:"_meta,omitempty"`
}

// ChatToolCallContentChanged replaces a running tool call's partial content.
type ChatToolCallContentChanged struct {
	TurnID     string              `json:"turnId"`
	ToolCallID string              `json:"toolCallId"`
	Content    []ToolResultContent `json:"content"`
	Meta       map[string]any      `json:"_meta,omitempty"`
}

// ChatToolCallAuthRequired pauses a running MCP tool call for auth.
type ChatToolCallAuthRequired struct {
	TurnID     string             `json:"turnId"`
	ToolCallID string             `json:"toolCallId"`
	Auth       McpAuthRequirement `json:"auth"`
	Meta       map[string]any     `json:"_meta,omitempty"`
}

// ChatToolCallAuthResolved resumes an auth-required tool call.
type ChatToolCallAuthResolved struct {
	TurnID     string         `json:"turnId"`
	ToolCallID string         `json:"toolCallId"`
	Meta       map[string]any `json:"_meta,omitempty"`
}

// ChatTurnComplete ends the active turn normally. Duration is required.
type ChatTurnComplete struct {
	TurnID   string         `json:"turnId"`
	Duration int64          `json:"duration"`
	Meta     map[string]any `json:"_meta,omitempty"`
}

// ChatTurnCancelled ends the active turn as cancelled. Duration is required.
type ChatTurnCancelled struct {
	TurnID   string         `json:"turnId"`
	Duration int64          `json:"duration"`
	Meta     map[string]any `json:"_meta,omitempty"`
}

// ChatError appends an error part and ends the turn with state "error"
// (AHP-1.0.md §2). Part has kind "error". Decoding also accepts the 0.8
// form with a top-level "error" object, turning it into a non-resumable
// error part; encoding always writes the 1.0 form.
type ChatError struct {
	TurnID   string         `json:"turnId"`
	Duration int64          `json:"duration"`
	Part     ResponsePart   `json:"part"`
	Meta     map[string]any `json:"_meta,omitempty"`
}

// UnmarshalJSON reads the 1.0 form and the legacy 0.8 {error} form.
func (a *ChatError) UnmarshalJSON(b []byte) error {
	var w struct {
		TurnID   string          `json:"turnId"`
		Duration int64           `json:"duration"`
		Part     json.RawMessage `json:"part"`
		Error    *ErrorInfo      `json:"error"`
		Meta     map[string]any  `json:"_meta"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*a = ChatError{TurnID: w.TurnID, Duration: w.Duration, Meta: w.Meta}
	switch {
	case len(w.Part) > 0 && string(w.Part) != "null":
		if err := json.Unmarshal(w.Part, &a.Part); err != nil {
			return fmt.Errorf("part: %w", err)
		}
		if a.Part.Kind == "" {
			a.Part.Kind = PartError
		}
	case w.Error != nil:
		a.Part = ErrorPart(*w.Error, false)
	default:
		a.Part = ResponsePart{Kind: PartError, Error: &ErrorInfo{}}
	}
	return nil
}

// ChatTurnResume reopens the latest errored turn (AHP-1.0.md §3).
type ChatTurnResume struct {
	TurnID string `json:"turnId"`
}

// ChatPendingMessageSet sets the steering message or upserts a queued one.
type ChatPendingMessageSet struct {
	Kind    string  `json:"kind"`
	ID      string  `json:"id"`
	Message Message `json:"message"`
}

// ChatPendingMessageRemoved removes a steering or queued message.
type ChatPendingMessageRemoved struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// ChatQueuedMessagesReordered reorders the queue by id.
type ChatQueuedMessagesReordered struct {
	Order []string `json:"order"`
}

// ChatDraftChanged sets the draft; nil clears it.
type ChatDraftChanged struct {
	Draft *Message `json:"draft,omitempty"`
}

// ChatTruncated keeps turns up to and including TurnID; empty clears all.
// The active turn is dropped.
type ChatTruncated struct {
	TurnID string `json:"turnId,omitempty"`
}

// ChatTurnsLoaded prepends older turns and replaces the cursor.
type ChatTurnsLoaded struct {
	Turns           []Turn  `json:"turns"`
	TurnsNextCursor *string `json:"turnsNextCursor,omitempty"`
}

// ChatActivityChanged sets the chat's activity text; empty clears it.
type ChatActivityChanged struct {
	Activity string `json:"activity,omitempty"`
}

// ChatWorkingDirectorySet adds a directory to the chat's subset.
type ChatWorkingDirectorySet struct {
	Directory URI `json:"directory"`
}

// ChatWorkingDirectoryRemoved removes a directory from the chat's subset.
type ChatWorkingDirectoryRemoved struct {
	Directory URI `json:"directory"`
}

// ChatIsReadChanged flips the chat's IsRead status bit (0.9.0).
type ChatIsReadChanged struct {
	IsRead bool `json:"isRead"`
}

// ChatIsArchivedChanged flips the chat's IsArchived status bit (0.9.0).
type ChatIsArchivedChanged struct {
	IsArchived bool `json:"isArchived"`
}

// ChatInputRequested creates or replaces an inputRequest part.
type ChatInputRequested struct {
	Request ChatInputRequest `json:"request"`
}

// ChatInputAnswerChanged sets or (nil Answer) clears one answer draft.
type ChatInputAnswerChanged struct {
	RequestID  string           `json:"requestId"`
	QuestionID string           `json:"questionId"`
	Answer     *ChatInputAnswer `json:"answer,omitempty"`
}

// ChatInputCompleted records the response to an input request.
type ChatInputCompleted struct {
	RequestID string                     `json:"requestId"`
	Response  string                     `json:"response"`
	Answers   map[string]ChatInputAnswer `json:"answers,omitempty"`
}

// ChatBackgroundWorkSet upserts background work by id.
type ChatBackgroundWorkSet struct {
	Work BackgroundWork `json:"work"`
}

// ChatBackgroundWorkRemoved removes background work by id.
type ChatBackgroundWorkRemoved struct {
	ID string `json:"id"`
}

// ChatMovableChanged sets ChatState.movable.
type ChatMovableChanged struct {
	Movable bool `json:"movable"`
}

// ChatChangesetsChanged replaces the chat's changeset catalogue.
type ChatChangesetsChanged struct {
	Changesets []Changeset `json:"changesets,omitempty"`
}

// ChatCanvasesChanged replaces ChatState.canvases (0.10.0), server-only: the
// chat's canvases in the order they were opened, absent when none.
type ChatCanvasesChanged struct {
	Canvases []CanvasReference `json:"canvases,omitempty"`
}

// CanvasStateChanged replaces a canvas channel's state (0.10.0): the whole
// CanvasState, server-only.
type CanvasStateChanged struct {
	Canvas CanvasState `json:"canvas"`
}

// UnknownAction is an action whose type ahpd does not know. Raw holds its
// JSON and is written back byte for byte. Reducers ignore it.
type UnknownAction struct {
	Type string
	Raw  json.RawMessage
}

// ActionType returns the action's type.
func (a UnknownAction) ActionType() string { return a.Type }

// MarshalJSON writes Raw unchanged, or {"type": Type} when Raw is empty.
func (a UnknownAction) MarshalJSON() ([]byte, error) {
	if len(a.Raw) > 0 {
		return a.Raw, nil
	}
	return json.Marshal(struct {
		Type string `json:"type"`
	}{a.Type})
}

// ---------------------------------------------------------------------------
// Encoding

// withType marshals v (a struct with no MarshalJSON of its own) and puts
// "type" first.
func withType(typ string, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	head, _ := json.Marshal(typ)
	var buf bytes.Buffer
	buf.Grow(len(body) + len(head) + 10)
	buf.WriteString(`{"type":`)
	buf.Write(head)
	if len(body) > 2 { // not "{}"
		buf.WriteByte(',')
		buf.Write(body[1:])
	} else {
		buf.WriteByte('}')
	}
	return buf.Bytes(), nil
}

type actionDecoder func(raw json.RawMessage) (Action, error)

// decodeAs decodes raw into a T. The "type" key is ignored by T.
func decodeAs[T Action](raw json.RawMessage) (Action, error) {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// DecodeAction decodes a state action by its "type". An unknown type gives an
// UnknownAction holding raw; malformed JSON, a missing type or a payload of
// the wrong shape gives an error wrapping ErrInvalidParams.
func DecodeAction(raw json.RawMessage) (Action, error) {
	var head struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, Errorf(ErrInvalidParams, "action: %v", err)
	}
	if head.Type == nil || *head.Type == "" {
		return nil, Errorf(ErrInvalidParams, "action.type: required")
	}
	dec, ok := actionDecoders[*head.Type]
	if !ok {
		return UnknownAction{Type: *head.Type, Raw: append(json.RawMessage(nil), raw...)}, nil
	}
	a, err := dec(raw)
	if err != nil {
		return nil, Errorf(ErrInvalidParams, "action %s: %v", *head.Type, err)
	}
	return a, nil
}

// KnownActionTypes returns every action type DecodeAction decodes into a
// struct (not UnknownAction).
func KnownActionTypes() []string {
	out := make([]string, 0, len(actionDecoders))
	for t := range actionDecoders {
		out = append(out, t)
	}
	return out
}

// ---------------------------------------------------------------------------
// ActionType and MarshalJSON of every action

// MarshalJSON writes the action with its type.
func (a RootAgentsChanged) MarshalJSON() ([]byte, error) {
	type plain RootAgentsChanged
	if a.Agents == nil {
		a.Agents = []AgentInfo{}
	}
	return withType(ActionRootAgentsChanged, plain(a))
}

// MarshalJSON writes the action with its type.
func (a RootTerminalsChanged) MarshalJSON() ([]byte, error) {
	type plain RootTerminalsChanged
	if a.Terminals == nil {
		a.Terminals = []TerminalInfo{}
	}
	return withType(ActionRootTerminalsChanged, plain(a))
}

// MarshalJSON writes the action with its type.
func (a SessionChatsReordered) MarshalJSON() ([]byte, error) {
	type plain SessionChatsReordered
	if a.Chats == nil {
		a.Chats = []URI{}
	}
	return withType(ActionSessionChatsReordered, plain(a))
}

// MarshalJSON writes the action with its type.
func (a SessionServerToolsChanged) MarshalJSON() ([]byte, error) {
	type plain SessionServerToolsChanged
	if a.Tools == nil {
		a.Tools = []ToolDefinition{}
	}
	return withType(ActionSessionServerToolsChanged, plain(a))
}

// MarshalJSON writes the action with its type.
func (a SessionCustomizationsChanged) MarshalJSON() ([]byte, error) {
	type plain SessionCustomizationsChanged
	if a.Customizations == nil {
		a.Customizations = []Customization{}
	}
	return withType(ActionSessionCustomizationsChanged, plain(a))
}

// MarshalJSON writes the action with its type.
func (a ChatToolCallContentChanged) MarshalJSON() ([]byte, error) {
	type plain ChatToolCallContentChanged
	if a.Content == nil {
		a.Content = []ToolResultContent{}
	}
	return withType(ActionChatToolCallContentChanged, plain(a))
}

// MarshalJSON writes the action with its type.
func (a ChatError) MarshalJSON() ([]byte, error) {
	type plain ChatError
	if a.Part.Kind == "" {
		a.Part.Kind = PartError
	}
	return withType(ActionChatError, plain(a))
}

// MarshalJSON writes the action with its type.
func (a ChatQueuedMessagesReordered) MarshalJSON() ([]byte, error) {
	type plain ChatQueuedMessagesReordered
	if a.Order == nil {
		a.Order = []string{}
	}
	return withType(ActionChatQueuedMessagesReordered, plain(a))
}

// MarshalJSON writes the action with its type.
func (a ChatTurnsLoaded) MarshalJSON() ([]byte, error) {
	type plain ChatTurnsLoaded
	if a.Turns == nil {
		a.Turns = []Turn{}
	}
	return withType(ActionChatTurnsLoaded, plain(a))
}
