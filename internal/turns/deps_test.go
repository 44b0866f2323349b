package turns

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEngineDoesNoIO: the turn engine imports nothing that does I/O (issue
// 9): no websocket, no SQLite, no bus or store, no process, no network,
// no file writer. Its effects reach the world only through its Host.
func TestEngineDoesNoIO(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not on PATH: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{
		"os/exec", "net", "net/http", "database/sql",
		"github.com/gorilla/websocket", "github.com/sourcegraph/jsonrpc2", "modernc.org/sqlite",
		"github.com/ahpd/ahpd/internal/bus", "github.com/ahpd/ahpd/internal/store",
		"github.com/ahpd/ahpd/internal/rpc", "github.com/ahpd/ahpd/internal/chat",
		"github.com/ahpd/ahpd/internal/session", "github.com/ahpd/ahpd/internal/host",
		"github.com/ahpd/ahpd/internal/attach", "github.com/ahpd/ahpd/internal/mailbox",
	}
	deps := strings.Fields(string(out))
	for _, d := range deps {
		for _, f := range forbidden {
			if d == f {
				t.Errorf("internal/turns depends on %s", d)
			}
		}
		if strings.HasPrefix(d, "github.com/ahpd/ahpd/internal/agent/") {
			t.Errorf("internal/turns depends on a backend: %s", d)
		}
	}
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
}
