package sessionconfig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// gitTimeout bounds one git call; gitOutputLimit what it may print.
const (
	gitTimeout     = 5 * time.Second
	gitOutputLimit = 1 << 20
)

// Repository reports whether dir is inside a git work tree. A machine
// without git has no repositories.
func Repository(ctx context.Context, dir string) bool {
	out, err := git(ctx, dir, "rev-parse", "--is-inside-work-tree")
	return err == nil && strings.TrimSpace(out) == "true"
}

// Branches lists dir's local branches, with the current branch ("" when
// HEAD is detached) and the default branch (origin's HEAD, "" when it has
// none). dir must be a directory the caller may read.
func Branches(ctx context.Context, dir string) (branches []string, current, defaultBranch string, err error) {
	out, err := git(ctx, dir, "for-each-ref", "--format=%(refname:short)", "refs/heads")
	if err != nil {
		return nil, "", "", fmt.Errorf("list branches of %s: %w", dir, err)
	}
	for _, line := range strings.Split(out, "\n") {
		if b := strings.TrimSpace(line); b != "" {
			branches = append(branches, b)
		}
	}
	if out, err := git(ctx, dir, "symbolic-ref", "--quiet", "--short", "HEAD"); err == nil {
		current = strings.TrimSpace(out)
	}
	if out, err := git(ctx, dir, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"); err == nil {
		defaultBranch = strings.TrimPrefix(strings.TrimSpace(out), "origin/")
	}
	return branches, current, defaultBranch, nil
}

// git runs git in dir, bounded in time and output, with no prompt and no
// pager; it never touches the network (only local refs are read).
func git(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	bin, err := exec.LookPath("git")
	if err != nil {
		return "", errors.New("git is not installed")
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"-C", dir}, args...)...)
	cmd.Env = append(cmd.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "GIT_OPTIONAL_LOCKS=0")
	var out limitedBuffer
	out.limit = gitOutputLimit
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", err
	}
	return out.String(), nil
}

// limitedBuffer keeps the first limit bytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	limit int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.Len(); room > 0 {
		if len(p) > room {
			b.Buffer.Write(p[:room])
		} else {
			b.Buffer.Write(p)
		}
	}
	return len(p), nil
}
