package cofold

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func newTestTools(t *testing.T) (*tools, string, string) {
	t.Helper()
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello world\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "s.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "missing.txt"), filepath.Join(root, "dangling")); err != nil {
		t.Fatal(err)
	}
	c, err := newConfine([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	return &tools{fs: c, bashTimeout: 5 * time.Second, reads: map[string][]byte{}}, root, outside
}

func args(t *testing.T, m map[string]string) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCofoldToolEscapes(t *testing.T) {
	tl, _, outside := newTestTools(t)
	abs := filepath.Join(outside, "secret.txt")
	cases := []struct {
		tool string
		in   map[string]string
	}{
		{"read_file", map[string]string{"path": "../" + filepath.Base(outside) + "/secret.txt"}},
		{"read_file", map[string]string{"path": abs}},
		{"read_file", map[string]string{"path": "s.txt"}},
		{"read_file", map[string]string{"path": "out/secret.txt"}},
		{"write_file", map[string]string{"path": "out/new.txt", "content": "x"}},
		{"write_file", map[string]string{"path": "dangling", "content": "x"}},
		{"write_file", map[string]string{"path": abs, "content": "x"}},
		{"write_file", map[string]string{"path": "../escape.txt", "content": "x"}},
		{"edit_file", map[string]string{"path": "s.txt", "old_string": "secret", "new_string": "x"}},
		{"list_dir", map[string]string{"path": "out"}},
		{"list_dir", map[string]string{"path": ".."}},
		{"glob", map[string]string{"pattern": "../*"}},
		{"glob", map[string]string{"pattern": "*", "path": outside}},
		{"grep", map[string]string{"pattern": "secret", "path": "out"}},
		{"grep", map[string]string{"pattern": "secret", "path": abs}},
	}
	for _, c := range cases {
		out, err := tl.run(context.Background(), c.tool, args(t, c.in))
		if err == nil {
			t.Errorf("%s %v: not refused, got %q", c.tool, c.in, out)
		}
		if strings.Contains(out, "secret") && c.tool != "grep" {
			t.Errorf("%s %v leaked %q", c.tool, c.in, out)
		}
	}
	if data, _ := os.ReadFile(abs); string(data) != "secret" {
		t.Errorf("outside file changed: %q", data)
	}
	if _, err := os.Stat(filepath.Join(outside, "missing.txt")); err == nil {
		t.Error("write through a dangling symlink created the file outside")
	}
	// grep inside the root does not follow the symlinked directory.
	out, err := tl.run(context.Background(), "grep", args(t, map[string]string{"pattern": "secret"}))
	if err != nil || strings.Contains(out, "secret") {
		t.Errorf("grep followed a symlink out: %q %v", out, err)
	}
}

func TestCofoldToolsInside(t *testing.T) {
	tl, root, _ := newTestTools(t)
	ctx := context.Background()
	run := func(tool string, in map[string]string) string {
		t.Helper()
		out, err := tl.run(ctx, tool, args(t, in))
		if err != nil {
			t.Fatalf("%s %v: %v", tool, in, err)
		}
		return out
	}
	if got := run("read_file", map[string]string{"path": "a.txt"}); got != "hello world\n" {
		t.Errorf("read: %q", got)
	}
	run("edit_file", map[string]string{"path": "a.txt", "old_string": "world", "new_string": "cofold"})
	if data, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(data) != "hello cofold\n" {
		t.Errorf("edit: %q", data)
	}
	run("write_file", map[string]string{"path": "sub/b.txt", "content": "bee"})
	if got := run("list_dir", map[string]string{"path": "sub"}); got != "b.txt\n" {
		t.Errorf("list: %q", got)
	}
	if got := run("glob", map[string]string{"pattern": "**/*.txt"}); !strings.Contains(got, "sub/b.txt") || !strings.Contains(got, "a.txt") {
		t.Errorf("glob: %q", got)
	}
	if got := run("grep", map[string]string{"pattern": "c.fold"}); !strings.Contains(got, "a.txt:1:hello cofold") {
		t.Errorf("grep: %q", got)
	}
	if got := run("bash", map[string]string{"command": "pwd; cat a.txt"}); !strings.Contains(got, "hello cofold") {
		t.Errorf("bash: %q", got)
	}
	// An edit of a file changed behind the model's back is refused.
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tl.run(ctx, "edit_file", args(t, map[string]string{"path": "a.txt", "old_string": "changed", "new_string": "x"})); err == nil || !strings.Contains(err.Error(), "changed since") {
		t.Errorf("edit of a changed file: %v", err)
	}
	// Malformed arguments are a tool error, not a crash.
	if _, err := tl.run(ctx, "read_file", "{not json"); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Errorf("malformed: %v", err)
	}
}

func TestCofoldBashBounds(t *testing.T) {
	tl, _, _ := newTestTools(t)
	out, err := tl.run(context.Background(), "bash", args(t, map[string]string{"command": "head -c 100000 /dev/zero | tr '\\0' x"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > maxOutput+100 || !strings.Contains(out, "more bytes not shown") {
		t.Errorf("output not capped: %d bytes", len(out))
	}
	tl.bashTimeout = 300 * time.Millisecond
	start := time.Now()
	if _, err := tl.run(context.Background(), "bash", args(t, map[string]string{"command": "sleep 30"})); err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("timeout: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("timeout took %v", time.Since(start))
	}
}

func TestCofoldPermissionTable(t *testing.T) {
	cases := []struct {
		mode, class  string
		ask, refused bool
	}{
		{ModeDefault, "read", false, false},
		{ModeDefault, "edit", true, false},
		{ModeDefault, "shell", true, false},
		{ModeAcceptEdits, "edit", false, false},
		{ModeAcceptEdits, "shell", true, false},
		{ModePlan, "read", false, false},
		{ModePlan, "edit", false, true},
		{ModePlan, "shell", false, true},
		{ModeBypass, "shell", false, false},
	}
	for _, c := range cases {
		ask, refused := needsAsk(c.mode, c.class)
		if ask != c.ask || refused != c.refused {
			t.Errorf("%s/%s: ask %v refused %v", c.mode, c.class, ask, refused)
		}
	}
}

func TestCofoldSettings(t *testing.T) {
	bad := []string{
		`{"providers":[{"name":"p","api":"grpc","baseUrl":"http://x"}]}`,
		`{"providers":[{"name":"p","api":"openai"}]}`,
		`{"providers":[{"name":"p","api":"openai","baseUrl":"http://x"}],"defaultModel":"q/m"}`,
		`{"permissionMode":"yolo"}`,
		`{"bogus":1}`,
	}
	for _, b := range bad {
		if _, err := ParseSettings(json.RawMessage(b)); err == nil {
			t.Errorf("%s: accepted", b)
		}
	}
	s, err := ParseSettings(json.RawMessage(`{"providers":[{"name":"p","api":"anthropic","baseUrl":"http://x","models":[{"id":"m"}]}],"defaultModel":"p/m","permissionMode":"plan"}`))
	if err != nil || s.mode() != ModePlan {
		t.Errorf("good settings: %v %+v", err, s)
	}
}
