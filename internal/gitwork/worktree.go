package gitwork

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ahpd/ahpd/internal/confine"
)

// Worktree is one entry of git worktree list.
type Worktree struct {
	Path           string
	Head           string // the commit checked out; "" for a bare entry
	Branch         string // short name; "" when detached or bare
	Detached       bool
	Bare           bool
	Locked         bool
	LockReason     string
	Prunable       bool // its directory is gone; Prune forgets it
	PrunableReason string
}

// AddWorktree runs `git worktree add -b newBranch dest <commit>` in
// repoDir's repository, where commit is what fromRef names (resolved first,
// so the new branch tracks nothing). newBranch must be a valid branch name
// (ValidateBranchName and git check-ref-format) that does not exist yet;
// dest must be absolute, not exist, and lie strictly under root (created
// when missing), with no symlink leading out of it. The error of a failed
// git carries git's stderr. The returned Worktree's Head is the base to
// hand RemoveWorktree later.
func AddWorktree(ctx context.Context, repoDir, root, dest, newBranch, fromRef string) (Worktree, error) {
	if err := absDir(repoDir); err != nil {
		return Worktree{}, err
	}
	if err := ValidateBranchName(newBranch); err != nil {
		return Worktree{}, err
	}
	if _, err := run(ctx, repoDir, opts{}, "check-ref-format", "refs/heads/"+newBranch); err != nil {
		return Worktree{}, fmt.Errorf("%q is not a valid branch name (git check-ref-format): %w", newBranch, err)
	}
	if err := validateRev(fromRef); err != nil {
		return Worktree{}, err
	}
	realDest, err := worktreeDest(root, dest)
	if err != nil {
		return Worktree{}, err
	}
	commit, err := resolveCommit(ctx, repoDir, fromRef)
	if err != nil {
		return Worktree{}, err
	}
	if _, err := run(ctx, repoDir, opts{}, "worktree", "add", "-b", newBranch, realDest, commit); err != nil {
		return Worktree{}, err
	}
	return Worktree{Path: realDest, Head: commit, Branch: newBranch}, nil
}

// worktreeDest checks a new worktree's directory: absolute, printable, not
// existing, strictly under root (made when missing). It returns it with
// root's symlinks resolved.
func worktreeDest(root, dest string) (string, error) {
	if !filepath.IsAbs(root) || !filepath.IsAbs(dest) {
		return "", fmt.Errorf("%w: the worktree %q and its root %q must be absolute", ErrPath, dest, root)
	}
	for _, r := range dest {
		if r < 0x20 || r == 0x7f {
			return "", fmt.Errorf("%w %q: contains a control character", ErrPath, dest)
		}
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", err
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	if _, err := os.Lstat(dest); err == nil {
		return "", fmt.Errorf("%s: %w", dest, fs.ErrExist)
	}
	real, err := confine.ResolveNew(dest, []string{realRoot})
	if err != nil {
		return "", fmt.Errorf("%w %q: not under the worktrees folder %s: %v", ErrPath, dest, root, err)
	}
	if real == realRoot {
		return "", fmt.Errorf("%w %q: is the worktrees folder itself", ErrPath, dest)
	}
	return real, nil
}

// Why RemoveWorktree kept a worktree.
const (
	KeptDirty    = "dirty"            // uncommitted changes or untracked files
	KeptUnmerged = "unmerged commits" // its HEAD has commits its base, or every other branch and tag, has not
)

// Removal is what RemoveWorktree did.
type Removal struct {
	Path          string
	Removed       bool
	Kept          string // KeptDirty or KeptUnmerged when not removed
	Branch        string // the worktree's branch ("" when detached)
	BranchDeleted bool
}

func (r Removal) String() string {
	if r.Removed {
		return "removed"
	}
	return "kept: " + r.Kept
}

// RemoveWorktree removes the linked worktree at path (strictly under root,
// never a main work tree) only when nothing would be lost: it is kept
// (Removal.Kept, no error) when it has changes or untracked files that are
// not ignored (KeptDirty), or when its HEAD has commits that base (the
// commit or branch it was made from) does not contain, or that no branch
// but its own, no tag and no remote-tracking branch holds (KeptUnmerged: a
// base naming the worktree itself, "HEAD" or its branch, protects nothing;
// nor does a base that is on no branch any more). It is removed with `git
// worktree remove` without --force, so git refuses too should it turn dirty
// in between; its ignored files go with it. Its branch is then deleted when
// no other worktree has it checked out, and only if it still points where
// the check saw it (git update-ref -d with the old id).
//
// A main work tree under root is a clone Clone made (a repository-backed
// session's): it is removed, whole, by the same rule against what its
// remote holds (removeClone), and base is not used.
func RemoveWorktree(ctx context.Context, root, path, base string) (Removal, error) {
	r := Removal{Path: path}
	if !filepath.IsAbs(root) || !filepath.IsAbs(path) {
		return r, fmt.Errorf("%w: the worktree %q and its root %q must be absolute", ErrPath, path, root)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return r, err
	}
	real, err := confine.Resolve(path, []string{realRoot})
	if err != nil {
		return r, err
	}
	if real == realRoot {
		return r, fmt.Errorf("%w %q: is the worktrees folder itself", ErrPath, path)
	}
	r.Path = real
	top, err := TopLevel(ctx, real)
	if err != nil {
		return r, err
	}
	if top != real {
		return r, fmt.Errorf("%s: not the top of a worktree (%s is)", path, top)
	}
	gitDir, err := gitPathOf(ctx, real, "--git-dir")
	if err != nil {
		return r, err
	}
	common, err := gitPathOf(ctx, real, "--git-common-dir")
	if err != nil {
		return r, err
	}
	if gitDir == common {
		if gitDir != filepath.Join(real, ".git") {
			return r, fmt.Errorf("%s: not a work tree ahpd made (its git directory is %s)", path, gitDir)
		}
		return removeClone(ctx, r, real)
	}
	if base == "" {
		return r, errors.New("RemoveWorktree needs the base the worktree was made from")
	}
	if err := validateRev(base); err != nil {
		return r, err
	}

	if dirty, err := hasChanges(ctx, real); err != nil || dirty {
		if dirty {
			r.Kept = KeptDirty
		}
		return r, err
	}
	if r.Branch, err = CurrentBranch(ctx, real); err != nil {
		return r, err
	}
	head, err := resolveCommit(ctx, real, "HEAD")
	if err != nil {
		return r, err
	}
	baseID, err := resolveCommit(ctx, real, base)
	if err != nil {
		return r, fmt.Errorf("the base %q: %w", base, err)
	}
	out, err := run(ctx, real, opts{}, "rev-list", "--count", baseID+".."+head)
	if err != nil {
		return r, err
	}
	if n, err := strconv.Atoi(line(out)); err != nil {
		return r, fmt.Errorf("rev-list --count: %q", line(out))
	} else if n > 0 {
		r.Kept = KeptUnmerged
		return r, nil
	}
	if held, err := heldElsewhere(ctx, real, head, r.Branch); err != nil {
		return r, err
	} else if !held {
		r.Kept = KeptUnmerged
		return r, nil
	}

	if _, err := run(ctx, common, opts{}, "worktree", "remove", real); err != nil {
		return r, err
	}
	r.Removed = true
	if r.Branch == "" {
		return r, nil
	}
	wts, err := ListWorktrees(ctx, common)
	if err != nil {
		return r, err
	}
	for _, w := range wts {
		if w.Branch == r.Branch {
			return r, nil // checked out elsewhere: kept
		}
	}
	if _, err := run(ctx, common, opts{}, "update-ref", "-d", "refs/heads/"+r.Branch, head); err != nil {
		return r, err
	}
	r.BranchDeleted = true
	return r, nil
}

// hasChanges reports whether the work tree at dir has changes or
// untracked files that are not ignored.
func hasChanges(ctx context.Context, dir string) (bool, error) {
	status, err := run(ctx, dir, opts{}, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=none")
	return len(status) > 0, err
}

// heldElsewhere reports whether a branch other than branch ("" for none), a
// tag or a remote-tracking branch contains commit: whether it outlives the
// worktree and its branch.
func heldElsewhere(ctx context.Context, dir, commit, branch string) (bool, error) {
	out, err := run(ctx, dir, opts{}, "for-each-ref", "--contains", commit, "--format=%(refname)", "refs/heads", "refs/tags", "refs/remotes")
	if err != nil {
		return false, err
	}
	for _, ref := range strings.Split(string(out), "\n") {
		if ref != "" && ref != "refs/heads/"+branch {
			return true, nil
		}
	}
	return false, nil
}

// gitPathOf is `git rev-parse <flag>` (--git-dir, --git-common-dir) in dir
// as an absolute, resolved path.
func gitPathOf(ctx context.Context, dir, flag string) (string, error) {
	out, err := run(ctx, dir, opts{}, "rev-parse", flag)
	if err != nil {
		return "", err
	}
	p := line(out)
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.EvalSymlinks(p)
}

// ListWorktrees lists the worktrees of repoDir's repository, the main one
// first (git worktree list --porcelain).
func ListWorktrees(ctx context.Context, repoDir string) ([]Worktree, error) {
	if err := absDir(repoDir); err != nil {
		return nil, err
	}
	out, err := run(ctx, repoDir, opts{}, "worktree", "list", "--porcelain", "-z")
	if exitCode(err) == 129 {
		// A git older than 2.36 has no -z: lines then, as it prints them.
		if out, err = run(ctx, repoDir, opts{}, "worktree", "list", "--porcelain"); err != nil {
			return nil, err
		}
		return parseWorktrees(out, '\n')
	} else if err != nil {
		return nil, err
	}
	return parseWorktrees(out, 0)
}

// parseWorktrees reads git worktree list --porcelain: attributes ended by
// sep (NUL with -z, newline without), a record ended by an empty one.
func parseWorktrees(out []byte, sep byte) ([]Worktree, error) {
	var list []Worktree
	var cur *Worktree
	for _, f := range strings.Split(string(out), string(sep)) {
		if f == "" {
			cur = nil
			continue
		}
		key, val, _ := strings.Cut(f, " ")
		if key == "worktree" {
			list = append(list, Worktree{Path: val})
			cur = &list[len(list)-1]
			continue
		}
		if cur == nil {
			return nil, fmt.Errorf("worktree list: %q before any worktree", f)
		}
		switch key {
		case "HEAD":
			cur.Head = val
		case "branch":
			cur.Branch = strings.TrimPrefix(val, "refs/heads/")
		case "detached":
			cur.Detached = true
		case "bare":
			cur.Bare = true
		case "locked":
			cur.Locked, cur.LockReason = true, val
		case "prunable":
			cur.Prunable, cur.PrunableReason = true, val
		}
	}
	return list, nil
}

// Prune forgets the worktrees of repoDir's repository whose directories are
// gone (git worktree prune). It deletes no files and no branches.
func Prune(ctx context.Context, repoDir string) error {
	if err := absDir(repoDir); err != nil {
		return err
	}
	_, err := run(ctx, repoDir, opts{}, "worktree", "prune")
	return err
}
