package daemon_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// TestListSessionsDefaultPage: a listSessions that names no limit gets a
// page no larger than the most a client may ask for (500), with a cursor to
// the rest (issue 18: the default page was 1,000).
func TestListSessionsDefaultPage(t *testing.T) {
	// Slow and self-contained (its own daemon): it waits beside the other
	// slow ones rather than in line (make test stays under four minutes).
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	const n = 501
	for i := range n {
		a.MustCall("createSession", map[string]any{"channel": fmt.Sprintf("ahp-session:/11570000-0000-4000-8000-%012d", i), "provider": "script"})
	}
	var first struct {
		Items      []ahp.SessionSummary `json:"items"`
		NextCursor string               `json:"nextCursor"`
	}
	if err := json.Unmarshal(a.MustCall("listSessions", map[string]any{"channel": ahp.RootURI}), &first); err != nil {
		t.Fatal(err)
	}
	if len(first.Items) != 500 || first.NextCursor == "" {
		t.Fatalf("default page: %d items, cursor %q", len(first.Items), first.NextCursor)
	}
	var rest struct {
		Items      []ahp.SessionSummary `json:"items"`
		NextCursor string               `json:"nextCursor"`
	}
	if err := json.Unmarshal(a.MustCall("listSessions", map[string]any{"channel": ahp.RootURI, "cursor": first.NextCursor}), &rest); err != nil {
		t.Fatal(err)
	}
	if len(rest.Items) != 1 || rest.NextCursor != "" {
		t.Fatalf("second page: %d items, cursor %q", len(rest.Items), rest.NextCursor)
	}
}
