package ahp

import (
	"encoding/json"
)

// URI is a channel or resource URI ("ahp-root://", "ahp-session:/<id>",
// "ahp-chat:/<id>", "file:///...").
type URI = string

// SessionStatus is the status bitset shared by sessions and chats
// (AHP-1.0.md §1). The activity bits (Idle, Error, InProgress, InputNeeded)
// are exclusive in practice; IsRead and IsArchived are orthogonal flags.
// Unknown bits are preserved on decode and re-encode.
type SessionStatus int

// Status bits. InputNeeded (24) includes the InProgress bit (8).
const (
	StatusIdle        SessionStatus = 1
	StatusError       SessionStatus = 2
	StatusInProgress  SessionStatus = 8
	StatusInputNeeded SessionStatus = 24
	StatusIsRead      SessionStatus = 32
	StatusIsArchived  SessionStatus = 64
)

// StatusActivityMask covers the activity bits (Idle, Error, InProgress,
// InputNeeded); the remaining bits are flags.
const StatusActivityMask SessionStatus = 0x1f

// Has reports whether every bit of flag is set in s.
func (s SessionStatus) Has(flag SessionStatus) bool { return s&flag == flag }

// WithActivity returns s with its activity bits replaced by activity and
// every flag bit (IsRead, IsArchived, unknown bits) kept.
func (s SessionStatus) WithActivity(activity SessionStatus) SessionStatus {
	return s&^StatusActivityMask | activity&StatusActivityMask
}

// With returns s with flag set when on is true, cleared otherwise.
func (s SessionStatus) With(flag SessionStatus, on bool) SessionStatus {
	if on {
		return s | flag
	}
	return s &^ flag
}

// Session lifecycle values (SessionState.lifecycle).
const (
	LifecycleCreating = "creating"
	LifecycleReady    = "ready"
	LifecycleFailed   = "failed"
)

// Chat interactivity values.
const (
	InteractivityFull     = "full"
	InteractivityReadOnly = "read-only"
	InteractivityHidden   = "hidden"
)

// ChatOrigin kinds.
const (
	OriginUser     = "user"
	OriginFork     = "fork"
	OriginSideChat = "sideChat"
	OriginTool     = "tool"
)

// Message origin kinds.
const (
	MessageFromUser               = "user"
	MessageFromAgent              = "agent"
	MessageFromTool               = "tool"
	MessageFromAutomation         = "automation"
	MessageFromSystemNotification = "systemNotification"
)

// ---------------------------------------------------------------------------
// Root

// RootState is the state of the ahp-root:// channel.
type RootState struct {
	Agents         []AgentInfo    `json:"agents"`
	ActiveSessions *int           `json:"activeSessions,omitempty"`
	Terminals      []TerminalInfo `json:"terminals,omitempty"`
	Config         *RootConfig    `json:"config,omitempty"`
	Meta           map[string]any `json:"_meta,omitempty"`
}

// MarshalJSON writes the required agents array as [] when empty.
func (s RootState) MarshalJSON() ([]byte, error) {
	type plain RootState
	if s.Agents == nil {
		s.Agents = []AgentInfo{}
	}
	return json.Marshal(plain(s))
}

// ConfigState is a configuration schema with its current values. Schema is
// a JSON Schema object kept verbatim.
type ConfigState struct {
	Schema json.RawMessage `json:"schema"`
	Values map[string]any  `json:"values"`
}

// RootConfig is RootState.config.
type RootConfig = ConfigState

// SessionConfig is SessionState.config.
type SessionConfig = ConfigState

// TerminalInfo is one entry of RootState.terminals. ExitCode is 1.0's
// word for an exited process; Lifecycle is the later protocol's (VS Code's
// host sends it), said beside it so either kind of client reads the exit
// off the root.
type TerminalInfo struct {
	Resource  URI                `json:"resource"`
	Title     string             `json:"title,omitempty"`
	Claim     *TerminalClaim     `json:"claim,omitempty"`
	ExitCode  *int               `json:"exitCode,omitempty"`
	Lifecycle *TerminalLifecycle `json:"lifecycle,omitempty"`
	Meta      map[string]any     `json:"_meta,omitempty"`
}

// TerminalClaim says who owns a terminal: {kind:"client", clientId} or
// {kind:"session", session, chat}.
type TerminalClaim struct {
	Kind     string `json:"kind"`
	ClientID string `json:"clientId,omitempty"`
	Session  URI    `json:"session,omitempty"`
	// Chat is the chat of the session that holds the terminal (the later
	// protocol's TerminalSessionClaim.chat).
	Chat URI `json:"chat,omitempty"`
	// TurnID and ToolCallID narrow a session's claim to one turn or call.
	TurnID     string `json:"turnId,omitempty"`
	ToolCallID string `json:"toolCallId,omitempty"`
}

// Terminal lifecycle statuses.
const (
	TerminalStatusRunning = "running"
	TerminalStatusExited  = "exited"
)

// TerminalLifecycle is a terminal process's lifecycle: running, or exited
// with the exit code the runtime reported.
type TerminalLifecycle struct {
	Status   string `json:"status"`
	ExitCode *int   `json:"exitCode,omitempty"`
}

// AgentInfo describes one agent backend (provider).
type AgentInfo struct {
	Provider           string                      `json:"provider"`
	DisplayName        string                      `json:"displayName"`
	Description        string                      `json:"description"`
	Models             []SessionModelInfo          `json:"models"`
	ProtectedResources []ProtectedResourceMetadata `json:"protectedResources,omitempty"`
	Customizations     []Customization             `json:"customizations,omitempty"`
	Capabilities       *AgentCapabilities          `json:"capabilities,omitempty"`
}

// MarshalJSON writes the required models array as [] when empty.
func (a AgentInfo) MarshalJSON() ([]byte, error) {
	type plain AgentInfo
	if a.Models == nil {
		a.Models = []SessionModelInfo{}
	}
	return json.Marshal(plain(a))
}

// AgentCapabilities are the static capabilities an agent advertises.
type AgentCapabilities struct {
	MultipleChats              *MultipleChatsCapability              `json:"multipleChats,omitempty"`
	MultipleWorkingDirectories *MultipleWorkingDirectoriesCapability `json:"multipleWorkingDirectories,omitempty"`
}

// MultipleChatsCapability: presence means createChat may add chats; Fork and
// SideChat allow the matching createChat sources.
type MultipleChatsCapability struct {
	Fork     bool `json:"fork,omitempty"`
	SideChat bool `json:"sideChat,omitempty"`
}

// MultipleWorkingDirectoriesCapability: presence means a session may have more
// than one working directory.
type MultipleWorkingDirectoriesCapability struct {
	ImmutablePrimary   bool `json:"immutablePrimary,omitempty"`
	PrimaryReplacement bool `json:"primaryReplacement,omitempty"`
}

// SessionModelInfo describes one model of an agent.
type SessionModelInfo struct {
	ID               string          `json:"id"`
	Provider         string          `json:"provider"`
	Name             string          `json:"name"`
	MaxContextWindow *int64          `json:"maxContextWindow,omitempty"`
	MaxOutputTokens  *int64          `json:"maxOutputTokens,omitempty"`
	MaxPromptTokens  *int64          `json:"maxPromptTokens,omitempty"`
	SupportsVision   *bool           `json:"supportsVision,omitempty"`
	PolicyState      string          `json:"policyState,omitempty"`
	ConfigSchema     json.RawMessage `json:"configSchema,omitempty"`
	Meta             map[string]any  `json:"_meta,omitempty"`
}

// ProtectedResourceMetadata is RFC 9728 protected resource metadata (snake_case
// keys, as on the wire).
type ProtectedResourceMetadata struct {
	Resource               string   `json:"resource"`
	ResourceName           string   `json:"resource_name,omitempty"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	JwksURI                string   `json:"jwks_uri,omitempty"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported,omitempty"`
	ResourceDocumentation  string   `json:"resource_documentation,omitempty"`
	Required               *bool    `json:"required,omitempty"`
}

// Customization is one entry of SessionState.customizations or
// AgentInfo.customizations. The union has many variants that ahpd only
// passes through, so it is kept as a JSON object; unknown variants and keys
// survive a round trip.
type Customization map[string]any

// ID returns the customization's "id", or "".
func (c Customization) ID() string { s, _ := c["id"].(string); return s }

// Type returns the customization's "type", or "".
func (c Customization) Type() string { s, _ := c["type"].(string); return s }

// ---------------------------------------------------------------------------
// Sessions

// SessionSummary is the catalogue entry of a session (listSessions,
// root/sessionAdded).
type SessionSummary struct {
	Resource           URI                  `json:"resource"`
	Provider           string               `json:"provider"`
	Title              string               `json:"title"`
	Status             SessionStatus        `json:"status"`
	Activity           string               `json:"activity,omitempty"`
	Origin             json.RawMessage      `json:"origin,omitempty"`
	Project            *ProjectInfo         `json:"project,omitempty"`
	WorkingDirectories []URI                `json:"workingDirectories,omitempty"`
	Repositories       []RepositorySource   `json:"repositories,omitempty"`
	Annotations        json.RawMessage      `json:"annotations,omitempty"`
	CreatedAt          string               `json:"createdAt"`
	ModifiedAt         string               `json:"modifiedAt"`
	Changes            *ChangesSummary      `json:"changes,omitempty"`
	Meta               map[string]any       `json:"_meta,omitempty"`
	Chats              []SessionChatSummary `json:"chats,omitempty"`
	DefaultChat        URI                  `json:"defaultChat,omitempty"`
}

// PartialSessionSummary carries the changed fields of a SessionSummary
// (root/sessionSummaryChanged). Nil means unchanged.
type PartialSessionSummary struct {
	Resource           *URI                 `json:"resource,omitempty"`
	Provider           *string              `json:"provider,omitempty"`
	Title              *string              `json:"title,omitempty"`
	Status             *SessionStatus       `json:"status,omitempty"`
	Activity           *string              `json:"activity,omitempty"`
	Origin             json.RawMessage      `json:"origin,omitempty"`
	Project            *ProjectInfo         `json:"project,omitempty"`
	WorkingDirectories []URI                `json:"workingDirectories,omitempty"`
	Annotations        json.RawMessage      `json:"annotations,omitempty"`
	CreatedAt          *string              `json:"createdAt,omitempty"`
	ModifiedAt         *string              `json:"modifiedAt,omitempty"`
	Changes            *ChangesSummary      `json:"changes,omitempty"`
	Meta               map[string]any       `json:"_meta,omitempty"`
	Chats              []SessionChatSummary `json:"chats,omitempty"`
	DefaultChat        *URI                 `json:"defaultChat,omitempty"`
}

// SessionChatSummary is a chat as listed in SessionSummary.chats
// (AHP-1.0.md §6). Read/archived live in Status bits.
type SessionChatSummary struct {
	Resource      URI             `json:"resource"`
	Title         string          `json:"title"`
	Origin        *ChatOrigin     `json:"origin,omitempty"`
	Interactivity string          `json:"interactivity,omitempty"`
	Status        SessionStatus   `json:"status"`
	Changes       *ChangesSummary `json:"changes,omitempty"`
}

// ProjectInfo is the server-owned project of a session.
type ProjectInfo struct {
	URI         URI    `json:"uri"`
	DisplayName string `json:"displayName"`
}

// ChangesSummary counts file changes of a session or chat.
type ChangesSummary struct {
	Additions *int64 `json:"additions,omitempty"`
	Deletions *int64 `json:"deletions,omitempty"`
	Files     *int64 `json:"files,omitempty"`
}

// SessionState is the state of an ahp-session: channel. It inlines the
// session metadata. Resource, CreatedAt and ModifiedAt are ahpd additions
// from SessionSummary; they are omitted when empty.
type SessionState struct {
	Resource           URI                   `json:"resource,omitempty"`
	Provider           string                `json:"provider"`
	Title              string                `json:"title"`
	Status             SessionStatus         `json:"status"`
	Activity           string                `json:"activity,omitempty"`
	Origin             json.RawMessage       `json:"origin,omitempty"`
	Project            *ProjectInfo          `json:"project,omitempty"`
	WorkingDirectories []URI                 `json:"workingDirectories,omitempty"`
	Repositories       []RepositorySource    `json:"repositories,omitempty"`
	Annotations        json.RawMessage       `json:"annotations,omitempty"`
	CreatedAt          string                `json:"createdAt,omitempty"`
	ModifiedAt         string                `json:"modifiedAt,omitempty"`
	Changes            *ChangesSummary       `json:"changes,omitempty"`
	Lifecycle          string                `json:"lifecycle"`
	CreationError      *ErrorInfo            `json:"creationError,omitempty"`
	ServerTools        []ToolDefinition      `json:"serverTools,omitempty"`
	ActiveClients      []ActiveClient        `json:"activeClients"`
	Chats              []ChatSummary         `json:"chats"`
	DefaultChat        URI                   `json:"defaultChat,omitempty"`
	Config             *SessionConfig        `json:"config,omitempty"`
	Customizations     []Customization       `json:"customizations,omitempty"`
	Changesets         []Changeset           `json:"changesets,omitempty"`
	InputNeeded        []SessionInputRequest `json:"inputNeeded,omitempty"`
	Meta               map[string]any        `json:"_meta,omitempty"`
}

// MarshalJSON writes the required activeClients and chats arrays as [] when
// empty.
func (s SessionState) MarshalJSON() ([]byte, error) {
	type plain SessionState
	if s.ActiveClients == nil {
		s.ActiveClients = []ActiveClient{}
	}
	if s.Chats == nil {
		s.Chats = []ChatSummary{}
	}
	return json.Marshal(plain(s))
}

// ActiveClient is a client providing tools to a session
// (SessionActiveClient on the wire).
type ActiveClient struct {
	ClientID       string           `json:"clientId"`
	DisplayName    string           `json:"displayName,omitempty"`
	Tools          []ToolDefinition `json:"tools"`
	Customizations []Customization  `json:"customizations,omitempty"`
}

// MarshalJSON writes the required tools array as [] when empty.
func (c ActiveClient) MarshalJSON() ([]byte, error) {
	type plain ActiveClient
	if c.Tools == nil {
		c.Tools = []ToolDefinition{}
	}
	return json.Marshal(plain(c))
}

// ToolDefinition describes a tool offered by the server or a client.
type ToolDefinition struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Meta         map[string]any  `json:"_meta,omitempty"`
}

// Changeset advertises a subscribable changeset view.
type Changeset struct {
	Label       string `json:"label"`
	URITemplate string `json:"uriTemplate"`
	ChangeKind  string `json:"changeKind"`
	Description string `json:"description,omitempty"`
	// Capabilities say what a client may do on it ({"review": {}}: mark
	// its files reviewed).
	Capabilities map[string]any `json:"capabilities,omitempty"`
	Meta         map[string]any `json:"_meta,omitempty"`
}

// Session input request kinds (SessionInputRequest.Kind).
const (
	InputNeededChatInput           = "chatInput"
	InputNeededToolConfirmation    = "toolConfirmation"
	InputNeededToolClientExecution = "toolClientExecution"
	InputNeededToolAuthentication  = "toolAuthentication"
)

// SessionInputRequest is one entry of SessionState.inputNeeded: a union on
// Kind. chatInput carries Request; the tool kinds carry TurnID and ToolCall;
// toolClientExecution also carries ClientID.
type SessionInputRequest struct {
	ID       string            `json:"id"`
	Chat     URI               `json:"chat"`
	Kind     string            `json:"kind"`
	TurnID   string            `json:"turnId,omitempty"`
	ClientID string            `json:"clientId,omitempty"`
	Request  *ChatInputRequest `json:"request,omitempty"`
	ToolCall *ToolCallState    `json:"toolCall,omitempty"`
}

// ---------------------------------------------------------------------------
// Chats

// ChatSummary is a chat as listed in SessionState.chats.
type ChatSummary struct {
	Resource           URI             `json:"resource"`
	Title              string          `json:"title"`
	Status             SessionStatus   `json:"status"`
	Activity           string          `json:"activity,omitempty"`
	ModifiedAt         string          `json:"modifiedAt"`
	Changes            *ChangesSummary `json:"changes,omitempty"`
	Origin             *ChatOrigin     `json:"origin,omitempty"`
	Movable            bool            `json:"movable,omitempty"`
	Interactivity      string          `json:"interactivity,omitempty"`
	WorkingDirectories []URI           `json:"workingDirectories,omitempty"`
}

// PartialChatSummary carries the changed fields of a ChatSummary
// (session/chatUpdated). Nil means unchanged.
type PartialChatSummary struct {
	Resource           *URI            `json:"resource,omitempty"`
	Title              *string         `json:"title,omitempty"`
	Status             *SessionStatus  `json:"status,omitempty"`
	Activity           *string         `json:"activity,omitempty"`
	ModifiedAt         *string         `json:"modifiedAt,omitempty"`
	Changes            *ChangesSummary `json:"changes,omitempty"`
	Origin             *ChatOrigin     `json:"origin,omitempty"`
	Movable            *bool           `json:"movable,omitempty"`
	Interactivity      *string         `json:"interactivity,omitempty"`
	WorkingDirectories []URI           `json:"workingDirectories,omitempty"`
}

// ChatOrigin says how a chat came to exist: {kind:"user"},
// {kind:"fork", chat, turnId}, {kind:"sideChat", chat, turnId, selection?},
// {kind:"tool", chat, toolCallId}.
type ChatOrigin struct {
	Kind       string         `json:"kind"`
	Chat       URI            `json:"chat,omitempty"`
	TurnID     string         `json:"turnId,omitempty"`
	Selection  *ChatSelection `json:"selection,omitempty"`
	ToolCallID string         `json:"toolCallId,omitempty"`
}

// ChatSelection is the selected-text snapshot of a side chat.
type ChatSelection struct {
	Text           string `json:"text"`
	ResponsePartID string `json:"responsePartId,omitempty"`
}

// ChatState is the state of an ahp-chat: channel. It inlines the ChatSummary
// fields.
type ChatState struct {
	Resource           URI               `json:"resource"`
	Title              string            `json:"title"`
	Status             SessionStatus     `json:"status"`
	Activity           string            `json:"activity,omitempty"`
	ModifiedAt         string            `json:"modifiedAt"`
	Changes            *ChangesSummary   `json:"changes,omitempty"`
	Origin             *ChatOrigin       `json:"origin,omitempty"`
	Movable            bool              `json:"movable,omitempty"`
	Interactivity      string            `json:"interactivity,omitempty"`
	WorkingDirectories []URI             `json:"workingDirectories,omitempty"`
	Changesets         []Changeset       `json:"changesets,omitempty"`
	BackgroundWork     []BackgroundWork  `json:"backgroundWork,omitempty"`
	Canvases           []CanvasReference `json:"canvases,omitempty"`
	Turns              []Turn            `json:"turns"`
	TurnsNextCursor    *string           `json:"turnsNextCursor,omitempty"`
	ActiveTurn         *ActiveTurn       `json:"activeTurn,omitempty"`
	SteeringMessage    *PendingMessage   `json:"steeringMessage,omitempty"`
	QueuedMessages     []PendingMessage  `json:"queuedMessages,omitempty"`
	Draft              *Message          `json:"draft,omitempty"`
	Meta               map[string]any    `json:"_meta,omitempty"`
}

// MarshalJSON writes the required turns array as [] when empty.
func (s ChatState) MarshalJSON() ([]byte, error) {
	type plain ChatState
	if s.Turns == nil {
		s.Turns = []Turn{}
	}
	return json.Marshal(plain(s))
}

// Background work kinds.
const (
	BackgroundShell    = "shell"
	BackgroundSubagent = "subagent"
)

// BackgroundWork is one entry of ChatState.backgroundWork: a union on Kind.
// "shell" carries Command and Terminal; "subagent" carries Chat.
type BackgroundWork struct {
	Kind      string         `json:"kind"`
	ID        string         `json:"id"`
	Label     string         `json:"label"`
	StartedAt string         `json:"startedAt"`
	Command   string         `json:"command,omitempty"`
	Terminal  URI            `json:"terminal,omitempty"`
	Chat      URI            `json:"chat,omitempty"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

// CanvasReference names an ahp-canvas: channel: one entry of
// ChatState.canvases.
type CanvasReference struct {
	Resource URI `json:"resource"`
}

// CanvasState is the whole state of one ahp-canvas: channel (AHP-1.0.md
// §9). URL is an absolute http(s) source, absent while the source is not
// available; it is never logged nor reused from stored state after a
// restart.
type CanvasState struct {
	InstanceID    string `json:"instanceId"`
	ExtensionID   string `json:"extensionId"`
	ExtensionName string `json:"extensionName,omitempty"`
	CanvasID      string `json:"canvasId"`
	Title         string `json:"title,omitempty"`
	Status        string `json:"status,omitempty"`
	URL           URI    `json:"url,omitempty"`
}

// TurnState says how a turn ended.
type TurnState string

// Turn end states.
const (
	TurnComplete  TurnState = "complete"
	TurnCancelled TurnState = "cancelled"
	TurnError     TurnState = "error"
)

// Turn is a finished turn. A turn that ended in an error has State
// TurnError and ends with an error response part; it has no error field
// (AHP-1.0.md §2).
type Turn struct {
	ID            string         `json:"id"`
	StartedAt     string         `json:"startedAt,omitempty"`
	Duration      *int64         `json:"duration,omitempty"`
	Message       Message        `json:"message"`
	ResponseParts []ResponsePart `json:"responseParts"`
	Usage         *UsageInfo     `json:"usage,omitempty"`
	State         TurnState      `json:"state"`
}

// MarshalJSON writes the required responseParts array as [] when empty.
func (t Turn) MarshalJSON() ([]byte, error) {
	type plain Turn
	if t.ResponseParts == nil {
		t.ResponseParts = []ResponsePart{}
	}
	return json.Marshal(plain(t))
}

// ActiveTurn is the turn in progress.
type ActiveTurn struct {
	ID            string         `json:"id"`
	StartedAt     string         `json:"startedAt"`
	Message       Message        `json:"message"`
	ResponseParts []ResponsePart `json:"responseParts"`
	Usage         *UsageInfo     `json:"usage,omitempty"`
}

// MarshalJSON writes the required responseParts array as [] when empty.
func (t ActiveTurn) MarshalJSON() ([]byte, error) {
	type plain ActiveTurn
	if t.ResponseParts == nil {
		t.ResponseParts = []ResponsePart{}
	}
	return json.Marshal(plain(t))
}

// MetaCost is the UsageInfo._meta key of a turn's cost so far, when its
// backend reports one: {"amount": <number>, "currency": "USD"}.
const MetaCost = "ahpd.cost"

// UsageInfo is token usage of a turn.
type UsageInfo struct {
	InputTokens     int64          `json:"inputTokens"`
	OutputTokens    int64          `json:"outputTokens"`
	Model           string         `json:"model,omitempty"`
	CacheReadTokens *int64         `json:"cacheReadTokens,omitempty"`
	Meta            map[string]any `json:"_meta,omitempty"`
}

// ErrorInfo describes an error (creation failure, turn error).
type ErrorInfo struct {
	ErrorType string         `json:"errorType,omitempty"`
	Message   string         `json:"message"`
	Stack     string         `json:"stack,omitempty"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

// Pending message kinds (chat/pendingMessageSet, chat/pendingMessageRemoved).
const (
	PendingSteering = "steering"
	PendingQueued   = "queued"
)

// PendingMessage is a steering or queued message.
type PendingMessage struct {
	ID      string  `json:"id"`
	Message Message `json:"message"`
}

// Message starts or steers a turn.
type Message struct {
	Text        string              `json:"text"`
	Origin      MessageOrigin       `json:"origin"`
	Attachments []MessageAttachment `json:"attachments,omitempty"`
	Model       *ModelSelection     `json:"model,omitempty"`
	Agent       *AgentSelection     `json:"agent,omitempty"`
	Meta        map[string]any      `json:"_meta,omitempty"`
}

// MessageOrigin says who produced a message (MessageFromUser, ...).
type MessageOrigin struct {
	Kind string `json:"kind"`
}

// ModelSelection is a chosen model with its model-specific options.
type ModelSelection struct {
	ID     string         `json:"id"`
	Config map[string]any `json:"config,omitempty"`
}

// AgentSelection selects a custom agent by URI.
type AgentSelection struct {
	URI URI `json:"uri"`
}

// Attachment types (MessageAttachment.Type).
const (
	AttachmentSimple           = "simple"
	AttachmentEmbeddedResource = "embeddedResource"
	AttachmentResource         = "resource"
	AttachmentAnnotations      = "annotations"
	AttachmentChat             = "chat"
)

// MessageAttachment is a union on Type; one struct holds every variant's
// fields.
//   - simple: ModelRepresentation
//   - embeddedResource: Data, ContentType, Selection
//   - resource: URI, SizeHint, ContentType, Nonce, Selection
//   - annotations: Resource, AnnotationIDs
//   - chat: Resource, EndTurn
type MessageAttachment struct {
	Type                string         `json:"type"`
	Label               string         `json:"label"`
	Range               *TextRange     `json:"range,omitempty"`
	DisplayKind         string         `json:"displayKind,omitempty"`
	Meta                map[string]any `json:"_meta,omitempty"`
	ModelRepresentation string         `json:"modelRepresentation,omitempty"`
	Data                string         `json:"data,omitempty"`
	ContentType         string         `json:"contentType,omitempty"`
	Selection           *TextSelection `json:"selection,omitempty"`
	URI                 URI            `json:"uri,omitempty"`
	SizeHint            *int64         `json:"sizeHint,omitempty"`
	Nonce               string         `json:"nonce,omitempty"`
	Resource            URI            `json:"resource,omitempty"`
	AnnotationIDs       []string       `json:"annotationIds,omitempty"`
	EndTurn             string         `json:"endTurn,omitempty"`
}

// TextPosition is a zero-based line/character position.
type TextPosition struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// TextRange is a range in a text document.
type TextRange struct {
	Start TextPosition `json:"start"`
	End   TextPosition `json:"end"`
}

// TextSelection is a selection in a textual resource.
type TextSelection struct {
	Range TextRange `json:"range"`
}

// ContentRef points at content stored outside the state tree.
type ContentRef struct {
	URI         URI    `json:"uri"`
	SizeHint    *int64 `json:"sizeHint,omitempty"`
	ContentType string `json:"contentType,omitempty"`
	Nonce       string `json:"nonce,omitempty"`
}
