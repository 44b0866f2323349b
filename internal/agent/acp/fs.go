package acp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// maxReadBytes bounds what fs/read_text_file hands the agent.
const maxReadBytes = 8 << 20

// confine resolves path to a real path inside one of dirs, or says why it
// is refused: a relative path is taken from the first directory; a path
// naming ".." anywhere is refused as written; symlinks are followed (for a
// file that does not exist yet, its nearest existing parent), and the
// result must lie inside a directory of the chat, itself resolved.
func confine(dirs []string, path string) (string, error) {
	if path == "" {
		return "", errors.New("empty path")
	}
	if slices.Contains(strings.FieldsFunc(filepath.ToSlash(path), func(r rune) bool { return r == '/' }), "..") {
		return "", fmt.Errorf("%s: a path with .. is refused", path)
	}
	if len(dirs) == 0 {
		return "", errors.New("the chat has no directory")
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(dirs[0], path)
	}
	path = filepath.Clean(path)
	real, err := resolveExisting(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	for _, d := range dirs {
		rd, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(rd, real); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return real, nil
		}
	}
	return "", fmt.Errorf("%s is outside the chat's directories", path)
}

// resolveExisting follows the symlinks of path; where path does not exist,
// those of its nearest existing parent, with the rest appended.
func resolveExisting(path string) (string, error) {
	var rest []string
	p := path
	for {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if fi, lerr := os.Lstat(p); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			// A symlink whose target is missing: where it points is not
			// known to be inside, so it is refused.
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

// readConfined reads a text file inside dirs: from 1-based line, at most
// limit lines, when given.
func readConfined(dirs []string, path string, line, limit *int) (string, error) {
	real, err := confine(dirs, path)
	if err != nil {
		return "", err
	}
	f, err := os.Open(real)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return "", err
	} else if fi.IsDir() {
		return "", fmt.Errorf("%s is a directory", path)
	}
	r := bufio.NewReader(io.LimitReader(f, maxReadBytes+1))
	var b strings.Builder
	n, taken := 0, 0
	for {
		s, err := r.ReadString('\n')
		if s != "" {
			n++
			if (line == nil || n >= *line) && (limit == nil || taken < *limit) {
				b.WriteString(s)
				taken++
			}
		}
		if b.Len() > maxReadBytes {
			return "", fmt.Errorf("%s is larger than %d bytes", path, maxReadBytes)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return b.String(), nil
			}
			return "", err
		}
		if limit != nil && taken >= *limit {
			return b.String(), nil
		}
	}
}

// writeConfined writes a text file inside dirs, creating its parent
// directories.
func writeConfined(dirs []string, path, content string) error {
	real, err := confine(dirs, path)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(real); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		return err
	}
	return os.WriteFile(real, []byte(content), 0o644)
}
