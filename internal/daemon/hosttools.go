package daemon

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/ahpd/ahpd/internal/canvas"
	"github.com/ahpd/ahpd/internal/hosttools"
)

// withHostTools serves the host's tools to agents at hosttools.Path on the
// daemon's own port (streamable HTTP MCP, each conversation's own bearer
// credential), file canvases at canvas.FilesPath (read-only, under each
// canvas's token), and everything else as next does. It also tells the
// host the URL its agents reach the tools at: loopback when the daemon
// listens on every address, since the agents run on this machine.
func (d *Daemon) withHostTools(next http.Handler) http.Handler {
	if addr, ok := d.listener.Addr().(*net.TCPAddr); ok {
		ip := addr.IP
		if ip == nil || ip.IsUnspecified() {
			ip = net.IPv4(127, 0, 0, 1)
		}
		d.host.SetToolsURL("http://" + net.JoinHostPort(ip.String(), strconv.Itoa(addr.Port)) + hosttools.Path)
	}
	tools := endedOnStop(d.toolsCtx, d.host.ToolsHandler())
	canvasFiles := d.host.CanvasFilesHandler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == hosttools.Path || strings.HasPrefix(r.URL.Path, hosttools.Path+"/") {
			tools.ServeHTTP(w, r)
			return
		}
		if strings.HasPrefix(r.URL.Path, canvas.FilesPath) {
			// File canvases, read-only under each canvas's token.
			canvasFiles.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// endedOnStop serves next with each request's context also ended by stop:
// an agent may hold a host-tools request open for as long as it lives (a
// streamable MCP POST), and http.Server.Shutdown waits for every request.
func endedOnStop(stop context.Context, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(stop, cancel)()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
