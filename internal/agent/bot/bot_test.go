package bot

import (
	"testing"

	"github.com/ahpd/ahpd/internal/store"
)

func TestValidSlug(t *testing.T) {
	for _, c := range []struct {
		slug string
		ok   bool
	}{
		{"helper", true},
		{"a", true},
		{"bot-2", true},
		{"", false},
		{"-lead", false},
		{"Upper", false},
		{"dot.dot", false},
		{"../up", false},
		{"a/b", false},
		{"with space", false},
		{string(make([]byte, 64)), false},
		{"abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij123", true},
		{"abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij1234", false},
	} {
		if got := ValidSlug(c.slug) == ""; got != c.ok {
			t.Errorf("ValidSlug(%q) ok=%v, want %v", c.slug, got, c.ok)
		}
	}
}

// A bot's chat may be used by the bot's owner and by root, nobody else.
func TestMayUse(t *testing.T) {
	b := store.BotRecord{Slug: "x", Owner: "user:alice"}
	for _, c := range []struct {
		owner string
		ok    bool
	}{
		{"user:alice", true},
		{"root:host", true},
		{"user:bob", false},
		{"", false},
		{"user:alice2", false},
		{"rootish:x", false},
	} {
		if got := MayUse(c.owner, b); got != c.ok {
			t.Errorf("MayUse(%q) = %v, want %v", c.owner, got, c.ok)
		}
	}
}
