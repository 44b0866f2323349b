package daemon_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// TestVSCodeHostFeatures ports the conformanceTests of VS Code's
// hostFeaturesSuite but its two ! command cases (TestVSCodeBangCommands)
// and the two TestVSCodeNotApplicable holds. Read: microsoft/vscode
// 0c724595 (30 cases, setRootConfigValues from the harness) and index id
// 57428636808 (the same 30 and one more: configuring a GitHub Enterprise
// host); the index orders neither, so the union is ported. 4499b616 is the
// oldest (hostOnlyTest, 8 cases); copilotMultiRootTest cases are Copilot's
// parity tier. Each case has a workspace of its own: a folder under the
// served path that its session works in.
func TestVSCodeHostFeatures(t *testing.T) {
	t.Parallel()
	v := newVSCodeEnv(t)
	n := 0
	workspace := func(files ...string) (string, string) {
		t.Helper()
		n++
		dir := filepath.Join(v.dir, fmt.Sprintf("ws-%d", n))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
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

	conformanceCase(t, "initialize advertises host-owned input capabilities", func(t *testing.T) {
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
	// Not applicable: the suite's host derives GitHub Enterprise's Copilot
	// endpoints from the root config key githubEnterpriseUri and asks the
	// client to sign in to them (auth/required). ahpd serves no GitHub or
	// Copilot account: it takes the change, which its root config has no
	// key for, and asks for no sign-in.
	conformanceCase(t, "configuring a GitHub Enterprise host asks the client to re-authenticate", func(t *testing.T) {
		workspace()
		v.c.Subscribe(ahp.RootURI)
		const key = "githubEnterpriseUri"
		v.dispatchOK(ahp.RootURI, map[string]any{"type": "root/configChanged", "config": map[string]any{key: "https://enterprise.example.com"}})
		v.dispatchOK(ahp.RootURI, map[string]any{"type": "root/configChanged", "config": map[string]any{key: ""}})
		v.c.MustCall("ping", map[string]any{"channel": ahp.RootURI})
		for _, f := range v.c.Frames() {
			if f.Method == "auth/required" {
				t.Fatalf("ahpd asked for a sign-in: %s", f.Raw)
			}
		}
	})
	conformanceCase(t, "workspace file completions are filtered, attached, and cached", func(t *testing.T) {
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
	conformanceCase(t, "workspace file completions ignore plain text", func(t *testing.T) {
		_, chat := workspace("visible.txt")
		if got := complete(chat, "plain text", u16("plain text")); len(got) != 0 {
			t.Fatalf("%+v", got)
		}
	})
	conformanceCase(t, "workspace file completion replaces only the token before the cursor", func(t *testing.T) {
		_, chat := workspace("alpha.ts")
		got := complete(chat, "review @alp trailing", u16("review @alp"))
		if len(got) != 1 || got[0].InsertText != "@alpha.ts" || *got[0].RangeStart != u16("review ") || *got[0].RangeEnd != u16("review @alp") {
			t.Fatalf("%+v", got)
		}
	})
	conformanceCase(t, "workspace file completion ignores embedded at signs", func(t *testing.T) {
		_, chat := workspace("example.txt")
		if got := complete(chat, "email@example", u16("email@example")); len(got) != 0 {
			t.Fatalf("%+v", got)
		}
	})
	conformanceCase(t, "workspace file completion accepts tab and newline delimiters", func(t *testing.T) {
		_, chat := workspace("alpha.txt")
		tab, nl := complete(chat, "review\t@alp", u16("review\t@alp")), complete(chat, "review\n#alp", u16("review\n#alp"))
		if !slices.Equal(inserts(tab), []string{"@alpha.txt"}) || !slices.Equal(inserts(nl), []string{"#alpha.txt"}) {
			t.Fatalf("tab %v newline %v", inserts(tab), inserts(nl))
		}
	})
	conformanceCase(t, "workspace file completion disambiguates duplicate basenames", func(t *testing.T) {
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
	conformanceCase(t, "workspace file completion matches nested relative paths", func(t *testing.T) {
		dir, chat := workspace("feature/target.ts", "target.ts")
		got := complete(chat, "@feature/target", u16("@feature/target"))
		if len(got) != 1 || got[0].Attachment.URI != ahp.FileURI(filepath.Join(dir, "feature", "target.ts")) {
			t.Fatalf("%+v", got)
		}
	})
	conformanceCase(t, "workspace file completion caps an empty query at fifty results", func(t *testing.T) {
		var files []string
		for i := range 60 {
			files = append(files, fmt.Sprintf("file-%02d.txt", i))
		}
		_, chat := workspace(files...)
		if got := complete(chat, "@", 1); len(got) != 50 {
			t.Fatalf("%d items", len(got))
		}
	})
	conformanceCase(t, "workspace file completion supports a trigger at the start of input", func(t *testing.T) {
		_, chat := workspace("alpha.ts")
		got := complete(chat, "#alp", 4)
		if len(got) != 1 || got[0].InsertText != "#alpha.ts" || *got[0].RangeStart != 0 || *got[0].RangeEnd != 4 {
			t.Fatalf("%+v", got)
		}
	})
	conformanceCase(t, "workspace file completion ignores a token separated from the cursor", func(t *testing.T) {
		_, chat := workspace("alpha.ts")
		if got := complete(chat, "review @alpha later", u16("review @alpha later")); len(got) != 0 {
			t.Fatalf("%+v", got)
		}
	})
	conformanceCase(t, "workspace file completion matches file names case-insensitively", func(t *testing.T) {
		_, chat := workspace("MixedCase.ts")
		if got := inserts(complete(chat, "@mixedcase", u16("@mixedcase"))); !slices.Equal(got, []string{"@MixedCase.ts"}) {
			t.Fatalf("%v", got)
		}
	})
	conformanceCase(t, "workspace file completion fuzzy matches a basename", func(t *testing.T) {
		_, chat := workspace("agentHostCoverage.ts")
		if got := inserts(complete(chat, "@agcov", u16("@agcov"))); !slices.Equal(got, []string{"@agentHostCoverage.ts"}) {
			t.Fatalf("%v", got)
		}
	})
	conformanceCase(t, "workspace file completion ignores a token after the cursor", func(t *testing.T) {
		_, chat := workspace("alpha.ts")
		if got := complete(chat, "prefix @alpha", u16("prefix")); len(got) != 0 {
			t.Fatalf("%+v", got)
		}
	})
	conformanceCase(t, "workspace file completion includes hidden files outside git metadata", func(t *testing.T) {
		_, chat := workspace(".hidden-target.txt", ".git/hidden-target-in-git.txt")
		if got := inserts(complete(chat, "@hidden-target", u16("@hidden-target"))); !slices.Equal(got, []string{"@.hidden-target.txt"}) {
			t.Fatalf("%v", got)
		}
	})
	conformanceCase(t, "workspace file completion honors dot-ignore files", func(t *testing.T) {
		dir, chat := workspace("ignored-target.txt")
		writeFile(t, filepath.Join(dir, ".ignore"), "ignored-target.txt\n")
		if got := complete(chat, "@ignored-target", u16("@ignored-target")); len(got) != 0 {
			t.Fatalf("%+v", got)
		}
	})
	conformanceCase(t, "rename completion appears after a locally renamed turn", func(t *testing.T) {
		_, chat := workspace()
		offers := func() bool { return slices.Contains(inserts(complete(chat, "/r", 2)), "/rename ") }
		before := offers()
		v.c.Subscribe(chat)
		end := sendTurn(t, v.c, chat, "turn-rename", "/rename Coverage Session")
		if end.Type() != "chat/turnComplete" {
			t.Fatalf("rename turn ended %s", end.Raw)
		}
		st := chatOf(t, v.c, chat)
		text := clMarkdown(st.Turns[len(st.Turns)-1])
		if before || !offers() || st.Title != "Coverage Session" || !strings.Contains(text, "Renamed: Coverage Session") {
			t.Fatalf("before %v, after %v, title %q, answer %q", before, offers(), st.Title, text)
		}
	})
	conformanceCase(t, "an empty rename command completes without changing the title", func(t *testing.T) {
		_, chat := workspace()
		before := chatOf(t, v.c, chat).Title
		v.c.Subscribe(chat)
		end := sendTurn(t, v.c, chat, "turn-empty-rename", "/rename")
		st := chatOf(t, v.c, chat)
		if end.Type() != "chat/turnComplete" || st.Title != before || clMarkdown(st.Turns[len(st.Turns)-1]) != "" {
			t.Fatalf("ending %s, title %q (was %q), answer %q", end.Type(), st.Title, before, clMarkdown(st.Turns[len(st.Turns)-1]))
		}
	})

	// Branch completions read the working directory's git repository.
	gitRepo := func(t *testing.T, dir string, cmds ...[]string) {
		t.Helper()
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("git is not installed (apt-get install git)")
		}
		run := func(args ...string) {
			cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.invalid", "-c", "user.name=t", "-c", "init.defaultBranch=main"}, args...)...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		run("init", "-q")
		run("commit", "-q", "--allow-empty", "-m", "initial")
		for _, c := range cmds {
			run(c...)
		}
	}
	branches := func(t *testing.T, dir *string, query string) []map[string]any {
		t.Helper()
		params := map[string]any{"channel": ahp.RootURI, "provider": "script", "config": map[string]any{"isolation": "worktree"}, "property": "branch", "query": query}
		if dir != nil {
			params["workingDirectory"] = ahp.FileURI(*dir)
		}
		var res struct {
			Items []map[string]any `json:"items"`
		}
		if err := json.Unmarshal(v.c.MustCall("sessionConfigCompletions", params), &res); err != nil {
			t.Fatal(err)
		}
		return res.Items
	}
	values := func(items []map[string]any) []string {
		out := []string{}
		for _, it := range items {
			out = append(out, fmt.Sprint(it["value"]))
		}
		return out
	}
	conformanceCase(t, "session configuration resolves and completes git branches", func(t *testing.T) {
		dir, _ := workspace()
		gitRepo(t, dir, []string{"branch", "feature/coverage-target"})
		var resolved struct {
			Schema struct {
				Properties map[string]struct {
					EnumDynamic bool `json:"enumDynamic"`
				} `json:"properties"`
			} `json:"schema"`
			Values map[string]any `json:"values"`
		}
		raw := v.c.MustCall("resolveSessionConfig", map[string]any{"channel": ahp.RootURI, "provider": "script",
			"workingDirectory": ahp.FileURI(dir), "config": map[string]any{"isolation": "worktree"}})
		if err := json.Unmarshal(raw, &resolved); err != nil {
			t.Fatal(err)
		}
		if resolved.Values["isolation"] != "worktree" || !resolved.Schema.Properties["branch"].EnumDynamic {
			t.Fatalf("resolveSessionConfig in a repository: %s", raw)
		}
		sameJSON(t, "items", branches(t, &dir, "coverage-target"), []map[string]any{{"value": "feature/coverage-target", "label": "feature/coverage-target"}})
	})
	conformanceCase(t, "branch completions without a working directory are empty", func(t *testing.T) {
		workspace()
		if got := branches(t, nil, ""); len(got) != 0 {
			t.Fatalf("%v", got)
		}
	})
	conformanceCase(t, "branch completions for a non-git directory are empty", func(t *testing.T) {
		dir, _ := workspace()
		if got := branches(t, &dir, ""); len(got) != 0 {
			t.Fatalf("%v", got)
		}
	})
	conformanceCase(t, "branch completion queries are case insensitive", func(t *testing.T) {
		dir, _ := workspace()
		gitRepo(t, dir, []string{"branch", "Feature/MixedCase"})
		sameJSON(t, "items", branches(t, &dir, "feature/mixed"), []map[string]any{{"value": "Feature/MixedCase", "label": "Feature/MixedCase"}})
	})
	conformanceCase(t, "branch completions prioritize the current branch", func(t *testing.T) {
		dir, _ := workspace()
		gitRepo(t, dir, []string{"branch", "alpha"}, []string{"checkout", "-q", "-b", "current-target"}, []string{"branch", "omega"})
		if got := values(branches(t, &dir, "")); len(got) == 0 || got[0] != "current-target" {
			t.Fatalf("%v", got)
		}
	})
	conformanceCase(t, "branch completions prioritize the default branch after the current branch", func(t *testing.T) {
		dir, _ := workspace()
		remote := t.TempDir()
		if out, err := exec.Command("git", "init", "--bare", "-q", remote).CombinedOutput(); err != nil {
			t.Fatalf("git init --bare: %v\n%s", err, out)
		}
		gitRepo(t, dir, []string{"branch", "-M", "main"}, []string{"remote", "add", "origin", remote}, []string{"push", "-q", "-u", "origin", "main"},
			[]string{"symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main"}, []string{"checkout", "-q", "-b", "current-target"}, []string{"branch", "other"})
		if got := values(branches(t, &dir, "")); len(got) < 2 || !slices.Equal(got[:2], []string{"current-target", "main"}) {
			t.Fatalf("%v", got)
		}
	})
	conformanceCase(t, "branch completions are capped at twenty-five items", func(t *testing.T) {
		dir, _ := workspace()
		var cmds [][]string
		for i := range 30 {
			cmds = append(cmds, []string{"branch", fmt.Sprintf("branch-%02d", i)})
		}
		gitRepo(t, dir, cmds...)
		if got := branches(t, &dir, ""); len(got) != 25 {
			t.Fatalf("%d items", len(got))
		}
	})
	conformanceCase(t, "branch completions return an empty result when no branch matches", func(t *testing.T) {
		dir, _ := workspace()
		gitRepo(t, dir, []string{"branch", "feature/available"})
		if got := branches(t, &dir, "missing-branch"); len(got) != 0 {
			t.Fatalf("%v", got)
		}
	})
	conformanceCase(t, "detached HEAD branch completions still return local branches", func(t *testing.T) {
		dir, _ := workspace()
		gitRepo(t, dir, []string{"branch", "available-one"}, []string{"branch", "available-two"}, []string{"checkout", "-q", "--detach", "HEAD"})
		got := values(branches(t, &dir, "available"))
		slices.Sort(got)
		if !slices.Equal(got, []string{"available-one", "available-two"}) {
			t.Fatalf("%v", got)
		}
	})

}
