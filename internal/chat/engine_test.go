package chat

import (
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// TestIsCommand: a message starting with the terminalCommandPrefix and
// saying something after it is a ! command; a lone "!" goes to the agent.
func TestIsCommand(t *testing.T) {
	for _, tt := range []struct {
		text string
		want bool
	}{
		{"!echo hi", true},
		{"!false", true},
		{"! ls", true},
		{"!", false},
		{"!   ", false},
		{"echo !hi", false},
		{" !echo", false},
		{"", false},
	} {
		if got := isCommand(tt.text); got != tt.want {
			t.Errorf("isCommand(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

// TestWithSender: C-TURN-07: the sender rides in the message's _meta, the
// rest of which is kept; the message given is not changed.
func TestWithSender(t *testing.T) {
	m := ahp.Message{Text: "hi", Meta: map[string]any{"other": 1, SenderMetaKey: "root:forged"}}
	got := withSender(m, "user:alice")
	if got.Meta[SenderMetaKey] != "user:alice" || got.Meta["other"] != 1 {
		t.Fatalf("meta = %+v", got.Meta)
	}
	if m.Meta[SenderMetaKey] != "root:forged" {
		t.Fatal("the message given was changed")
	}
	if got := withSender(ahp.Message{Text: "x"}, ""); got.Meta != nil {
		t.Fatalf("no sender, meta %+v", got.Meta)
	}
}

// TestSameMessage: C-TURN-50, C-TURN-51 compare the whole message.
func TestSameMessage(t *testing.T) {
	a := ahp.Message{Text: "go", Origin: ahp.MessageOrigin{Kind: "user"}}
	b := a
	if !sameMessage(a, b) {
		t.Fatal("equal messages differ")
	}
	b.Text = "stop"
	if sameMessage(a, b) {
		t.Fatal("different texts are the same message")
	}
	c := a
	c.Meta = map[string]any{"k": "v"}
	if sameMessage(a, c) {
		t.Fatal("different _meta are the same message")
	}
}
