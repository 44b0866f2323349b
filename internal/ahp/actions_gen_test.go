package ahp

import (
	"bytes"
	"os"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp/internal/actiongen"
)

// TestGeneratedActionsUpToDate: actions_gen.go is what actions.table
// generates; run `go generate ./internal/ahp` after editing the table.
func TestGeneratedActionsUpToDate(t *testing.T) {
	table, err := os.ReadFile("actions.table")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := actiongen.Parse(table)
	if err != nil {
		t.Fatal(err)
	}
	want, err := actiongen.Generate(rows)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("actions_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("actions_gen.go is stale: run go generate ./internal/ahp")
	}
	// Every row decodes to its own struct and marshals with its type.
	for _, r := range rows {
		a, err := DecodeAction([]byte(`{"type":"` + r.Type + `"}`))
		if err != nil {
			t.Errorf("%s: %v", r.Type, err)
			continue
		}
		if a.ActionType() != r.Type {
			t.Errorf("%s decodes to %s", r.Type, a.ActionType())
		}
		if _, ok := ActionIntroducedIn[r.Type]; !ok {
			t.Errorf("%s has no version", r.Type)
		}
		if IsClientDispatchable(r.Type) != r.Client || GrantFor(r.Type) != r.Grant {
			t.Errorf("%s: dispatchable %v grant %q, the table says %v %q", r.Type, IsClientDispatchable(r.Type), GrantFor(r.Type), r.Client, r.Grant)
		}
	}
}
