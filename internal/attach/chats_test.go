package attach

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ahpd/ahpd/internal/ahp"
)

func turn(id, said string, parts ...ahp.ResponsePart) ahp.Turn {
	return ahp.Turn{ID: id, Message: ahp.Message{Text: said}, ResponseParts: parts, State: ahp.TurnComplete}
}

func md(s string) ahp.ResponsePart { return ahp.ResponsePart{Kind: ahp.PartMarkdown, Content: s} }

// TestTranscript covers C-ATT-28, 29: what a person said and what the agent
// answered, turn by turn, nothing else; a chat attachment in it is the
// message's own text.
func TestTranscript(t *testing.T) {
	withRef := turn("t2", "see #chat:Other", md("ok"))
	withRef.Message.Attachments = []ahp.MessageAttachment{{Type: ahp.AttachmentChat, Label: "Other", Resource: "ahp-chat:/other"}}
	tests := []struct {
		rule  string
		turns []ahp.Turn
		want  string
	}{
		{"C-ATT-28 said and answered", []ahp.Turn{turn("t1", "hi", md("hel"), md("lo"))}, "User: hi\n\nAgent: hello"},
		{"C-ATT-28 no tool calls, reasoning or notices", []ahp.Turn{turn("t1", "go",
			ahp.ResponsePart{Kind: ahp.PartReasoning, Content: "thinking"},
			ahp.ResponsePart{Kind: ahp.PartToolCall, ToolCall: &ahp.ToolCallState{}},
			md("done"),
			ahp.ResponsePart{Kind: ahp.PartSystemNotification, Content: "compacted"},
			ahp.ResponsePart{Kind: ahp.PartError, Error: &ahp.ErrorInfo{Message: "boom"}},
		)}, "User: go\n\nAgent: done"},
		{"C-ATT-28 turn by turn", []ahp.Turn{turn("t1", "a", md("b")), turn("t2", "c", md("d"))}, "User: a\n\nAgent: b\n\nUser: c\n\nAgent: d"},
		{"C-ATT-29 a chat attachment is the message's text", []ahp.Turn{withRef}, "User: see #chat:Other\n\nAgent: ok"},
		{"C-ATT-28 a turn with no answer", []ahp.Turn{turn("t1", "a")}, "User: a"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			if got := Transcript(tt.turns); got != tt.want {
				t.Errorf("Transcript = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestChatExcerpt covers C-ATT-27, 32, 33, 34.
func TestChatExcerpt(t *testing.T) {
	long := strings.Repeat("é", 1500)
	st := ahp.ChatState{
		Turns:      []ahp.Turn{turn("t1", "first", md("one")), turn("t2", "second", md("two")), turn("t3", "third", md(long))},
		ActiveTurn: &ahp.ActiveTurn{ID: "t4", Message: ahp.Message{Text: "running"}},
	}
	tests := []struct {
		rule    string
		endTurn string
		want    string
		err     error
	}{
		{"C-ATT-27 up to the pinned turn", "t2", "User: first\n\nAgent: one\n\nUser: second\n\nAgent: two", nil},
		{"C-ATT-27 no pin: the whole retained transcript, its last 1000 characters", "", Tail(long, 1000), nil},
		{"C-ATT-32 the running turn", "t4", "", ErrPinRunning},
		{"C-ATT-33 not in the transcript", "gone", "", ErrPinNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			got, err := ChatExcerpt(st, tt.endTurn)
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if got != tt.want {
				t.Errorf("excerpt = %q, want %q", got, tt.want)
			}
			if n := utf8.RuneCountInString(got); n > ExcerptChars {
				t.Errorf("C-ATT-27: %d characters", n)
			}
		})
	}
	// C-ATT-34: an idle chat with no turns is no failure.
	if got, err := ChatExcerpt(ahp.ChatState{}, ""); err != nil || got != "" {
		t.Errorf("C-ATT-34 empty chat: %q, %v", got, err)
	}
}

// TestPointer covers C-ATT-23..27, 30, 31.
func TestPointer(t *testing.T) {
	const link = "ahp-chat:/b7f0"
	tests := []struct {
		rule    string
		ref     Ref
		has     []string
		hasNone []string
	}{
		{"C-ATT-24..27 label, link, tool line, excerpt", Ref{Label: "Other chat", Resource: link, Running: true, Excerpt: "User: hi"},
			[]string{`"Other chat"`, link, "call the get_session_context tool with " + link, "User: hi"}, nil},
		{"C-ATT-31 the sender may not read: no excerpt", Ref{Label: "Other chat", Resource: link, Running: true},
			[]string{`"Other chat"`, link, "get_session_context"}, []string{"transcript"}},
		{"C-ATT-30 not running here: the pointer, no excerpt, no tool line", Ref{Label: "Gone", Resource: link},
			[]string{`"Gone"`, link, "not running"}, []string{"get_session_context", "transcript"}},
		{"C-ATT-24 no label names the resource", Ref{Resource: link, Running: true},
			[]string{`"` + link + `"`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			got := Pointer(tt.ref)
			for _, s := range tt.has {
				if !strings.Contains(got, s) {
					t.Errorf("pointer lacks %q:\n%s", s, got)
				}
			}
			for _, s := range tt.hasNone {
				if strings.Contains(got, s) {
					t.Errorf("pointer holds %q:\n%s", s, got)
				}
			}
		})
	}
}

func TestTail(t *testing.T) {
	if got := Tail("abcdef", 3); got != "def" {
		t.Errorf("Tail = %q", got)
	}
	if got := Tail("ab", 3); got != "ab" {
		t.Errorf("Tail = %q", got)
	}
	if got := Tail("ééé", 2); got != "éé" {
		t.Errorf("C-ATT-27 characters, not bytes: %q", got)
	}
}
