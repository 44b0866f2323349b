// Package localendpoint publishes ahpd in VS Code's local agent-host
// endpoint registry, so the tools that look for the agent hosts of a
// machine find it: `code agent ps|logs|stop|kill|endpoints|host` (the VS
// Code CLI) and a VS Code window reaching this machine over SSH or into a
// dev container, which runs `code agent endpoints` there.
//
// The registry is a directory of one JSON file per running agent host,
// `<VS Code user data>/agent-host/local-endpoint/entries/<sha256>.json`
// (microsoft/vscode src/vs/platform/agentHost/LOCAL_ENDPOINT.md,
// common/agentHostEndpointRegistry.ts, cli/src/tunnels/agent_host_registry.rs).
// ahpd is a "standalone" host on TCP, as the VS Code CLI's `code agent host`
// is. This file holds the entry and its rules (no I/O); paths.go where the
// user-data directories are; registry.go the writes, removals and pruning.
// internal/daemon calls it when it starts and stops.
package localendpoint

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
)

// SchemaVersion is the registry's entry schema this package writes and
// reads (AGENT_HOST_ENDPOINT_REGISTRY_SCHEMA_VERSION upstream). Readers
// ignore an entry of any other version.
const SchemaVersion = 2

// The kinds of process an entry names. VS Code's editor windows publish
// "editor" entries (a Unix socket or named pipe); ahpd and `code agent
// host` publish "standalone" ones (TCP).
const (
	TypeEditor     = "editor"
	TypeStandalone = "standalone"
)

// The endpoint kinds: "socket" {path} and "tcp" {host, port}.
const (
	EndpointSocket = "socket"
	EndpointTCP    = "tcp"
)

// LoopbackHost is the only address ahpd publishes: whoever reads the
// registry runs on this machine.
const LoopbackHost = "127.0.0.1"

// Entry is one registry file's JSON object. Field names and shapes are the
// upstream schema's; quality and tunnelName are optional upstream and ahpd
// sets neither (it is no VS Code build and opens no tunnel).
type Entry struct {
	SchemaVersion   int      `json:"schemaVersion"`
	Type            string   `json:"type"`
	PID             int      `json:"pid"`
	InstanceID      string   `json:"instanceId"`
	ProtocolVersion string   `json:"protocolVersion"`
	ConnectionToken string   `json:"connectionToken"`
	Endpoint        Endpoint `json:"endpoint"`
}

// Endpoint is how to connect: {"type":"tcp","host","port"} or
// {"type":"socket","path"}. Readers use it as written, never rebuilt: a
// client dials ws://host:port/ and presents the entry's token as ?tkn=.
type Endpoint struct {
	Type string `json:"type"`
	Host string `json:"host,omitempty"`
	Port int    `json:"port,omitempty"`
	Path string `json:"path,omitempty"`
}

// NewStandalone is ahpd's own entry: a standalone host on 127.0.0.1:port,
// with a fresh random instance id (which, with the pid, names the file, so
// a reused pid never collides with an older entry).
func NewStandalone(pid, port int, protocolVersion, token string) Entry {
	return Entry{
		SchemaVersion:   SchemaVersion,
		Type:            TypeStandalone,
		PID:             pid,
		InstanceID:      NewInstanceID(),
		ProtocolVersion: protocolVersion,
		ConnectionToken: token,
		Endpoint:        Endpoint{Type: EndpointTCP, Host: LoopbackHost, Port: port},
	}
}

// NewInstanceID is 16 random bytes as unpadded base64url, as VS Code's
// editor makes its own.
func NewInstanceID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// FileName is the entry's canonical file name: the lowercase hex SHA-256 of
// "type\0pid\0instanceId", then ".json". VS Code and its CLI derive the same
// name and ignore an entry stored under any other, so a misnamed copy can
// neither shadow nor delete the real one.
func (e Entry) FileName() string {
	sum := sha256.Sum256([]byte(e.Type + "\x00" + strconv.Itoa(e.PID) + "\x00" + e.InstanceID))
	return hex.EncodeToString(sum[:]) + ".json"
}

// Parse reads one entry file's bytes. ok is false for anything VS Code's
// readers would drop too: not JSON, another schema version, an unknown
// type, a pid not above zero, an endpoint of an unknown kind or a TCP port
// out of range.
func Parse(data []byte) (e Entry, ok bool) {
	if err := json.Unmarshal(data, &e); err != nil {
		return Entry{}, false
	}
	if e.SchemaVersion != SchemaVersion || e.PID <= 0 || e.InstanceID == "" {
		return Entry{}, false
	}
	switch e.Type {
	case TypeEditor, TypeStandalone:
	default:
		return Entry{}, false
	}
	switch e.Endpoint.Type {
	case EndpointTCP:
		if e.Endpoint.Host == "" || e.Endpoint.Port <= 0 || e.Endpoint.Port > 65535 {
			return Entry{}, false
		}
	case EndpointSocket:
		if e.Endpoint.Path == "" {
			return Entry{}, false
		}
	default:
		return Entry{}, false
	}
	return e, true
}

// Prunable reports whether a start of ahpd may remove the entry stored
// under fileName once its pid is known dead: only a standalone TCP entry on
// loopback under its canonical name, the kind ahpd writes. An editor's
// entry is VS Code's own to clean up, dead or alive.
func Prunable(e Entry, fileName string) bool {
	return e.Type == TypeStandalone && e.Endpoint.Type == EndpointTCP &&
		e.Endpoint.Host == LoopbackHost && fileName == e.FileName()
}

// PublishPort decides whether a daemon listening on addr (host:port, as
// net.Listener.Addr().String() gives it) can be published, and the port: a
// reader dials 127.0.0.1, so the listener must accept there — bound to
// 127.0.0.1 itself, or to every address (0.0.0.0, ::). Any other address
// (a LAN address, ::1 only, another 127/8 address) is not published, and
// the reason says why.
func PublishPort(addr string) (port int, err error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("listen address %q: %w", addr, err)
	}
	port, err = strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return 0, fmt.Errorf("listen address %q: no port", addr)
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return 0, fmt.Errorf("listens on %s, not an address", host)
	case ip.Equal(net.IPv4(127, 0, 0, 1)), ip.IsUnspecified():
		return port, nil
	default:
		return 0, fmt.Errorf("listens on %s, which is not reachable at %s", host, LoopbackHost)
	}
}
