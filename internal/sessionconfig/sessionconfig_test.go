package sessionconfig

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
)

func TestForDescribesTheBackend(t *testing.T) {
	info := agent.Info{
		Models: []agent.Model{{ID: "default", Name: "Default"}, {ID: "opus"}},
		Config: []agent.ConfigProperty{{Key: "permissionMode", Title: "Permissions", Enum: []string{"default", "plan"}, Default: "default"}},
	}
	s := For(info, Context{})
	if m := s.Properties[KeyModel]; !reflect.DeepEqual(m.Enum, []string{"default", "opus"}) || !reflect.DeepEqual(m.EnumLabels, []string{"Default", "opus"}) || m.Default != "default" {
		t.Fatalf("model %+v", m)
	}
	if p := s.Properties["permissionMode"]; !reflect.DeepEqual(p.Enum, []string{"default", "plan"}) {
		t.Fatalf("permissionMode %+v", p)
	}
	if _, ok := s.Properties[KeyBranch]; ok {
		t.Fatal("a folder that is no repository offers branches")
	}
	if b := For(info, Context{Repository: true}).Properties[KeyBranch]; !b.EnumDynamic {
		t.Fatalf("branch %+v", b)
	}
	if i := For(info, Context{}).Properties[KeyIsolation]; !reflect.DeepEqual(i.Enum, []string{IsolationFolder}) {
		t.Fatalf("a folder that is no repository offers isolation %v", i.Enum)
	}
	if i := For(info, Context{Repository: true}).Properties[KeyIsolation]; !reflect.DeepEqual(i.Enum, []string{IsolationFolder, IsolationWorktree}) || i.Default != IsolationFolder {
		t.Fatalf("a repository offers isolation %+v", i)
	}
	worktree := Resolve(For(info, Context{Repository: true}), map[string]any{KeyIsolation: IsolationWorktree, KeyBranch: "main"})
	if Isolation(worktree) != IsolationWorktree || Branch(worktree) != "main" {
		t.Fatalf("a repository's worktree choice resolves to %v", worktree)
	}
	if _, ok := For(agent.Info{}, Context{}).Properties[KeyModel]; ok {
		t.Fatal("a backend with no models offers a model")
	}
}

func TestResolve(t *testing.T) {
	s := For(agent.Info{Models: []agent.Model{{ID: "a"}, {ID: "b"}},
		Config: []agent.ConfigProperty{{Key: "mode", Enum: []string{"x", "y"}, Default: "x"}}}, Context{})
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   map[string]any
	}{
		{"defaults", nil, map[string]any{"model": "a", "mode": "x", "isolation": "folder"}},
		{"chosen", map[string]any{"model": "b", "mode": "y"}, map[string]any{"model": "b", "mode": "y", "isolation": "folder"}},
		{"outside the enum", map[string]any{"model": "zzz", "isolation": "worktree"}, map[string]any{"model": "a", "mode": "x", "isolation": "folder"}},
		{"not a string", map[string]any{"model": 7}, map[string]any{"model": "a", "mode": "x", "isolation": "folder"}},
		{"client keys kept", map[string]any{"autoApprove": "assisted"}, map[string]any{"model": "a", "mode": "x", "isolation": "folder", "autoApprove": "assisted"}},
	} {
		if got := Resolve(s, tc.values); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRankBranches(t *testing.T) {
	many := []string{}
	for i := 0; i < 30; i++ {
		many = append(many, fmt.Sprintf("branch-%02d", i))
	}
	for _, tc := range []struct {
		name                string
		branches            []string
		current, def, query string
		want                []string
	}{
		{"current then default then names", []string{"alpha", "main", "omega", "current-target"}, "current-target", "main", "", []string{"current-target", "main", "alpha", "omega"}},
		{"case-insensitive", []string{"Feature/MixedCase", "other"}, "", "", "feature/mixed", []string{"Feature/MixedCase"}},
		{"no match", []string{"feature/available"}, "", "", "missing-branch", []string{}},
		{"capped", many, "", "", "", many[:BranchLimit]},
	} {
		var got []string
		for _, it := range RankBranches(tc.branches, tc.current, tc.def, tc.query) {
			if it.Label != it.Value {
				t.Errorf("%s: label %q for %q", tc.name, it.Label, it.Value)
			}
			got = append(got, it.Value)
		}
		if got == nil {
			got = []string{}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestModelDefaultIsTheBackendsConfigured: the backend's configured
// default model is the model property's default, whatever order its list
// has, and is offered even when the list (learned from the agent) leaves
// it out; with none configured the first listed model is the fallback.
// (Issue 35 §1.)
func TestModelDefaultIsTheBackendsConfigured(t *testing.T) {
	listed := []agent.Model{{ID: "auto", Name: "Auto"}, {ID: "pro", Name: "Pro"}, {ID: "flash"}}
	for _, tc := range []struct {
		name        string
		info        agent.Info
		wantDefault string
		wantEnum    []string
		wantLabels  []string
	}{
		{"nothing configured: the first listed", agent.Info{Models: listed}, "auto",
			[]string{"auto", "pro", "flash"}, []string{"Auto", "Pro", "flash"}},
		{"configured and listed", agent.Info{Models: listed, DefaultModel: "pro"}, "pro",
			[]string{"pro", "auto", "flash"}, []string{"Pro", "Auto", "flash"}},
		{"configured, not in the learned list", agent.Info{Models: listed, DefaultModel: "anthropic/claude-x"}, "anthropic/claude-x",
			[]string{"anthropic/claude-x", "auto", "pro", "flash"}, []string{"anthropic/claude-x", "Auto", "Pro", "flash"}},
		{"configured, nothing learned yet", agent.Info{DefaultModel: "fake-large"}, "fake-large",
			[]string{"fake-large"}, []string{"fake-large"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := For(tc.info, Context{}).Properties[KeyModel]
			if !ok || m.Default != tc.wantDefault || !reflect.DeepEqual(m.Enum, tc.wantEnum) || !reflect.DeepEqual(m.EnumLabels, tc.wantLabels) {
				t.Errorf("model property %+v (present %v); want default %q, enum %v, labels %v", m, ok, tc.wantDefault, tc.wantEnum, tc.wantLabels)
			}
			if got := Model(Resolve(For(tc.info, Context{}), nil)); got != tc.wantDefault {
				t.Errorf("a session naming no model resolves to %q, want %q", got, tc.wantDefault)
			}
		})
	}
}
