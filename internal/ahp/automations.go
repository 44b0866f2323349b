package ahp

import (
	"encoding/json"
	"strings"
)

// Automations: the host-owned catalogue of prompts that run on their own
// (microsoft/agent-host-protocol types/channels-automation and
// channels-automation-run). The catalogue is one channel,
// ahp-automations://, whose state lists every automation; each run of one
// is a channel of its own, ahp-automation-run:/<id>.

// Automation URIs.
const (
	// AutomationsURI is the catalogue channel.
	AutomationsURI = "ahp-automations://"
	// AutomationScheme names one automation: ahp-automation:/<id>.
	AutomationScheme = "ahp-automation"
	// AutomationRunScheme names one run: ahp-automation-run:/<id>.
	AutomationRunScheme = "ahp-automation-run"
)

// IsAutomationsURI reports whether u is the catalogue channel.
func IsAutomationsURI(u string) bool { return u == AutomationsURI }

// IsAutomationURI reports whether u names one automation (ahp-automation:
// with a non-empty path).
func IsAutomationURI(u string) bool {
	rest, ok := strings.CutPrefix(u, AutomationScheme+":")
	return ok && strings.Trim(rest, "/") != ""
}

// IsAutomationRunURI reports whether u names one automation run.
func IsAutomationRunURI(u string) bool {
	rest, ok := strings.CutPrefix(u, AutomationRunScheme+":")
	return ok && strings.Trim(rest, "/") != ""
}

// Automation request methods.
const (
	MethodListAutomationTriggerDefinitions = "listAutomationTriggerDefinitions"
	MethodRunAutomation                    = "runAutomation"
	MethodFetchAutomationRuns              = "fetchAutomationRuns"
)

// Operations an automation entry may advertise (AutomationEntry.operations).
const (
	AutomationOpUpdate = "update"
	AutomationOpRemove = "remove"
	AutomationOpRun    = "run"
)

// Trigger kinds and misfire policies.
const (
	TriggerSchedule = "schedule"
	TriggerEvent    = "event"

	MisfireSkip    = "skip"
	MisfireRunOnce = "runOnce"
)

// Run statuses (AutomationRunLifecycle.status); the last three are terminal.
const (
	RunPending   = "pending"
	RunRunning   = "running"
	RunCompleted = "completed"
	RunFailed    = "failed"
	RunCancelled = "cancelled"
)

// Run origins and the one run operation.
const (
	RunOriginManual  = "manual"
	RunOriginTrigger = "trigger"

	RunOpCancel = "cancel"
)

// AutomationSchedule is a five-field cron expression read in an IANA time
// zone.
type AutomationSchedule struct {
	Expression string `json:"expression"`
	TimeZone   string `json:"timeZone"`
}

// AutomationTrigger is one automatic trigger. ahpd defines no event
// trigger types (listAutomationTriggerDefinitions answers none), so the
// event fields are kept only to be refused with a clear reason.
type AutomationTrigger struct {
	ID            string              `json:"id"`
	Kind          string              `json:"kind"`
	Schedule      *AutomationSchedule `json:"schedule,omitempty"`
	MisfirePolicy string              `json:"misfirePolicy,omitempty"`
	Type          string              `json:"type,omitempty"`
}

// AutomationSessionTemplate is what each run's fresh session is made from.
type AutomationSessionTemplate struct {
	Provider           string          `json:"provider,omitempty"`
	Model              *ModelSelection `json:"model,omitempty"`
	Agent              json.RawMessage `json:"agent,omitempty"`
	WorkingDirectories []URI           `json:"workingDirectories,omitempty"`
	Config             map[string]any  `json:"config,omitempty"`
	Customizations     json.RawMessage `json:"customizations,omitempty"`
}

// AutomationDefinition is the client-editable part of an automation.
type AutomationDefinition struct {
	Title    string                    `json:"title"`
	Message  Message                   `json:"message"`
	Session  AutomationSessionTemplate `json:"session"`
	Enabled  bool                      `json:"enabled"`
	Triggers []AutomationTrigger       `json:"triggers"`
	Meta     map[string]any            `json:"_meta,omitempty"`
}

// AutomationDefinitionPatch replaces the fields it names (nil: unchanged).
type AutomationDefinitionPatch struct {
	Title    *string                    `json:"title,omitempty"`
	Message  *Message                   `json:"message,omitempty"`
	Session  *AutomationSessionTemplate `json:"session,omitempty"`
	Enabled  *bool                      `json:"enabled,omitempty"`
	Triggers []AutomationTrigger        `json:"triggers,omitempty"`
	Meta     map[string]any             `json:"_meta,omitempty"`
}

// AutomationRunOrigin says why a run was made.
type AutomationRunOrigin struct {
	Kind         string `json:"kind"`
	TriggerID    string `json:"triggerId,omitempty"`
	ScheduledFor string `json:"scheduledFor,omitempty"`
	CatchUp      bool   `json:"catchUp,omitempty"`
}

// AutomationRunLifecycle is a run's status with its times (ISO 8601).
type AutomationRunLifecycle struct {
	Status      string     `json:"status"`
	CreatedAt   string     `json:"createdAt"`
	StartedAt   string     `json:"startedAt,omitempty"`
	CompletedAt string     `json:"completedAt,omitempty"`
	Error       *ErrorInfo `json:"error,omitempty"`
}

// Terminal reports whether the run has ended.
func (l AutomationRunLifecycle) Terminal() bool {
	return l.Status == RunCompleted || l.Status == RunFailed || l.Status == RunCancelled
}

// AutomationRunState is the state of an ahp-automation-run: channel.
type AutomationRunState struct {
	Resource       URI                    `json:"resource"`
	Automation     URI                    `json:"automation"`
	Origin         AutomationRunOrigin    `json:"origin"`
	Lifecycle      AutomationRunLifecycle `json:"lifecycle"`
	Sessions       []URI                  `json:"sessions"`
	PrimarySession URI                    `json:"primarySession,omitempty"`
	Operations     []string               `json:"operations"`
}

// Summary is the run as its automation's history lists it.
func (r AutomationRunState) Summary() AutomationRunSummary {
	return AutomationRunSummary{Resource: r.Resource, Automation: r.Automation, Origin: r.Origin,
		Lifecycle: r.Lifecycle, PrimarySession: r.PrimarySession, SessionCount: len(r.Sessions),
		Operations: r.Operations}
}

// AutomationRunSummary is one run in AutomationEntry.runs.
type AutomationRunSummary struct {
	Resource       URI                    `json:"resource"`
	Automation     URI                    `json:"automation"`
	Origin         AutomationRunOrigin    `json:"origin"`
	Lifecycle      AutomationRunLifecycle `json:"lifecycle"`
	PrimarySession URI                    `json:"primarySession,omitempty"`
	SessionCount   int                    `json:"sessionCount"`
	Operations     []string               `json:"operations"`
}

// AutomationEntry is one automation in the catalogue.
type AutomationEntry struct {
	Resource       URI                    `json:"resource"`
	Definition     AutomationDefinition   `json:"definition"`
	NextRunAt      string                 `json:"nextRunAt,omitempty"`
	Runs           []AutomationRunSummary `json:"runs"`
	RunsNextCursor string                 `json:"runsNextCursor,omitempty"`
	Operations     []string               `json:"operations"`
	CreatedAt      string                 `json:"createdAt"`
	ModifiedAt     string                 `json:"modifiedAt"`
}

// AutomationState is the catalogue channel's state.
type AutomationState struct {
	Entries []AutomationEntry `json:"entries"`
}

// AutomationCapabilities is InitializeResult.automations.
type AutomationCapabilities struct {
	Create          *struct{}                       `json:"create,omitempty"`
	Schedules       *AutomationScheduleCapabilities `json:"schedules,omitempty"`
	RunCancellation *struct{}                       `json:"runCancellation,omitempty"`
	RunHistoryLimit int                             `json:"runHistoryLimit,omitempty"`
}

// AutomationScheduleCapabilities restricts schedule triggers.
type AutomationScheduleCapabilities struct {
	MinIntervalMinutes int `json:"minIntervalMinutes,omitempty"`
}

// ListAutomationTriggerDefinitionsParams asks for the event trigger types
// available to a prospective session template.
type ListAutomationTriggerDefinitionsParams struct {
	Channel            URI            `json:"channel"`
	Provider           string         `json:"provider,omitempty"`
	WorkingDirectories []URI          `json:"workingDirectories,omitempty"`
	SessionConfig      map[string]any `json:"sessionConfig,omitempty"`
}

// ListAutomationTriggerDefinitionsResult lists them.
type ListAutomationTriggerDefinitionsResult struct {
	Items []json.RawMessage `json:"items"`
}

// RunAutomationParams starts a manual run; RequestID makes it idempotent.
type RunAutomationParams struct {
	Channel    URI    `json:"channel"`
	Automation URI    `json:"automation"`
	RequestID  string `json:"requestId"`
}

// RunAutomationResult names the run.
type RunAutomationResult struct {
	Resource URI `json:"resource"`
}

// FetchAutomationRunsParams asks for an older page of run history.
type FetchAutomationRunsParams struct {
	Channel    URI    `json:"channel"`
	Automation URI    `json:"automation"`
	Cursor     string `json:"cursor,omitempty"`
}

// ---------------------------------------------------------------------------
// Automation actions

// AutomationCreateRequested asks the host to create an automation.
type AutomationCreateRequested struct {
	Resource   URI                  `json:"resource"`
	Definition AutomationDefinition `json:"definition"`
}

// AutomationUpdateRequested asks the host to patch an automation.
type AutomationUpdateRequested struct {
	Resource URI                       `json:"resource"`
	Changes  AutomationDefinitionPatch `json:"changes"`
}

// AutomationSet adds or replaces one entry of the catalogue.
type AutomationSet struct {
	Automation AutomationEntry `json:"automation"`
}

// AutomationRemoved removes one entry of the catalogue (a client's request,
// echoed as the fact once the host has removed it).
type AutomationRemoved struct {
	Resource URI `json:"resource"`
}

// AutomationRunLifecycleChanged replaces a run's lifecycle and operations.
type AutomationRunLifecycleChanged struct {
	Lifecycle  AutomationRunLifecycle `json:"lifecycle"`
	Operations []string               `json:"operations"`
}

// AutomationRunSessionSet links a session to a run.
type AutomationRunSessionSet struct {
	Session URI `json:"session"`
}

// AutomationRunSessionRemoved unlinks a session from a run.
type AutomationRunSessionRemoved struct {
	Session URI `json:"session"`
}

// AutomationRunPrimarySessionChanged selects the session to open first.
type AutomationRunPrimarySessionChanged struct {
	PrimarySession URI `json:"primarySession,omitempty"`
}

// AutomationRunCancelRequested asks the host to cancel a run.
type AutomationRunCancelRequested struct{}
