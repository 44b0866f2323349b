package terminal

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ahpd/ahpd/internal/ahp"
)

// TestValidPrefix: an incomplete UTF-8 sequence at the end of a read waits
// for the next one; anything else goes out whole.
func TestValidPrefix(t *testing.T) {
	e := []byte("é") // 0xC3 0xA9
	euro := []byte("€")
	for _, tc := range []struct {
		in   []byte
		want int
	}{
		{[]byte("abc"), 3},
		{append([]byte("ab"), e[0]), 2},
		{append([]byte("ab"), e...), 4},
		{append([]byte("a"), euro[:2]...), 1},
		{append([]byte("a"), euro...), 4},
		{[]byte{0xff, 0xfe}, 2}, // invalid bytes are not held back
		{nil, 0},
	} {
		if got := validPrefix(tc.in); got != tc.want {
			t.Errorf("validPrefix(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestTrimFront: the scrollback drops whole old parts first, then the front
// of the oldest kept one, at a rune boundary; the newest part is never
// dropped whole.
func TestTrimFront(t *testing.T) {
	un := func(v string) ahp.TerminalContentPart {
		return ahp.TerminalContentPart{Type: ahp.TerminalPartUnclassified, Value: v}
	}
	cmd := func(out string) ahp.TerminalContentPart {
		return ahp.TerminalContentPart{Type: ahp.TerminalPartCommand, CommandID: "c", Output: out}
	}
	for _, tc := range []struct {
		name    string
		in      []ahp.TerminalContentPart
		n       int
		want    []string
		dropped int
	}{
		{"front of one part", []ahp.TerminalContentPart{un("abcdef")}, 2, []string{"cdef"}, 2},
		{"a whole old part", []ahp.TerminalContentPart{un("ab"), cmd("cdef")}, 2, []string{"cdef"}, 2},
		{"into the next part", []ahp.TerminalContentPart{un("ab"), cmd("cdef")}, 3, []string{"def"}, 3},
		{"a rune boundary", []ahp.TerminalContentPart{un("aéb")}, 2, []string{"b"}, 3},
		{"never the last part whole", []ahp.TerminalContentPart{un("ab")}, 5, []string{""}, 2},
	} {
		var out []ahp.TerminalContentPart
		dropped := trimFront(tc.in, tc.n, &out)
		var got []string
		for _, p := range out {
			got = append(got, p.Value+p.Output)
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || dropped != tc.dropped {
			t.Errorf("%s: %q dropped %d, want %q dropped %d", tc.name, got, dropped, tc.want, tc.dropped)
		}
		for _, s := range got {
			if !utf8.ValidString(s) {
				t.Errorf("%s: %q is cut inside a rune", tc.name, s)
			}
		}
	}
}
