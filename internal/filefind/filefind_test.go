package filefind

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func rels(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Rel
	}
	return out
}

// TestMatch: the @ completion rules of VS Code's hostFeaturesSuite
// (case-insensitive, fuzzy, base names in subfolders, nested paths, hidden
// files outside .git when named, never in a bare listing, the cap, roots in
// turn).
func TestMatch(t *testing.T) {
	e := func(root, rel string) Entry { return Entry{Root: root, Rel: rel} }
	entries := []Entry{
		e("/w", "MixedCase.ts"), e("/w", "agentHostCoverage.ts"), e("/w", "src/alpha-target.ts"),
		e("/w", "feature/target.ts"), e("/w", "target.ts"), e("/w", ".envrc"), e("/w", ".config/x.ts"),
		e("/w", "one/same.ts"), e("/w", "two/same.ts"),
	}
	for _, tt := range []struct {
		name, query string
		want        []string
	}{
		{"matches file names case-insensitively", "mixedcase", []string{"MixedCase.ts"}},
		{"fuzzy matches a basename", "agcov", []string{"agentHostCoverage.ts"}},
		{"finds a base name in a subfolder", "alpha-t", []string{"src/alpha-target.ts"}},
		{"matches nested relative paths", "feature/target", []string{"feature/target.ts"}},
		{"offers a hidden file its query names", "envrc", []string{".envrc"}},
		{"offers hidden files when typed", ".env", []string{".envrc"}},
		{"offers both duplicates", "same", []string{"one/same.ts", "two/same.ts"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := rels(Match(entries, tt.query, 50))
			slices.Sort(got)
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("Match(%q) = %v, want %v", tt.query, got, tt.want)
			}
		})
	}
	t.Run("leaves hidden files out of a bare listing", func(t *testing.T) {
		for _, got := range rels(Match(entries, "", 50)) {
			if strings.HasPrefix(got, ".") {
				t.Fatalf("bare listing offers %s", got)
			}
		}
	})
	t.Run("caps an empty query and takes the roots in turn", func(t *testing.T) {
		var many []Entry
		for i := range 40 {
			many = append(many, e("/a", "a"+string(rune('A'+i))), e("/b", "b"+string(rune('A'+i))))
		}
		got := Match(many, "", 50)
		n := map[string]int{}
		for _, g := range got {
			n[g.Root]++
		}
		if len(got) != 50 || n["/a"] != 25 || n["/b"] != 25 {
			t.Fatalf("%d entries, per root %v", len(got), n)
		}
	})
}

// TestLabels: duplicate base names are told apart by root and path.
func TestLabels(t *testing.T) {
	got := Labels([]Entry{{Root: "/w/proj", Rel: "one/same.ts"}, {Root: "/w/proj", Rel: "two/same.ts"}, {Root: "/w/proj", Rel: "x.ts"}})
	want := []string{"proj \u2022 one/same.ts", "proj \u2022 two/same.ts", "x.ts"}
	if !slices.Equal(got, want) {
		t.Fatalf("labels %q", got)
	}
}

// TestWalkHonoursIgnoreFiles: .gitignore and .ignore at the root leave
// their files out, .git is never listed, and a symlink is not followed.
func TestWalkHonoursIgnoreFiles(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	for name, body := range map[string]string{
		".gitignore": "ignored-target.ts\nbuild/\n", ".ignore": "secret.txt\n",
		"keep.ts": "", "ignored-target.ts": "", "secret.txt": "", "build/out.js": "", ".git/HEAD": "", "src/a.ts": "",
		filepath.Join("..", filepath.Base(outside), "far.txt"): "",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	got := rels(Walk(root, 1000))
	slices.Sort(got)
	want := []string{".gitignore", ".ignore", "keep.ts", "link", "src", "src/a.ts"}
	if !slices.Equal(got, want) {
		t.Fatalf("walk %v, want %v", got, want)
	}
	if n := len(Walk(root, 2)); n != 2 {
		t.Fatalf("limit 2 gave %d", n)
	}
}
