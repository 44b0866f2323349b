package gitwork

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestValidateBranchName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"main", true},
		{"ahpd/session-1", true},
		{"feature/x.y", true},
		{"naïve", true},
		{"", false},
		{"HEAD", false},
		{"@", false},
		{"-x", false},
		{"--force", false},
		{"/x", false},
		{"x/", false},
		{"x.", false},
		{"a//b", false},
		{"a..b", false},
		{"a@{1}", false},
		{"a b", false},
		{"a\tb", false},
		{"a\nb", false},
		{"a~1", false},
		{"a^", false},
		{"a:b", false},
		{"a?", false},
		{"a*", false},
		{"a[", false},
		{`a\b`, false},
		{"a\x7f", false},
		{".hidden", false},
		{"a/.b", false},
		{"x.lock", false},
		{"a.lock/b", false},
	} {
		err := ValidateBranchName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateBranchName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestValidateRev(t *testing.T) {
	for _, tc := range []struct {
		rev string
		ok  bool
	}{
		{"HEAD", true}, {"main", true}, {"origin/main", true}, {"HEAD~2", true},
		{"0123456789abcdef0123456789abcdef01234567", true},
		{"", false}, {"-p", false}, {"--output=/tmp/x", false}, {"a b", false}, {"a\nb", false},
	} {
		if err := validateRev(tc.rev); (err == nil) != tc.ok {
			t.Errorf("validateRev(%q) = %v, want ok=%v", tc.rev, err, tc.ok)
		}
	}
}

func TestCleanRel(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want "" = refused
	}{
		{"a.txt", "a.txt"},
		{"dir/a.txt", "dir/a.txt"},
		{"./dir//a.txt", "dir/a.txt"},
		{"dir/", "dir"},
		{"*.go", "*.go"},       // a name, never a glob (GIT_LITERAL_PATHSPECS)
		{":(top)x", ":(top)x"}, // likewise never magic
		{".gitignore", ".gitignore"},
		{"", ""},
		{".", ""},
		{"./", ""},
		{"/etc/passwd", ""},
		{"..", ""},
		{"../x", ""},
		{"a/../../x", ""},
		{"a/../b", ""}, // any ".." is refused, even one that stays inside
		{"a\x00b", ""},
		{".git", ""},
		{".git/config", ""},
		{".GIT/hooks/pre-commit", ""},
	} {
		got, err := cleanRel(tc.in)
		if tc.want == "" {
			if err == nil || !errors.Is(err, ErrPath) {
				t.Errorf("cleanRel(%q) = %q, %v; want an ErrPath", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("cleanRel(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestParseDiff(t *testing.T) {
	const (
		z   = "0000000000000000000000000000000000000000"
		b1  = "1111111111111111111111111111111111111111"
		b2  = "2222222222222222222222222222222222222222"
		raw = "\x00"
	)
	rec := func(parts ...string) string { return strings.Join(parts, raw) + raw }
	for _, tc := range []struct {
		name string
		out  string
		want []Change
		bad  bool
	}{
		{name: "empty", out: "", want: nil},
		{
			name: "every kind",
			out: rec(
				":000000 100644 "+z+" "+b1+" A", "new file.txt",
				":100644 100644 "+b1+" "+b2+" M", "mod.go",
				":100644 000000 "+b1+" "+z+" D", "gone.txt",
				":100644 100644 "+b1+" "+b2+" R087", "old/name.txt", "new/name.txt",
				":000000 100644 "+z+" "+b2+" A", "pic.png",
				":100644 120000 "+b1+" "+b2+" T", "link",
				"3\t0\tnew file.txt",
				"2\t1\tmod.go",
				"0\t4\tgone.txt",
				"1\t1\t", "old/name.txt", "new/name.txt",
				"-\t-\tpic.png",
				"1\t1\tlink",
			),
			want: []Change{
				{Path: "gone.txt", Kind: Deleted, Deletions: 4, OldMode: "100644", OldBlob: b1},
				{Path: "link", Kind: TypeChange, Additions: 1, Deletions: 1, OldMode: "100644", NewMode: "120000", OldBlob: b1, NewBlob: b2},
				{Path: "mod.go", Kind: Modified, Additions: 2, Deletions: 1, OldMode: "100644", NewMode: "100644", OldBlob: b1, NewBlob: b2},
				{Path: "new file.txt", Kind: Added, Additions: 3, NewMode: "100644", NewBlob: b1},
				{Path: "new/name.txt", OldPath: "old/name.txt", Kind: Renamed, Additions: 1, Deletions: 1, OldMode: "100644", NewMode: "100644", OldBlob: b1, NewBlob: b2},
				{Path: "pic.png", Kind: Added, Binary: true, NewMode: "100644", NewBlob: b2},
			},
		},
		{name: "a path with a tab and a newline", out: rec(":000000 100644 "+z+" "+b1+" A", "a\tb\nc", "1\t0\ta\tb\nc"),
			want: []Change{{Path: "a\tb\nc", Kind: Added, Additions: 1, NewMode: "100644", NewBlob: b1}}},
		{name: "cut short", out: rec(":100644 100644 " + b1 + " " + b2 + " R100"), bad: true},
		{name: "no line counts", out: rec(":100644 100644 "+b1+" "+b2+" M", "m"), bad: true},
		{name: "counts for an unknown file", out: rec(":100644 100644 "+b1+" "+b2+" M", "m", "1\t1\tother"), bad: true},
		{name: "unknown status", out: rec(":100644 100644 "+b1+" "+b2+" X", "m", "1\t1\tm"), bad: true},
		{name: "garbage", out: rec("what"), bad: true},
	} {
		got, err := parseDiff([]byte(tc.out))
		if tc.bad {
			if err == nil {
				t.Errorf("%s: parseDiff = %+v, want an error", tc.name, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: parseDiff =\n%+v, %v\nwant\n%+v", tc.name, got, err, tc.want)
		}
	}
}

func TestParseWorktrees(t *testing.T) {
	want := []Worktree{
		{Path: "/r", Head: "abc", Branch: "main"},
		{Path: "/w/one", Head: "def", Detached: true, Locked: true, LockReason: "in use"},
		{Path: "/w/two", Head: "012", Branch: "ahpd/s2", Prunable: true, PrunableReason: "gitdir file points to non-existent location"},
		{Path: "/w/a b", Head: "345", Branch: "x", Locked: true},
	}
	lines := []string{
		"worktree /r", "HEAD abc", "branch refs/heads/main", "",
		"worktree /w/one", "HEAD def", "detached", "locked in use", "",
		"worktree /w/two", "HEAD 012", "branch refs/heads/ahpd/s2", "prunable gitdir file points to non-existent location", "",
		"worktree /w/a b", "HEAD 345", "branch refs/heads/x", "locked", "",
	}
	for _, sep := range []string{"\x00", "\n"} {
		got, err := parseWorktrees([]byte(strings.Join(lines, sep)), sep[0])
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("sep %q: parseWorktrees =\n%+v, %v\nwant\n%+v", sep, got, err, want)
		}
	}
	bare, err := parseWorktrees([]byte("worktree /b.git\x00bare\x00\x00"), 0)
	if err != nil || len(bare) != 1 || !bare[0].Bare {
		t.Errorf("bare: %+v, %v", bare, err)
	}
	if _, err := parseWorktrees([]byte("HEAD abc\x00"), 0); err == nil {
		t.Error("an attribute before any worktree was accepted")
	}
}

func TestParseBranches(t *testing.T) {
	out := "refs/heads/feature\x00aaa\x00\x00 \x00\n" +
		"refs/heads/main\x00bbb\x00origin/main\x00*\x00\n" +
		"refs/remotes/origin/HEAD\x00bbb\x00\x00 \x00refs/remotes/origin/main\n" +
		"refs/remotes/origin/main\x00bbb\x00\x00 \x00\n"
	got, err := parseBranches([]byte(out))
	want := []Branch{
		{Name: "feature", Commit: "aaa"},
		{Name: "main", Commit: "bbb", Upstream: "origin/main", Current: true},
		{Name: "origin/main", Remote: true, Commit: "bbb"},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parseBranches =\n%+v, %v\nwant\n%+v", got, err, want)
	}
	if _, err := parseBranches([]byte("refs/heads/x\x00a\n")); err == nil {
		t.Error("a short line was accepted")
	}
}

func TestCapped(t *testing.T) {
	full := 0
	c := &capped{max: 5, full: func() { full++ }}
	for _, s := range []string{"abc", "def", "ghi"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if _, ok := any(c).(io.ReaderFrom); ok {
		t.Error("capped has ReadFrom: io.Copy would bypass its cap")
	}
	if c.String() != "abcde" || !c.over || full != 1 {
		t.Errorf("capped kept %q, over=%v, full called %d times", c.String(), c.over, full)
	}
}

func TestChunks(t *testing.T) {
	paths := make([]string, 2*chunk+1)
	got := chunks(paths)
	if len(got) != 3 || len(got[0]) != chunk || len(got[2]) != 1 {
		t.Errorf("chunks of %d: %d runs", len(paths), len(got))
	}
	if chunks(nil) != nil {
		t.Error("chunks(nil) is not empty")
	}
}

// An error names git's subcommand, not a -c setting before it, and what
// git said.
func TestErrorNamesTheSubcommand(t *testing.T) {
	e := &Error{Args: []string{"-c", "core.fsmonitor=false", "add", "-A"}, Stderr: "fatal: no\n", Err: errors.New("exit status 128")}
	if got, want := e.Error(), "git add: exit status 128: fatal: no"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
