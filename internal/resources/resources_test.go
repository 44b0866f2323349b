package resources

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

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
		{"ABCDEF", false, ModeAppend, 6, "x", "xABCDEF", 0},
		{"ABCDEF", false, ModeInsert, 0, "x", "xABCDEF", 0},
		{"ABCDEF", false, ModeInsert, 6, "x", "ABCDEFx", 0},
		{"ABCDEF", false, ModeTruncate, 6, "x", "ABCDEFx", 0},
		// Past either end is that end, never zero padding (VS Code's
		// clientFilesystemSuite: "... position beyond EOF ...").
		{"TAIL", false, ModeAppend, 100, "HEAD-", "HEAD-TAIL", 0},
		{"ABCDEF", false, ModeAppend, 7, "x", "xABCDEF", 0},
		{"HEAD", false, ModeInsert, 100, "-TAIL", "HEAD-TAIL", 0},
		{"ABCDEF", false, ModeInsert, 7, "x", "ABCDEFx", 0},
		{"HEAD", false, ModeTruncate, 100, "-TAIL", "HEAD-TAIL", 0},
		{"HEAD", false, ModeTruncate, 1 << 40, "-TAIL", "HEAD-TAIL", 0},
		{"", true, ModeAppend, 0, "new", "new", 0},
		{"", true, ModeInsert, 0, "new", "new", 0},
		{"", true, ModeAppend, 9, "new", "new", 0},
		{"", true, ModeInsert, 9, "new", "new", 0},
		{"", true, ModeTruncate, 9, "new", "new", 0},
		// Positions count bytes, not characters: U+1F600 is four.
		{"A\U0001F600B", false, ModeInsert, 5, "Z", "A\U0001F600ZB", 0},
		{"A\U0001F600B", false, ModeAppend, 1, "Z", "A\U0001F600ZB", 0},
		{"A\U0001F600B", false, ModeTruncate, 5, "Z", "A\U0001F600Z", 0},
		{"ABC", false, "sideways", 0, "x", "ABC", ahp.CodeInvalidParams},
		{"ABC", false, ModeTruncate, -1, "x", "ABC", ahp.CodeInvalidParams},
		{"ABC", false, ModeAppend, -1, "x", "ABC", ahp.CodeInvalidParams},
		{"ABC", false, ModeInsert, -1, "x", "ABC", ahp.CodeInvalidParams},
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

// TestWritePositionsStayConfined: whatever the mode and position, a write
// through "..", a symlinked file or folder leading out, or a relative path
// is refused and leaves the outside alone; a position far past the end
// grows the file by the data only (no sparse file past MaxBytes).
func TestWritePositionsStayConfined(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "dirlink")); err != nil {
		t.Fatal(err)
	}
	fs := New([]string{root})
	for _, tc := range []struct {
		path string
		code int
	}{
		{filepath.Join(root, "..", "outside", "secret"), ahp.CodePermissionDenied},
		{filepath.Join(root, "..", "outside", "new"), ahp.CodePermissionDenied},
		{filepath.Join(root, "link"), ahp.CodePermissionDenied},
		{filepath.Join(root, "dirlink", "secret"), ahp.CodePermissionDenied},
		{filepath.Join(root, "dirlink", "new"), ahp.CodePermissionDenied},
		{"outside/secret", ahp.CodeInvalidParams},
	} {
		for _, mode := range []string{ModeTruncate, ModeAppend, ModeInsert} {
			for _, pos := range []int64{0, 3, 100, 1 << 40} {
				err := fs.Write(tc.path, []byte("X"), WriteOptions{Mode: mode, Position: pos})
				var pe *ahp.Error
				if !errors.As(err, &pe) || pe.Code != tc.code {
					t.Errorf("%s %s at %d: %v, want code %d", tc.path, mode, pos, err, tc.code)
				}
			}
		}
	}
	if got, _ := os.ReadFile(secret); string(got) != "SECRET" {
		t.Fatalf("the outside file now holds %q", got)
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Fatal("a refused write created a file outside")
	}

	inside := filepath.Join(root, "grow")
	if err := os.WriteFile(inside, []byte("HEAD"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fs.Write(inside, []byte("-TAIL"), WriteOptions{Mode: ModeTruncate, Position: MaxBytes * 4}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(inside); err != nil || st.Size() != int64(len("HEAD-TAIL")) {
		t.Fatalf("after a truncate far past the end: %v, %v", st, err)
	}
	if err := fs.Write(inside, make([]byte, MaxBytes+1), WriteOptions{Mode: ModeAppend, Position: 1 << 40}); !errors.Is(err, ahp.ErrInvalidParams) {
		t.Fatalf("a write over MaxBytes: %v, want InvalidParams", err)
	}
}

// TestResolveTimes: a file's and a folder's mtime and ctime are known and
// write as Date.toISOString does.
func TestResolveTimes(t *testing.T) {
	root := t.TempDir()
	fs := New([]string{root})
	file := filepath.Join(root, "metadata.txt")
	if err := os.WriteFile(file, []byte("metadata"), 0o644); err != nil {
		t.Fatal(err)
	}
	iso := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)
	for _, tc := range []struct {
		path   string
		follow bool
		typ    string
	}{{file, true, TypeFile}, {file, false, TypeFile}, {root, true, TypeDirectory}} {
		info, err := fs.Resolve(tc.path, tc.follow)
		if err != nil {
			t.Fatal(err)
		}
		if info.Type != tc.typ || info.MTime.IsZero() || info.CTime.IsZero() {
			t.Fatalf("resolve %s: %+v", tc.path, info)
		}
		for _, s := range []string{FormatTime(info.MTime), FormatTime(info.CTime)} {
			if !iso.MatchString(s) {
				t.Errorf("resolve %s: time %q is not in Date.toISOString's form", tc.path, s)
			}
		}
		if d := time.Since(info.CTime); d < -time.Minute || d > time.Hour {
			t.Errorf("resolve %s: ctime %s is not about now", tc.path, info.CTime)
		}
	}
}

// TestFormatTime: UTC, always three fractional digits, "Z".
func TestFormatTime(t *testing.T) {
	east := time.FixedZone("east", 5*3600+30*60)
	for _, tc := range []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 1, 15, 12, 34, 56, 789_000_000, time.UTC), "2026-01-15T12:34:56.789Z"},
		{time.Date(2026, 1, 15, 12, 34, 56, 0, time.UTC), "2026-01-15T12:34:56.000Z"},
		{time.Date(2026, 1, 15, 12, 34, 56, 120_000_000, time.UTC), "2026-01-15T12:34:56.120Z"},
		{time.Date(2026, 1, 15, 12, 34, 56, 999_999_999, time.UTC), "2026-01-15T12:34:56.999Z"},
		{time.Date(2026, 1, 15, 18, 4, 56, 5_000_000, east), "2026-01-15T12:34:56.005Z"},
	} {
		if got := FormatTime(tc.in); got != tc.want {
			t.Errorf("FormatTime(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestContentType: a media type without parameters, from the extension,
// else sniffed from the bytes when there are any.
func TestContentType(t *testing.T) {
	for _, tc := range []struct {
		path string
		data []byte
		want string
	}{
		{"/w/unicode.txt", []byte("snowman \u2603"), "text/plain"},
		{"/w/no-extension", []byte("snowman \u2603 and smile \U0001F600"), "text/plain"},
		{"/w/page.html", nil, "text/html"},
		{"/w/data.json", nil, "application/json"},
		{"/w/image.png", nil, "image/png"},
		{"/w/bytes.bin-unknown", []byte{0, 1, 2, 127, 128, 254, 255}, "application/octet-stream"},
		{"/w/no-extension", nil, ""},
	} {
		if got := ContentType(tc.path, tc.data); got != tc.want {
			t.Errorf("ContentType(%s) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

// TestDeleteNonEmptyFolder: without recursive a folder with something in
// it stays, refused as InvalidParams that says why; with it, it goes.
func TestDeleteNonEmptyFolder(t *testing.T) {
	root := t.TempDir()
	fs := New([]string{root})
	dir := filepath.Join(root, "directory")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file.txt"), []byte("preserved"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := fs.Delete(dir, false)
	if !errors.Is(err, ahp.ErrInvalidParams) || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("delete without recursive: %v, want InvalidParams saying not empty", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "file.txt")); err != nil {
		t.Fatal(err)
	}
	if err := fs.Delete(dir, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the folder is still there: %v", err)
	}
}

// TestWriteShiftOverLimitRefused: an insert, or an append whose position
// is past the start (which prepends), in a file over MaxBytes would move
// more than MaxBytes of it and is refused; the file and its etag stay as
// they were. A truncate far past the end of it is no shift and is taken.
func TestWriteShiftOverLimitRefused(t *testing.T) {
	root := t.TempDir()
	fs := New([]string{root})
	path := filepath.Join(root, "big.bin")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, MaxBytes+1); err != nil { // sparse: nothing written
		t.Fatal(err)
	}
	before, err := fs.Resolve(path, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []WriteOptions{
		{Mode: ModeInsert, Position: 0},
		{Mode: ModeAppend, Position: MaxBytes + 1},
		{Mode: ModeAppend, Position: 1 << 40},
	} {
		err := fs.Write(path, []byte("x"), opts)
		if !errors.Is(err, ahp.ErrInvalidParams) || !strings.Contains(err.Error(), "shift") {
			t.Errorf("%s at %d: %v, want InvalidParams saying the shift", opts.Mode, opts.Position, err)
		}
	}
	after, err := fs.Resolve(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if *after.Size != MaxBytes+1 || after.ETag != before.ETag {
		t.Fatalf("after refused writes: size %d etag %s, before %d %s", *after.Size, after.ETag, *before.Size, before.ETag)
	}
	if err := fs.Write(path, []byte("x"), WriteOptions{Mode: ModeTruncate, Position: 1 << 40}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != MaxBytes+2 {
		t.Fatalf("after a truncate past the end: %v, %v", st, err)
	}
}
