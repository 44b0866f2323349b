package attach

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ahpd/ahpd/internal/ahp"
)

// ExcerptChars is how much of a chat's transcript a chat attachment's
// pointer carries: its last 1000 characters (C-ATT-27).
const ExcerptChars = 1000

// SessionContextTool is the tool the model is told to call with a chat's
// link to read more of it (C-ATT-26).
const SessionContextTool = "get_session_context"

// The two pins nobody can honour; each ends the message's turn in a
// chat/error of errorType sendFailed before the backend is handed it
// (C-ATT-32, 33). Nothing else about a chat attachment fails a turn
// (C-ATT-34).
var (
	ErrPinRunning  = errors.New("names the turn that is still running")
	ErrPinNotFound = errors.New("names no turn of the chat's transcript")
)

// SendFailed is the errorType of the chat/error a pin nobody can honour
// ends the turn with.
const SendFailed = "sendFailed"

// Resolved is one chat attachment as the host resolved it for the backend,
// before the action reached the chat actor. Index is its place in the
// message's attachments. Err, when set, is a pin nobody can honour
// (ErrPinRunning, ErrPinNotFound, wrapped).
type Resolved struct {
	Index          int
	Representation string
	Err            error
	// Fetched is set for a resource read through the client that sent it
	// (C-ATT-11): its bytes and content type, written as inline bytes are
	// (C-ATT-12).
	Fetched     bool
	Data        []byte
	ContentType string
}

// Ref is what a pointer names.
type Ref struct {
	// Label is the attachment's label; Resource the chat it names.
	Label    string
	Resource string
	// Running: this host runs the chat, so its link is named and the model
	// can read it through SessionContextTool (C-ATT-25, 26, 30).
	Running bool
	// Excerpt is the tail of its transcript, empty when the sender may not
	// read it or the host does not run it (C-ATT-30, 31).
	Excerpt string
}

// Pointer is a chat attachment's modelRepresentation: the label, the
// chat's link where this host runs it, a line telling the model to call
// SessionContextTool with that link, and the excerpt (C-ATT-23..27).
func Pointer(r Ref) string {
	var b strings.Builder
	label := r.Label
	if label == "" {
		label = r.Resource
	}
	fmt.Fprintf(&b, "Attached chat %q", label)
	if !r.Running {
		fmt.Fprintf(&b, " (%s). This host is not running that chat, so nothing of it can be read here.", r.Resource)
		return b.String()
	}
	fmt.Fprintf(&b, ": %s\n", r.Resource)
	fmt.Fprintf(&b, "To read more of that chat, call the %s tool with %s.", SessionContextTool, r.Resource)
	if r.Excerpt != "" {
		fmt.Fprintf(&b, "\nThe end of its transcript:\n%s", r.Excerpt)
	}
	return b.String()
}

// ChatExcerpt is the last ExcerptChars characters of st's transcript up to
// and including the turn endTurn names (every turn when it is empty). A pin
// on the running turn is ErrPinRunning; one on no retained turn is
// ErrPinNotFound (C-ATT-32, 33).
func ChatExcerpt(st ahp.ChatState, endTurn string) (string, error) {
	turns := st.Turns
	if endTurn != "" {
		if st.ActiveTurn != nil && st.ActiveTurn.ID == endTurn {
			return "", fmt.Errorf("endTurn %s %w", endTurn, ErrPinRunning)
		}
		end := -1
		for i := range turns {
			if turns[i].ID == endTurn {
				end = i
				break
			}
		}
		if end < 0 {
			return "", fmt.Errorf("endTurn %s %w", endTurn, ErrPinNotFound)
		}
		turns = turns[:end+1]
	}
	return Tail(Transcript(turns), ExcerptChars), nil
}

// Transcript is what a person said and what the agent answered, turn by
// turn, and nothing else: no tool calls, no reasoning, no system notices
// (C-ATT-28). A message's own attachments, chat references among them, are
// not followed: the message is its text (C-ATT-29).
func Transcript(turns []ahp.Turn) string {
	var b strings.Builder
	for _, t := range turns {
		said := strings.TrimSpace(t.Message.Text)
		var answer strings.Builder
		for _, p := range t.ResponseParts {
			if p.Kind == ahp.PartMarkdown {
				answer.WriteString(p.Content)
			}
		}
		ans := strings.TrimSpace(answer.String())
		if said != "" {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString("User: " + said)
		}
		if ans != "" {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString("Agent: " + ans)
		}
	}
	return b.String()
}

// Tail is the last n characters (runes) of s.
func Tail(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[len(r)-n:])
}
