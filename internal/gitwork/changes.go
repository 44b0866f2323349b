package gitwork

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Snapshots.
//
// A snapshot is a commit id. On a clean work tree it is HEAD itself. On a
// dirty one it is a commit object made for the purpose (like `git stash
// create`, but of the whole working tree in one tree: tracked files as they
// are on disk, untracked files that are not ignored, deletions), whose
// parent is HEAD (none on an unborn branch), by "ahpd <ahpd@localhost>" and
// never signed, so it needs no identity configured. It is built with a
// temporary index (a copy of the real one, for its stat cache; then
// `git add -A` and `git write-tree` against the copy), so the repository's
// own index, refs, stash and working tree are untouched. Nothing refers to
// it: git gc may prune it once it is older than gc.pruneExpire (two weeks by
// default); Pin keeps one as long as it is needed.
//
// Changes diff two trees with git diff-tree (-M: renames found), so
// untracked files get their line counts, and binary files their flag, from
// git like every other file.

// snapshotIdent is who a snapshot commit is by.
var snapshotIdent = []string{
	"GIT_AUTHOR_NAME=ahpd", "GIT_AUTHOR_EMAIL=ahpd@localhost",
	"GIT_COMMITTER_NAME=ahpd", "GIT_COMMITTER_EMAIL=ahpd@localhost",
}

// Snapshot records dir's work tree as it is now and returns the commit id
// to diff against later (see "Snapshots" above).
func Snapshot(ctx context.Context, dir string) (string, error) {
	top, err := TopLevel(ctx, dir)
	if err != nil {
		return "", err
	}
	head, err := headCommit(ctx, top)
	if err != nil {
		return "", err
	}
	tree, err := workingTree(ctx, top)
	if err != nil {
		return "", err
	}
	if head != "" {
		out, err := run(ctx, top, opts{}, "rev-parse", head+"^{tree}")
		if err != nil {
			return "", err
		}
		if line(out) == tree {
			return head, nil
		}
	}
	args := []string{"commit-tree", "--no-gpg-sign", "-m", "ahpd snapshot", tree}
	if head != "" {
		args = append(args, "-p", head)
	}
	out, err := run(ctx, top, opts{env: snapshotIdent}, args...)
	if err != nil {
		return "", err
	}
	return line(out), nil
}

// maxIndexCopy bounds the copy of the real index; a larger one is not
// copied, and the temporary index starts from HEAD instead (slower: every
// file is hashed).
const maxIndexCopy = 256 << 20

// workingTree writes the tree of top's work tree as it is on disk (tracked
// files, and untracked files that are not ignored) through a temporary
// index, and returns its id.
func workingTree(ctx context.Context, top string) (string, error) {
	tmp, err := os.MkdirTemp("", "ahpd-gitwork-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	idx := filepath.Join(tmp, "index")
	env := opts{env: []string{"GIT_INDEX_FILE=" + idx}}

	out, err := run(ctx, top, opts{}, "rev-parse", "--git-path", "index")
	if err != nil {
		return "", err
	}
	real := line(out)
	if !filepath.IsAbs(real) {
		real = filepath.Join(top, real)
	}
	copied, err := copyIndex(real, idx)
	if err != nil {
		return "", err
	}
	if !copied {
		head, err := headCommit(ctx, top)
		if err != nil {
			return "", err
		}
		if head != "" {
			if _, err := run(ctx, top, env, "read-tree", head); err != nil {
				return "", err
			}
		}
	}
	if _, err := run(ctx, top, env, "-c", "core.fsmonitor=false", "add", "-A"); err != nil {
		return "", err
	}
	out, err = run(ctx, top, env, "write-tree")
	if err != nil {
		return "", err
	}
	return line(out), nil
}

// copyIndex copies the index at from to to; false when there is none or it
// is too large to copy.
func copyIndex(from, to string) (bool, error) {
	src, err := os.Open(from)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	defer src.Close()
	if fi, err := src.Stat(); err != nil {
		return false, err
	} else if !fi.Mode().IsRegular() || fi.Size() > maxIndexCopy {
		return false, nil
	}
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false, err
	}
	if _, err := io.Copy(dst, io.LimitReader(src, maxIndexCopy)); err != nil {
		dst.Close()
		return false, err
	}
	return true, dst.Close()
}

// Kind is how a file changed.
type Kind string

const (
	Added      Kind = "added"
	Modified   Kind = "modified"
	Deleted    Kind = "deleted"
	Renamed    Kind = "renamed"    // OldPath → Path, maybe modified too
	TypeChange Kind = "typechange" // a file became a symlink or the reverse
)

// Change is one file that differs between two trees.
type Change struct {
	Path      string // relative to the work tree's top, "/" separated; a deleted file's old path
	OldPath   string // a renamed file's path before; "" otherwise
	Kind      Kind
	Additions int  // lines added (0 for a binary file)
	Deletions int  // lines removed (0 for a binary file)
	Binary    bool // git sees binary content on either side
	OldMode   string
	NewMode   string // "100644", "100755", "120000" (symlink), "160000" (submodule); "" where absent
	OldBlob   string
	NewBlob   string // object ids of the contents; "" where absent (ReadBlob reads them)
}

// Changes returns every file of dir's work tree that differs from base (a
// commit: a Snapshot, a branch, "HEAD"; "HEAD" on an unborn branch is the
// empty tree), whoever changed it: tracked files modified or deleted,
// untracked files that are not ignored, renames, with their line counts.
// Sorted by path.
func Changes(ctx context.Context, dir, base string) ([]Change, error) {
	top, err := TopLevel(ctx, dir)
	if err != nil {
		return nil, err
	}
	from, err := baseTree(ctx, top, base)
	if err != nil {
		return nil, err
	}
	to, err := workingTree(ctx, top)
	if err != nil {
		return nil, err
	}
	return diffTrees(ctx, top, from, to)
}

// ChangesBetween returns the files that differ between two commits (two
// Snapshots: what one turn changed), as Changes does.
func ChangesBetween(ctx context.Context, dir, from, to string) ([]Change, error) {
	top, err := TopLevel(ctx, dir)
	if err != nil {
		return nil, err
	}
	a, err := baseTree(ctx, top, from)
	if err != nil {
		return nil, err
	}
	b, err := baseTree(ctx, top, to)
	if err != nil {
		return nil, err
	}
	return diffTrees(ctx, top, a, b)
}

// baseTree resolves base to a commit id, or to the empty tree for "HEAD"
// on an unborn branch.
func baseTree(ctx context.Context, top, base string) (string, error) {
	if base == "HEAD" {
		head, err := headCommit(ctx, top)
		if err != nil {
			return "", err
		}
		if head == "" {
			out, err := run(ctx, top, opts{}, "hash-object", "-t", "tree", "--stdin")
			if err != nil {
				return "", err
			}
			return line(out), nil
		}
		return head, nil
	}
	return resolveCommit(ctx, top, base)
}

func diffTrees(ctx context.Context, top, from, to string) ([]Change, error) {
	out, err := run(ctx, top, opts{}, "diff-tree", "-r", "-z", "--raw", "--numstat", "-M", "--no-abbrev", from, to)
	if err != nil {
		return nil, err
	}
	return parseDiff(out)
}

// parseDiff reads `git diff-tree -r -z --raw --numstat -M --no-abbrev`:
// first one raw record per file (":oldmode newmode oldid newid status",
// then its path, or two for a rename), then one numstat record per file
// ("added\tdeleted\tpath", or "added\tdeleted\t" then two paths), in the
// same order.
func parseDiff(out []byte) ([]Change, error) {
	toks := strings.Split(string(out), "\x00")
	if n := len(toks); n > 0 && toks[n-1] == "" {
		toks = toks[:n-1]
	}
	next := func(i *int) (string, error) {
		if *i >= len(toks) {
			return "", errors.New("diff-tree: output cut short")
		}
		*i++
		return toks[*i-1], nil
	}
	var changes []Change
	byPath := map[string]int{}
	counted := 0
	for i := 0; i < len(toks); {
		tok, _ := next(&i)
		if strings.HasPrefix(tok, ":") {
			f := strings.Fields(tok[1:])
			if len(f) != 5 || f[4] == "" {
				return nil, fmt.Errorf("diff-tree: unexpected record %q", tok)
			}
			c := Change{OldMode: nonZero(f[0]), NewMode: nonZero(f[1]), OldBlob: nonZero(f[2]), NewBlob: nonZero(f[3])}
			var err error
			switch f[4][0] {
			case 'A':
				c.Kind = Added
			case 'M':
				c.Kind = Modified
			case 'D':
				c.Kind = Deleted
			case 'T':
				c.Kind = TypeChange
			case 'R': // no 'C': copies are found with -C only
				c.Kind = Renamed
				if c.OldPath, err = next(&i); err != nil {
					return nil, err
				}
			default:
				return nil, fmt.Errorf("diff-tree: unexpected status %q", f[4])
			}
			if c.Path, err = next(&i); err != nil {
				return nil, err
			}
			byPath[c.Path] = len(changes)
			changes = append(changes, c)
			continue
		}
		parts := strings.SplitN(tok, "\t", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("diff-tree: unexpected numstat %q", tok)
		}
		p := parts[2]
		if p == "" { // a rename: the two paths follow
			if _, err := next(&i); err != nil {
				return nil, err
			}
			var err error
			if p, err = next(&i); err != nil {
				return nil, err
			}
		}
		at, ok := byPath[p]
		if !ok {
			return nil, fmt.Errorf("diff-tree: numstat for %q, which has no raw record", p)
		}
		c := &changes[at]
		if parts[0] == "-" && parts[1] == "-" {
			c.Binary = true
		} else {
			a, err1 := strconv.Atoi(parts[0])
			d, err2 := strconv.Atoi(parts[1])
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("diff-tree: unexpected numstat %q", tok)
			}
			c.Additions, c.Deletions = a, d
		}
		counted++
	}
	if counted != len(changes) {
		return nil, fmt.Errorf("diff-tree: %d files but %d line counts", len(changes), counted)
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	return changes, nil
}

// nonZero is a mode or object id of diff-tree's, "" for its all-zero one
// (the side a file is absent from).
func nonZero(s string) string {
	if strings.Trim(s, "0") == "" {
		return ""
	}
	return s
}

// MaxShowBytes bounds what Show and ReadBlob return.
const MaxShowBytes = 8 << 20

// ErrTooLarge is the error of Show and ReadBlob for a larger content.
var ErrTooLarge = errors.New("larger than the limit")

// Show returns path's content at commit (a symlink's target for a link),
// at most MaxShowBytes (ErrTooLarge beyond). A path commit does not have
// wraps fs.ErrNotExist; a directory is an error.
func Show(ctx context.Context, dir, commit, path string) ([]byte, error) {
	rel, err := cleanRel(path)
	if err != nil {
		return nil, err
	}
	top, err := TopLevel(ctx, dir)
	if err != nil {
		return nil, err
	}
	id, err := resolveCommit(ctx, top, commit)
	if err != nil {
		return nil, err
	}
	out, err := run(ctx, top, opts{}, "ls-tree", "-z", id, "--", rel)
	if err != nil {
		return nil, err
	}
	for _, e := range strings.Split(string(out), "\x00") {
		meta, name, ok := strings.Cut(e, "\t")
		if !ok || name != rel {
			continue
		}
		f := strings.Fields(meta)
		if len(f) != 3 || f[1] != "blob" {
			return nil, fmt.Errorf("%s at %s: not a file", rel, commit)
		}
		return readBlob(ctx, top, f[2])
	}
	return nil, fmt.Errorf("%s at %s: %w", rel, commit, fs.ErrNotExist)
}

// ReadBlob returns the content of the blob id (a Change's OldBlob or
// NewBlob) in dir's repository, at most MaxShowBytes.
func ReadBlob(ctx context.Context, dir, id string) ([]byte, error) {
	if err := absDir(dir); err != nil {
		return nil, err
	}
	if !isObjectID(id) {
		return nil, fmt.Errorf("%q is not an object id", id)
	}
	return readBlob(ctx, dir, id)
}

func readBlob(ctx context.Context, dir, id string) ([]byte, error) {
	out, err := run(ctx, dir, opts{}, "cat-file", "-s", id)
	if err != nil {
		return nil, err
	}
	size, err := strconv.ParseInt(line(out), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("cat-file -s: %q", line(out))
	}
	if size > MaxShowBytes {
		return nil, fmt.Errorf("%s: %d bytes: %w (%d)", id, size, ErrTooLarge, MaxShowBytes)
	}
	return run(ctx, dir, opts{maxOut: MaxShowBytes}, "cat-file", "blob", id)
}

func isObjectID(s string) bool {
	return len(s) >= 4 && len(s) <= 64 && strings.Trim(s, "0123456789abcdef") == ""
}

// Pin makes refs/ahpd/<name> point at commit (a Snapshot), so git gc keeps
// it; name follows the branch-name rules ("sessions/<id>/base").
func Pin(ctx context.Context, dir, name, commit string) error {
	if err := ValidateBranchName(name); err != nil {
		return err
	}
	top, err := TopLevel(ctx, dir)
	if err != nil {
		return err
	}
	id, err := resolveCommit(ctx, top, commit)
	if err != nil {
		return err
	}
	_, err = run(ctx, top, opts{}, "update-ref", "refs/ahpd/"+name, id)
	return err
}

// Unpin deletes refs/ahpd/<name> (nothing when there is none).
func Unpin(ctx context.Context, dir, name string) error {
	if err := ValidateBranchName(name); err != nil {
		return err
	}
	top, err := TopLevel(ctx, dir)
	if err != nil {
		return err
	}
	_, err = run(ctx, top, opts{}, "update-ref", "-d", "refs/ahpd/"+name)
	return err
}
