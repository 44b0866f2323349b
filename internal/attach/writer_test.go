package attach

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ahpd/ahpd/internal/ahp"
)

// TestWriter covers C-ATT-08, 09: each write is one new file in a folder of
// its own under the session's folder, never over another.
func TestWriter(t *testing.T) {
	root := t.TempDir()
	ids := []string{"11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"}
	n := 0
	w := Writer{Root: root, NewID: func() string { n++; return ids[n-1] }}
	p1, err := w.Write("sess", "a/b.txt", []byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "sess", ids[0], "a_b.txt"); p1 != want {
		t.Errorf("C-ATT-09 path = %q, want %q", p1, want)
	}
	p2, err := w.Write("sess", "a/b.txt", []byte("two"))
	if err != nil {
		t.Fatal(err)
	}
	if p1 == p2 {
		t.Fatalf("C-ATT-09 two writes share %q", p1)
	}
	for p, want := range map[string]string{p1: "one", p2: "two"} {
		b, err := os.ReadFile(p)
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", p, b, err, want)
		}
	}
	// C-ATT-08: a folder that already holds the file is never written over.
	n = 0
	if _, err := w.Write("sess", "a/b.txt", []byte("again")); err == nil {
		t.Errorf("C-ATT-08 a second write into the same folder succeeded")
	}
	if b, _ := os.ReadFile(p1); string(b) != "one" {
		t.Errorf("C-ATT-08 the first file changed: %q", b)
	}
}

// TestWriterFails covers C-ATT-19: a write that fails is an error the
// caller logs (C-ATT-20), not a panic or a partial file.
func TestWriterFails(t *testing.T) {
	if _, err := (Writer{}).Write("s", "x", []byte("x")); err == nil {
		t.Errorf("C-ATT-19 a writer without a folder wrote")
	}
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("permissions do not bind here")
	}
	root := t.TempDir()
	if err := os.Chmod(root, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(root, 0o700) })
	if _, err := (Writer{Root: root}).Write("s", "x", []byte("x")); err == nil {
		t.Errorf("C-ATT-19 a write into a read-only folder succeeded")
	}
}

func TestReadOwn(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	roots := []string{dir}
	if b, err := ReadOwn(p, 5, roots); err != nil || string(b) != "12345" {
		t.Errorf("ReadOwn = %q, %v", b, err)
	}
	if _, err := ReadOwn(p, 4, roots); err == nil {
		t.Errorf("ReadOwn over the limit: no error")
	}
	if _, err := ReadOwn(dir, 100, roots); err == nil {
		t.Errorf("ReadOwn of a directory: no error")
	}
}

// TestReadOwnStaysInsideItsRoots: a file tagged as the message's own is read
// only inside the session's attachments folder and the chat's directories
// (issue 8 §2, C-ATT-18): not outside them, not through "..", not through a
// symlink, not by a relative path.
func TestReadOwnStaysInsideItsRoots(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "mine"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "dirlink")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		ok         bool
	}{
		{"inside", filepath.Join(root, "mine"), true},
		{"outside", secret, false},
		{"dot-dot", filepath.Join(root, "..", filepath.Base(outside), "secret"), false},
		{"raw dot-dot", root + "/../" + filepath.Base(outside) + "/secret", false},
		{"symlink to a file outside", filepath.Join(root, "link"), false},
		{"symlinked folder", filepath.Join(root, "dirlink", "secret"), false},
		{"relative", "mine", false},
		{"no roots", secret, false},
	} {
		roots := []string{root}
		if tc.name == "no roots" {
			roots = nil
		}
		b, err := ReadOwn(tc.path, 100, roots)
		if tc.ok != (err == nil) {
			t.Errorf("%s: ReadOwn(%s) = %q, %v; want allowed %v", tc.name, tc.path, b, err, tc.ok)
		}
		if err != nil && string(b) != "" {
			t.Errorf("%s: refused but returned bytes", tc.name)
		}
	}
}

// TestDecodeReaderReadsAsDecode: streamed, an attachment's base64 decodes
// to what Decode makes of it, padded or not, line breaks and all, and what
// Decode refuses is refused.
func TestDecodeReaderReadsAsDecode(t *testing.T) {
	for _, data := range []string{
		"", "QQ==", "QQ", "QQ=", "QUI=", "QUJD", "QUJD\r\nREVG", "QUJDREVG\n", "QQ==\n", "QQ=\n=",
		"QQ==QQ==", "QQ=\nQQ", "=", "====", "Q", "QUJD!", "QUJD" + strings.Repeat("QUJD", 3000) + "QQ==",
	} {
		want, wantErr := Decode(ahp.MessageAttachment{Data: data})
		for _, step := range []int{1, 3, 4096} {
			got, err := io.ReadAll(DecodeReader(iotest.HalfReader(&chunked{s: data, step: step})))
			if (err != nil) != (wantErr != nil) || err == nil && !bytes.Equal(got, want) {
				t.Errorf("%.20q in pieces of %d: %q, %v; Decode: %q, %v", data, step, got, err, want, wantErr)
			}
		}
	}
}

// chunked reads s step bytes at a time.
type chunked struct {
	s    string
	step int
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.step)], c.s)
	c.s = c.s[n:]
	return n, nil
}

// TestWriteFromStreams: WriteFrom writes what its reader gives, and a
// reader that fails part way (bytes that do not decode) leaves neither the
// file nor its folder behind.
func TestWriteFromStreams(t *testing.T) {
	root := t.TempDir()
	w := Writer{Root: root}
	path, n, err := w.WriteFrom("sess", "a.bin", DecodeReader(strings.NewReader("QUJD")))
	if err != nil || n != 3 {
		t.Fatalf("WriteFrom = %q, %d, %v", path, n, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "ABC" {
		t.Errorf("file holds %q", b)
	}
	bad := strings.Repeat("QUJD", 5000) + "!!!!"
	if _, _, err := w.WriteFrom("sess", "b.bin", DecodeReader(strings.NewReader(bad))); err == nil {
		t.Fatal("bytes that do not decode were written")
	}
	entries, _ := os.ReadDir(filepath.Join(root, "sess"))
	if len(entries) != 1 {
		t.Errorf("a failed write left %d folders, want only the first write's", len(entries)-1)
	}
}
