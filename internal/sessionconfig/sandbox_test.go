package sessionconfig

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/sandbox"
)

func TestSandboxPropertyListsEveryModeAndWhyOneCannotRun(t *testing.T) {
	for _, tc := range []struct {
		name        string
		choice      SandboxChoice
		wantDefault string
		wantLabels  []string
		wantWhy     map[int]string
	}{{
		name:        "a kernel with Landlock offers every mode, off by default",
		choice:      SandboxChoice{Default: sandbox.Off},
		wantDefault: "off",
		wantLabels:  []string{"Off", "Workspace", "Strict"},
	}, {
		name:        "the operator's default is the property's default",
		choice:      SandboxChoice{Default: sandbox.Workspace},
		wantDefault: "workspace",
		wantLabels:  []string{"Off", "Workspace", "Strict"},
	}, {
		name: "a mode that cannot run is listed as unavailable with the reason",
		choice: SandboxChoice{Default: sandbox.Off, Unavailable: map[sandbox.Mode]string{
			sandbox.Workspace: "Landlock is not available on this kernel", sandbox.Strict: "Landlock is not available on this kernel"}},
		wantDefault: "off",
		wantLabels:  []string{"Off", "Workspace (unavailable)", "Strict (unavailable)"},
		wantWhy:     map[int]string{1: "Unavailable here: Landlock is not available", 2: "Unavailable here: Landlock is not available"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := For(agent.Info{}, Context{Sandbox: &tc.choice}).Properties[KeySandbox]
			if !reflect.DeepEqual(p.Enum, []string{"off", "workspace", "strict"}) || p.Default != tc.wantDefault || p.Title != "Sandbox" {
				t.Fatalf("sandbox property %+v", p)
			}
			if !reflect.DeepEqual(p.EnumLabels, tc.wantLabels) {
				t.Fatalf("labels %q, want %q", p.EnumLabels, tc.wantLabels)
			}
			if len(p.EnumDescriptions) != 3 {
				t.Fatalf("descriptions %q", p.EnumDescriptions)
			}
			for i, d := range p.EnumDescriptions {
				if want := tc.wantWhy[i]; want != "" && !strings.HasPrefix(d, want) {
					t.Errorf("description %d = %q, want it to start %q", i, d, want)
				}
				if tc.wantWhy[i] == "" && strings.Contains(d, "Unavailable") {
					t.Errorf("description %d = %q says unavailable", i, d)
				}
			}
		})
	}
	if _, ok := For(agent.Info{}, Context{}).Properties[KeySandbox]; ok {
		t.Fatal("a host with no sandbox choice offers the property")
	}
}
