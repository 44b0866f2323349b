package confine

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		path, root string
		want       bool
	}{
		{"/a/b", "/a", true},
		{"/a", "/a", true},
		{"/a/", "/a", true},
		{"/ab", "/a", false},
		{"/a/../b", "/a", false},
		{"/a/b/../c", "/a", true},
		{"/b", "/", true},
		{"/a", "/a/b", false},
	} {
		if got := Within(tc.path, tc.root); got != tc.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tc.path, tc.root, got, tc.want)
		}
	}
}

func TestResolve(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(root, "in"), nil, 0o600))
	must(os.WriteFile(filepath.Join(outside, "out"), nil, 0o600))
	must(os.Symlink(filepath.Join(outside, "out"), filepath.Join(root, "link-out")))
	must(os.Symlink(filepath.Join(root, "in"), filepath.Join(outside, "link-in")))
	// A root that is itself reached through a symlink still holds its files.
	must(os.Symlink(root, filepath.Join(outside, "root-link")))
	for _, tc := range []struct {
		name, path string
		roots      []string
		ok         bool
	}{
		{"a file inside", filepath.Join(root, "in"), []string{root}, true},
		{"a file outside", filepath.Join(outside, "out"), []string{root}, false},
		{"a link inside to a file outside", filepath.Join(root, "link-out"), []string{root}, false},
		{"a link outside to a file inside", filepath.Join(outside, "link-in"), []string{root}, true},
		{"a root given through a link", filepath.Join(root, "in"), []string{filepath.Join(outside, "root-link")}, true},
		{"dot-dot out", root + "/../" + filepath.Base(outside) + "/out", []string{root}, false},
		{"relative", "in", []string{root}, false},
		{"missing", filepath.Join(root, "nope"), []string{root}, false},
		{"a relative root is ignored", filepath.Join(root, "in"), []string{"."}, false},
		{"no roots", filepath.Join(root, "in"), nil, false},
	} {
		_, err := Resolve(tc.path, tc.roots)
		if tc.ok != (err == nil) {
			t.Errorf("%s: Resolve(%s) err %v, want ok %v", tc.name, tc.path, err, tc.ok)
		}
	}
	if _, err := Resolve(filepath.Join(outside, "out"), []string{root}); !errors.Is(err, ErrOutside) {
		t.Errorf("outside: %v, want ErrOutside", err)
	}
}

// TestResolveNew: a file about to be written resolves through its nearest
// existing parent, which must lie inside; a dangling symlink is refused.
func TestResolveNew(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "missing"), filepath.Join(root, "dangling")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		ok         bool
	}{
		{"a new file inside", filepath.Join(root, "new.txt"), true},
		{"a new file in a new folder inside", filepath.Join(root, "a", "b", "new.txt"), true},
		{"a new file through a link out", filepath.Join(root, "out", "new.txt"), false},
		{"a dangling symlink", filepath.Join(root, "dangling"), false},
		{"dot-dot out", root + "/../" + filepath.Base(outside) + "/new.txt", false},
		{"relative", "new.txt", false},
	} {
		_, err := ResolveNew(tc.path, []string{root})
		if tc.ok != (err == nil) {
			t.Errorf("%s: ResolveNew(%s) err %v, want ok %v", tc.name, tc.path, err, tc.ok)
		}
	}
}
