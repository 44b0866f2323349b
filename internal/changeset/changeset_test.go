package changeset

import "testing"

func TestTarget(t *testing.T) {
	for _, tc := range []struct {
		tool, input, want string
		ok                bool
	}{
		{"Write", `{"file_path":"/w/a.txt","content":"x"}`, "/w/a.txt", true},
		{"Edit", `{"file_path":"b.go","old_string":"a","new_string":"b"}`, "b.go", true},
		{"MultiEdit", `{"file_path":"/w/c","edits":[]}`, "/w/c", true},
		{"NotebookEdit", `{"notebook_path":"/w/n.ipynb"}`, "/w/n.ipynb", true},
		{"write_file", `{"path":"d.txt","content":""}`, "d.txt", true},
		{"edit_file", `{"path":"e.txt"}`, "e.txt", true},
		{"edit", `{"path":"/w/f"}`, "/w/f", true},
		{"Read", `{"file_path":"/w/a.txt"}`, "", false},
		{"Bash", `{"command":"echo > x"}`, "", false},
		{"Write", `{"file_path":""}`, "", false},
		{"Write", `not json`, "", false},
		{"Write", `{"file_path":7}`, "", false},
	} {
		got, ok := Target(tc.tool, tc.input)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Target(%s, %s) = %q, %v; want %q, %v", tc.tool, tc.input, got, ok, tc.want, tc.ok)
		}
	}
}

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		before, after  string
		added, removed int
	}{
		{"", "one\n", 1, 0},
		{"one\ntwo\nthree\n", "", 0, 3},
		{"seed\n", "edited", 1, 1},
		{"first\nsecond\n", "first\nsecond\nthird\n", 1, 0},
		{"a\nb\nc\nd\n", "a\nx\nc\nd\n", 1, 1},
		{"a\nb\nc\n", "c\nb\na\n", 2, 2},
		{"same\n", "same\n", 0, 0},
	} {
		a, r := Diff([]byte(tc.before), []byte(tc.after))
		if a != tc.added || r != tc.removed {
			t.Errorf("Diff(%q, %q) = +%d -%d; want +%d -%d", tc.before, tc.after, a, r, tc.added, tc.removed)
		}
	}
}

func TestSkip(t *testing.T) {
	if s := Skip([]byte("text\n")); s != "" {
		t.Errorf("text skipped: %s", s)
	}
	if s := Skip([]byte{0x00, 0x01}); s != SkipBinary {
		t.Errorf("NUL bytes: %q", s)
	}
	if s := Skip([]byte{0xff, 0xfe}); s != SkipBinary {
		t.Errorf("invalid UTF-8: %q", s)
	}
	if s := Skip(make([]byte, MaxFileBytes+1)); s != SkipTooLarge {
		t.Errorf("large: %q", s)
	}
}

func TestURIs(t *testing.T) {
	chat := "ahp-chat:/7001700a-0000-4000-8000-000000000001"
	for _, turn := range []string{"t1", "turn with space", "a/b"} {
		got, ok := ParseChannel(TurnURI(chat, turn))
		if !ok || got.Chat != chat || got.Turn != turn {
			t.Errorf("ParseChannel(TurnURI(%q)) = %+v, %v", turn, got, ok)
		}
	}
	if got, ok := ParseChannel(ChatURI(chat)); !ok || got.Chat != chat || got.Turn != "" {
		t.Errorf("ParseChannel(ChatURI) = %+v, %v", got, ok)
	}
	for _, bad := range []string{TurnTemplate(chat), Scheme + ":/!!/turn/t1", Scheme + ":/" + chatSegment(chat) + "/other", "ahp-chat:/x", Scheme + ":/" + chatSegment(chat) + "/turn/"} {
		if _, ok := ParseChannel(bad); ok {
			t.Errorf("ParseChannel(%q) accepted", bad)
		}
	}
	hash := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	if c, h, ok := ParseContent(ContentURI(chat, hash)); !ok || c != chat || h != hash {
		t.Errorf("ParseContent = %q %q %v", c, h, ok)
	}
	if _, _, ok := ParseContent(ContentURI(chat, "../etc")); ok {
		t.Error("a content URI with a non-hash name was accepted")
	}
}
