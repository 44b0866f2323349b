// Package testutil holds what the tests of several packages share: which
// tests run only in `make check`.
//
// `make test` is the quick run: unit tests and in-process integration tests
// (the script agent, the fake model server), under the race detector, in a
// few minutes. `make check` is everything: it sets AHPD_CHECK=1, and with it
// the tests below run too:
//
//   - tests driving the real agent CLIs (claude, pi, claude-agent-acp,
//     installed by `make agents`), including the network-namespace re-run;
//   - the web console's browser tests (Chromium, `make chromium`);
//   - soak, load and kill -9 loops, and anything else slow.
//
// Such a test calls RequireCheck first; a test that runs either way but
// does more under make check (the randomized turns test) asks Check. A test
// whose CLI is missing still skips with the install hint under make check.
package testutil

import (
	"os"
	"testing"
)

// CheckEnv is the environment variable `make check` sets to 1.
const CheckEnv = "AHPD_CHECK"

// Check reports whether this is a `make check` run (AHPD_CHECK=1).
func Check() bool { return os.Getenv(CheckEnv) == "1" }

// RequireCheck skips t unless this is a `make check` run; why says what the
// test needs or does that keeps it out of `make test` ("drives the claude
// CLI", "20 s soak").
func RequireCheck(t testing.TB, why string) {
	t.Helper()
	if !Check() {
		t.Skipf("%s: runs in make check (%s=1)", why, CheckEnv)
	}
}
