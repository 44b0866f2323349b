package gitwork

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/ahpd/ahpd/internal/confine"
)

// ValidateBranchName says why name cannot be a branch (git
// check-ref-format's rules for refs/heads/<name>, and git branch's own: not
// "HEAD", not starting with "-"), or nil. It is pure; AddWorktree also asks
// git itself.
func ValidateBranchName(name string) error {
	bad := func(why string) error { return fmt.Errorf("%q is not a valid branch name: %s", name, why) }
	switch {
	case name == "":
		return bad("empty")
	case name == "HEAD":
		return bad(`"HEAD" is reserved`)
	case name == "@":
		return bad(`"@" is reserved`)
	case strings.HasPrefix(name, "-"):
		return bad(`starts with "-"`)
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/"):
		return bad(`starts or ends with "/"`)
	case strings.HasSuffix(name, "."):
		return bad(`ends with "."`)
	case strings.Contains(name, "//"):
		return bad(`contains "//"`)
	case strings.Contains(name, ".."):
		return bad(`contains ".."`)
	case strings.Contains(name, "@{"):
		return bad(`contains "@{"`)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return bad("contains a control character")
		}
		if strings.ContainsRune(" ~^:?*[\\", r) {
			return bad(fmt.Sprintf("contains %q", r))
		}
	}
	for _, c := range strings.Split(name, "/") {
		if strings.HasPrefix(c, ".") {
			return bad(`a component starts with "."`)
		}
		if strings.HasSuffix(c, ".lock") {
			return bad(`a component ends with ".lock"`)
		}
	}
	return nil
}

// validateRev refuses what cannot be a revision ahpd passes to git: empty,
// starting with "-" (an option), or holding whitespace or control
// characters. Whether it names a commit is git's to say (resolveCommit).
func validateRev(rev string) error {
	if rev == "" {
		return errors.New("empty revision")
	}
	if strings.HasPrefix(rev, "-") {
		return fmt.Errorf("%q is not a revision: starts with \"-\"", rev)
	}
	for _, r := range rev {
		if r <= 0x20 || r == 0x7f {
			return fmt.Errorf("%q is not a revision: contains a space or control character", rev)
		}
	}
	return nil
}

// ErrPath is wrapped by every refusal of a path argument.
var ErrPath = errors.New("refused path")

// cleanRel is the lexical rule for a path relative to a work tree: not
// empty, not absolute, no ".." component, no NUL, not the tree itself and
// not inside .git. It returns the path cleaned, with "/" separators.
func cleanRel(p string) (string, error) {
	bad := func(why string) (string, error) { return "", fmt.Errorf("%w %q: %s", ErrPath, p, why) }
	switch {
	case p == "":
		return bad("empty")
	case strings.ContainsRune(p, 0):
		return bad("contains NUL")
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p):
		return bad("absolute")
	}
	for _, c := range strings.Split(filepath.ToSlash(p), "/") {
		if c == ".." {
			return bad(`contains ".."`)
		}
	}
	c := path.Clean(filepath.ToSlash(p))
	if c == "." {
		return bad("names the whole work tree")
	}
	first, _, _ := strings.Cut(c, "/")
	if strings.EqualFold(first, ".git") {
		return bad("inside .git")
	}
	return c, nil
}

// confinePath is cleanRel plus the file system: the parent directories of
// top/p must be real directories (or not exist yet) inside top, none of
// them reached through a symlink. top must be resolved already (TopLevel
// is). It returns the cleaned relative path.
func confinePath(top, p string) (string, error) {
	c, err := cleanRel(p)
	if err != nil {
		return "", err
	}
	parent := filepath.Dir(filepath.Join(top, filepath.FromSlash(c)))
	real, err := confine.ResolveNew(parent, []string{top})
	if err != nil {
		return "", fmt.Errorf("%w %q: %v", ErrPath, p, err)
	}
	if real != parent {
		return "", fmt.Errorf("%w %q: goes through a symlink", ErrPath, p)
	}
	return c, nil
}

// confinedPaths returns the top of dir's work tree and paths confined to it
// (confinePath); one refused path and it is an error.
func confinedPaths(ctx context.Context, dir string, paths []string) (top string, rels []string, err error) {
	if top, err = TopLevel(ctx, dir); err != nil {
		return "", nil, err
	}
	rels = make([]string, 0, len(paths))
	for _, p := range paths {
		c, err := confinePath(top, p)
		if err != nil {
			return "", nil, err
		}
		rels = append(rels, c)
	}
	return top, rels, nil
}

// absDir refuses a relative directory argument: a daemon's working
// directory means nothing to a client.
func absDir(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%w %q: not an absolute directory", ErrPath, dir)
	}
	if fi, err := os.Stat(dir); err != nil {
		return err
	} else if !fi.IsDir() {
		return fmt.Errorf("%s: not a directory", dir)
	}
	return nil
}
