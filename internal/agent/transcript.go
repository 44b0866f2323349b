package agent

import (
	"context"
	"fmt"
	"time"
)

// TranscriptReader is implemented by a backend that keeps its own
// transcript of a conversation and can read it back as turns: the chat
// actor rebuilds a chat from it when the store holds none of its turns (a
// conversation the backend's CLI wrote outside the daemon, or store rows
// that were lost). It is optional; the chat actor asks for it with a type
// assertion.
type TranscriptReader interface {
	// ReadTurns reads conversation conversationID, run in the first of
	// directories, back into turns, oldest first. A conversation the
	// backend never kept is an error wrapping fs.ErrNotExist.
	ReadTurns(ctx context.Context, conversationID string, directories []string) ([]TranscriptTurn, error)
}

// TranscriptTurn is one turn read back from a backend's transcript, in
// terms every backend can fill.
type TranscriptTurn struct {
	// ID is the backend's own id for the turn's prompt, when it has one;
	// the host may use it as the turn's id.
	ID string
	// Text is what was said, without what the host added to the prompt.
	Text string
	// Steering are the steering messages the backend took into the turn,
	// in order.
	Steering []string
	// Parts are what the agent answered, in the order it produced them.
	Parts []TranscriptPart
	// Outcome is how the turn ended.
	Outcome Outcome
	// ErrorType and ErrorMessage describe an OutcomeError (as End's
	// ErrorType and Message do).
	ErrorType    string
	ErrorMessage string
	// Point is the backend's name for where the turn ended (End.Point):
	// where a fork or rewind at this turn resumes. Empty when it names none.
	Point string
	// Started is when the prompt was written and Ended when the entry at
	// Point was; zero when unknown.
	Started time.Time
	Ended   time.Time
	// Usage is the turn's token usage; nil when the transcript has none.
	Usage *Usage
}

// TranscriptPartKind is the kind of a TranscriptPart.
type TranscriptPartKind int

const (
	// TranscriptMarkdown is a block of the answer's text.
	TranscriptMarkdown TranscriptPartKind = iota + 1
	// TranscriptReasoning is a block of the model's reasoning.
	TranscriptReasoning
	// TranscriptToolCall is a tool call, its result folded in.
	TranscriptToolCall
	// TranscriptNotice is a system notification (a compaction).
	TranscriptNotice
)

func (k TranscriptPartKind) String() string {
	switch k {
	case TranscriptMarkdown:
		return "markdown"
	case TranscriptReasoning:
		return "reasoning"
	case TranscriptToolCall:
		return "toolCall"
	case TranscriptNotice:
		return "notice"
	}
	return fmt.Sprintf("TranscriptPartKind(%d)", int(k))
}

// TranscriptPart is one part of a turn read back.
type TranscriptPart struct {
	Kind TranscriptPartKind
	// Text is the markdown, reasoning or notice text.
	Text string
	// Tool is the call of a TranscriptToolCall (ID, Name, DisplayName,
	// Input, Invocation; with Done, Success, Output, Error, PastTense).
	Tool *ToolCall
	// Done: a result came back for Tool. A call with no result did not
	// finish (its turn was stopped or failed first).
	Done bool
	// Denied: the user refused the call when it asked for confirmation.
	Denied bool
}
