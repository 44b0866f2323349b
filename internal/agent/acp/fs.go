package acp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ahpd/ahpd/internal/confine"
)

// maxReadBytes bounds what fs/read_text_file hands the agent.
const maxReadBytes = 8 << 20

// confined resolves path to a real path inside one of dirs, or says why it
// is refused: a relative path is taken from the first directory; a path
// naming ".." anywhere is refused as written; symlinks are followed (for a
// file that does not exist yet, its nearest existing parent), and the
// result must lie inside a directory of the chat, itself resolved.
func confined(dirs []string, path string) (string, error) {
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
	real, err := confine.ResolveNew(path, dirs)
	if errors.Is(err, confine.ErrOutside) {
		return "", fmt.Errorf("%s is outside the chat's directories", path)
	}
	return real, err
}

// readConfined reads a text file inside dirs: from 1-based line, at most
// limit lines, when given.
func readConfined(dirs []string, path string, line, limit *int) (string, error) {
	real, err := confined(dirs, path)
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
	real, err := confined(dirs, path)
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
