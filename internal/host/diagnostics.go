package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/hosttools"
)

// The network diagnostics a VS Code window's troubleshooting pane asks a
// host for (protocolContractsSuite's management cases): not AHP commands,
// but the ones every host VS Code connects to answers.
const (
	methodNetworkDiagnostics         = "getNetworkDiagnosticsInfo"
	methodManagedSettingsDiagnostics = "getManagedSettingsDiagnostics"
	methodDiagnosticsFetch           = "diagnosticsFetch"
)

// diagnoseFetchTimeout and diagnoseFetchBytes bound one diagnosticsFetch.
const (
	diagnoseFetchTimeout = 10 * time.Second
	diagnoseFetchBytes   = 64 << 10
)

// diagnostics answers them. It runs on the connection's lane: a fetch
// waits there, never on the read loop.
type diagnostics struct {
	version string
	agents  *agent.Registry
	tools   *toolDesk // where the daemon listens
	client  *http.Client
}

func newDiagnostics(version string, agents *agent.Registry, tools *toolDesk) *diagnostics {
	if version == "" {
		version = "dev" // a build without a version stamp (tests, go run)
	}
	return &diagnostics{version: version, agents: agents, tools: tools, client: &http.Client{
		Timeout: diagnoseFetchTimeout,
		// A probe reports what the URL itself answers.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// request answers a diagnostics method; ok is false for any other.
func (d *diagnostics) request(ctx context.Context, cl *client, method string, params json.RawMessage) (res any, ok bool, err error) {
	switch method {
	case methodNetworkDiagnostics, methodManagedSettingsDiagnostics, methodDiagnosticsFetch:
	default:
		return nil, false, nil
	}
	if !cl.principal.Can(auth.HostDiagnose) {
		return nil, true, ahp.WithData(ahp.Errorf(ahp.ErrPermissionDenied, "%s needs the grant %s", method, auth.HostDiagnose),
			map[string]any{"grant": auth.HostDiagnose})
	}
	switch method {
	case methodNetworkDiagnostics:
		return d.info(), true, nil
	case methodManagedSettingsDiagnostics:
		return d.managed(), true, nil
	}
	var p struct {
		URL string `json:"url"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, true, err
	}
	res, err = d.fetch(ctx, p.URL)
	return res, true, err
}

// networkEndpoint is one URL the pane probes with diagnosticsFetch.
type networkEndpoint struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

type networkInfo struct {
	Version       string            `json:"version"`
	OS            string            `json:"os"`
	Arch          string            `json:"arch"`
	ProxySettings map[string]string `json:"proxySettings"`
	ProxyEnv      map[string]string `json:"proxyEnv"`
	Endpoints     []networkEndpoint `json:"endpoints"`
}

// info is the host's version and platform (named as Node names them, as
// the window shows them), the proxy its process would use, and the
// endpoints worth probing: the daemon's own health check.
func (d *diagnostics) info() networkInfo {
	n := networkInfo{Version: d.version, OS: runtime.GOOS, Arch: nodeArch(runtime.GOARCH),
		ProxySettings: map[string]string{}, ProxyEnv: map[string]string{}, Endpoints: []networkEndpoint{}}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"} {
		if v, ok := os.LookupEnv(k); ok {
			n.ProxyEnv[k] = withoutUserinfo(v)
		}
	}
	if u := d.tools.url.Load(); u != nil && *u != "" {
		n.Endpoints = append(n.Endpoints, networkEndpoint{Name: "ahpd", URL: strings.TrimSuffix(*u, hosttools.Path) + "/healthz"})
	}
	return n
}

// withoutUserinfo drops a proxy URL's credentials: a diagnosis names the
// proxy, never its password.
func withoutUserinfo(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.User == nil {
		return v
	}
	u.User = nil
	return u.String()
}

type managedSettings struct {
	Provider string         `json:"provider"`
	Settings map[string]any `json:"settings"`
}

// managed lists every provider with the settings a policy layer forces on
// it: ahpd has none (its config is the operator's own file), so each is
// empty, listed as VS Code's window lists them beside the others.
func (d *diagnostics) managed() []managedSettings {
	out := []managedSettings{}
	for _, p := range d.agents.Providers() {
		out = append(out, managedSettings{Provider: p, Settings: map[string]any{}})
	}
	return out
}

type fetchResult struct {
	URL        string  `json:"url"`
	Status     int     `json:"status,omitempty"`
	StatusText string  `json:"statusText,omitempty"`
	Error      string  `json:"error,omitempty"`
	DurationMs float64 `json:"durationMs"`
}

// fetch probes one http(s) URL from the host: its status, or why it
// failed, and how long it took. The body is read to a bound and dropped.
func (d *diagnostics) fetch(ctx context.Context, raw string) (fetchResult, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fetchResult{}, ahp.Errorf(ahp.ErrInvalidParams, "params.url: %q is not an http or https URL", raw)
	}
	res := fetchResult{URL: raw}
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return fetchResult{}, ahp.Errorf(ahp.ErrInvalidParams, "params.url: %v", err)
	}
	resp, err := d.client.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, diagnoseFetchBytes))
		resp.Body.Close()
		res.Status, res.StatusText = resp.StatusCode, http.StatusText(resp.StatusCode)
	} else {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		res.Error = fmt.Sprint(err)
	}
	res.DurationMs = float64(time.Since(start).Microseconds()) / 1000
	return res, nil
}

// nodeArch names an architecture as Node's process.arch does.
func nodeArch(goarch string) string {
	switch goarch {
	case "amd64":
		return "x64"
	case "386":
		return "ia32"
	}
	return goarch
}
