package daemon

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ahpd/ahpd/internal/sandbox"
)

// sandboxSite is how this daemon confines its sessions' processes
// (issue 36): the launcher is this very executable (ahpd sandbox-exec,
// or a test binary whose TestMain runs sandbox.RunIfLauncher), each
// session's temp dir is under <data dir>/tmp, and the data dir, the
// config file and the token file are what no sandboxed process may read.
func sandboxSite(cfg Config, log *slog.Logger) (*sandbox.Site, error) {
	mode, err := sandbox.ParseMode(cfg.Sandbox.Default)
	if err != nil {
		return nil, fmt.Errorf("%w: sandbox.default: %v", ErrUsage, err)
	}
	network, err := sandbox.ParseNetwork(cfg.Sandbox.Network)
	if err != nil {
		return nil, fmt.Errorf("%w: sandbox.network: %v", ErrUsage, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: find the launcher (this executable): %w", err)
	}
	home, _ := os.UserHomeDir()
	secrets := []string{cfg.DataDir, cfg.ConnectionTokenFile, cfg.ConfigFile, DefaultConfigFile()}
	site := sandbox.NewSite(sandbox.Site{
		Exe:      exe,
		TempRoot: filepath.Join(cfg.DataDir, "tmp"),
		Secrets:  secrets,
		Home:     home,
		Default:  mode,
		Backends: cfg.Sandbox.Backends,
		Network:  network,
		Ports:    networkPorts(cfg),
	})
	abi, why := site.ABI()
	if ok, reason := site.Available(mode); !ok {
		// Not a silent downgrade: every session that takes the default is
		// refused at createSession with this reason.
		log.Warn("sandbox.default cannot run here; sessions that take it are refused", "mode", string(mode), "reason", reason)
	} else {
		log.Info("sandbox", "default", string(mode), "landlockABI", abi, "missing", why, "network", cmpOr(string(network), "open"), "tcpPorts", site.Ports)
	}
	return site, nil
}

// networkPorts are the TCP ports sandbox.network models lets a sandboxed
// process connect to (the daemon's own is added once it listens): the
// ports of every http(s) URL the agents' settings name (their model
// endpoints, whatever key holds them), 443 for the hosted APIs a backend
// reaches when it names none, 53 for DNS over TCP, and allowPorts.
func networkPorts(cfg Config) []uint16 {
	ports := []uint16{53, 443}
	add := func(p uint16) {
		if p != 0 && !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	for _, raw := range cfg.Agents {
		var v any
		if json.Unmarshal(raw, &v) == nil {
			for _, p := range urlPorts(v) {
				add(p)
			}
		}
	}
	for _, p := range cfg.Sandbox.AllowPorts {
		add(p)
	}
	slices.Sort(ports)
	return ports
}

// urlPorts are the ports of the http(s) URLs among v's strings, at any
// depth.
func urlPorts(v any) []uint16 {
	var out []uint16
	switch t := v.(type) {
	case string:
		u, err := url.Parse(strings.TrimSpace(t))
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		if n, err := strconv.ParseUint(port, 10, 16); err == nil {
			out = append(out, uint16(n))
		}
	case []any:
		for _, e := range t {
			out = append(out, urlPorts(e)...)
		}
	case map[string]any:
		for _, e := range t {
			out = append(out, urlPorts(e)...)
		}
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
