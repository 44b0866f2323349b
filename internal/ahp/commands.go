package ahp

import (
	"encoding/json"
)

// Command methods (client→server requests and notifications).
const (
	MethodInitialize     = "initialize"
	MethodReconnect      = "reconnect"
	MethodSubscribe      = "subscribe"
	MethodUnsubscribe    = "unsubscribe"
	MethodDispatchAction = "dispatchAction"
	MethodListSessions   = "listSessions"
	MethodCreateSession  = "createSession"
	MethodDisposeSession = "disposeSession"
	MethodCreateChat     = "createChat"
	MethodDisposeChat    = "disposeChat"
	MethodMoveChat       = "moveChat"
	MethodFetchTurns     = "fetchTurns"
	MethodCompletions    = "completions"
	MethodAuthenticate   = "authenticate"
	MethodPing           = "ping"

	MethodResolveSessionConfig     = "resolveSessionConfig"
	MethodSessionConfigCompletions = "sessionConfigCompletions"
)

// Implementation names a client or server implementation (informational).
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	Title   string `json:"title,omitempty"`
}

// ClientCapabilities are the optional capabilities a client declares. In 1.0
// only mcpApps exists (AHP-1.0.md §8).
type ClientCapabilities struct {
	McpApps map[string]any `json:"mcpApps,omitempty"`
}

// InitializeParams are the params of initialize.
type InitializeParams struct {
	Channel              URI                 `json:"channel"`
	ProtocolVersions     []string            `json:"protocolVersions"`
	ClientID             string              `json:"clientId"`
	ClientInfo           *Implementation     `json:"clientInfo,omitempty"`
	InitialSubscriptions []URI               `json:"initialSubscriptions,omitempty"`
	Locale               string              `json:"locale,omitempty"`
	Capabilities         *ClientCapabilities `json:"capabilities,omitempty"`
	Meta                 map[string]any      `json:"_meta,omitempty"`
}

// Snapshot is a channel's state at serverSeq FromSeq. State is any value
// that marshals to the channel's state (RootState, SessionState,
// ChatState, or raw JSON).
type Snapshot struct {
	Resource URI   `json:"resource"`
	State    any   `json:"state"`
	FromSeq  int64 `json:"fromSeq"`
}

// UnmarshalJSON keeps State as json.RawMessage; decode it by channel kind.
func (s *Snapshot) UnmarshalJSON(b []byte) error {
	var w struct {
		Resource URI             `json:"resource"`
		State    json.RawMessage `json:"state"`
		FromSeq  int64           `json:"fromSeq"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*s = Snapshot{Resource: w.Resource, FromSeq: w.FromSeq}
	if len(w.State) > 0 {
		s.State = w.State
	}
	return nil
}

// InitializeResult is the result of initialize.
type InitializeResult struct {
	ProtocolVersion             string          `json:"protocolVersion"`
	ServerSeq                   int64           `json:"serverSeq"`
	ServerInfo                  *Implementation `json:"serverInfo,omitempty"`
	Meta                        map[string]any  `json:"_meta,omitempty"`
	Snapshots                   []Snapshot      `json:"snapshots"`
	DefaultDirectory            URI             `json:"defaultDirectory,omitempty"`
	CompletionTriggerCharacters []string        `json:"completionTriggerCharacters,omitempty"`
	TerminalCommandPrefix       string          `json:"terminalCommandPrefix,omitempty"`
	// Telemetry names the OTLP channels the host serves (internal/otlp):
	// absent when it serves none.
	Telemetry *TelemetryCapabilities `json:"telemetry,omitempty"`
	// Automations advertises the automation catalogue (automations.go).
	Automations *AutomationCapabilities `json:"automations,omitempty"`
	// RepositoryPreparation says the host prepares repositories a
	// createSession names (repositories.go); absent when it does not.
	RepositoryPreparation *RepositoryPreparationCapabilities `json:"repositoryPreparation,omitempty"`
}

// TelemetryCapabilities is InitializeResult.telemetry: each OTLP signal's
// channel template, with {level} for the client to fill in
// ("ahp-otlp://logs/{level}"). A signal the host does not serve is absent.
type TelemetryCapabilities struct {
	Logs    string `json:"logs,omitempty"`
	Traces  string `json:"traces,omitempty"`
	Metrics string `json:"metrics,omitempty"`
}

// MarshalJSON writes the required snapshots array as [] when empty.
func (r InitializeResult) MarshalJSON() ([]byte, error) {
	type plain InitializeResult
	if r.Snapshots == nil {
		r.Snapshots = []Snapshot{}
	}
	return json.Marshal(plain(r))
}

// UnsupportedVersionData is the data of a -32005 error.
type UnsupportedVersionData struct {
	SupportedVersions []string `json:"supportedVersions"`
}

// SubscribeParams are the params of subscribe.
type SubscribeParams struct {
	Channel  URI              `json:"channel"`
	View     *SubscribeView   `json:"view,omitempty"`
	Delivery *DeliveryOptions `json:"delivery,omitempty"`
	Meta     map[string]any   `json:"_meta,omitempty"`
}

// SubscribeView asks for a tail of Turns completed turns (advisory).
type SubscribeView struct {
	Turns *int `json:"turns,omitempty"`
}

// DeliveryOptions are advisory delivery preferences.
type DeliveryOptions struct {
	MaxLatencyMs *int64 `json:"maxLatencyMs,omitempty"`
}

// SubscribeResult is the result of subscribe.
type SubscribeResult struct {
	Snapshot *Snapshot `json:"snapshot,omitempty"`
}

// UnsubscribeParams are the params of the unsubscribe notification.
type UnsubscribeParams struct {
	Channel URI            `json:"channel"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// ReconnectParams are the 1.0 (single watermark) params of reconnect
// (AHP-1.0.md §R).
type ReconnectParams struct {
	Channel           URI            `json:"channel"`
	ClientID          string         `json:"clientId"`
	LastSeenServerSeq int64          `json:"lastSeenServerSeq"`
	Subscriptions     []URI          `json:"subscriptions"`
	Meta              map[string]any `json:"_meta,omitempty"`
}

// Reconnect result types.
const (
	ReconnectReplay   = "replay"
	ReconnectSnapshot = "snapshot"
)

// ReconnectResult is {type:"replay", actions, missing?} or
// {type:"snapshot", snapshots}.
type ReconnectResult struct {
	Type      string           `json:"type"`
	Actions   []ActionEnvelope `json:"actions,omitempty"`
	Missing   []URI            `json:"missing,omitempty"`
	Snapshots []Snapshot       `json:"snapshots,omitempty"`
}

// MarshalJSON writes the array its type requires even when empty.
func (r ReconnectResult) MarshalJSON() ([]byte, error) {
	switch r.Type {
	case ReconnectReplay:
		actions := r.Actions
		if actions == nil {
			actions = []ActionEnvelope{}
		}
		return json.Marshal(struct {
			Type    string           `json:"type"`
			Actions []ActionEnvelope `json:"actions"`
			Missing []URI            `json:"missing,omitempty"`
		}{r.Type, actions, r.Missing})
	case ReconnectSnapshot:
		snaps := r.Snapshots
		if snaps == nil {
			snaps = []Snapshot{}
		}
		return json.Marshal(struct {
			Type      string     `json:"type"`
			Snapshots []Snapshot `json:"snapshots"`
			Missing   []URI      `json:"missing,omitempty"`
		}{r.Type, snaps, r.Missing})
	}
	type plain ReconnectResult
	return json.Marshal(plain(r))
}

// DispatchActionParams are the params of the dispatchAction notification.
// Action is kept raw; decode it with DecodeAction.
type DispatchActionParams struct {
	Channel   URI             `json:"channel"`
	ClientSeq int64           `json:"clientSeq"`
	Action    json.RawMessage `json:"action"`
	Meta      map[string]any  `json:"_meta,omitempty"`
}

// ListSessionsParams are the params of listSessions.
type ListSessionsParams struct {
	Channel URI            `json:"channel"`
	Limit   *int           `json:"limit,omitempty"`
	Cursor  string         `json:"cursor,omitempty"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// ListSessionsResult is the result of listSessions.
type ListSessionsResult struct {
	Items      []SessionSummary `json:"items"`
	NextCursor string           `json:"nextCursor,omitempty"`
}

// MarshalJSON writes the required items array as [] when empty.
func (r ListSessionsResult) MarshalJSON() ([]byte, error) {
	type plain ListSessionsResult
	if r.Items == nil {
		r.Items = []SessionSummary{}
	}
	return json.Marshal(plain(r))
}

// CreateSessionParams are the params of createSession. WorkingDirectory is
// the legacy single-directory form; prefer WorkingDirectories.
type CreateSessionParams struct {
	Channel            URI             `json:"channel"`
	Provider           string          `json:"provider,omitempty"`
	Model              json.RawMessage `json:"model,omitempty"`
	WorkingDirectories []URI           `json:"workingDirectories,omitempty"`
	WorkingDirectory   URI             `json:"workingDirectory,omitempty"`
	// Repositories are prepared instead of naming working directories
	// (repositories.go); the two are mutually exclusive.
	Repositories []RepositorySource `json:"repositories,omitempty"`
	Config       map[string]any     `json:"config,omitempty"`
	ActiveClient *ActiveClient      `json:"activeClient,omitempty"`
	// Fork is the pre-0.9 session fork ({session, turnId}), which VS Code's
	// suite still sends; a chat is forked with createChat since 0.9.
	Fork          *SessionFork   `json:"fork,omitempty"`
	ProgressToken string         `json:"progressToken,omitempty"`
	Meta          map[string]any `json:"_meta,omitempty"`
}

// SessionFork names the session and turn a pre-0.9 createSession forks.
type SessionFork struct {
	Session URI    `json:"session"`
	TurnID  string `json:"turnId,omitempty"`
}

// Directories returns WorkingDirectories, or the legacy WorkingDirectory as
// a one-entry list.
func (p *CreateSessionParams) Directories() []URI {
	if len(p.WorkingDirectories) > 0 {
		return p.WorkingDirectories
	}
	if p.WorkingDirectory != "" {
		return []URI{p.WorkingDirectory}
	}
	return nil
}

// DisposeSessionParams are the params of disposeSession.
type DisposeSessionParams struct {
	Channel URI            `json:"channel"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// Chat source kinds (ChatSource.Kind).
const (
	SourceFork     = "fork"
	SourceSideChat = "sideChat"
)

// ChatSource is the source of createChat: {kind:"fork", chat, turnId} or
// {kind:"sideChat", chat, turnId, selection?}. Older VS Code sends no kind;
// EffectiveKind treats that as a fork (AHP-1.0.md §7).
type ChatSource struct {
	Kind      string         `json:"kind,omitempty"`
	Chat      URI            `json:"chat"`
	TurnID    string         `json:"turnId"`
	Selection *ChatSelection `json:"selection,omitempty"`
}

// EffectiveKind returns Kind, or SourceFork when Kind is empty.
func (s *ChatSource) EffectiveKind() string {
	if s.Kind == "" {
		return SourceFork
	}
	return s.Kind
}

// CreateChatParams are the params of createChat; Channel is the owning
// session, Chat the new chat's URI.
type CreateChatParams struct {
	Channel            URI            `json:"channel"`
	Chat               URI            `json:"chat"`
	InitialMessage     *Message       `json:"initialMessage,omitempty"`
	Source             *ChatSource    `json:"source,omitempty"`
	WorkingDirectories []URI          `json:"workingDirectories,omitempty"`
	Meta               map[string]any `json:"_meta,omitempty"`
}

// DisposeChatParams are the params of disposeChat.
type DisposeChatParams struct {
	Channel URI            `json:"channel"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// MoveChatParams are the params of moveChat (ahpd answers -32601).
type MoveChatParams struct {
	Channel     URI             `json:"channel"`
	Destination json.RawMessage `json:"destination"`
	Meta        map[string]any  `json:"_meta,omitempty"`
}

// FetchTurnsParams are the params of fetchTurns. Empty Cursor means "next
// older page, if any".
type FetchTurnsParams struct {
	Channel URI            `json:"channel"`
	Cursor  string         `json:"cursor,omitempty"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// CompletionUserMessage is the only completion kind in 1.0.
const CompletionUserMessage = "userMessage"

// CompletionsParams are the params of completions. Offset counts UTF-16 code
// units.
type CompletionsParams struct {
	Channel URI            `json:"channel"`
	Kind    string         `json:"kind"`
	Text    string         `json:"text"`
	Offset  int            `json:"offset"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// CompletionItem is one completion; the range counts UTF-16 code units.
type CompletionItem struct {
	InsertText string            `json:"insertText"`
	RangeStart *int              `json:"rangeStart,omitempty"`
	RangeEnd   *int              `json:"rangeEnd,omitempty"`
	Attachment MessageAttachment `json:"attachment"`
}

// CompletionsResult is the result of completions.
type CompletionsResult struct {
	Items []CompletionItem `json:"items"`
}

// MarshalJSON writes the required items array as [] when empty.
func (r CompletionsResult) MarshalJSON() ([]byte, error) {
	type plain CompletionsResult
	if r.Items == nil {
		r.Items = []CompletionItem{}
	}
	return json.Marshal(plain(r))
}

// AuthenticateParams are the params of authenticate.
type AuthenticateParams struct {
	Channel   URI            `json:"channel"`
	Resource  string         `json:"resource"`
	Token     string         `json:"token"`
	ExpiresIn *int64         `json:"expiresIn,omitempty"`
	Scopes    []string       `json:"scopes,omitempty"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

// PingParams are the params of ping.
type PingParams struct {
	Channel URI            `json:"channel"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// SessionAddedParams are the params of root/sessionAdded.
type SessionAddedParams struct {
	Channel URI            `json:"channel"`
	Summary SessionSummary `json:"summary"`
}

// SessionRemovedParams are the params of root/sessionRemoved.
type SessionRemovedParams struct {
	Channel URI `json:"channel"`
	Session URI `json:"session"`
}

// SessionSummaryChangedParams are the params of root/sessionSummaryChanged.
type SessionSummaryChangedParams struct {
	Channel URI                   `json:"channel"`
	Session URI                   `json:"session"`
	Changes PartialSessionSummary `json:"changes"`
}

// ProgressParams are the params of root/progress.
type ProgressParams struct {
	Channel       URI      `json:"channel"`
	ProgressToken string   `json:"progressToken"`
	Progress      float64  `json:"progress"`
	Total         *float64 `json:"total,omitempty"`
	Message       string   `json:"message,omitempty"`
}
