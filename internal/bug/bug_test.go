package bug

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestRecoverReports: a panic inside Recover is logged with its stack and,
// under test, panics again as a bug so no test passes over it.
func TestRecoverReports(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	defer func() {
		r := recover()
		if s, _ := r.(string); !strings.HasPrefix(s, "bug: actor panicked: boom") {
			t.Fatalf("recovered %v", r)
		}
		if !strings.Contains(buf.String(), "BUG: actor panicked: boom") || !strings.Contains(buf.String(), "stack=") {
			t.Fatalf("log: %s", buf.String())
		}
	}()
	Recover(log, "actor", func() { panic("boom") })
	t.Fatal("Recover returned after a panic under test")
}
