package ahp

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

// Action type names.
const (
	ActionRootAgentsChanged         = "root/agentsChanged"
	ActionRootActiveSessionsChanged = "root/activeSessionsChanged"
	ActionRootTerminalsChanged      = "root/terminalsChanged"
	ActionRootConfigChanged         = "root/configChanged"

	ActionSessionReady                        = "session/ready"
	ActionSessionCreationFailed               = "session/creationFailed"
	ActionSessionTitleChanged                 = "session/titleChanged"
	ActionSessionChatAdded                    = "session/chatAdded"
	ActionSessionChatRemoved                  = "session/chatRemoved"
	ActionSessionChatUpdated                  = "session/chatUpdated"
	ActionSessionChatsReordered               = "session/chatsReordered"
	ActionSessionDefaultChatChanged           = "session/defaultChatChanged"
	ActionSessionIsReadChanged                = "session/isReadChanged"
	ActionSessionIsArchivedChanged            = "session/isArchivedChanged"
	ActionSessionActivityChanged              = "session/activityChanged"
	ActionSessionWorkingDirectorySet          = "session/workingDirectorySet"
	ActionSessionWorkingDirectoryRemoved      = "session/workingDirectoryRemoved"
	ActionSessionWorkingDirectoryReplaced     = "session/workingDirectoryReplaced"
	ActionSessionActiveClientSet              = "session/activeClientSet"
	ActionSessionActiveClientRemoved          = "session/activeClientRemoved"
	ActionSessionConfigChanged                = "session/configChanged"
	ActionSessionMetaChanged                  = "session/metaChanged"
	ActionSessionInputNeededSet               = "session/inputNeededSet"
	ActionSessionInputNeededRemoved           = "session/inputNeededRemoved"
	ActionSessionServerToolsChanged           = "session/serverToolsChanged"
	ActionSessionCustomizationsChanged        = "session/customizationsChanged"
	ActionSessionCustomizationToggled         = "session/customizationToggled"
	ActionSessionCustomizationUpdated         = "session/customizationUpdated"
	ActionSessionCustomizationRemoved         = "session/customizationRemoved"
	ActionSessionMcpServerStateChanged        = "session/mcpServerStateChanged"
	ActionSessionMcpServerStartRequested      = "session/mcpServerStartRequested"
	ActionSessionMcpServerStopRequested       = "session/mcpServerStopRequested"
	ActionSessionMcpServerBackgroundRequested = "session/mcpServerBackgroundRequested"
	ActionSessionChangesetsChanged            = "session/changesetsChanged"

	ActionChatTurnStarted             = "chat/turnStarted"
	ActionChatDelta                   = "chat/delta"
	ActionChatResponsePart            = "chat/responsePart"
	ActionChatReasoning               = "chat/reasoning"
	ActionChatUsage                   = "chat/usage"
	ActionChatToolCallStart           = "chat/toolCallStart"
	ActionChatToolCallDelta           = "chat/toolCallDelta"
	ActionChatToolCallReady           = "chat/toolCallReady"
	ActionChatToolCallConfirmed       = "chat/toolCallConfirmed"
	ActionChatToolCallComplete        = "chat/toolCallComplete"
	ActionChatToolCallResultConfirmed = "chat/toolCallResultConfirmed"
	ActionChatToolCallContentChanged  = "chat/toolCallContentChanged"
	ActionChatToolCallAuthRequired    = "chat/toolCallAuthRequired"
	ActionChatToolCallAuthResolved    = "chat/toolCallAuthResolved"
	ActionChatTurnComplete            = "chat/turnComplete"
	ActionChatTurnCancelled           = "chat/turnCancelled"
	ActionChatError                   = "chat/error"
	ActionChatTurnResume              = "chat/turnResume"
	ActionChatPendingMessageSet       = "chat/pendingMessageSet"
	ActionChatPendingMessageRemoved   = "chat/pendingMessageRemoved"
	ActionChatQueuedMessagesReordered = "chat/queuedMessagesReordered"
	ActionChatDraftChanged            = "chat/draftChanged"
	ActionChatTruncated               = "chat/truncated"
	ActionChatTurnsLoaded             = "chat/turnsLoaded"
	ActionChatActivityChanged         = "chat/activityChanged"
	ActionChatWorkingDirectorySet     = "chat/workingDirectorySet"
	ActionChatWorkingDirectoryRemoved = "chat/workingDirectoryRemoved"
	ActionChatIsReadChanged           = "chat/isReadChanged"
	ActionChatIsArchivedChanged       = "chat/isArchivedChanged"
	ActionChatInputRequested          = "chat/inputRequested"
	ActionChatInputAnswerChanged      = "chat/inputAnswerChanged"
	ActionChatInputCompleted          = "chat/inputCompleted"
	ActionChatBackgroundWorkSet       = "chat/backgroundWorkSet"
	ActionChatBackgroundWorkRemoved   = "chat/backgroundWorkRemoved"
	ActionChatMovableChanged          = "chat/movableChanged"
	ActionChatChangesetsChanged       = "chat/changesetsChanged"
	ActionChatCanvasesChanged         = "chat/canvasesChanged"
	ActionCanvasStateChanged          = "canvas/stateChanged"
)

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

// ChatCanvasesChanged replaces ChatState.canvases (0.10.0). ahpd never sends
// it; it is modelled so that version filtering and decoding know it.
type ChatCanvasesChanged struct {
	Canvases []CanvasReference `json:"canvases,omitempty"`
}

// CanvasStateChanged replaces a canvas channel's state (0.10.0), verbatim.
type CanvasStateChanged struct {
	Canvas json.RawMessage `json:"canvas"`
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

// ActionType returns "root/agentsChanged".
func (a RootAgentsChanged) ActionType() string { return ActionRootAgentsChanged }

// MarshalJSON writes the action with its type.
func (a RootAgentsChanged) MarshalJSON() ([]byte, error) {
	type plain RootAgentsChanged
	if a.Agents == nil {
		a.Agents = []AgentInfo{}
	}
	return withType(ActionRootAgentsChanged, plain(a))
}

// ActionType returns "root/activeSessionsChanged".
func (a RootActiveSessionsChanged) ActionType() string { return ActionRootActiveSessionsChanged }

// MarshalJSON writes the action with its type.
func (a RootActiveSessionsChanged) MarshalJSON() ([]byte, error) {
	type plain RootActiveSessionsChanged
	return withType(ActionRootActiveSessionsChanged, plain(a))
}

// ActionType returns "root/terminalsChanged".
func (a RootTerminalsChanged) ActionType() string { return ActionRootTerminalsChanged }

// MarshalJSON writes the action with its type.
func (a RootTerminalsChanged) MarshalJSON() ([]byte, error) {
	type plain RootTerminalsChanged
	if a.Terminals == nil {
		a.Terminals = []TerminalInfo{}
	}
	return withType(ActionRootTerminalsChanged, plain(a))
}

// ActionType returns "root/configChanged".
func (a RootConfigChanged) ActionType() string { return ActionRootConfigChanged }

// MarshalJSON writes the action with its type.
func (a RootConfigChanged) MarshalJSON() ([]byte, error) {
	type plain RootConfigChanged
	return withType(ActionRootConfigChanged, plain(a))
}

// ActionType returns "session/ready".
func (a SessionReady) ActionType() string { return ActionSessionReady }

// MarshalJSON writes the action with its type.
func (a SessionReady) MarshalJSON() ([]byte, error) {
	type plain SessionReady
	return withType(ActionSessionReady, plain(a))
}

// ActionType returns "session/creationFailed".
func (a SessionCreationFailed) ActionType() string { return ActionSessionCreationFailed }

// MarshalJSON writes the action with its type.
func (a SessionCreationFailed) MarshalJSON() ([]byte, error) {
	type plain SessionCreationFailed
	return withType(ActionSessionCreationFailed, plain(a))
}

// ActionType returns "session/titleChanged".
func (a SessionTitleChanged) ActionType() string { return ActionSessionTitleChanged }

// MarshalJSON writes the action with its type.
func (a SessionTitleChanged) MarshalJSON() ([]byte, error) {
	type plain SessionTitleChanged
	return withType(ActionSessionTitleChanged, plain(a))
}

// ActionType returns "session/chatAdded".
func (a SessionChatAdded) ActionType() string { return ActionSessionChatAdded }

// MarshalJSON writes the action with its type.
func (a SessionChatAdded) MarshalJSON() ([]byte, error) {
	type plain SessionChatAdded
	return withType(ActionSessionChatAdded, plain(a))
}

// ActionType returns "session/chatRemoved".
func (a SessionChatRemoved) ActionType() string { return ActionSessionChatRemoved }

// MarshalJSON writes the action with its type.
func (a SessionChatRemoved) MarshalJSON() ([]byte, error) {
	type plain SessionChatRemoved
	return withType(ActionSessionChatRemoved, plain(a))
}

// ActionType returns "session/chatUpdated".
func (a SessionChatUpdated) ActionType() string { return ActionSessionChatUpdated }

// MarshalJSON writes the action with its type.
func (a SessionChatUpdated) MarshalJSON() ([]byte, error) {
	type plain SessionChatUpdated
	return withType(ActionSessionChatUpdated, plain(a))
}

// ActionType returns "session/chatsReordered".
func (a SessionChatsReordered) ActionType() string { return ActionSessionChatsReordered }

// MarshalJSON writes the action with its type.
func (a SessionChatsReordered) MarshalJSON() ([]byte, error) {
	type plain SessionChatsReordered
	if a.Chats == nil {
		a.Chats = []URI{}
	}
	return withType(ActionSessionChatsReordered, plain(a))
}

// ActionType returns "session/defaultChatChanged".
func (a SessionDefaultChatChanged) ActionType() string { return ActionSessionDefaultChatChanged }

// MarshalJSON writes the action with its type.
func (a SessionDefaultChatChanged) MarshalJSON() ([]byte, error) {
	type plain SessionDefaultChatChanged
	return withType(ActionSessionDefaultChatChanged, plain(a))
}

// ActionType returns "session/isReadChanged".
func (a SessionIsReadChanged) ActionType() string { return ActionSessionIsReadChanged }

// MarshalJSON writes the action with its type.
func (a SessionIsReadChanged) MarshalJSON() ([]byte, error) {
	type plain SessionIsReadChanged
	return withType(ActionSessionIsReadChanged, plain(a))
}

// ActionType returns "session/isArchivedChanged".
func (a SessionIsArchivedChanged) ActionType() string { return ActionSessionIsArchivedChanged }

// MarshalJSON writes the action with its type.
func (a SessionIsArchivedChanged) MarshalJSON() ([]byte, error) {
	type plain SessionIsArchivedChanged
	return withType(ActionSessionIsArchivedChanged, plain(a))
}

// ActionType returns "session/activityChanged".
func (a SessionActivityChanged) ActionType() string { return ActionSessionActivityChanged }

// MarshalJSON writes the action with its type.
func (a SessionActivityChanged) MarshalJSON() ([]byte, error) {
	type plain SessionActivityChanged
	return withType(ActionSessionActivityChanged, plain(a))
}

// ActionType returns "session/workingDirectorySet".
func (a SessionWorkingDirectorySet) ActionType() string { return ActionSessionWorkingDirectorySet }

// MarshalJSON writes the action with its type.
func (a SessionWorkingDirectorySet) MarshalJSON() ([]byte, error) {
	type plain SessionWorkingDirectorySet
	return withType(ActionSessionWorkingDirectorySet, plain(a))
}

// ActionType returns "session/workingDirectoryRemoved".
func (a SessionWorkingDirectoryRemoved) ActionType() string {
	return ActionSessionWorkingDirectoryRemoved
}

// MarshalJSON writes the action with its type.
func (a SessionWorkingDirectoryRemoved) MarshalJSON() ([]byte, error) {
	type plain SessionWorkingDirectoryRemoved
	return withType(ActionSessionWorkingDirectoryRemoved, plain(a))
}

// ActionType returns "session/workingDirectoryReplaced".
func (a SessionWorkingDirectoryReplaced) ActionType() string {
	return ActionSessionWorkingDirectoryReplaced
}

// MarshalJSON writes the action with its type.
func (a SessionWorkingDirectoryReplaced) MarshalJSON() ([]byte, error) {
	type plain SessionWorkingDirectoryReplaced
	return withType(ActionSessionWorkingDirectoryReplaced, plain(a))
}

// ActionType returns "session/activeClientSet".
func (a SessionActiveClientSet) ActionType() string { return ActionSessionActiveClientSet }

// MarshalJSON writes the action with its type.
func (a SessionActiveClientSet) MarshalJSON() ([]byte, error) {
	type plain SessionActiveClientSet
	return withType(ActionSessionActiveClientSet, plain(a))
}

// ActionType returns "session/activeClientRemoved".
func (a SessionActiveClientRemoved) ActionType() string { return ActionSessionActiveClientRemoved }

// MarshalJSON writes the action with its type.
func (a SessionActiveClientRemoved) MarshalJSON() ([]byte, error) {
	type plain SessionActiveClientRemoved
	return withType(ActionSessionActiveClientRemoved, plain(a))
}

// ActionType returns "session/configChanged".
func (a SessionConfigChanged) ActionType() string { return ActionSessionConfigChanged }

// MarshalJSON writes the action with its type.
func (a SessionConfigChanged) MarshalJSON() ([]byte, error) {
	type plain SessionConfigChanged
	return withType(ActionSessionConfigChanged, plain(a))
}

// ActionType returns "session/metaChanged".
func (a SessionMetaChanged) ActionType() string { return ActionSessionMetaChanged }

// MarshalJSON writes the action with its type.
func (a SessionMetaChanged) MarshalJSON() ([]byte, error) {
	type plain SessionMetaChanged
	return withType(ActionSessionMetaChanged, plain(a))
}

// ActionType returns "session/inputNeededSet".
func (a SessionInputNeededSet) ActionType() string { return ActionSessionInputNeededSet }

// MarshalJSON writes the action with its type.
func (a SessionInputNeededSet) MarshalJSON() ([]byte, error) {
	type plain SessionInputNeededSet
	return withType(ActionSessionInputNeededSet, plain(a))
}

// ActionType returns "session/inputNeededRemoved".
func (a SessionInputNeededRemoved) ActionType() string { return ActionSessionInputNeededRemoved }

// MarshalJSON writes the action with its type.
func (a SessionInputNeededRemoved) MarshalJSON() ([]byte, error) {
	type plain SessionInputNeededRemoved
	return withType(ActionSessionInputNeededRemoved, plain(a))
}

// ActionType returns "session/serverToolsChanged".
func (a SessionServerToolsChanged) ActionType() string { return ActionSessionServerToolsChanged }

// MarshalJSON writes the action with its type.
func (a SessionServerToolsChanged) MarshalJSON() ([]byte, error) {
	type plain SessionServerToolsChanged
	if a.Tools == nil {
		a.Tools = []ToolDefinition{}
	}
	return withType(ActionSessionServerToolsChanged, plain(a))
}

// ActionType returns "session/customizationsChanged".
func (a SessionCustomizationsChanged) ActionType() string { return ActionSessionCustomizationsChanged }

// MarshalJSON writes the action with its type.
func (a SessionCustomizationsChanged) MarshalJSON() ([]byte, error) {
	type plain SessionCustomizationsChanged
	if a.Customizations == nil {
		a.Customizations = []Customization{}
	}
	return withType(ActionSessionCustomizationsChanged, plain(a))
}

// ActionType returns "session/customizationToggled".
func (a SessionCustomizationToggled) ActionType() string { return ActionSessionCustomizationToggled }

// MarshalJSON writes the action with its type.
func (a SessionCustomizationToggled) MarshalJSON() ([]byte, error) {
	type plain SessionCustomizationToggled
	return withType(ActionSessionCustomizationToggled, plain(a))
}

// ActionType returns "session/customizationUpdated".
func (a SessionCustomizationUpdated) ActionType() string { return ActionSessionCustomizationUpdated }

// MarshalJSON writes the action with its type.
func (a SessionCustomizationUpdated) MarshalJSON() ([]byte, error) {
	type plain SessionCustomizationUpdated
	return withType(ActionSessionCustomizationUpdated, plain(a))
}

// ActionType returns "session/customizationRemoved".
func (a SessionCustomizationRemoved) ActionType() string { return ActionSessionCustomizationRemoved }

// MarshalJSON writes the action with its type.
func (a SessionCustomizationRemoved) MarshalJSON() ([]byte, error) {
	type plain SessionCustomizationRemoved
	return withType(ActionSessionCustomizationRemoved, plain(a))
}

// ActionType returns "session/mcpServerStateChanged".
func (a SessionMcpServerStateChanged) ActionType() string { return ActionSessionMcpServerStateChanged }

// MarshalJSON writes the action with its type.
func (a SessionMcpServerStateChanged) MarshalJSON() ([]byte, error) {
	type plain SessionMcpServerStateChanged
	return withType(ActionSessionMcpServerStateChanged, plain(a))
}

// ActionType returns "session/mcpServerStartRequested".
func (a SessionMcpServerStartRequested) ActionType() string {
	return ActionSessionMcpServerStartRequested
}

// MarshalJSON writes the action with its type.
func (a SessionMcpServerStartRequested) MarshalJSON() ([]byte, error) {
	type plain SessionMcpServerStartRequested
	return withType(ActionSessionMcpServerStartRequested, plain(a))
}

// ActionType returns "session/mcpServerStopRequested".
func (a SessionMcpServerStopRequested) ActionType() string {
	return ActionSessionMcpServerStopRequested
}

// MarshalJSON writes the action with its type.
func (a SessionMcpServerStopRequested) MarshalJSON() ([]byte, error) {
	type plain SessionMcpServerStopRequested
	return withType(ActionSessionMcpServerStopRequested, plain(a))
}

// ActionType returns "session/mcpServerBackgroundRequested".
func (a SessionMcpServerBackgroundRequested) ActionType() string {
	return ActionSessionMcpServerBackgroundRequested
}

// MarshalJSON writes the action with its type.
func (a SessionMcpServerBackgroundRequested) MarshalJSON() ([]byte, error) {
	type plain SessionMcpServerBackgroundRequested
	return withType(ActionSessionMcpServerBackgroundRequested, plain(a))
}

// ActionType returns "session/changesetsChanged".
func (a SessionChangesetsChanged) ActionType() string { return ActionSessionChangesetsChanged }

// MarshalJSON writes the action with its type.
func (a SessionChangesetsChanged) MarshalJSON() ([]byte, error) {
	type plain SessionChangesetsChanged
	return withType(ActionSessionChangesetsChanged, plain(a))
}

// ActionType returns "chat/turnStarted".
func (a ChatTurnStarted) ActionType() string { return ActionChatTurnStarted }

// MarshalJSON writes the action with its type.
func (a ChatTurnStarted) MarshalJSON() ([]byte, error) {
	type plain ChatTurnStarted
	return withType(ActionChatTurnStarted, plain(a))
}

// ActionType returns "chat/delta".
func (a ChatDelta) ActionType() string { return ActionChatDelta }

// MarshalJSON writes the action with its type.
func (a ChatDelta) MarshalJSON() ([]byte, error) {
	type plain ChatDelta
	return withType(ActionChatDelta, plain(a))
}

// ActionType returns "chat/responsePart".
func (a ChatResponsePart) ActionType() string { return ActionChatResponsePart }

// MarshalJSON writes the action with its type.
func (a ChatResponsePart) MarshalJSON() ([]byte, error) {
	type plain ChatResponsePart
	return withType(ActionChatResponsePart, plain(a))
}

// ActionType returns "chat/reasoning".
func (a ChatReasoning) ActionType() string { return ActionChatReasoning }

// MarshalJSON writes the action with its type.
func (a ChatReasoning) MarshalJSON() ([]byte, error) {
	type plain ChatReasoning
	return withType(ActionChatReasoning, plain(a))
}

// ActionType returns "chat/usage".
func (a ChatUsage) ActionType() string { return ActionChatUsage }

// MarshalJSON writes the action with its type.
func (a ChatUsage) MarshalJSON() ([]byte, error) {
	type plain ChatUsage
	return withType(ActionChatUsage, plain(a))
}

// ActionType returns "chat/toolCallStart".
func (a ChatToolCallStart) ActionType() string { return ActionChatToolCallStart }

// MarshalJSON writes the action with its type.
func (a ChatToolCallStart) MarshalJSON() ([]byte, error) {
	type plain ChatToolCallStart
	return withType(ActionChatToolCallStart, plain(a))
}

// ActionType returns "chat/toolCallDelta".
func (a ChatToolCallDelta) ActionType() string { return ActionChatToolCallDelta }

// MarshalJSON writes the action with its type.
func (a ChatToolCallDelta) MarshalJSON() ([]byte, error) {
	type plain ChatToolCallDelta
	return withType(ActionChatToolCallDelta, plain(a))
}

// ActionType returns "chat/toolCallReady".
func (a ChatToolCallReady) ActionType() string { return ActionChatToolCallReady }

// MarshalJSON writes the action with its type.
func (a ChatToolCallReady) MarshalJSON() ([]byte, error) {
	type plain ChatToolCallReady
	return withType(ActionChatToolCallReady, plain(a))
}

// ActionType returns "chat/toolCallConfirmed".
func (a ChatToolCallConfirmed) ActionType() string { return ActionChatToolCallConfirmed }

// MarshalJSON writes the action with its type.
func (a ChatToolCallConfirmed) MarshalJSON() ([]byte, error) {
	type plain ChatToolCallConfirmed
	return withType(ActionChatToolCallConfirmed, plain(a))
}

// ActionType returns "chat/toolCallComplete".
func (a ChatToolCallComplete) ActionType() string { return ActionChatToolCallComplete }

// MarshalJSON writes the action with its type.
func (a ChatToolCallComplete) MarshalJSON() ([]byte, error) {
	type plain ChatToolCallComplete
	return withType(ActionChatToolCallComplete, plain(a))
}

// ActionType returns "chat/toolCallResultConfirmed".
func (a ChatToolCallResultConfirmed) ActionType() string { return ActionChatToolCallResultConfirmed }

// MarshalJSON writes the action with its type.
func (a ChatToolCallResultConfirmed) MarshalJSON() ([]byte, error) {
	type plain ChatToolCallResultConfirmed
	return withType(ActionChatToolCallResultConfirmed, plain(a))
}

// ActionType returns "chat/toolCallContentChanged".
func (a ChatToolCallContentChanged) ActionType() string { return ActionChatToolCallContentChanged }

// MarshalJSON writes the action with its type.
func (a ChatToolCallContentChanged) MarshalJSON() ([]byte, error) {
	type plain ChatToolCallContentChanged
	if a.Content == nil {
		a.Content = []ToolResultContent{}
	}
	return withType(ActionChatToolCallContentChanged, plain(a))
}

// ActionType returns "chat/toolCallAuthRequired".
func (a ChatToolCallAuthRequired) ActionType() string { return ActionChatToolCallAuthRequired }

// MarshalJSON writes the action with its type.
func (a ChatToolCallAuthRequired) MarshalJSON() ([]byte, error) {
	type plain ChatToolCallAuthRequired
	return withType(ActionChatToolCallAuthRequired, plain(a))
}

// ActionType returns "chat/toolCallAuthResolved".
func (a ChatToolCallAuthResolved) ActionType() string { return ActionChatToolCallAuthResolved }

// MarshalJSON writes the action with its type.
func (a ChatToolCallAuthResolved) MarshalJSON() ([]byte, error) {
	type plain ChatToolCallAuthResolved
	return withType(ActionChatToolCallAuthResolved, plain(a))
}

// ActionType returns "chat/turnComplete".
func (a ChatTurnComplete) ActionType() string { return ActionChatTurnComplete }

// MarshalJSON writes the action with its type.
func (a ChatTurnComplete) MarshalJSON() ([]byte, error) {
	type plain ChatTurnComplete
	return withType(ActionChatTurnComplete, plain(a))
}

// ActionType returns "chat/turnCancelled".
func (a ChatTurnCancelled) ActionType() string { return ActionChatTurnCancelled }

// MarshalJSON writes the action with its type.
func (a ChatTurnCancelled) MarshalJSON() ([]byte, error) {
	type plain ChatTurnCancelled
	return withType(ActionChatTurnCancelled, plain(a))
}

// ActionType returns "chat/error".
func (a ChatError) ActionType() string { return ActionChatError }

// MarshalJSON writes the action with its type.
func (a ChatError) MarshalJSON() ([]byte, error) {
	type plain ChatError
	if a.Part.Kind == "" {
		a.Part.Kind = PartError
	}
	return withType(ActionChatError, plain(a))
}

// ActionType returns "chat/turnResume".
func (a ChatTurnResume) ActionType() string { return ActionChatTurnResume }

// MarshalJSON writes the action with its type.
func (a ChatTurnResume) MarshalJSON() ([]byte, error) {
	type plain ChatTurnResume
	return withType(ActionChatTurnResume, plain(a))
}

// ActionType returns "chat/pendingMessageSet".
func (a ChatPendingMessageSet) ActionType() string { return ActionChatPendingMessageSet }

// MarshalJSON writes the action with its type.
func (a ChatPendingMessageSet) MarshalJSON() ([]byte, error) {
	type plain ChatPendingMessageSet
	return withType(ActionChatPendingMessageSet, plain(a))
}

// ActionType returns "chat/pendingMessageRemoved".
func (a ChatPendingMessageRemoved) ActionType() string { return ActionChatPendingMessageRemoved }

// MarshalJSON writes the action with its type.
func (a ChatPendingMessageRemoved) MarshalJSON() ([]byte, error) {
	type plain ChatPendingMessageRemoved
	return withType(ActionChatPendingMessageRemoved, plain(a))
}

// ActionType returns "chat/queuedMessagesReordered".
func (a ChatQueuedMessagesReordered) ActionType() string { return ActionChatQueuedMessagesReordered }

// MarshalJSON writes the action with its type.
func (a ChatQueuedMessagesReordered) MarshalJSON() ([]byte, error) {
	type plain ChatQueuedMessagesReordered
	if a.Order == nil {
		a.Order = []string{}
	}
	return withType(ActionChatQueuedMessagesReordered, plain(a))
}

// ActionType returns "chat/draftChanged".
func (a ChatDraftChanged) ActionType() string { return ActionChatDraftChanged }

// MarshalJSON writes the action with its type.
func (a ChatDraftChanged) MarshalJSON() ([]byte, error) {
	type plain ChatDraftChanged
	return withType(ActionChatDraftChanged, plain(a))
}

// ActionType returns "chat/truncated".
func (a ChatTruncated) ActionType() string { return ActionChatTruncated }

// MarshalJSON writes the action with its type.
func (a ChatTruncated) MarshalJSON() ([]byte, error) {
	type plain ChatTruncated
	return withType(ActionChatTruncated, plain(a))
}

// ActionType returns "chat/turnsLoaded".
func (a ChatTurnsLoaded) ActionType() string { return ActionChatTurnsLoaded }

// MarshalJSON writes the action with its type.
func (a ChatTurnsLoaded) MarshalJSON() ([]byte, error) {
	type plain ChatTurnsLoaded
	if a.Turns == nil {
		a.Turns = []Turn{}
	}
	return withType(ActionChatTurnsLoaded, plain(a))
}

// ActionType returns "chat/activityChanged".
func (a ChatActivityChanged) ActionType() string { return ActionChatActivityChanged }

// MarshalJSON writes the action with its type.
func (a ChatActivityChanged) MarshalJSON() ([]byte, error) {
	type plain ChatActivityChanged
	return withType(ActionChatActivityChanged, plain(a))
}

// ActionType returns "chat/workingDirectorySet".
func (a ChatWorkingDirectorySet) ActionType() string { return ActionChatWorkingDirectorySet }

// MarshalJSON writes the action with its type.
func (a ChatWorkingDirectorySet) MarshalJSON() ([]byte, error) {
	type plain ChatWorkingDirectorySet
	return withType(ActionChatWorkingDirectorySet, plain(a))
}

// ActionType returns "chat/workingDirectoryRemoved".
func (a ChatWorkingDirectoryRemoved) ActionType() string { return ActionChatWorkingDirectoryRemoved }

// MarshalJSON writes the action with its type.
func (a ChatWorkingDirectoryRemoved) MarshalJSON() ([]byte, error) {
	type plain ChatWorkingDirectoryRemoved
	return withType(ActionChatWorkingDirectoryRemoved, plain(a))
}

// ActionType returns "chat/isReadChanged".
func (a ChatIsReadChanged) ActionType() string { return ActionChatIsReadChanged }

// MarshalJSON writes the action with its type.
func (a ChatIsReadChanged) MarshalJSON() ([]byte, error) {
	type plain ChatIsReadChanged
	return withType(ActionChatIsReadChanged, plain(a))
}

// ActionType returns "chat/isArchivedChanged".
func (a ChatIsArchivedChanged) ActionType() string { return ActionChatIsArchivedChanged }

// MarshalJSON writes the action with its type.
func (a ChatIsArchivedChanged) MarshalJSON() ([]byte, error) {
	type plain ChatIsArchivedChanged
	return withType(ActionChatIsArchivedChanged, plain(a))
}

// ActionType returns "chat/inputRequested".
func (a ChatInputRequested) ActionType() string { return ActionChatInputRequested }

// MarshalJSON writes the action with its type.
func (a ChatInputRequested) MarshalJSON() ([]byte, error) {
	type plain ChatInputRequested
	return withType(ActionChatInputRequested, plain(a))
}

// ActionType returns "chat/inputAnswerChanged".
func (a ChatInputAnswerChanged) ActionType() string { return ActionChatInputAnswerChanged }

// MarshalJSON writes the action with its type.
func (a ChatInputAnswerChanged) MarshalJSON() ([]byte, error) {
	type plain ChatInputAnswerChanged
	return withType(ActionChatInputAnswerChanged, plain(a))
}

// ActionType returns "chat/inputCompleted".
func (a ChatInputCompleted) ActionType() string { return ActionChatInputCompleted }

// MarshalJSON writes the action with its type.
func (a ChatInputCompleted) MarshalJSON() ([]byte, error) {
	type plain ChatInputCompleted
	return withType(ActionChatInputCompleted, plain(a))
}

// ActionType returns "chat/backgroundWorkSet".
func (a ChatBackgroundWorkSet) ActionType() string { return ActionChatBackgroundWorkSet }

// MarshalJSON writes the action with its type.
func (a ChatBackgroundWorkSet) MarshalJSON() ([]byte, error) {
	type plain ChatBackgroundWorkSet
	return withType(ActionChatBackgroundWorkSet, plain(a))
}

// ActionType returns "chat/backgroundWorkRemoved".
func (a ChatBackgroundWorkRemoved) ActionType() string { return ActionChatBackgroundWorkRemoved }

// MarshalJSON writes the action with its type.
func (a ChatBackgroundWorkRemoved) MarshalJSON() ([]byte, error) {
	type plain ChatBackgroundWorkRemoved
	return withType(ActionChatBackgroundWorkRemoved, plain(a))
}

// ActionType returns "chat/movableChanged".
func (a ChatMovableChanged) ActionType() string { return ActionChatMovableChanged }

// MarshalJSON writes the action with its type.
func (a ChatMovableChanged) MarshalJSON() ([]byte, error) {
	type plain ChatMovableChanged
	return withType(ActionChatMovableChanged, plain(a))
}

// ActionType returns "chat/changesetsChanged".
func (a ChatChangesetsChanged) ActionType() string { return ActionChatChangesetsChanged }

// MarshalJSON writes the action with its type.
func (a ChatChangesetsChanged) MarshalJSON() ([]byte, error) {
	type plain ChatChangesetsChanged
	return withType(ActionChatChangesetsChanged, plain(a))
}

// ActionType returns "chat/canvasesChanged".
func (a ChatCanvasesChanged) ActionType() string { return ActionChatCanvasesChanged }

// MarshalJSON writes the action with its type.
func (a ChatCanvasesChanged) MarshalJSON() ([]byte, error) {
	type plain ChatCanvasesChanged
	return withType(ActionChatCanvasesChanged, plain(a))
}

// ActionType returns "canvas/stateChanged".
func (a CanvasStateChanged) ActionType() string { return ActionCanvasStateChanged }

// MarshalJSON writes the action with its type.
func (a CanvasStateChanged) MarshalJSON() ([]byte, error) {
	type plain CanvasStateChanged
	return withType(ActionCanvasStateChanged, plain(a))
}

var actionDecoders = map[string]actionDecoder{
	ActionRootAgentsChanged:                   decodeAs[RootAgentsChanged],
	ActionRootActiveSessionsChanged:           decodeAs[RootActiveSessionsChanged],
	ActionRootTerminalsChanged:                decodeAs[RootTerminalsChanged],
	ActionRootConfigChanged:                   decodeAs[RootConfigChanged],
	ActionSessionReady:                        decodeAs[SessionReady],
	ActionSessionCreationFailed:               decodeAs[SessionCreationFailed],
	ActionSessionTitleChanged:                 decodeAs[SessionTitleChanged],
	ActionSessionChatAdded:                    decodeAs[SessionChatAdded],
	ActionSessionChatRemoved:                  decodeAs[SessionChatRemoved],
	ActionSessionChatUpdated:                  decodeAs[SessionChatUpdated],
	ActionSessionChatsReordered:               decodeAs[SessionChatsReordered],
	ActionSessionDefaultChatChanged:           decodeAs[SessionDefaultChatChanged],
	ActionSessionIsReadChanged:                decodeAs[SessionIsReadChanged],
	ActionSessionIsArchivedChanged:            decodeAs[SessionIsArchivedChanged],
	ActionSessionActivityChanged:              decodeAs[SessionActivityChanged],
	ActionSessionWorkingDirectorySet:          decodeAs[SessionWorkingDirectorySet],
	ActionSessionWorkingDirectoryRemoved:      decodeAs[SessionWorkingDirectoryRemoved],
	ActionSessionWorkingDirectoryReplaced:     decodeAs[SessionWorkingDirectoryReplaced],
	ActionSessionActiveClientSet:              decodeAs[SessionActiveClientSet],
	ActionSessionActiveClientRemoved:          decodeAs[SessionActiveClientRemoved],
	ActionSessionConfigChanged:                decodeAs[SessionConfigChanged],
	ActionSessionMetaChanged:                  decodeAs[SessionMetaChanged],
	ActionSessionInputNeededSet:               decodeAs[SessionInputNeededSet],
	ActionSessionInputNeededRemoved:           decodeAs[SessionInputNeededRemoved],
	ActionSessionServerToolsChanged:           decodeAs[SessionServerToolsChanged],
	ActionSessionCustomizationsChanged:        decodeAs[SessionCustomizationsChanged],
	ActionSessionCustomizationToggled:         decodeAs[SessionCustomizationToggled],
	ActionSessionCustomizationUpdated:         decodeAs[SessionCustomizationUpdated],
	ActionSessionCustomizationRemoved:         decodeAs[SessionCustomizationRemoved],
	ActionSessionMcpServerStateChanged:        decodeAs[SessionMcpServerStateChanged],
	ActionSessionMcpServerStartRequested:      decodeAs[SessionMcpServerStartRequested],
	ActionSessionMcpServerStopRequested:       decodeAs[SessionMcpServerStopRequested],
	ActionSessionMcpServerBackgroundRequested: decodeAs[SessionMcpServerBackgroundRequested],
	ActionSessionChangesetsChanged:            decodeAs[SessionChangesetsChanged],
	ActionChatTurnStarted:                     decodeAs[ChatTurnStarted],
	ActionChatDelta:                           decodeAs[ChatDelta],
	ActionChatResponsePart:                    decodeAs[ChatResponsePart],
	ActionChatReasoning:                       decodeAs[ChatReasoning],
	ActionChatUsage:                           decodeAs[ChatUsage],
	ActionChatToolCallStart:                   decodeAs[ChatToolCallStart],
	ActionChatToolCallDelta:                   decodeAs[ChatToolCallDelta],
	ActionChatToolCallReady:                   decodeAs[ChatToolCallReady],
	ActionChatToolCallConfirmed:               decodeAs[ChatToolCallConfirmed],
	ActionChatToolCallComplete:                decodeAs[ChatToolCallComplete],
	ActionChatToolCallResultConfirmed:         decodeAs[ChatToolCallResultConfirmed],
	ActionChatToolCallContentChanged:          decodeAs[ChatToolCallContentChanged],
	ActionChatToolCallAuthRequired:            decodeAs[ChatToolCallAuthRequired],
	ActionChatToolCallAuthResolved:            decodeAs[ChatToolCallAuthResolved],
	ActionChatTurnComplete:                    decodeAs[ChatTurnComplete],
	ActionChatTurnCancelled:                   decodeAs[ChatTurnCancelled],
	ActionChatError:                           decodeAs[ChatError],
	ActionChatTurnResume:                      decodeAs[ChatTurnResume],
	ActionChatPendingMessageSet:               decodeAs[ChatPendingMessageSet],
	ActionChatPendingMessageRemoved:           decodeAs[ChatPendingMessageRemoved],
	ActionChatQueuedMessagesReordered:         decodeAs[ChatQueuedMessagesReordered],
	ActionChatDraftChanged:                    decodeAs[ChatDraftChanged],
	ActionChatTruncated:                       decodeAs[ChatTruncated],
	ActionChatTurnsLoaded:                     decodeAs[ChatTurnsLoaded],
	ActionChatActivityChanged:                 decodeAs[ChatActivityChanged],
	ActionChatWorkingDirectorySet:             decodeAs[ChatWorkingDirectorySet],
	ActionChatWorkingDirectoryRemoved:         decodeAs[ChatWorkingDirectoryRemoved],
	ActionChatIsReadChanged:                   decodeAs[ChatIsReadChanged],
	ActionChatIsArchivedChanged:               decodeAs[ChatIsArchivedChanged],
	ActionChatInputRequested:                  decodeAs[ChatInputRequested],
	ActionChatInputAnswerChanged:              decodeAs[ChatInputAnswerChanged],
	ActionChatInputCompleted:                  decodeAs[ChatInputCompleted],
	ActionChatBackgroundWorkSet:               decodeAs[ChatBackgroundWorkSet],
	ActionChatBackgroundWorkRemoved:           decodeAs[ChatBackgroundWorkRemoved],
	ActionChatMovableChanged:                  decodeAs[ChatMovableChanged],
	ActionChatChangesetsChanged:               decodeAs[ChatChangesetsChanged],
	ActionChatCanvasesChanged:                 decodeAs[ChatCanvasesChanged],
	ActionCanvasStateChanged:                  decodeAs[CanvasStateChanged],
}
