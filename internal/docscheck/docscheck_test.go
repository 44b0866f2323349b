// Package docscheck holds tests that keep docs/ true: docs/CHATS.md has a
// row for every rule of CHATS-RULES.md, and every test it names exists.
package docscheck

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}

var (
	ruleRow  = regexp.MustCompile(`^\| (C-[A-Z]+-\d+) \|`)
	ruleLine = regexp.MustCompile(`^- (C-[A-Z]+-\d+):`)
	testRef  = regexp.MustCompile("`(Test[A-Za-z0-9_]+)(?:/[^`]*)?`")
	testFunc = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
)

func lines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// TestChatsTableCoversEveryRule: one row per rule id, none twice, and (when
// the seed is beside the repository, as in CI) none missing.
func TestChatsTableCoversEveryRule(t *testing.T) {
	root := repoRoot(t)
	rows := map[string]string{}
	for _, l := range lines(t, filepath.Join(root, "docs", "CHATS.md")) {
		if m := ruleRow.FindStringSubmatch(l); m != nil {
			if _, dup := rows[m[1]]; dup {
				t.Errorf("%s has two rows", m[1])
			}
			rows[m[1]] = l
		}
	}
	// The rules are copied into testdata (testdata/rules/README.md), so a
	// plain clone checks every one; a missing copy is a failure.
	seed := filepath.Join(root, "testdata", "rules", "CHATS-RULES.md")
	if _, err := os.Stat(seed); err != nil {
		t.Fatalf("rules list missing: %v", err)
	}
	n := 0
	for _, l := range lines(t, seed) {
		if m := ruleLine.FindStringSubmatch(l); m != nil {
			n++
			if _, ok := rows[m[1]]; !ok {
				t.Errorf("%s has no row in docs/CHATS.md", m[1])
			}
		}
	}
	if n != len(rows) {
		t.Errorf("CHATS-RULES.md has %d rules, docs/CHATS.md %d rows", n, len(rows))
	}
}

// TestChatsTableNamesRealTests: every test docs/CHATS.md names is a test
// function of the repository.
func TestChatsTableNamesRealTests(t *testing.T) {
	root := repoRoot(t)
	have := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, "_test.go") {
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range testFunc.FindAllStringSubmatch(string(src), -1) {
				have[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines(t, filepath.Join(root, "docs", "CHATS.md")) {
		if !ruleRow.MatchString(l) {
			continue
		}
		for _, m := range testRef.FindAllStringSubmatch(l, -1) {
			if !have[m[1]] {
				t.Errorf("docs/CHATS.md names %s, which is no test: %s", m[1], l[:min(len(l), 60)])
			}
		}
	}
}
