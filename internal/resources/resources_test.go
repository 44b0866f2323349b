package resources

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// TestWriteModes: where each mode puts the data (AHP ResourceWriteMode),
// and the positions each refuses.
func TestWriteModes(t *testing.T) {
	root := t.TempDir()
	fs := New([]string{root})
	for i, tc := range []struct {
		before   string // "" and missing: the file does not exist
		missing  bool
		mode     string
		position int64
		data     string
		want     string
		code     int
	}{
		{"ABCDEF", false, ModeTruncate, 0, "x", "x", 0},
		{"ABCDEF", false, ModeTruncate, 3, "x", "ABCx", 0},
		{"ABCDEF", false, ModeAppend, 0, "x", "ABCDEFx", 0},
		{"ABCDEF", false, ModeAppend, 2, "x", "ABCDxEF", 0},
		{"ABCDEF", false, ModeAppend, 7, "x", "ABCDEF", ahp.CodeInvalidParams},
		{"ABCDEF", false, ModeInsert, 0, "x", "xABCDEF", 0},
		{"ABCDEF", false, ModeInsert, 6, "x", "ABCDEFx", 0},
		{"ABCDEF", false, ModeInsert, 7, "x", "ABCDEF", ahp.CodeInvalidParams},
		{"", true, ModeAppend, 0, "new", "new", 0},
		{"", true, ModeInsert, 0, "new", "new", 0},
		{"ABC", false, "sideways", 0, "x", "ABC", ahp.CodeInvalidParams},
	} {
		path := filepath.Join(root, "f"+string(rune('a'+i)))
		if !tc.missing {
			if err := os.WriteFile(path, []byte(tc.before), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		err := fs.Write(path, []byte(tc.data), WriteOptions{Mode: tc.mode, Position: tc.position})
		var pe *ahp.Error
		if code := 0; errors.As(err, &pe) {
			code = pe.Code
			if code != tc.code {
				t.Errorf("%d: %s at %d: error %v, want code %d", i, tc.mode, tc.position, err, tc.code)
			}
		} else if err != nil || tc.code != 0 {
			t.Errorf("%d: %s at %d: error %v, want code %d", i, tc.mode, tc.position, err, tc.code)
		}
		got, _ := os.ReadFile(path)
		if string(got) != tc.want {
			t.Errorf("%d: %s at %d of %q: %q, want %q", i, tc.mode, tc.position, tc.before, got, tc.want)
		}
	}
}

// TestETagChangesWithEveryWrite: ifMatch takes the current version only.
func TestETagChangesWithEveryWrite(t *testing.T) {
	root := t.TempDir()
	fs := New([]string{root})
	path := filepath.Join(root, "f")
	if err := fs.Write(path, []byte("one"), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	info, err := fs.Resolve(path, true)
	if err != nil || info.ETag == "" {
		t.Fatalf("resolve: %+v %v", info, err)
	}
	tag := info.ETag
	if err := fs.Write(path, []byte("two"), WriteOptions{IfMatch: &tag}); err != nil {
		t.Fatal(err)
	}
	if err := fs.Write(path, []byte("six"), WriteOptions{IfMatch: &tag}); !errors.Is(err, ahp.ErrConflict) {
		t.Fatalf("a stale etag: %v, want Conflict", err)
	}
}
