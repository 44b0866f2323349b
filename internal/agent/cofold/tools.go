package cofold

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/changeset"
	"github.com/ahpd/ahpd/internal/confine"
)

// Output bounds: what one tool call hands back to the model.
const (
	maxOutput    = 32 << 10
	maxReadBytes = 1 << 20
	maxEntries   = 1000
)

// workdirs resolves paths against the chat's directories and refuses any
// that leaves them, by "..", a symlink or an absolute path
// (internal/confine).
type workdirs struct {
	roots []string
}

func newConfine(dirs []string) (workdirs, error) {
	var c workdirs
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return c, fmt.Errorf("directory %s: %w", d, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return c, fmt.Errorf("directory %s: %w", d, err)
		}
		c.roots = append(c.roots, real)
	}
	if len(c.roots) == 0 {
		return c, errors.New("the chat has no directory")
	}
	return c, nil
}

// resolve is p as a real path inside one of the roots; relative to the
// first. A path that does not exist yet is resolved through its nearest
// existing parent; a dangling symlink is refused, as it could be written
// through.
func (c workdirs) resolve(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(c.roots[0], abs)
	}
	real, err := confine.ResolveNew(abs, c.roots)
	switch {
	case errors.Is(err, confine.ErrOutside):
		return "", fmt.Errorf("path %q is outside the chat's directories", p)
	case err != nil:
		return "", fmt.Errorf("path %q: %v", p, err)
	}
	return real, nil
}

// tools are one conversation's tools.
type tools struct {
	fs          workdirs
	bashTimeout time.Duration
	// sandbox confines bash's commands (agent.OpenParams.Sandbox); the
	// file tools run in the daemon, confined to fs.
	sandbox func(*exec.Cmd) error
	// reads holds what each file was when the model last read or wrote it;
	// edit_file refuses a file changed since.
	reads map[string][]byte
}

func toolSpecs() []toolSpec {
	str := func(d string) map[string]any { return map[string]any{"type": "string", "description": d} }
	return []toolSpec{
		{Name: "read_file", Description: "Read a text file.", Properties: map[string]any{"path": str("file path")}, Required: []string{"path"}},
		{Name: "write_file", Description: "Create or overwrite a file.", Properties: map[string]any{"path": str("file path"), "content": str("the whole content")}, Required: []string{"path", "content"}},
		{Name: "edit_file", Description: "Replace one exact occurrence of old_string with new_string in a file read before.", Properties: map[string]any{"path": str("file path"), "old_string": str("exact text to replace"), "new_string": str("replacement")}, Required: []string{"path", "old_string", "new_string"}},
		{Name: "list_dir", Description: "List a directory.", Properties: map[string]any{"path": str("directory, default the first")}},
		{Name: "glob", Description: "Find files by a glob pattern (** allowed).", Properties: map[string]any{"pattern": str("pattern"), "path": str("directory to search")}, Required: []string{"pattern"}},
		{Name: "grep", Description: "Search files for a regular expression.", Properties: map[string]any{"pattern": str("regular expression"), "path": str("directory or file")}, Required: []string{"pattern"}},
		{Name: "bash", Description: "Run a shell command in the first directory.", Properties: map[string]any{"command": str("command")}, Required: []string{"command"}},
	}
}

// toolClass says what permission a tool needs: "read", "edit" or "shell".
func toolClass(name string) string {
	switch name {
	case "write_file", "edit_file":
		return "edit"
	case "bash":
		return "shell"
	}
	return "read"
}

// needsAsk reports whether mode asks before a call of class, and refused
// whether it refuses it outright.
func needsAsk(mode, class string) (ask, refused bool) {
	switch mode {
	case ModeBypass:
		return false, false
	case ModePlan:
		return false, class != "read"
	case ModeAcceptEdits:
		return class == "shell", false
	}
	return class != "read", false
}

type toolInput struct {
	Path      string `json:"path"`
	Content   string `json:"content"`
	OldString string `json:"old_string"`
	NewString string `json:"new_string"`
	Pattern   string `json:"pattern"`
	Command   string `json:"command"`
}

// run executes one call; an error is the call's failure, told to the model.
func (t *tools) run(ctx context.Context, name, input string) (string, error) {
	var in toolInput
	if err := json.Unmarshal([]byte(input), &in); err != nil {
		return "", fmt.Errorf("malformed arguments for %s: %v", name, err)
	}
	switch name {
	case "read_file":
		return t.read(in.Path)
	case "write_file":
		return t.write(in.Path, in.Content)
	case "edit_file":
		return t.edit(in)
	case "list_dir":
		return t.list(in.Path)
	case "glob":
		return t.glob(in.Pattern, in.Path)
	case "grep":
		return t.grep(in.Pattern, in.Path)
	case "bash":
		return t.bash(ctx, in.Command)
	}
	return "", fmt.Errorf("no tool named %q", name)
}

// snapshot is the file p names as it is now, for the host's changeset
// (agent.ToolCall.Before); nil when p does not resolve inside the chat's
// directories.
func (t *tools) snapshot(p string) *agent.FileSnapshot {
	path, err := t.fs.resolve(p)
	if err != nil {
		return nil
	}
	s := &agent.FileSnapshot{Path: path}
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s
	}
	if err != nil {
		return nil // the host reads it itself
	}
	s.Exists = true
	if info.Mode().IsRegular() && info.Size() <= changeset.MaxFileBytes {
		if data, err := os.ReadFile(path); err == nil {
			s.Data = data
		}
	}
	return s
}

func (t *tools) read(p string) (string, error) {
	full, err := t.fs.resolve(p)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(full)
	if err != nil {
		return "", err
	}
	if fi.Size() > maxReadBytes {
		return "", fmt.Errorf("%s is %d bytes, over the %d a read takes", p, fi.Size(), maxReadBytes)
	}
	data, err := os.ReadFile(full)
	if err != nil {
		return "", err
	}
	t.reads[full] = data
	return bound(string(data)), nil
}

func (t *tools) write(p, content string) (string, error) {
	full, err := t.fs.resolve(p)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		return "", err
	}
	t.reads[full] = []byte(content)
	return fmt.Sprintf("wrote %d bytes to %s", len(content), p), nil
}

func (t *tools) edit(in toolInput) (string, error) {
	full, err := t.fs.resolve(in.Path)
	if err != nil {
		return "", err
	}
	seen, ok := t.reads[full]
	if !ok {
		return "", fmt.Errorf("read %s before editing it", in.Path)
	}
	data, err := os.ReadFile(full)
	if err != nil {
		return "", err
	}
	if !bytes.Equal(data, seen) {
		return "", fmt.Errorf("%s changed since it was read; read it again", in.Path)
	}
	if in.OldString == "" {
		return "", errors.New("old_string is empty")
	}
	switch n := strings.Count(string(data), in.OldString); n {
	case 0:
		return "", fmt.Errorf("old_string is not in %s", in.Path)
	case 1:
	default:
		return "", fmt.Errorf("old_string is in %s %d times; make it unique", in.Path, n)
	}
	out := strings.Replace(string(data), in.OldString, in.NewString, 1)
	if err := os.WriteFile(full, []byte(out), 0o644); err != nil {
		return "", err
	}
	t.reads[full] = []byte(out)
	return "edited " + in.Path, nil
}

func (t *tools) dir(p string) (string, error) {
	if p == "" {
		return t.fs.roots[0], nil
	}
	return t.fs.resolve(p)
}

func (t *tools) list(p string) (string, error) {
	full, err := t.dir(p)
	if err != nil {
		return "", err
	}
	ents, err := os.ReadDir(full)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for i, e := range ents {
		if i == maxEntries {
			fmt.Fprintf(&b, "… %d more\n", len(ents)-i)
			break
		}
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		b.WriteString(name + "\n")
	}
	return bound(b.String()), nil
}

func (t *tools) glob(pattern, p string) (string, error) {
	if filepath.IsAbs(pattern) || strings.Contains(pattern, "..") {
		return "", fmt.Errorf("pattern %q must be relative, without ..", pattern)
	}
	full, err := t.dir(p)
	if err != nil {
		return "", err
	}
	var out []string
	err = doublestar.GlobWalk(os.DirFS(full), pattern, func(path string, d fs.DirEntry) error {
		out = append(out, path)
		if len(out) >= maxEntries {
			return fs.SkipAll
		}
		return nil
	}, doublestar.WithNoFollow())
	if err != nil {
		return "", err
	}
	sort.Strings(out)
	return bound(strings.Join(out, "\n")), nil
}

func (t *tools) grep(pattern, p string) (string, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", fmt.Errorf("pattern: %w", err)
	}
	full, err := t.dir(p)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	matches := 0
	// WalkDir does not follow symlinks, so the search stays inside.
	err = filepath.WalkDir(full, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() || matches >= maxEntries {
			return nil
		}
		if fi, err := d.Info(); err != nil || fi.Size() > maxReadBytes {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil || bytes.IndexByte(data, 0) >= 0 {
			return nil
		}
		rel, _ := filepath.Rel(full, path)
		for i, line := range strings.Split(string(data), "\n") {
			if re.MatchString(line) {
				fmt.Fprintf(&b, "%s:%d:%s\n", rel, i+1, line)
				if matches++; matches >= maxEntries {
					return fs.SkipAll
				}
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return bound(b.String()), nil
}

// bash runs command in the first directory in a process group of its own,
// so a stop or the timeout kills everything it started.
func (t *tools) bash(ctx context.Context, command string) (string, error) {
	if strings.TrimSpace(command) == "" {
		return "", errors.New("empty command")
	}
	ctx, cancel := context.WithTimeout(ctx, t.bashTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir = t.fs.roots[0]
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	if t.sandbox != nil {
		if err := t.sandbox(cmd); err != nil {
			return "", fmt.Errorf("sandbox the command: %w", err)
		}
	}
	out := &capped{max: maxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	// The group may hold children that outlived the shell.
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	text := out.String()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return text, fmt.Errorf("timed out after %v\n%s", t.bashTimeout, text)
	case ctx.Err() != nil:
		return text, fmt.Errorf("stopped\n%s", text)
	case err != nil:
		return text, fmt.Errorf("%v\n%s", err, text)
	}
	return text, nil
}

// capped keeps the first max bytes written and counts the rest.
type capped struct {
	max     int
	b       []byte
	dropped int
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - len(c.b)
	if room >= len(p) {
		c.b = append(c.b, p...)
	} else {
		if room > 0 {
			c.b = append(c.b, p[:room]...)
		}
		c.dropped += len(p) - max(room, 0)
	}
	return len(p), nil
}

func (c *capped) String() string {
	if c.dropped > 0 {
		return string(c.b) + fmt.Sprintf("\n… %d more bytes not shown", c.dropped)
	}
	return string(c.b)
}

// bound cuts s to maxOutput bytes, saying how much was left out.
func bound(s string) string {
	if len(s) <= maxOutput {
		return s
	}
	return s[:maxOutput] + fmt.Sprintf("\n… %d more bytes not shown", len(s)-maxOutput)
}
