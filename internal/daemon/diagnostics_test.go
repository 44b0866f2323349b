package daemon_test

import (
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// TestDiagnosticsNeedTheirGrant: the window's network diagnostics
// (getNetworkDiagnosticsInfo, getManagedSettingsDiagnostics and
// diagnosticsFetch, which fetches a URL from the host) are refused to a
// token without host:diagnose, the connection kept; a fetch of anything
// but an http(s) URL is refused; a token with the grant is answered.
func TestDiagnosticsNeedTheirGrant(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *daemon.Config) {
		c.Tokens = []daemon.TokenConfig{
			{Token: "reader-token", Principal: "user:reader", Grants: []string{"session:read"}},
			{Token: "doctor-token", Principal: "user:doctor", Grants: []string{"host:diagnose"}},
		}
	})
	reader := ahptest.Dial(t, e.d.URL(), "reader-token")
	reader.Initialize("reader", ahp.RootURI)
	for _, m := range []string{"getNetworkDiagnosticsInfo", "getManagedSettingsDiagnostics", "diagnosticsFetch"} {
		if _, err := reader.Call(m, map[string]any{"url": "http://127.0.0.1:1/"}); err == nil || err.Code != ahp.CodePermissionDenied {
			t.Fatalf("%s without host:diagnose: %v, want -32009", m, err)
		}
	}
	reader.MustCall("ping", map[string]any{"channel": ahp.RootURI}) // the connection stays
	doctor := ahptest.Dial(t, e.d.URL(), "doctor-token")
	doctor.Initialize("doctor", ahp.RootURI)
	for _, bad := range []string{"file:///etc/passwd", "ftp://127.0.0.1/", "not a url", ""} {
		if _, err := doctor.Call("diagnosticsFetch", map[string]any{"url": bad}); err == nil || err.Code != ahp.CodeInvalidParams {
			t.Fatalf("diagnosticsFetch %q: %v, want -32602", bad, err)
		}
	}
	doctor.MustCall("getNetworkDiagnosticsInfo", map[string]any{})
}
