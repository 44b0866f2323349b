package attach

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
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
	if b, err := ReadOwn(p, 5); err != nil || string(b) != "12345" {
		t.Errorf("ReadOwn = %q, %v", b, err)
	}
	if _, err := ReadOwn(p, 4); err == nil {
		t.Errorf("ReadOwn over the limit: no error")
	}
	if _, err := ReadOwn(dir, 100); err == nil {
		t.Errorf("ReadOwn of a directory: no error")
	}
}
