package daemon_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// TestVSCodeHostFeatures ports the conformanceTests of VS Code's
// hostFeaturesSuite that need no terminal or resource command (those are
// the next issue's). Each case has a workspace of its own: a folder under
// the served path that its session works in.
func TestVSCodeHostFeatures(t *testing.T) {
	v := newVSCodeEnv(t)
	n := 0
	workspace := func(files ...string) (string, string) {
		t.Helper()
		n++
		dir := filepath.Join(v.dir, fmt.Sprintf("ws-%d", n))
		for _, f := range files {
			p := filepath.Join(dir, filepath.FromSlash(f))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			body := f
			if filepath.Base(f) == ".gitignore" {
				body = "ignored-target.ts\n"
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		uri := fmt.Sprintf("ahp-session:/40575000-0000-4000-8000-%012d", n)
		v.c.MustCall("createSession", map[string]any{"channel": uri, "provider": "script", "workingDirectories": []string{ahp.FileURI(dir)}})
		st, _ := v.c.Subscribe(uri)
		var s ahp.SessionState
		if err := json.Unmarshal(st, &s); err != nil {
			t.Fatal(err)
		}
		return dir, s.DefaultChat
	}
	complete := func(chat, text string, offset int) []ahp.CompletionItem {
		t.Helper()
		raw := v.c.MustCall("completions", map[string]any{"channel": chat, "kind": "userMessage", "text": text, "offset": offset})
		var r ahp.CompletionsResult
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		return r.Items
	}
	inserts := func(items []ahp.CompletionItem) []string {
		out := []string{}
		for _, it := range items {
			out = append(out, it.InsertText)
		}
		return out
	}
	u16 := func(s string) int { return len([]rune(s)) } // ASCII here: runes are UTF-16 units

	t.Run("initialize advertises host-owned input capabilities", func(t *testing.T) {
		c := v.fresh()
		defer c.Close()
		var r ahp.InitializeResult
		if err := json.Unmarshal(c.Initialize("host-capabilities"), &r); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.CompletionTriggerCharacters, []string{"@", "#", "/"}) || r.TerminalCommandPrefix != "!" {
			t.Fatalf("triggers %v, prefix %q", r.CompletionTriggerCharacters, r.TerminalCommandPrefix)
		}
	})
	t.Run("workspace file completions are filtered, attached, and cached", func(t *testing.T) {
		dir, chat := workspace("src/alpha-target.ts", "ignored-target.ts", ".gitignore")
		target := filepath.Join(dir, "src", "alpha-target.ts")
		first := complete(chat, "review @alpha-t", u16("review @alpha-t"))
		if err := os.Remove(target); err != nil {
			t.Fatal(err)
		}
		second := complete(chat, "review #alpha-t", u16("review #alpha-t"))
		for i, got := range [][]ahp.CompletionItem{first, second} {
			want := ahp.MessageAttachment{Type: ahp.AttachmentResource, URI: ahp.FileURI(target), Label: "alpha-target.ts", DisplayKind: "document"}
			trigger := []string{"@", "#"}[i]
			if len(got) != 1 || got[0].InsertText != trigger+"alpha-target.ts" || fmt.Sprint(got[0].Attachment) != fmt.Sprint(want) {
				t.Fatalf("%s: %+v", trigger, got)
			}
		}
	})
	t.Run("workspace file completions ignore plain text", func(t *testing.T) {
		_, chat := workspace("visible.txt")
		if got := complete(chat, "plain text", u16("plain text")); len(got) != 0 {
			t.Fatalf("%+v", got)
		}
	})
	t.Run("workspace file completion replaces only the token before the cursor", func(t *testing.T) {
		_, chat := workspace("alpha.ts")
		got := complete(chat, "review @alp trailing", u16("review @alp"))
		if len(got) != 1 || got[0].InsertText != "@alpha.ts" || *got[0].RangeStart != u16("review ") || *got[0].RangeEnd != u16("review @alp") {
			t.Fatalf("%+v", got)
		}
	})
	t.Run("workspace file completion ignores embedded at signs", func(t *testing.T) {
		_, chat := workspace("example.txt")
		if got := complete(chat, "email@example", u16("email@example")); len(got) != 0 {
			t.Fatalf("%+v", got)
		}
	})
	t.Run("workspace file completion accepts tab and newline delimiters", func(t *testing.T) {
		_, chat := workspace("alpha.txt")
		tab, nl := complete(chat, "review\t@alp", u16("review\t@alp")), complete(chat, "review\n#alp", u16("review\n#alp"))
		if !slices.Equal(inserts(tab), []string{"@alpha.txt"}) || !slices.Equal(inserts(nl), []string{"#alpha.txt"}) {
			t.Fatalf("tab %v newline %v", inserts(tab), inserts(nl))
		}
	})
	t.Run("workspace file completion disambiguates duplicate basenames", func(t *testing.T) {
		dir, chat := workspace("one/same.ts", "two/same.ts")
		var labels []string
		for _, it := range complete(chat, "@same", u16("@same")) {
			labels = append(labels, it.Attachment.Label)
		}
		slices.Sort(labels)
		base := filepath.Base(dir)
		if want := []string{base + " \u2022 one/same.ts", base + " \u2022 two/same.ts"}; !slices.Equal(labels, want) {
			t.Fatalf("labels %q, want %q", labels, want)
		}
	})
	t.Run("workspace file completion matches nested relative paths", func(t *testing.T) {
		dir, chat := workspace("feature/target.ts", "target.ts")
		got := complete(chat, "@feature/target", u16("@feature/target"))
		if len(got) != 1 || got[0].Attachment.URI != ahp.FileURI(filepath.Join(dir, "feature", "target.ts")) {
			t.Fatalf("%+v", got)
		}
	})
	t.Run("workspace file completion caps an empty query at fifty results", func(t *testing.T) {
		var files []string
		for i := range 60 {
			files = append(files, fmt.Sprintf("file-%02d.txt", i))
		}
		_, chat := workspace(files...)
		if got := complete(chat, "@", 1); len(got) != 50 {
			t.Fatalf("%d items", len(got))
		}
	})
	t.Run("workspace file completion supports a trigger at the start of input", func(t *testing.T) {
		_, chat := workspace("alpha.ts")
		got := complete(chat, "#alp", 4)
		if len(got) != 1 || got[0].InsertText != "#alpha.ts" || *got[0].RangeStart != 0 || *got[0].RangeEnd != 4 {
			t.Fatalf("%+v", got)
		}
	})
	t.Run("workspace file completion ignores a token separated from the cursor", func(t *testing.T) {
		_, chat := workspace("alpha.ts")
		if got := complete(chat, "review @alpha later", u16("review @alpha later")); len(got) != 0 {
			t.Fatalf("%+v", got)
		}
	})
	t.Run("workspace file completion matches file names case-insensitively", func(t *testing.T) {
		_, chat := workspace("MixedCase.ts")
		if got := inserts(complete(chat, "@mixedcase", u16("@mixedcase"))); !slices.Equal(got, []string{"@MixedCase.ts"}) {
			t.Fatalf("%v", got)
		}
	})
	t.Run("workspace file completion fuzzy matches a basename", func(t *testing.T) {
		_, chat := workspace("agentHostCoverage.ts")
		if got := inserts(complete(chat, "@agcov", u16("@agcov"))); !slices.Equal(got, []string{"@agentHostCoverage.ts"}) {
			t.Fatalf("%v", got)
		}
	})
	t.Run("workspace file completion ignores a token after the cursor", func(t *testing.T) {
		_, chat := workspace("alpha.ts")
		if got := complete(chat, "prefix @alpha", u16("prefix")); len(got) != 0 {
			t.Fatalf("%+v", got)
		}
	})
}
