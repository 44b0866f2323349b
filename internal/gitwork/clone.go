package gitwork

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// cloneProtocols are the transports a clone may use, for the clone and
// anything it fetches: never ext:: or another helper that runs a command.
const cloneProtocols = "GIT_ALLOW_PROTOCOL=file:https:http:ssh:git"

// cloneMark is the local config key set in every clone Clone makes.
const cloneMark = "ahpd.clone"

// Clone clones source into dest, strictly under root, and checks out a new
// branch newBranch at revision: a branch of the source, a tag or a commit
// (the source's default branch when ""). source is a URI of a git
// transport (file, https, http, ssh, git) without a credential; a file:
// URI is cloned from its local path, so objects are shared by hard links.
// git never prompts: a source that needs a credential git does not already
// have fails. The returned Worktree's Head is the commit checked out. A
// clone that fails leaves nothing behind.
func Clone(ctx context.Context, root, dest, source, revision, newBranch string) (Worktree, error) {
	if err := ValidateBranchName(newBranch); err != nil {
		return Worktree{}, err
	}
	if revision != "" {
		if err := validateRev(revision); err != nil {
			return Worktree{}, err
		}
	}
	from, err := cloneSource(source)
	if err != nil {
		return Worktree{}, err
	}
	realDest, err := worktreeDest(root, dest)
	if err != nil {
		return Worktree{}, err
	}
	o := opts{env: []string{cloneProtocols, "GIT_SSH_COMMAND=" + sshCommand()}}
	if _, err := run(ctx, filepath.Dir(realDest), o, "clone", "--no-checkout", "--origin", "origin", "--", from, realDest); err != nil {
		_ = os.RemoveAll(realDest)
		return Worktree{}, err
	}
	// The mark removeClone asks for: a main work tree without it is never
	// removed, wherever it lies.
	if _, err := run(ctx, realDest, opts{}, "config", "--local", cloneMark, "true"); err != nil {
		_ = os.RemoveAll(realDest)
		return Worktree{}, err
	}
	wt, err := checkoutClone(ctx, realDest, revision, newBranch)
	if err != nil {
		_ = os.RemoveAll(realDest)
		return Worktree{}, err
	}
	return wt, nil
}

// checkoutClone checks out newBranch at revision in a fresh clone.
func checkoutClone(ctx context.Context, dir, revision, newBranch string) (Worktree, error) {
	commit := ""
	if revision == "" {
		id, err := commitID(ctx, dir, "HEAD")
		if err != nil {
			return Worktree{}, err
		}
		if id == "" {
			return Worktree{}, fmt.Errorf("the repository has no commits to work from")
		}
		commit = id
	} else {
		// A branch of the source first, then a tag, then a commit: the
		// order git's own checkout would guess in.
		for _, ref := range []string{"refs/remotes/origin/" + revision, "refs/tags/" + revision, revision} {
			if id, err := commitID(ctx, dir, ref); err == nil && id != "" {
				commit = id
				break
			}
		}
		if commit == "" {
			return Worktree{}, fmt.Errorf("the revision %q is not a branch, tag or commit of the repository", revision)
		}
	}
	if _, err := run(ctx, dir, opts{}, "check-ref-format", "refs/heads/"+newBranch); err != nil {
		return Worktree{}, fmt.Errorf("%q is not a valid branch name (git check-ref-format): %w", newBranch, err)
	}
	if _, err := run(ctx, dir, opts{}, "checkout", "--quiet", "--no-track", "-b", newBranch, commit); err != nil {
		return Worktree{}, err
	}
	return Worktree{Path: dir, Head: commit, Branch: newBranch}, nil
}

// cloneSource is what git clone is handed for source: a file: URI's local
// path, any other URI as it is.
func cloneSource(source string) (string, error) {
	u, err := url.Parse(source)
	if err != nil || u.Scheme == "" {
		return "", fmt.Errorf("%w %q: not a repository URI", ErrPath, source)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%w %q: a credential, query or fragment", ErrPath, source)
	}
	switch strings.ToLower(u.Scheme) {
	case "file":
		if !filepath.IsAbs(u.Path) {
			return "", fmt.Errorf("%w %q: not an absolute path", ErrPath, source)
		}
		return filepath.Clean(u.Path), nil
	case "https", "http", "ssh", "git":
		return source, nil
	}
	return "", fmt.Errorf("%w %q: the scheme %s is not a git transport ahpd clones from", ErrPath, source, u.Scheme)
}

// sshCommand is the ssh a clone uses: the operator's (GIT_SSH_COMMAND), or
// ssh that never asks for a password or a host key it does not know.
func sshCommand() string {
	if c := os.Getenv("GIT_SSH_COMMAND"); c != "" {
		return c
	}
	return "ssh -o BatchMode=yes"
}

// removeClone removes a clone Clone made under root (real, resolved) when
// nothing would be lost: it is kept when it has changes, untracked files
// or stashes (KeptDirty), or when a branch or its HEAD has commits no
// remote-tracking branch and no tag holds (KeptUnmerged): work that was
// never pushed.
func removeClone(ctx context.Context, r Removal, real string) (Removal, error) {
	if mark, _ := run(ctx, real, opts{}, "config", "--local", "--get", cloneMark); line(mark) != "true" {
		return r, fmt.Errorf("%s: the main work tree of its repository, not a worktree or clone ahpd made", real)
	}
	if dirty, err := hasChanges(ctx, real); err != nil || dirty {
		if dirty {
			r.Kept = KeptDirty
		}
		return r, err
	}
	if stashes, err := run(ctx, real, opts{}, "stash", "list"); err != nil {
		return r, err
	} else if len(stashes) > 0 {
		r.Kept = KeptDirty
		return r, nil
	}
	branch, err := CurrentBranch(ctx, real)
	if err != nil {
		return r, err
	}
	r.Branch = branch
	args := []string{"rev-list", "--max-count=1", "--branches"}
	if id, _ := commitID(ctx, real, "HEAD"); id != "" {
		args = append(args, id)
	}
	out, err := run(ctx, real, opts{}, append(args, "--not", "--remotes", "--tags")...)
	if err != nil {
		return r, err
	}
	if line(out) != "" {
		r.Kept = KeptUnmerged
		return r, nil
	}
	if err := removeAllSettled(ctx, real); err != nil {
		return r, fmt.Errorf("remove the clone %s: %w", real, err)
	}
	r.Removed, r.BranchDeleted = true, r.Branch != ""
	return r, nil
}

// removeAllSettled removes dir like os.RemoveAll, trying again while a
// directory in it is found not empty: a git process still finishing in the
// clone adds files after RemoveAll read a directory. The host's own git work
// on the session is over by then (gitDesk.dispose waits for it); this is
// for what it does not control (a detached gc, a user's git). It gives up
// after a few tries, or when ctx ends.
func removeAllSettled(ctx context.Context, dir string) error {
	const tries, pause = 5, 100 * time.Millisecond
	var err error
	for try := 1; ; try++ {
		if err = os.RemoveAll(dir); err == nil || !errors.Is(err, syscall.ENOTEMPTY) || try == tries {
			return err
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return err
		}
	}
}
