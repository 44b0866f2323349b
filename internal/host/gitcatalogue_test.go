package host

import (
	"slices"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/changeset"
)

func TestSessionCatalogue(t *testing.T) {
	kinds := func(materialized bool) []string {
		var out []string
		for _, c := range sessionCatalogue("s:/1", materialized, "b") {
			out = append(out, c.ChangeKind)
		}
		return out
	}
	if got := kinds(false); !slices.Equal(got, []string{"uncommitted"}) {
		t.Errorf("a new session's catalogue %v", got)
	}
	if got := kinds(true); !slices.Equal(got, []string{"branch", "uncommitted", "session", "turn", "compare-turns"}) {
		t.Errorf("a materialized session's catalogue %v", got)
	}
	for _, c := range sessionCatalogue("s:/1", true, "b") {
		if (c.Capabilities["review"] != nil) != (c.ChangeKind == "branch") {
			t.Errorf("%s review capability %v", c.ChangeKind, c.Capabilities)
		}
		if !strings.HasPrefix(c.URITemplate, "s:/1/changeset/") {
			t.Errorf("%s template %s", c.ChangeKind, c.URITemplate)
		}
	}
}

func TestSessionOperations(t *testing.T) {
	for _, tc := range []struct {
		name            string
		kind            string
		files, outgoing int
		want            []string
	}{
		{"clean, nothing to push", changeset.KindUncommitted, 0, 0, nil},
		{"changes: commit the whole, discard a file", changeset.KindUncommitted, 2, 0, []string{"commit changeset", "discard-changes resource"}},
		{"outgoing commits: sync the whole", changeset.KindUncommitted, 0, 1, []string{"sync changeset"}},
		{"both", changeset.KindUncommitted, 1, 3, []string{"commit changeset", "discard-changes resource", "sync changeset"}},
		{"a turn's changes: undo", changeset.KindTurn, 1, 0, []string{"undo changeset,resource"}},
		{"the session's changes: undo", changeset.KindSession, 1, 0, []string{"undo changeset,resource"}},
		{"an empty turn: nothing", changeset.KindTurn, 0, 0, nil},
		{"the branch: nothing to run", changeset.KindBranch, 4, 4, nil},
		{"a comparison: nothing to run", changeset.KindCompare, 4, 0, nil},
	} {
		var got []string
		ops := sessionOperations(tc.kind, tc.files, tc.outgoing)
		for _, o := range ops {
			got = append(got, o.ID+" "+strings.Join(o.Scopes, ","))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		for _, o := range ops {
			for _, scope := range []string{changeset.ScopeChangeset, changeset.ScopeResource} {
				if offers(ops, o.ID, scope) != slices.Contains(o.Scopes, scope) {
					t.Errorf("%s: offers(%s, %s) disagrees with its scopes", tc.name, o.ID, scope)
				}
			}
		}
		if offers(ops, "unknown-operation", changeset.ScopeChangeset) {
			t.Errorf("%s offers an unknown operation", tc.name)
		}
	}
}
