package gitwork

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Upstream is the upstream of the branch checked out in a work tree, and
// how far the two are apart as last fetched (no network).
type Upstream struct {
	Name   string // "origin/main"
	Ahead  int    // commits HEAD has that the upstream lacks (outgoing)
	Behind int    // commits the upstream has that HEAD lacks (incoming)
}

// UpstreamOf returns the upstream of dir's current branch; false when the
// branch has none (or HEAD is detached or unborn).
func UpstreamOf(ctx context.Context, dir string) (Upstream, bool, error) {
	if err := absDir(dir); err != nil {
		return Upstream{}, false, err
	}
	out, err := run(ctx, dir, opts{}, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}")
	if exitCode(err) == 128 {
		return Upstream{}, false, nil // no upstream, detached or unborn
	} else if err != nil {
		return Upstream{}, false, err
	}
	u := Upstream{Name: line(out)}
	out, err = run(ctx, dir, opts{}, "rev-list", "--left-right", "--count", "@{upstream}...HEAD")
	if err != nil {
		return Upstream{}, false, err
	}
	f := strings.Fields(line(out))
	if len(f) != 2 {
		return Upstream{}, false, fmt.Errorf("rev-list --left-right --count: %q", line(out))
	}
	if u.Behind, err = strconv.Atoi(f[0]); err != nil {
		return Upstream{}, false, fmt.Errorf("rev-list --left-right --count: %q", line(out))
	}
	if u.Ahead, err = strconv.Atoi(f[1]); err != nil {
		return Upstream{}, false, fmt.Errorf("rev-list --left-right --count: %q", line(out))
	}
	return u, true, nil
}

// Sync brings dir's current branch and its upstream together: `git pull
// --no-rebase --no-edit` (a merge, never a rebase of commits someone may
// hold), then `git push` to the upstream. A conflict leaves the merge for
// a person to finish (git's error says so); nothing is forced.
func Sync(ctx context.Context, dir string) error {
	if err := absDir(dir); err != nil {
		return err
	}
	if _, ok, err := UpstreamOf(ctx, dir); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%s: the current branch has no upstream", dir)
	}
	if _, err := run(ctx, dir, opts{}, "pull", "--no-rebase", "--no-edit", "--quiet"); err != nil {
		return err
	}
	_, err := run(ctx, dir, opts{}, "push", "--quiet")
	return err
}

// UnpinAll deletes every refs/ahpd/<prefix>/… ref (Pin's, under one
// folder: a session's), and returns how many it deleted.
func UnpinAll(ctx context.Context, dir, prefix string) (int, error) {
	if err := ValidateBranchName(prefix); err != nil {
		return 0, err
	}
	top, err := TopLevel(ctx, dir)
	if err != nil {
		return 0, err
	}
	out, err := run(ctx, top, opts{}, "for-each-ref", "--format=%(refname)", "refs/ahpd/"+prefix+"/")
	if err != nil {
		return 0, err
	}
	var script strings.Builder
	n := 0
	for _, ref := range strings.Split(string(out), "\n") {
		if ref != "" {
			fmt.Fprintf(&script, "delete %s\n", ref)
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	if _, err := run(ctx, top, opts{stdin: []byte(script.String())}, "update-ref", "--stdin"); err != nil {
		return 0, err
	}
	return n, nil
}
