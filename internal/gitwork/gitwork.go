// Package gitwork drives the real git binary (os/exec, as VS Code's agent
// host does; ahpd has no Go reimplementation of git) for sessions in git
// worktrees and for changesets computed from the working tree.
//
// Every call is bounded: by its context's deadline, or DefaultTimeout when
// the context has none; git's output by MaxOutputBytes (a call whose output
// passes it is stopped and fails with ErrOutputTooLarge) and its stderr by
// maxStderrBytes. A git that outlives its bound is killed with the processes
// it started (hooks included). git runs without a terminal or stdin, with
// LC_ALL=C, GIT_TERMINAL_PROMPT=0, GIT_OPTIONAL_LOCKS=0 and
// GIT_LITERAL_PATHSPECS=1 (a path is always a path, never a glob or magic
// pathspec), and without the GIT_DIR-like variables of the daemon's own
// environment, so the directory named is the repository used.
//
// Every path relative to a work tree is confined (cleanRel, confinePath):
// absolute paths, ".." components and paths inside .git are refused, and a
// path whose parent directories go through a symlink is refused wherever the
// link points. The last component may itself be a symlink: git records a
// link as a file and never writes through it.
//
// Snapshots (Snapshot) record the whole working tree, untracked files that
// are not ignored included, as a commit object, so "what changed since the
// turn began" holds even when the turn began on a dirty tree; Changes and
// ChangesBetween diff such snapshots. RestorePaths, DiscardChanges and
// Commit change files only through git (restore, rm, clean, add, commit),
// never by writing contents ahpd holds in memory.
package gitwork

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/ahpd/ahpd/internal/agent/agentproc"
)

// ErrNoGit is the error of every call when no git binary is on PATH.
var ErrNoGit = errors.New("git is not installed (apt-get install git)")

// ErrOutputTooLarge is the error of a call whose output passed its cap.
var ErrOutputTooLarge = errors.New("git's output is larger than the limit")

// The bounds on every call.
const (
	// DefaultTimeout bounds a call whose context has no deadline.
	DefaultTimeout = 2 * time.Minute
	// MaxOutputBytes bounds what one call may print on stdout.
	MaxOutputBytes = 64 << 20
	// maxStderrBytes is how much of git's stderr is kept for an error.
	maxStderrBytes = 16 << 10
	// waitDelay is how long a killed git's pipes may stay open.
	waitDelay = 2 * time.Second
)

// gitBinary is the name looked up on PATH (a test names a missing one).
var gitBinary = "git"

// Available returns nil when a git binary is on PATH, and ErrNoGit when not.
func Available() error {
	_, err := gitPath()
	return err
}

func gitPath() (string, error) {
	p, err := exec.LookPath(gitBinary)
	if err != nil {
		return "", ErrNoGit
	}
	return p, nil
}

// Error is a git call that failed: its arguments, what it said on stderr
// (capped) and why it failed (an *exec.ExitError, context.DeadlineExceeded,
// context.Canceled, ErrOutputTooLarge).
type Error struct {
	Args   []string
	Stderr string
	Stdout string // the start of its output, kept only when stderr is empty
	Err    error
}

func (e *Error) Error() string {
	cmd, args := "git", e.Args
	for len(args) > 2 && args[0] == "-c" { // the subcommand, past its settings
		args = args[2:]
	}
	if len(args) > 0 {
		cmd += " " + args[0]
	}
	why := e.Err.Error()
	if errors.Is(e.Err, context.DeadlineExceeded) {
		why = "timed out"
	}
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = strings.TrimSpace(e.Stdout)
	}
	if msg != "" {
		return fmt.Sprintf("%s: %s: %s", cmd, why, msg)
	}
	return fmt.Sprintf("%s: %s", cmd, why)
}

func (e *Error) Unwrap() error { return e.Err }

// ExitCode is git's exit status, or -1 when it did not exit by itself.
func (e *Error) ExitCode() int {
	var x *exec.ExitError
	if errors.As(e.Err, &x) {
		return x.ExitCode()
	}
	return -1
}

// exitCode is the status of the git call that failed with err; -1 when err
// is nil, not a git call's, or git did not exit by itself.
func exitCode(err error) int {
	var ge *Error
	if errors.As(err, &ge) {
		return ge.ExitCode()
	}
	return -1
}

// opts are a call's settings beyond its arguments.
type opts struct {
	env     []string      // added to the environment
	stdin   []byte        // git's stdin (none: /dev/null)
	maxOut  int           // 0: MaxOutputBytes
	timeout time.Duration // 0: DefaultTimeout, when ctx has no deadline
}

// scrubbed are the variables of the daemon's environment that would point
// git at another repository, index or object store than the one named.
var scrubbed = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE",
	"GIT_PREFIX", "GIT_GLOB_PATHSPECS", "GIT_NOGLOB_PATHSPECS", "GIT_ICASE_PATHSPECS",
	"GIT_LITERAL_PATHSPECS", "GIT_OPTIONAL_LOCKS", "GIT_TERMINAL_PROMPT", "LC_ALL",
	"GIT_EXTERNAL_DIFF", "GIT_DIFF_OPTS", "GIT_PAGER", "GIT_EDITOR",
}

func environ(extra []string) []string {
	env := make([]string, 0, len(os.Environ())+8+len(extra))
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !slices.Contains(scrubbed, name) {
			env = append(env, kv)
		}
	}
	env = append(env,
		"LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0",
		"GIT_LITERAL_PATHSPECS=1", "GIT_PAGER=cat", "GIT_EDITOR=true",
	)
	return append(env, extra...)
}

// run runs git with args in dir and returns its stdout.
func run(ctx context.Context, dir string, o opts, args ...string) ([]byte, error) {
	bin, err := gitPath()
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		d := o.timeout
		if d <= 0 {
			d = DefaultTimeout
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	limit := o.maxOut
	if limit <= 0 {
		limit = MaxOutputBytes
	}
	stdout := &capped{max: limit, full: func() { stop(ErrOutputTooLarge) }}
	stderr := &capped{max: maxStderrBytes}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = environ(o.env)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if o.stdin != nil {
		cmd.Stdin = bytes.NewReader(o.stdin)
	}
	agentproc.SetGroup(cmd) // a timeout kills the hooks and helpers git started too
	cmd.Cancel = func() error { agentproc.SignalGroup(cmd, os.Kill); return nil }
	cmd.WaitDelay = waitDelay
	err = cmd.Run()
	if stdout.over {
		return nil, &Error{Args: args, Stderr: stderr.String(), Err: ErrOutputTooLarge}
	}
	if err != nil {
		if cerr := context.Cause(ctx); cerr != nil {
			err = cerr
		}
		ge := &Error{Args: args, Stderr: stderr.String(), Err: err}
		if ge.Stderr == "" {
			out := stdout.Bytes()
			ge.Stdout = agentproc.Clip(string(out[:min(len(out), maxStderrBytes+1)]), maxStderrBytes)
		}
		return nil, ge
	}
	return stdout.Bytes(), nil
}

// capped keeps the first max bytes written to it; past them it says so
// (full, once) and drops the rest, so the writer is never blocked. It has
// no ReadFrom (an embedded bytes.Buffer's would let io.Copy bypass Write).
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
	full func()
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		if room > 0 {
			c.buf.Write(p[:room])
		}
		if !c.over {
			c.over = true
			if c.full != nil {
				c.full()
			}
		}
		return len(p), nil
	}
	return c.buf.Write(p)
}

func (c *capped) Bytes() []byte  { return c.buf.Bytes() }
func (c *capped) String() string { return c.buf.String() }

// line is git's output as one trimmed line.
func line(out []byte) string { return strings.TrimSpace(string(out)) }
