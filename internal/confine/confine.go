// Package confine decides whether a path a client named lies inside the
// directories it may reach. The answer is about the file the path really
// names: ".." is cleaned away, symlinks are followed, and a relative path
// is refused outright.
package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutside is returned for a path that resolves outside every root.
var ErrOutside = errors.New("outside the directories it may reach")

// Within reports whether path, cleaned, lies in root or below it. It is
// the lexical rule only, for paths already resolved.
func Within(path, root string) bool {
	path, root = filepath.Clean(path), filepath.Clean(root)
	if path == root {
		return true
	}
	if !strings.HasSuffix(root, string(filepath.Separator)) {
		root += string(filepath.Separator)
	}
	return strings.HasPrefix(path, root)
}

// Resolve returns the real path path names (symlinks followed) when it lies
// inside one of roots (their symlinks followed too). A relative path, a
// path that does not exist and one outside every root are errors.
func Resolve(path string, roots []string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%s: not an absolute path", path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	if inside(real, roots) {
		return real, nil
	}
	return "", fmt.Errorf("%s: %w", path, ErrOutside)
}

// Open opens path for reading when Resolve allows it. The file opened is
// the resolved one, and its last element is opened without following a
// symlink, so a link swapped in after the check is not followed.
func Open(path string, roots []string) (*os.File, error) {
	real, err := Resolve(path, roots)
	if err != nil {
		return nil, err
	}
	return openNoFollow(real)
}

// ResolveNew is Resolve for a path that may not exist yet (a file about to
// be written): the nearest existing parent is resolved and the rest
// appended, and the result must lie inside one of roots. A dangling symlink
// on the way is refused: where it would write is not known to be inside.
func ResolveNew(path string, roots []string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%s: not an absolute path", path)
	}
	real, err := resolveExisting(filepath.Clean(path))
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if inside(real, roots) {
		return real, nil
	}
	return "", fmt.Errorf("%s: %w", path, ErrOutside)
}

// inside reports whether real lies in one of roots (their symlinks
// followed; a relative or missing root holds nothing).
func inside(real string, roots []string) bool {
	for _, r := range roots {
		if r == "" || !filepath.IsAbs(r) {
			continue
		}
		rr, err := filepath.EvalSymlinks(r)
		if err == nil && Within(real, rr) {
			return true
		}
	}
	return false
}

// resolveExisting follows the symlinks of path; where path does not exist,
// those of its nearest existing parent, with the rest appended.
func resolveExisting(path string) (string, error) {
	var rest []string
	for p := path; ; {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if fi, lerr := os.Lstat(p); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return "", errors.New("a dangling symlink is refused")
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", err
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}
