package ahp

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestCheckRepositories: the rules of a repository list (AHP
// channels-session, 043bc347, "Repository-backed creation"), each refusal
// InvalidParams.
func TestCheckRepositories(t *testing.T) {
	one := &RepositoryPreparationCapabilities{}
	rev := &RepositoryPreparationCapabilities{Revision: true}
	many := &RepositoryPreparationCapabilities{Revision: true, MultipleRepositories: true}
	for _, tc := range []struct {
		name   string
		json   string
		caps   *RepositoryPreparationCapabilities
		config map[string]any
		ok     bool
	}{
		{"absent", `null`, nil, nil, true},
		{"one at its default", `[{"source":"https://example.com/o/r.git"}]`, one, nil, true},
		{"a file source", `[{"source":"file:///home/u/repo"}]`, one, nil, true},
		{"ssh", `[{"source":"ssh://example.com/o/r.git"}]`, one, nil, true},
		{"a revision", `[{"source":"https://example.com/o/r.git","revision":"main"}]`, rev, nil, true},
		{"two", `[{"source":"https://example.com/a.git"},{"source":"https://example.com/a.git","revision":"v1"}]`, many, nil, true},
		{"without the capability", `[{"source":"https://example.com/o/r.git"}]`, nil, nil, false},
		{"empty list", `[]`, one, nil, false},
		{"two without multipleRepositories", `[{"source":"https://example.com/a.git"},{"source":"https://example.com/b.git"}]`, rev, nil, false},
		{"a revision without the capability", `[{"source":"https://example.com/o/r.git","revision":"main"}]`, one, nil, false},
		{"a blank revision", `[{"source":"https://example.com/o/r.git","revision":""}]`, rev, nil, false},
		{"a space revision", `[{"source":"https://example.com/o/r.git","revision":" "}]`, rev, nil, false},
		{"an option revision", `[{"source":"https://example.com/o/r.git","revision":"--upload-pack=x"}]`, rev, nil, false},
		{"a range revision", `[{"source":"https://example.com/o/r.git","revision":"a..b"}]`, rev, nil, false},
		{"no source", `[{}]`, one, nil, false},
		{"no scheme", `[{"source":"git@example.com:o/r.git"}]`, one, nil, false},
		{"a relative path", `[{"source":"repo"}]`, one, nil, false},
		{"ext transport", `[{"source":"ext::sh -c x"}]`, one, nil, false},
		{"another scheme", `[{"source":"ftp://example.com/r.git"}]`, one, nil, false},
		{"a credential", `[{"source":"https://user:token@example.com/o/r.git"}]`, one, nil, false},
		{"a user", `[{"source":"ssh://git@example.com/o/r.git"}]`, one, nil, false},
		{"a query", `[{"source":"https://example.com/o/r.git?x=1"}]`, one, nil, false},
		{"a fragment", `[{"source":"https://example.com/o/r.git#main"}]`, one, nil, false},
		{"a file on another machine", `[{"source":"file://other/repo"}]`, one, nil, false},
		{"no host", `[{"source":"https:///o/r.git"}]`, one, nil, false},
		{"no path", `[{"source":"https://example.com/"}]`, one, nil, false},
		{"a control character", `[{"source":"https://example.com/o/r\u0000.git"}]`, one, nil, false},
		{"a source past its bound", `[{"source":"https://example.com/` + strings.Repeat("r", 2100) + `"}]`, one, nil, false},
		{"a revision past its bound", `[{"source":"https://example.com/r.git","revision":"` + strings.Repeat("v", 300) + `"}]`, rev, nil, false},
		{"intent in config", `null`, one, map[string]any{"repositories": []any{}}, false},
		{"an obsolete carrier in config", `null`, one, map[string]any{"repositoryUrl": "https://example.com/r.git"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var list []RepositorySource
			if err := json.Unmarshal([]byte(tc.json), &list); err != nil {
				t.Fatal(err)
			}
			err := CheckRepositories("params.repositories", list, tc.caps, tc.config)
			if tc.ok != (err == nil) {
				t.Fatalf("CheckRepositories(%s) = %v; want ok %v", tc.json, err, tc.ok)
			}
			var ae *Error
			if err != nil && (!errors.As(err, &ae) || ae.Code != CodeInvalidParams) {
				t.Errorf("refusal %v is not InvalidParams", err)
			}
		})
	}
}

// TestRepositoriesAndDirectoriesExclusive: createSession names one or the
// other.
func TestRepositoriesAndDirectoriesExclusive(t *testing.T) {
	for _, tc := range []struct {
		json string
		ok   bool
	}{
		{`{"channel":"copilot:/s","repositories":[{"source":"file:///r"}]}`, true},
		{`{"channel":"copilot:/s","workingDirectories":["file:///w"]}`, true},
		{`{"channel":"copilot:/s","repositories":[{"source":"file:///r"}],"workingDirectories":["file:///w"]}`, false},
		{`{"channel":"copilot:/s","repositories":[{"source":"file:///r"}],"workingDirectory":"file:///w"}`, false},
		{`{"channel":"copilot:/s","repositories":[{"source":"file:///r"}],"workingDirectories":[]}`, true},
	} {
		var p CreateSessionParams
		if err := json.Unmarshal([]byte(tc.json), &p); err != nil {
			t.Fatal(err)
		}
		if err := CheckCreationCarrier(&p); tc.ok != (err == nil) {
			t.Errorf("CheckCreationCarrier(%s) = %v", tc.json, err)
		}
	}
}

// TestSameRepositories: order, source and an omitted revision all count.
func TestSameRepositories(t *testing.T) {
	a := []RepositorySource{{Source: "file:///a"}, {Source: "file:///b", Revision: "v1"}}
	if !SameRepositories(a, []RepositorySource{{Source: "file:///a"}, {Source: "file:///b", Revision: "v1"}}) {
		t.Error("equal lists differ")
	}
	for _, b := range [][]RepositorySource{
		{{Source: "file:///b", Revision: "v1"}, {Source: "file:///a"}},
		{{Source: "file:///a", Revision: "main"}, {Source: "file:///b", Revision: "v1"}},
		{{Source: "file:///a"}},
	} {
		if SameRepositories(a, b) {
			t.Errorf("%v is the same as %v", b, a)
		}
	}
}
