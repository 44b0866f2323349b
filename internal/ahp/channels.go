package ahp

import (
	"encoding/json"
	"fmt"
)

// The states and actions of the channels beside root, session and chat:
// terminals (ahp-terminal:), changesets (ahp-changeset:), a session's
// annotations (ahp-session:/<id>/annotations) and resource watches
// (ahp-resource-watch:). Nested shapes the reducers never look into (a
// file edit, a text range, a confirmation) stay raw JSON, so they go back
// out exactly as they came.

// TerminalState is one terminal channel's state.
type TerminalState struct {
	Title    string                `json:"title"`
	Cwd      URI                   `json:"cwd,omitempty"`
	Cols     *int                  `json:"cols,omitempty"`
	Rows     *int                  `json:"rows,omitempty"`
	Content  []TerminalContentPart `json:"content"`
	ExitCode *int                  `json:"exitCode,omitempty"`
	// Lifecycle is the later protocol's running or exited (with the exit
	// code), which VS Code's host sends; ExitCode stays for 1.0 clients.
	Lifecycle                *TerminalLifecycle `json:"lifecycle,omitempty"`
	Claim                    TerminalClaim      `json:"claim"`
	SupportsCommandDetection *bool              `json:"supportsCommandDetection,omitempty"`
}

// MarshalJSON writes the required content array as [] when empty.
func (s TerminalState) MarshalJSON() ([]byte, error) {
	type plain TerminalState
	if s.Content == nil {
		s.Content = []TerminalContentPart{}
	}
	return json.Marshal(plain(s))
}

// Terminal content part types.
const (
	TerminalPartUnclassified = "unclassified"
	TerminalPartCommand      = "command"
)

// TerminalContentPart is output outside any command (unclassified: Value)
// or one command with its output (command: the rest).
type TerminalContentPart struct {
	Type        string
	Value       string
	CommandID   string
	CommandLine string
	Output      string
	Timestamp   int64
	IsComplete  bool
	ExitCode    *int
	DurationMs  *int64
}

type unclassifiedPart struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

type commandPart struct {
	Type        string `json:"type"`
	CommandID   string `json:"commandId"`
	CommandLine string `json:"commandLine"`
	Output      string `json:"output"`
	Timestamp   int64  `json:"timestamp"`
	IsComplete  bool   `json:"isComplete"`
	ExitCode    *int   `json:"exitCode,omitempty"`
	DurationMs  *int64 `json:"durationMs,omitempty"`
}

// MarshalJSON writes the fields of the part's own type only.
func (p TerminalContentPart) MarshalJSON() ([]byte, error) {
	if p.Type == TerminalPartCommand {
		return json.Marshal(commandPart{p.Type, p.CommandID, p.CommandLine, p.Output, p.Timestamp, p.IsComplete, p.ExitCode, p.DurationMs})
	}
	return json.Marshal(unclassifiedPart{Type: TerminalPartUnclassified, Value: p.Value})
}

// UnmarshalJSON reads a part by its type; an unknown type reads as
// unclassified output.
func (p *TerminalContentPart) UnmarshalJSON(b []byte) error {
	var c commandPart
	var u unclassifiedPart
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("terminal content part: %w", err)
	}
	if c.Type == TerminalPartCommand {
		*p = TerminalContentPart{Type: c.Type, CommandID: c.CommandID, CommandLine: c.CommandLine, Output: c.Output,
			Timestamp: c.Timestamp, IsComplete: c.IsComplete, ExitCode: c.ExitCode, DurationMs: c.DurationMs}
		return nil
	}
	if err := json.Unmarshal(b, &u); err != nil {
		return fmt.Errorf("terminal content part: %w", err)
	}
	*p = TerminalContentPart{Type: TerminalPartUnclassified, Value: u.Value}
	return nil
}

// TerminalData is output of the terminal's process.
type TerminalData struct {
	Data string `json:"data"`
}

// TerminalInput is what a client types; the host writes it to the pty and
// the state does not change.
type TerminalInput struct {
	Data string `json:"data"`
}

// TerminalResized sets the terminal's size.
type TerminalResized struct {
	Cols int `json:"cols"`
	Rows int `json:"rows"`
}

// TerminalClaimed says who holds the terminal now.
type TerminalClaimed struct {
	Claim TerminalClaim `json:"claim"`
}

// TerminalTitleChanged renames the terminal.
type TerminalTitleChanged struct {
	Title string `json:"title"`
}

// TerminalCwdChanged is the process's new working directory.
type TerminalCwdChanged struct {
	Cwd URI `json:"cwd"`
}

// TerminalExited is the process's exit code.
type TerminalExited struct {
	ExitCode *int `json:"exitCode,omitempty"`
}

// TerminalCleared empties the terminal's content.
type TerminalCleared struct{}

// TerminalCommandDetectionAvailable says the terminal reports commands.
type TerminalCommandDetectionAvailable struct{}

// TerminalCommandExecuted opens a command part.
type TerminalCommandExecuted struct {
	CommandID   string `json:"commandId"`
	CommandLine string `json:"commandLine"`
	Timestamp   int64  `json:"timestamp"`
}

// TerminalCommandFinished completes the command part of CommandID.
type TerminalCommandFinished struct {
	CommandID  string `json:"commandId"`
	ExitCode   *int   `json:"exitCode,omitempty"`
	DurationMs *int64 `json:"durationMs,omitempty"`
}

// Changeset statuses (ChangesetState.status, operation status "error").
const (
	ChangesetComputing = "computing"
	ChangesetReady     = "ready"
	ChangesetError     = "error"
)

// ChangesetState is one changeset channel's state.
type ChangesetState struct {
	Status     string               `json:"status"`
	Error      *ErrorInfo           `json:"error,omitempty"`
	Files      []ChangesetFile      `json:"files"`
	Operations []ChangesetOperation `json:"operations,omitempty"`
}

// MarshalJSON writes the required files array as [] when empty.
func (s ChangesetState) MarshalJSON() ([]byte, error) {
	type plain ChangesetState
	if s.Files == nil {
		s.Files = []ChangesetFile{}
	}
	return json.Marshal(plain(s))
}

// ChangesetFile is one file of a changeset; Edit is a FileEdit.
type ChangesetFile struct {
	ID       string          `json:"id"`
	Edit     json.RawMessage `json:"edit"`
	Reviewed *bool           `json:"reviewed,omitempty"`
	Meta     map[string]any  `json:"_meta,omitempty"`
}

// ChangesetOperation is a verb a client may invoke on a changeset.
type ChangesetOperation struct {
	ID           string          `json:"id"`
	Label        string          `json:"label"`
	Description  string          `json:"description,omitempty"`
	Scopes       []string        `json:"scopes"`
	Confirmation json.RawMessage `json:"confirmation,omitempty"`
	Icon         string          `json:"icon,omitempty"`
	Group        string          `json:"group,omitempty"`
	Status       string          `json:"status"`
	Error        *ErrorInfo      `json:"error,omitempty"`
}

// ChangesetOperationTarget is what an operation is invoked on: the whole
// changeset, one resource, or a range of one resource.
type ChangesetOperationTarget struct {
	Kind     string          `json:"kind"`
	Resource URI             `json:"resource,omitempty"`
	Range    json.RawMessage `json:"range,omitempty"`
}

// ChangesetStatusChanged sets the changeset's status; Error only with
// status error.
type ChangesetStatusChanged struct {
	Status string     `json:"status"`
	Error  *ErrorInfo `json:"error,omitempty"`
}

// ChangesetFileSet adds a file, or replaces the one of the same id.
type ChangesetFileSet struct {
	File ChangesetFile `json:"file"`
}

// ChangesetFileRemoved drops the file of FileID.
type ChangesetFileRemoved struct {
	FileID string `json:"fileId"`
}

// ChangesetFilesReviewChanged sets reviewed on the files named.
type ChangesetFilesReviewChanged struct {
	Files    []string `json:"files"`
	Reviewed bool     `json:"reviewed"`
}

// ChangesetContentChanged replaces the files, the operations when given,
// and the error (absent clears it).
type ChangesetContentChanged struct {
	Files      []ChangesetFile       `json:"files"`
	Operations *[]ChangesetOperation `json:"operations,omitempty"`
	Error      *ErrorInfo            `json:"error,omitempty"`
}

// ChangesetOperationsChanged replaces the operations; absent clears them.
type ChangesetOperationsChanged struct {
	Operations *[]ChangesetOperation `json:"operations,omitempty"`
}

// ChangesetOperationStatusChanged sets one operation's status.
type ChangesetOperationStatusChanged struct {
	OperationID string     `json:"operationId"`
	Status      string     `json:"status"`
	Error       *ErrorInfo `json:"error,omitempty"`
}

// ChangesetCleared empties the changeset's files.
type ChangesetCleared struct{}

// AnnotationsState is a session's annotations channel.
type AnnotationsState struct {
	Annotations []Annotation `json:"annotations"`
}

// MarshalJSON writes the required annotations array as [] when empty.
func (s AnnotationsState) MarshalJSON() ([]byte, error) {
	type plain AnnotationsState
	if s.Annotations == nil {
		s.Annotations = []Annotation{}
	}
	return json.Marshal(plain(s))
}

// Annotation is a thread of entries anchored to a turn and a resource range.
type Annotation struct {
	ID string `json:"id"`
	// Origin names where the annotation was made (the session, and the
	// chat and turn when there is one); newer than the 0.4.0 turnId.
	Origin   *AnnotationOrigin `json:"origin,omitempty"`
	TurnID   string            `json:"turnId,omitempty"`
	Resource URI               `json:"resource,omitempty"`
	Range    json.RawMessage   `json:"range,omitempty"`
	Resolved bool              `json:"resolved"`
	Entries  []AnnotationEntry `json:"entries"`
	Meta     map[string]any    `json:"_meta,omitempty"`
}

// MarshalJSON writes the required entries array as [] when empty.
func (a Annotation) MarshalJSON() ([]byte, error) {
	type plain Annotation
	if a.Entries == nil {
		a.Entries = []AnnotationEntry{}
	}
	return json.Marshal(plain(a))
}

// AnnotationEntry is one comment of an annotation.
type AnnotationEntry struct {
	ID   string         `json:"id"`
	Text string         `json:"text"`
	Meta map[string]any `json:"_meta,omitempty"`
}

// AnnotationOrigin is where an annotation was made.
type AnnotationOrigin struct {
	Session URI    `json:"session"`
	Chat    URI    `json:"chat,omitempty"`
	TurnID  string `json:"turnId,omitempty"`
}

// AnnotationsSet adds an annotation, or replaces the one of the same id.
type AnnotationsSet struct {
	Annotation Annotation `json:"annotation"`
}

// AnnotationsUpdated changes the fields it carries of one annotation.
type AnnotationsUpdated struct {
	AnnotationID string            `json:"annotationId"`
	Origin       *AnnotationOrigin `json:"origin,omitempty"`
	Resolved     *bool             `json:"resolved,omitempty"`
	TurnID       *string           `json:"turnId,omitempty"`
	Resource     *URI              `json:"resource,omitempty"`
	Range        json.RawMessage   `json:"range,omitempty"`
}

// AnnotationsRemoved drops one annotation.
type AnnotationsRemoved struct {
	AnnotationID string `json:"annotationId"`
}

// AnnotationsEntrySet adds an entry to an annotation, or replaces the one
// of the same id.
type AnnotationsEntrySet struct {
	AnnotationID string          `json:"annotationId"`
	Entry        AnnotationEntry `json:"entry"`
}

// AnnotationsEntryRemoved drops one entry of an annotation.
type AnnotationsEntryRemoved struct {
	AnnotationID string `json:"annotationId"`
	EntryID      string `json:"entryId"`
}

// ResourceWatchState is a resource watch channel's state: what it watches.
type ResourceWatchState struct {
	Root      URI       `json:"root"`
	Recursive bool      `json:"recursive"`
	Excludes  *GlobList `json:"excludes,omitempty"`
	Includes  *GlobList `json:"includes,omitempty"`
}

// GlobList is a list of glob patterns relative to a watch's root, wrapped
// in {items} as the protocol has it.
type GlobList struct {
	Items []string `json:"items"`
}

// ResourceWatchChanged reports changes under the watched root; the state
// does not change.
type ResourceWatchChanged struct {
	Changes ResourceChanges `json:"changes"`
}

// ResourceChanges lists changed resources.
type ResourceChanges struct {
	Items []ResourceChange `json:"items"`
}

// ResourceChange is one changed resource: type added, updated or deleted.
type ResourceChange struct {
	URI  URI    `json:"uri"`
	Type string `json:"type"`
}
