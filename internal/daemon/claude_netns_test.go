package daemon_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

// netnsEnv is set for the test binary re-run inside the namespace.
const netnsEnv = "AHPD_TEST_IN_NETNS"

// claudeTestsOffline are the tests re-run in a namespace with loopback
// alone.
var claudeTestsOffline = []string{
	"TestClaudeLoopbackOnly", "TestClaudeLiveTurns", "TestClaudeRestartForkRewind",
	"TestClaudeReadBackWhenStoreLost", "TestClaudeStopEndsQuery",
}

// TestClaudeLoopbackOnly proves that the claude tests need nothing but
// 127.0.0.1: it re-runs them inside a new network namespace whose only
// interface is loopback, and there checks that no other interface exists.
// The fake model server refuses every address that is not loopback
// (internal/testutil/fakemodel TestRefusesNonLoopback), the daemon listens
// on 127.0.0.1:0, and the CLI reaches only ANTHROPIC_BASE_URL.
//
// By hand, as root (unshare needs CAP_SYS_ADMIN):
//
//	unshare -n sh -c 'ip link set lo up && go test -race -count=1 -run TestClaude ./internal/daemon/'
//
// (the build cache and module cache must be warm: go cannot download in
// there). The test skips where unshare cannot make a namespace.
func TestClaudeLoopbackOnly(t *testing.T) {
	t.Parallel()
	if os.Getenv(netnsEnv) != "" {
		ifs, err := net.Interfaces()
		if err != nil {
			t.Fatal(err)
		}
		for _, ifc := range ifs {
			if ifc.Flags&net.FlagLoopback == 0 {
				t.Errorf("interface %s in the namespace is not loopback", ifc.Name)
			}
		}
		return
	}
	fakemodel.Agent(t, "claude") // make check only, and skips with the install hint
	runLoopbackOnly(t, "the claude tests", claudeTestsOffline, 4*time.Minute)
}

// runLoopbackOnly runs this test binary again on tests, in a network
// namespace of its own with only loopback up (unshare -n), within the
// given time, and fails unless each of them passes there: what names them
// in the failure. It skips where no namespace can be made.
func runLoopbackOnly(t *testing.T, what string, tests []string, within time.Duration) {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare here")
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("no ip here")
	}
	if out, err := exec.Command(unshare, "-n", "true").CombinedOutput(); err != nil {
		t.Skipf("unshare -n cannot make a network namespace here: %v %s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), within+time.Minute)
	defer cancel()
	run := "^(" + strings.Join(tests, "|") + ")$"
	cmd := exec.CommandContext(ctx, unshare, "-n", "sh", "-c", `"$0" link set lo up && exec "$@"`,
		ip, os.Args[0], "-test.run", run, "-test.count=1", "-test.v", "-test.timeout="+within.String())
	cmd.Env = append(os.Environ(), netnsEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s failed with loopback alone: %v\n%s", what, err, clTail(out, 8000))
	}
	for _, name := range tests {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass in the namespace:\n%s", name, clTail(out, 8000))
		}
	}
}

func clTail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
