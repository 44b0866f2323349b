package acp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFSConfined: fs/read_text_file and fs/write_text_file reach files
// inside the chat's directories and refuse "..", absolute paths outside,
// and symlinks that lead out; nothing outside is read or written.
func TestFSConfined(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	dirs := []string{dir}

	line, limit := 2, 1
	if got, err := readConfined(dirs, filepath.Join(dir, "in.txt"), &line, &limit); err != nil || got != "two\n" {
		t.Errorf("read inside: %q, %v", got, err)
	}
	if err := writeConfined(dirs, filepath.Join(dir, "sub", "new.txt"), "made"); err != nil {
		t.Errorf("write inside: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sub", "new.txt")); string(b) != "made" {
		t.Errorf("write inside wrote %q", b)
	}
	for _, p := range []string{
		secret,
		filepath.Join(dir, "..", filepath.Base(outside), "secret.txt"),
		filepath.Join(dir, "out", "secret.txt"),
		"../secret.txt",
	} {
		if got, err := readConfined(dirs, p, nil, nil); err == nil || strings.Contains(got, "secret") {
			t.Errorf("read %s: %q, %v; want refused", p, got, err)
		}
		if err := writeConfined(dirs, p, "overwritten"); err == nil {
			t.Errorf("write %s: not refused", p)
		}
	}
	if err := writeConfined(dirs, filepath.Join(dir, "out", "new.txt"), "x"); err == nil {
		t.Error("write through a symlink out: not refused")
	}
	if b, _ := os.ReadFile(secret); string(b) != "secret\n" {
		t.Errorf("the outside file reads %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Error("a file was written outside")
	}
}
