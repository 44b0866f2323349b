package gitwork

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrNothingToCommit is Commit's error when the paths hold no change.
var ErrNothingToCommit = errors.New("nothing to commit")

// chunk is how many paths go to one git call.
const chunk = 500

// RestoreFile returns path (relative to dir's work tree) to its content at
// base: `git restore --source=<base> --worktree` when base has it; when
// base does not, the file is deleted (`git rm -f` when the index tracks it,
// `git clean -f` when it is untracked). Only the working tree is restored:
// the index keeps what was staged, except that a file deleted because base
// lacks it leaves the index too (git rm). A file git ignores is never
// deleted (an error says so).
func RestoreFile(ctx context.Context, dir, base, path string) error {
	return RestorePaths(ctx, dir, base, []string{path})
}

// RestorePaths is RestoreFile for several paths, in a few git calls. Every
// path is confined first; one refused path and nothing is restored.
func RestorePaths(ctx context.Context, dir, base string, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	top, rels, err := confinedPaths(ctx, dir, paths)
	if err != nil {
		return err
	}
	id, err := resolveCommit(ctx, top, base)
	if err != nil {
		return err
	}
	return restore(ctx, top, id, rels, false)
}

// RestoreAll restores every file Changes(base) lists (both paths of a
// rename) and returns that list.
func RestoreAll(ctx context.Context, dir, base string) ([]Change, error) {
	changes, err := Changes(ctx, dir, base)
	if err != nil {
		return nil, err
	}
	return changes, RestorePaths(ctx, dir, base, changedPaths(changes))
}

// DiscardChanges returns paths to HEAD, in the index and the working tree
// (`git restore --source=HEAD --staged --worktree`); a path HEAD does not
// have is deleted (git rm -f, or git clean -f when untracked). It needs at
// least one path; DiscardAll discards everything.
func DiscardChanges(ctx context.Context, dir string, paths []string) error {
	if len(paths) == 0 {
		return errors.New("DiscardChanges: no paths (DiscardAll discards every change)")
	}
	top, rels, err := confinedPaths(ctx, dir, paths)
	if err != nil {
		return err
	}
	head, err := headCommit(ctx, top)
	if err != nil {
		return err
	}
	return restore(ctx, top, head, rels, true)
}

// DiscardAll discards every uncommitted change (Changes(dir, "HEAD")) and
// returns what it discarded.
func DiscardAll(ctx context.Context, dir string) ([]Change, error) {
	changes, err := Changes(ctx, dir, "HEAD")
	if err != nil {
		return nil, err
	}
	if len(changes) == 0 {
		return nil, nil
	}
	return changes, DiscardChanges(ctx, dir, changedPaths(changes))
}

// changedPaths are the paths of changes, both of a rename's.
func changedPaths(changes []Change) []string {
	var paths []string
	for _, c := range changes {
		paths = append(paths, c.Path)
		if c.OldPath != "" {
			paths = append(paths, c.OldPath)
		}
	}
	return paths
}

// restore returns rels (confined) to their content at commit ("" for none:
// an unborn branch), in the working tree and, when staged, the index; a
// path commit does not have is deleted.
func restore(ctx context.Context, top, commit string, rels []string, staged bool) error {
	inBase := map[string]bool{}
	if commit != "" {
		var err error
		if inBase, err = inChunks(ctx, top, rels, "ls-tree", "-r", "-z", "--name-only", commit); err != nil {
			return err
		}
	}
	keep, gone := partition(rels, func(rel string) bool {
		if inBase[rel] {
			return true
		}
		for name := range inBase { // a directory at commit
			if strings.HasPrefix(name, rel+"/") {
				return true
			}
		}
		return false
	})
	args := []string{"restore", "--source=" + commit, "--worktree"}
	if staged {
		args = append(args, "--staged")
	}
	if _, err := inChunks(ctx, top, keep, args...); err != nil {
		return err
	}
	if len(gone) == 0 {
		return nil
	}
	tracked, err := inChunks(ctx, top, gone, "ls-files", "-z")
	if err != nil {
		return err
	}
	rm, clean := partition(gone, func(rel string) bool { return tracked[rel] })
	if _, err := inChunks(ctx, top, rm, "rm", "-f", "-q", "--ignore-unmatch"); err != nil {
		return err
	}
	if _, err := inChunks(ctx, top, clean, "clean", "-f", "-q"); err != nil {
		return err
	}
	// git clean leaves an ignored file (and git rm a file it no longer
	// tracks): say so rather than claim it is gone.
	for _, rel := range gone {
		if _, err := os.Lstat(filepath.Join(top, filepath.FromSlash(rel))); err == nil {
			return fmt.Errorf("%s: not at the base, and git did not remove it (ignored?)", rel)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// inChunks runs `git args -- paths` in top, chunk paths a call (none for
// no paths), and returns the names the calls print, NUL-separated.
func inChunks(ctx context.Context, top string, paths []string, args ...string) (map[string]bool, error) {
	names := map[string]bool{}
	for _, part := range chunks(paths) {
		out, err := run(ctx, top, opts{}, slices.Concat(args, []string{"--"}, part)...)
		if err != nil {
			return nil, err
		}
		for _, name := range strings.Split(string(out), "\x00") {
			if name != "" {
				names[name] = true
			}
		}
	}
	return names, nil
}

// partition splits paths into those in says yes to and the rest.
func partition(paths []string, in func(string) bool) (yes, no []string) {
	for _, p := range paths {
		if in(p) {
			yes = append(yes, p)
		} else {
			no = append(no, p)
		}
	}
	return yes, no
}

// chunks splits paths into runs of at most chunk.
func chunks(paths []string) [][]string {
	var out [][]string
	for len(paths) > chunk {
		out = append(out, paths[:chunk])
		paths = paths[chunk:]
	}
	if len(paths) > 0 {
		out = append(out, paths)
	}
	return out
}

// Commit commits paths of dir's work tree as they are on disk (additions,
// changes and deletions; both paths of a rename), and only them: other
// staged changes stay staged and out of the commit (git add -A, then
// git commit --only; the paths go on stdin, so there may be any number).
// With no paths it commits every change (git add -A, git commit). Hooks
// run; the identity is git's (user.name, user.email), and its error when
// none is set. It returns the new commit's id, or ErrNothingToCommit.
func Commit(ctx context.Context, dir, message string, paths []string) (string, error) {
	if strings.TrimSpace(message) == "" {
		return "", errors.New("Commit: an empty message")
	}
	top, rels, err := confinedPaths(ctx, dir, paths)
	if err != nil {
		return "", err
	}
	// The paths go on stdin, NUL-separated: any number of them.
	list := opts{stdin: []byte(strings.Join(rels, "\x00"))}
	if len(rels) == 0 {
		list = opts{}
	}
	fromStdin := []string{"--pathspec-from-file=-", "--pathspec-file-nul"}
	addArgs := []string{"add", "-A"}
	if len(rels) > 0 {
		addArgs = append(addArgs, fromStdin...)
	}
	if _, err := run(ctx, top, list, addArgs...); err != nil {
		return "", err
	}
	// Anything staged for these paths? (HEAD on an unborn branch: all is.)
	head, err := headCommit(ctx, top)
	if err != nil {
		return "", err
	}
	if head != "" {
		staged := false
		parts := chunks(rels)
		if len(parts) == 0 {
			parts = [][]string{nil} // the whole tree
		}
		for _, part := range parts {
			_, err := run(ctx, top, opts{}, append([]string{"diff", "--cached", "--quiet", "--no-ext-diff", head, "--"}, part...)...)
			if exitCode(err) == 1 {
				staged = true
				break
			} else if err != nil {
				return "", err
			}
		}
		if !staged {
			return "", ErrNothingToCommit
		}
	}
	args := []string{"commit", "-q", "--no-edit", "-m", message}
	if len(rels) > 0 {
		args = append(append(args, "--only"), fromStdin...)
	}
	if _, err := run(ctx, top, list, args...); err != nil {
		return "", err
	}
	return headCommit(ctx, top)
}
