// Package agent is the contract between the chat actor's turn engine and
// the coding agents that answer turns (claude, pi, acp, cofold, bot, script).
//
// A backend says what it can do (Capabilities, as data) and reports what
// happened (Events); the turn engine in internal/chat implements the rules of
// CHATS.md once, against those capabilities. Backends never see protocol
// state: they do not import internal/ahp state types, and they never decide
// when a turn starts or which pending message runs next.
//
// Lifecycle (Caddy-style): a backend value is built without side effects and
// registered explicitly (see Registry); Open does the I/O; Close works even
// after a failed or partial Open.
package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"sync"
)

// Capabilities are what a backend declares it can do. The turn engine reads
// them; it never asks a backend to do something it has not declared.
type Capabilities struct {
	// Steering: the backend takes a steering message into a running turn.
	Steering bool
	// Withdraw: a steering message handed to the backend can be taken back
	// until the model has read it.
	Withdraw bool
	// OneTurnAtATime: the backend runs one turn at a time; a turn sent while
	// another runs is sent once the one in front of it ends (C-TURN-103).
	OneTurnAtATime bool
	// Fork: the backend can fork a conversation at a point it named.
	Fork bool
	// Rewind: the backend can resume a conversation cut back to a point.
	Rewind bool
	// Delete: the backend can delete a conversation it wrote.
	Delete bool
	// Resume: the backend can restart on a conversation it kept.
	Resume bool
	// Subagents: the backend spawns worker conversations.
	Subagents bool
	// SideChat: the backend can open a side chat (a fresh conversation told
	// what a turn said on its first prompt).
	SideChat bool
	// FailureGoesOn: a turn that fails pauses nothing; what waits starts
	// (the ! command backend, C-TURN-27). Otherwise a failure pauses the
	// queue (C-TURN-33).
	FailureGoesOn bool
	// Process: each open conversation runs an OS process of its own (an
	// agent CLI), so it counts against maxAgentProcesses
	// (internal/agentslots) from Open to Close. In-process backends and
	// the host's own (! commands, host commands) do not.
	Process bool
}

// Model is one model a backend offers.
type Model struct {
	ID   string
	Name string
}

// Command is one slash command a backend offers.
type Command struct {
	Name        string
	Description string
}

// Info describes a backend for the root state's agents list.
type Info struct {
	Provider    string
	DisplayName string
	Description string
	Models      []Model
	// DefaultModel is the model a session that names none runs on, as the
	// backend's configuration says (agents.<name>.defaultModel, or the
	// model its env names); "" when nothing is configured, and the first
	// of Models is the fallback. It may be missing from Models (an agent
	// that lists only its own models): the session config offers it
	// anyway.
	DefaultModel string
	// Commands are the slash commands a session of this backend offers
	// (what a / completes to); a backend may learn them once it ran.
	Commands []Command
	// Config are the session settings the backend takes beside its model
	// (a permission mode, ...): what resolveSessionConfig describes, and
	// what OpenParams.Config carries to the backend.
	Config []ConfigProperty
	// Unavailable, when set, says why the backend cannot run here (for
	// example "claude CLI not found; run make agents"). An unavailable
	// backend is still listed so a client can show the reason.
	Unavailable string
	// SandboxWrite and SandboxRead are what the backend's CLI needs when
	// its session is sandboxed (internal/sandbox): its state and caches
	// (~/.claude, the npm cache) to write, its installation to read.
	SandboxWrite, SandboxRead []string
}

// ConfigProperty is one session setting a backend takes: a string chosen
// from Enum (labelled by EnumLabels), Default when the client names none.
type ConfigProperty struct {
	Key         string
	Title       string
	Description string
	Enum        []string
	EnumLabels  []string
	Default     string
}

// HostTools is the host's MCP endpoint as one conversation may call it:
// streamable HTTP at URL, authorized by Token as a bearer token. Names are
// the tools it serves; ServerName is the server's name.
type HostTools struct {
	URL        string
	Token      string
	ServerName string
	Names      []string
	// Confirm are the tools of Names a backend that can ask lets the user
	// confirm before each call (create_session starts work elsewhere);
	// the others need no asking.
	Confirm []string
}

// MCPConfig is the endpoint as an MCP client configuration entry
// ({"type":"http","url":…,"headers":{"Authorization":"Bearer …"}}).
func (t *HostTools) MCPConfig() map[string]any {
	return map[string]any{"type": "http", "url": t.URL, "headers": map[string]string{"Authorization": "Bearer " + t.Token}}
}

// OpenMode says how a conversation is opened.
type OpenMode int

const (
	// OpenNew starts a conversation under ConversationID with nothing before it.
	OpenNew OpenMode = iota
	// OpenResume restarts on the kept conversation ConversationID.
	OpenResume
	// OpenFork starts ConversationID as a copy of Source cut at Point.
	OpenFork
	// OpenRewind restarts on ConversationID cut back to Point.
	OpenRewind
)

func (m OpenMode) String() string {
	switch m {
	case OpenNew:
		return "new"
	case OpenResume:
		return "resume"
	case OpenFork:
		return "fork"
	case OpenRewind:
		return "rewind"
	}
	return fmt.Sprintf("OpenMode(%d)", int(m))
}

// OpenParams are what a backend needs to open a conversation.
type OpenParams struct {
	Mode OpenMode
	// ConversationID is the backend conversation this chat writes under.
	// For the first chat of a session it is the session URI's id, so the
	// backend's transcript lines up with the session (Claude's --session-id).
	ConversationID string
	// Source is the conversation a fork copies (OpenFork only).
	Source string
	// Point is the backend's own name for where a turn ended (OpenFork,
	// OpenRewind): the only point a backend can be asked to resume from.
	Point string
	// Directories are the chat's working directories as local paths; the
	// first is where the backend runs.
	Directories []string
	Model       string
	// Config holds the session's values of the settings the backend
	// declared (Info.Config), by key.
	Config map[string]string
	// HostTools is where the host's own tools (rename_chat, ...) are served
	// to this conversation over MCP, with its credential; nil offers none.
	HostTools *HostTools
	// Settings are the backend's daemon settings (binary path, extra args,
	// environment, ...), opaque to everyone but the backend.
	Settings json.RawMessage
	Logger   *slog.Logger
	// Owner is the sender reference of the session's owner: who the
	// conversation runs for (a bot's chat checks it may use the bot).
	Owner string
	// Sandbox, when set, is applied to every process the backend starts
	// for the conversation, after exec.Command and before Start
	// (agentproc.ToCmd): given the program, argv and environment (nil: the
	// daemon's), it returns the ones that start it through the sandbox
	// launcher (internal/sandbox). An error from it means the process must
	// not start. Plain strings keep this contract free of os/exec.
	Sandbox func(path string, args, env []string) (string, []string, []string, error)
}

// Turn is one turn handed to a backend.
type Turn struct {
	// ID is the host's turn id; every Event the backend reports for this
	// turn carries it.
	ID string
	// Text is what was said.
	Text string
	// HostContext is what the host has to say on this turn (a side chat's
	// source turn, resolved chat attachments, ...). A backend puts it in its
	// system prompt or ahead of Text (C-TURN-109..111).
	HostContext string
	// Attachments as resolved by the host (paths, inlined text, images).
	Attachments []Attachment
	Model       string
}

// Attachment is one resolved attachment of a turn.
type Attachment struct {
	// As is how the attachment reaches the model: "image", "inline" or "path".
	As       string
	Label    string
	Path     string
	MimeType string
	// Text is the inlined text ("inline") or the model representation of a
	// resolved chat attachment.
	Text string
	// Data is an image's bytes ("image").
	Data []byte
}

// SteerResult is a backend's answer to a steering message.
type SteerResult int

const (
	// SteerTaken: the backend holds the message and will take it into the
	// running turn; it reports SteeringConsumed (or SteeringReturned) later.
	SteerTaken SteerResult = iota
	// SteerNotYet: the backend cannot take it yet (the turn is still
	// preparing its prompt); the host hands it again on the turn's next
	// action (C-TURN-42).
	SteerNotYet
	// SteerUnsupported: the backend takes no steering at all (C-TURN-49).
	SteerUnsupported
	// SteerRefused: the backend would not take this message; the host takes
	// it out and logs the reason (C-TURN-85).
	SteerRefused
)

func (r SteerResult) String() string {
	switch r {
	case SteerTaken:
		return "taken"
	case SteerNotYet:
		return "not-yet"
	case SteerUnsupported:
		return "unsupported"
	case SteerRefused:
		return "refused"
	}
	return fmt.Sprintf("SteerResult(%d)", int(r))
}

// Steering is a steering message handed to a running turn.
type Steering struct {
	ID     string
	TurnID string
	Text   string
}

// Conversation is one open backend conversation: one chat's agent.
// Methods may be called from the chat actor only; a backend reports
// everything else through Events. Send, Steer, Withdraw, Confirm and Stop
// must not block on the model: they hand work to the backend's own
// goroutines and return.
type Conversation interface {
	// Send hands a turn to the backend. A backend that runs one turn at a
	// time may hold it until the turn in front of it ends.
	Send(ctx context.Context, t Turn) error
	// Steer hands a steering message to the running turn.
	Steer(s Steering) SteerResult
	// Withdraw takes back a steering message handed earlier. false: the
	// backend keeps it (the model read it, or the backend cannot withdraw).
	Withdraw(id string) bool
	// Confirm answers a tool call that waits for confirmation.
	Confirm(turnID, toolCallID string, approved bool) error
	// Stop stops the running turn and every turn sent behind it. The
	// backend ends each with TurnCancelled.
	Stop(ctx context.Context) error
	// Events is the stream of what happened, closed when the conversation
	// is closed or its process has exited.
	Events() <-chan Event
	// Close ends the conversation's process; its kept conversation stays.
	Close() error
}

// ClientToolRunner is a Conversation some of whose tool calls a client runs
// (ToolCall.Client): the client's run of the call (chat/toolCallComplete)
// and the confirmation of its result (chat/toolCallResultConfirmed) are
// handed to it, in any chat, and from a worker chat to the backend that
// runs the worker (C-SUB-14).
type ClientToolRunner interface {
	ClientToolResult(turnID, toolCallID string, result ClientToolResult) error
	ClientToolResultConfirmed(turnID, toolCallID string, approved bool) error
}

// ClientToolResult is what a client's run of a tool gave.
type ClientToolResult struct {
	Success bool
	// Output is the text of the result's content.
	Output string
	// Error is the result's error, when it failed.
	Error string
}

// Killer is a Conversation whose process can be ended at once, without
// the polite shutdown Close gives it: for an agent that stopped answering
// (agentSilenceSeconds). Its kept conversation stays, as with Close.
type Killer interface {
	Kill() error
}

// Agent is one backend.
type Agent interface {
	Provider() string
	Info(ctx context.Context) Info
	Capabilities() Capabilities
	Open(ctx context.Context, p OpenParams) (Conversation, error)
	// Delete removes a kept conversation (Capabilities.Delete).
	Delete(ctx context.Context, conversationID string, directories []string) error
}

// EventKind says what an Event reports.
type EventKind int

const (
	// EventText: Text is more markdown of the answer. A new PartID starts a
	// new markdown part; an empty PartID continues the last one.
	EventText EventKind = iota + 1
	// EventReasoning: Text is more reasoning.
	EventReasoning
	// EventToolStart: a tool call began (ToolCall.ID, Name, DisplayName).
	EventToolStart
	// EventToolInput: Text is more of the tool's input.
	EventToolInput
	// EventToolReady: the tool's input is complete (ToolCall.Input,
	// Invocation); NeedsConfirmation says it waits for Confirm.
	EventToolReady
	// EventToolDone: the tool call finished (ToolCall.Success, Output, Error).
	EventToolDone
	// EventUsage: token counts for the turn so far.
	EventUsage
	// EventNotice: a system notification in the turn (Text), for example a
	// compaction saying how many tokens went where.
	EventNotice
	// EventSteeringConsumed: the steering message SteeringID went into the
	// turn; the host takes it out of the chat's pending messages.
	EventSteeringConsumed
	// EventSteeringReturned: the steering message SteeringID was not used
	// by the turn it was handed to; the host steers the next turn with it
	// or runs it next.
	EventSteeringReturned
	// EventTurnStarted: the backend began a turn the host did not send
	// (Claude answering a held steering message after a stop); SteeringID
	// names the message it answers.
	EventTurnStarted
	// EventTurnEnd: the turn ended (End).
	EventTurnEnd
	// EventExited: the backend's process ended (Err says why). Every turn
	// still open is ended by the host with an error.
	EventExited
	// EventWorkerStarted: a tool call of the turn spawned a worker
	// conversation (a subagent): Spawn says which call, the prompt the
	// agent wrote for it and its kind. Event.Worker names the conversation
	// the spawning call is in (empty: the chat's own; a worker's id: a
	// nested worker, C-SUB-18). The worker's own events carry Spawn.ID in
	// Event.Worker.
	EventWorkerStarted
	// EventWorkerEnded: the worker Spawn.ID ended (End says how).
	EventWorkerEnded
	// EventInputRequest: the turn asks the user something (Input: a
	// question with options, free text, a yes or no); the backend waits
	// for the answer, which the host hands it through InputAnswerer.
	EventInputRequest
)

// Outcome is how a turn ended.
type Outcome int

const (
	OutcomeComplete Outcome = iota + 1
	OutcomeError
	OutcomeCancelled
)

func (o Outcome) String() string {
	switch o {
	case OutcomeComplete:
		return "complete"
	case OutcomeError:
		return "error"
	case OutcomeCancelled:
		return "cancelled"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// ToolCall describes a tool call in Events.
type ToolCall struct {
	ID          string
	Name        string
	DisplayName string
	// Invocation is a one-line description of what the call does.
	Invocation string
	// Input is the tool's input as JSON text.
	Input             string
	NeedsConfirmation bool
	Success           bool
	// PastTense describes what the call did, once done.
	PastTense string
	Output    string
	Error     string
	// Terminal is the terminal the call ran in (a ! command's), named in
	// its result with TerminalTitle.
	Terminal, TerminalTitle string
	// Paths are the files the backend says the call touches (an ACP tool
	// call's locations); with a file-changing kind (edit, delete, move)
	// they are what the host's changeset watches.
	Paths []string
	// Client, when set, is the id of the client that runs this call: one
	// of the session's active clients' own tools. The call waits for that
	// client's result, which the host hands back (ClientToolRunner).
	Client string
	// Before is the file the call is about to change, as a backend that
	// runs its own edit tools read it just before (cofold): the host's
	// changeset takes it over its own read, which could come after the
	// edit. nil: the host reads the file itself.
	Before *FileSnapshot
}

// FileSnapshot is a file as read at one moment.
type FileSnapshot struct {
	// Path is the file's real path (symlinks resolved).
	Path string
	// Exists: the file was there. Data is its contents, nil when absent or
	// larger than the reader keeps.
	Exists bool
	Data   []byte
}

// End says how a turn ended.
type End struct {
	Outcome Outcome
	// ErrorType and Message describe an OutcomeError.
	ErrorType string
	Message   string
	// Resumable: a client can resume the turn (chat/turnResume).
	Resumable bool
	// Point is the backend's own name for where this turn ended: the point
	// a fork or rewind at this turn resumes from. Empty when it names none.
	Point string
	// ExitCode is set by local command turns.
	ExitCode *int
}

// Usage counts tokens, and what the turn cost when the backend says.
type Usage struct {
	InputTokens  int
	OutputTokens int
	CacheRead    int
	Model        string
	// Cost is the turn's cost so far, nil when the backend reports none.
	Cost *Cost
}

// Cost is an amount of money in a currency ("USD").
type Cost struct {
	Amount   float64
	Currency string
}

// WorkerSpawn describes a worker conversation a tool call spawned.
type WorkerSpawn struct {
	// ID is the spawning tool call's id; it names the worker.
	ID string
	// Prompt is what the agent wrote for the worker.
	Prompt string
	// AgentName is the kind of worker (Claude's subagent_type).
	AgentName string
	// Description is a short description of the worker's job.
	Description string
	// Background: the worker runs on after its spawning call returned and
	// after the turn that spawned it ended (C-TURN-73).
	Background bool
}

// Event is one thing a backend reports.
type Event struct {
	Kind       EventKind
	TurnID     string
	PartID     string
	Text       string
	ToolCall   *ToolCall
	Usage      *Usage
	SteeringID string
	End        *End
	Err        error
	// Worker names the worker conversation the event belongs to, by its
	// spawning tool call's id; empty for the chat's own conversation.
	// TurnID stays the host turn the worker's root call was spawned in.
	Worker string
	// Spawn describes the worker of EventWorkerStarted and EventWorkerEnded.
	Spawn *WorkerSpawn
	// Input is the request of EventInputRequest.
	Input *InputRequest
}

// InputRequest is what a turn asks the user (an elicitation): a message,
// a URL to open, and questions, answered together.
type InputRequest struct {
	// ID names the request within the chat; the answer carries it.
	ID        string
	Message   string
	URL       string
	Questions []InputQuestion
}

// Input question kinds (InputQuestion.Kind), as AHP names them.
const (
	InputText         = "text"
	InputNumber       = "number"
	InputInteger      = "integer"
	InputBoolean      = "boolean"
	InputSingleSelect = "single-select"
	InputMultiSelect  = "multi-select"
)

// InputQuestion is one question of an InputRequest.
type InputQuestion struct {
	ID      string
	Kind    string
	Title   string
	Message string
	// Required: the request cannot be accepted without an answer to it.
	Required bool
	// Options are a select question's choices.
	Options []InputOption
	// AllowFreeform: a select question also takes typed text.
	AllowFreeform bool
}

// InputOption is one choice of a select question.
type InputOption struct {
	ID          string
	Label       string
	Description string
	Recommended bool
}

// Input responses (InputAnswer.Response), as AHP names them.
const (
	InputAccept  = "accept"
	InputDecline = "decline"
	InputCancel  = "cancel"
)

// InputAnswer is the user's answer to an InputRequest.
type InputAnswer struct {
	// Response is InputAccept, InputDecline or InputCancel.
	Response string
	// Values are the answers of an accepted request by question id; a
	// skipped question has none.
	Values map[string]InputValue
}

// InputValue is the answer to one question: Text for text and a single
// select (the option's id), Number, Bool, or Selected (a multi-select's
// option ids); Freeform is text typed beside or instead of options.
type InputValue struct {
	Text     string
	Number   float64
	Bool     bool
	Selected []string
	Freeform []string
}

// InputAnswerer is a Conversation whose turns ask the user
// (EventInputRequest): the answer a client gives (chat/inputCompleted) is
// handed to it.
type InputAnswerer interface {
	InputAnswered(turnID, requestID string, answer InputAnswer) error
}

// WorkerStopper is a Conversation that can stop one worker and leave the
// turn that spawned it running (C-SUB-13). A conversation without it is
// asked to stop the turn the worker belongs to instead.
type WorkerStopper interface {
	StopWorker(ctx context.Context, worker string) error
}

// Registry holds the backends a daemon offers, by provider. Build it
// explicitly (in serve, or per test); there is no global registry.
type Registry struct {
	// mu guards agents.
	mu     sync.RWMutex
	agents map[string]Agent
}

// NewRegistry returns a registry holding the given backends.
func NewRegistry(agents ...Agent) (*Registry, error) {
	r := &Registry{agents: make(map[string]Agent)}
	for _, a := range agents {
		if err := r.Register(a); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Register adds a backend; two backends with one provider are an error.
func (r *Registry) Register(a Agent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := a.Provider()
	if p == "" {
		return fmt.Errorf("register agent: empty provider")
	}
	if _, dup := r.agents[p]; dup {
		return fmt.Errorf("register agent %s: provider already registered", p)
	}
	r.agents[p] = a
	return nil
}

// Get returns the backend for provider.
func (r *Registry) Get(provider string) (Agent, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.agents[provider]
	return a, ok
}

// Providers lists the registered providers in name order.
func (r *Registry) Providers() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.agents))
	for p := range r.agents {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
