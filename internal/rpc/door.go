package rpc

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// VS Code's renderer origins: the desktop workbench (Code, Insiders and OSS
// builds alike) is loaded from the vscode-file scheme under the fixed
// authority vscode-app (base/common/network.ts: Schemas.vscodeFileResource,
// VSCODE_AUTHORITY), so its browser WebSocket sends exactly this Origin.
var vscodeOrigins = []string{
	"vscode-file://vscode-app",
}

// DoorPolicy says which upgrade requests may reach the token check and the
// protocol: it answers cross-site websocket hijacking (a foreign Origin) and
// DNS rebinding (a foreign Host). It is pure: Check reads only its
// arguments, so every case is a table row.
type DoorPolicy struct {
	// TokenRequired: the deployment has tokens, so every upgrade already
	// proves itself with one and the Host is not checked.
	TokenRequired bool
	// AllowedOrigins are browser origins let in without a token, as
	// "scheme://host[:port]", compared case-insensitively.
	AllowedOrigins []string
	// AllowedHosts are Host header names (without port) let in when no
	// token is configured, beside the loopback names.
	AllowedHosts []string
}

// DoorVerdict is what Check decides.
type DoorVerdict struct {
	// Status is 0 to let the request on, or the HTTP status to refuse it
	// with (403).
	Status int
	// Reason is the one-line explanation logged and answered.
	Reason string
}

// Check decides an upgrade. host is the request's Host header, origin its
// Origin header ("" when absent: scripts, CLIs and Node clients send none),
// and tokenValid whether it presented a configured token.
func (p DoorPolicy) Check(host, origin string, tokenValid bool) DoorVerdict {
	if !p.TokenRequired && !p.hostAllowed(host) {
		return DoorVerdict{Status: http.StatusForbidden,
			Reason: "Host " + quoteHeader(host) + " is not a loopback name and not in allowedHosts"}
	}
	if origin == "" || tokenValid || p.originAllowed(host, origin) {
		return DoorVerdict{}
	}
	return DoorVerdict{Status: http.StatusForbidden,
		Reason: "Origin " + quoteHeader(origin) + " is not allowed: add it to allowedOrigins or present a token"}
}

// hostAllowed reports whether a Host header names this machine's loopback
// (any port) or a configured host.
func (p DoorPolicy) hostAllowed(host string) bool {
	name := hostName(host)
	if name == "" {
		return false
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	if ip := net.ParseIP(name); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, h := range p.AllowedHosts {
		if strings.EqualFold(hostName(h), name) {
			return true
		}
	}
	return false
}

// originAllowed reports whether origin is VS Code's, the daemon's own (the
// page it serves, same scheme-less host and port as the request), or
// configured.
func (p DoorPolicy) originAllowed(host, origin string) bool {
	o := strings.TrimSuffix(strings.ToLower(origin), "/")
	for _, v := range vscodeOrigins {
		if o == v {
			return true
		}
	}
	for _, a := range p.AllowedOrigins {
		if o == strings.TrimSuffix(strings.ToLower(a), "/") {
			return true
		}
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, host)
}

// hostName is a Host header without its port and brackets, lower case.
func hostName(host string) string {
	h := strings.ToLower(strings.TrimSpace(host))
	if name, _, err := net.SplitHostPort(h); err == nil {
		return strings.Trim(name, "[]")
	}
	return strings.Trim(h, "[]")
}

// quoteHeader keeps a refused header short and printable in logs and the
// 403 body.
func quoteHeader(v string) string {
	if len(v) > 200 {
		v = v[:200] + "…"
	}
	return `"` + strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, v) + `"`
}
