package gitwork

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// ErrNotRepository is wrapped when a directory is not inside a git work tree.
var ErrNotRepository = errors.New("not inside a git work tree")

// IsWorkTree reports whether dir (absolute) lies inside a git work tree. A
// directory outside every repository is false with no error; git missing,
// or a repository git refuses (dubious ownership, say), is an error.
func IsWorkTree(ctx context.Context, dir string) (bool, error) {
	if err := absDir(dir); err != nil {
		return false, err
	}
	out, err := run(ctx, dir, opts{}, "rev-parse", "--is-inside-work-tree")
	if err != nil {
		if notRepo(err) {
			return false, nil
		}
		return false, err
	}
	return line(out) == "true", nil
}

// notRepo reports whether err is git saying it found no repository.
func notRepo(err error) bool {
	var ge *Error
	return errors.As(err, &ge) && ge.ExitCode() == 128 &&
		strings.Contains(ge.Stderr, "not a git repository")
}

// TopLevel returns the top directory of the work tree dir lies in, with its
// symlinks resolved. Outside a work tree it wraps ErrNotRepository.
func TopLevel(ctx context.Context, dir string) (string, error) {
	if err := absDir(dir); err != nil {
		return "", err
	}
	out, err := run(ctx, dir, opts{}, "rev-parse", "--show-toplevel")
	if err != nil {
		if notRepo(err) {
			return "", fmt.Errorf("%s: %w", dir, ErrNotRepository)
		}
		return "", err
	}
	top := line(out)
	if top == "" {
		return "", fmt.Errorf("%s: %w", dir, ErrNotRepository)
	}
	real, err := filepath.EvalSymlinks(top)
	if err != nil {
		return "", err
	}
	return real, nil
}

// CurrentBranch returns the branch checked out in dir's work tree (short
// name; also on an unborn branch), or "" when HEAD is detached.
func CurrentBranch(ctx context.Context, dir string) (string, error) {
	if err := absDir(dir); err != nil {
		return "", err
	}
	out, err := run(ctx, dir, opts{}, "symbolic-ref", "--quiet", "--short", "HEAD")
	if exitCode(err) == 1 {
		return "", nil // detached
	} else if err != nil {
		return "", err
	}
	return line(out), nil
}

// DefaultBranch returns the repository's default branch: origin's HEAD
// (as the local branch's name when one exists, else "origin/<name>"), else
// init.defaultBranch, "main" or "master" when such a branch exists, else
// the current branch ("" when detached).
func DefaultBranch(ctx context.Context, dir string) (string, error) {
	if err := absDir(dir); err != nil {
		return "", err
	}
	exists := func(ref string) bool {
		_, err := run(ctx, dir, opts{}, "show-ref", "--verify", "--quiet", ref)
		return err == nil
	}
	if out, err := run(ctx, dir, opts{}, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"); err == nil {
		remote := line(out)
		if local, ok := strings.CutPrefix(remote, "origin/"); ok && exists("refs/heads/"+local) {
			return local, nil
		}
		if remote != "" {
			return remote, nil
		}
	}
	var candidates []string
	if out, err := run(ctx, dir, opts{}, "config", "--get", "init.defaultBranch"); err == nil && line(out) != "" {
		candidates = append(candidates, line(out))
	}
	for _, c := range append(candidates, "main", "master") {
		if ValidateBranchName(c) == nil && exists("refs/heads/"+c) {
			return c, nil
		}
	}
	return CurrentBranch(ctx, dir)
}

// Branch is one local branch or remote-tracking branch.
type Branch struct {
	Name     string // "feature" for a local branch, "origin/feature" for a remote one
	Remote   bool
	Commit   string // the object id it points at
	Upstream string // a local branch's upstream ("origin/feature"), or ""
	Current  bool   // checked out in the work tree asked about
}

// branchFormat is for-each-ref's format parseBranches reads: fields apart
// by NUL, one ref a line (a ref name holds neither).
const branchFormat = "%(refname)%00%(objectname)%00%(upstream:short)%00%(HEAD)%00%(symref)"

// Branches lists the local branches, then the remote-tracking ones (not
// symbolic refs such as origin/HEAD), each sorted by name.
func Branches(ctx context.Context, dir string) ([]Branch, error) {
	if err := absDir(dir); err != nil {
		return nil, err
	}
	out, err := run(ctx, dir, opts{}, "for-each-ref", "--format="+branchFormat, "refs/heads", "refs/remotes")
	if err != nil {
		return nil, err
	}
	return parseBranches(out)
}

// parseBranches reads for-each-ref's output in branchFormat.
func parseBranches(out []byte) ([]Branch, error) {
	var local, remote []Branch
	for _, l := range strings.Split(string(out), "\n") {
		if l == "" {
			continue
		}
		f := strings.Split(l, "\x00")
		if len(f) != 5 {
			return nil, fmt.Errorf("for-each-ref: unexpected line %q", l)
		}
		if f[4] != "" {
			continue // a symbolic ref (origin/HEAD)
		}
		b := Branch{Commit: f[1], Upstream: f[2], Current: f[3] == "*"}
		switch {
		case strings.HasPrefix(f[0], "refs/heads/"):
			b.Name = strings.TrimPrefix(f[0], "refs/heads/")
			local = append(local, b)
		case strings.HasPrefix(f[0], "refs/remotes/"):
			b.Name, b.Remote = strings.TrimPrefix(f[0], "refs/remotes/"), true
			remote = append(remote, b)
		default:
			return nil, fmt.Errorf("for-each-ref: unexpected ref %q", f[0])
		}
	}
	return append(local, remote...), nil
}

// resolveCommit returns the full id of the commit rev names in dir.
func resolveCommit(ctx context.Context, dir, rev string) (string, error) {
	if err := validateRev(rev); err != nil {
		return "", err
	}
	id, err := commitID(ctx, dir, rev)
	if err == nil && id == "" {
		return "", fmt.Errorf("%q names no commit", rev)
	}
	return id, err
}

// commitID is the full id of the commit rev (valid) names in dir, or ""
// when it names none.
func commitID(ctx context.Context, dir, rev string) (string, error) {
	out, err := run(ctx, dir, opts{}, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	if exitCode(err) == 1 {
		return "", nil
	} else if err != nil {
		return "", err
	}
	return line(out), nil
}

// headCommit is HEAD's commit id, or "" on an unborn branch.
func headCommit(ctx context.Context, top string) (string, error) {
	return commitID(ctx, top, "HEAD")
}

// ResolveCommit returns the full id of the commit rev names in dir's
// repository (a branch, a tag, "HEAD", a snapshot's id).
func ResolveCommit(ctx context.Context, dir, rev string) (string, error) {
	if err := absDir(dir); err != nil {
		return "", err
	}
	return resolveCommit(ctx, dir, rev)
}
