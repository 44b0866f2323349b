// Package sandbox confines a session's agent processes with the kernel's
// Landlock LSM (issue 36). Its parts:
//
//   - the modes a session chooses (off, workspace, strict) and what each
//     needs of the kernel (mode.go);
//   - the policy: from the session's folders, its private temp dir, the
//     backend's own directories and what the daemon keeps secret, the
//     paths an agent may read and those it may write (policy.go, pure);
//   - the launcher: a sandboxed process starts as ahpd itself
//     (`ahpd sandbox-exec`), which restricts itself and execs the command,
//     so the daemon's own threads stay free and every child of the agent
//     inherits the rules (launcher_linux.go, Wrap);
//   - the site: what one daemon knows about all of it (site.go).
//
// The daemon builds one Site; the host checks a session's mode against it
// at createSession; the chat asks it for a session's policy and wraps every
// process of the session with it.
package sandbox

import (
	"fmt"
	"strings"
)

// Mode is how a session's processes are confined.
type Mode string

const (
	// Off: the processes run with all of the daemon user's rights.
	Off Mode = "off"
	// Workspace: write only the session's folders, its private temp dir
	// and the backend's own directories; read the system and $HOME (but
	// never the daemon's data dir, config or tokens).
	Workspace Mode = "workspace"
	// Strict: as Workspace, and nothing of $HOME outside the backend's
	// directories and the session's folders.
	Strict Mode = "strict"
)

// Modes are the modes in the order a client lists them.
var Modes = []Mode{Off, Workspace, Strict}

// MinABI is the oldest Landlock ABI the confining modes run on: ABI 3 is
// the first to govern truncate(2); on older kernels an agent could empty
// any file it may read, so a mode is not offered there rather than
// offered weaker.
const MinABI = 3

// ParseMode reads a mode's name; "" is Off.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.TrimSpace(s)); m {
	case "", Off:
		return Off, nil
	case Workspace, Strict:
		return m, nil
	}
	return "", fmt.Errorf("sandbox mode %q: want one of off, workspace, strict", s)
}

// Confines reports whether the mode restricts anything.
func (m Mode) Confines() bool { return m == Workspace || m == Strict }

// Title is the mode's label in a client's picker.
func (m Mode) Title() string {
	switch m {
	case Workspace:
		return "Workspace"
	case Strict:
		return "Strict"
	}
	return "Off"
}

// Description says what the mode allows, for resolveSessionConfig.
func (m Mode) Description() string {
	switch m {
	case Workspace:
		return "The agent and its tools write only the session's folders, a temp dir of its own and the backend's own directories; they read the system and your home folder, never the daemon's data, config or tokens (Landlock)."
	case Strict:
		return "As Workspace, and nothing of your home folder outside the session's folders and the backend's own directories (Landlock)."
	}
	return "The agent and its tools run with all of the daemon user's rights."
}

// Availability says whether a mode can run on a kernel with Landlock ABI
// abi (0: none), and why not when it cannot.
func Availability(m Mode, abi int, missing string) (ok bool, reason string) {
	if !m.Confines() {
		return true, ""
	}
	switch {
	case abi <= 0 && missing != "":
		return false, "Landlock is not available: " + missing
	case abi <= 0:
		return false, "Landlock is not available on this kernel"
	case abi < MinABI:
		return false, fmt.Sprintf("Landlock ABI %d is older than %d, the first that governs truncate", abi, MinABI)
	}
	return true, ""
}

// Network is how a confined process may use the network.
type Network string

// Networks. Open is the default; Models limits TCP connections to the
// model endpoints' ports the daemon's config names (and the daemon's own
// port, for its host tools), through Landlock's network rules (ABI 4).
// UDP stays open (a resolver asks DNS over it).
const (
	NetworkOpen   Network = ""
	NetworkModels Network = "models"
)

// NetworkMinABI is the oldest Landlock ABI that governs TCP connect(2).
const NetworkMinABI = 4

// ParseNetwork reads a network's name: "", "open" or "models".
func ParseNetwork(s string) (Network, error) {
	switch strings.TrimSpace(s) {
	case "", "open":
		return NetworkOpen, nil
	case string(NetworkModels):
		return NetworkModels, nil
	}
	return "", fmt.Errorf("sandbox network %q: want open or models", s)
}

// NetworkAvailability says whether network can be enforced on a kernel
// with Landlock ABI abi, and why not.
func NetworkAvailability(n Network, abi int) (ok bool, reason string) {
	if n == NetworkModels && abi < NetworkMinABI {
		return false, fmt.Sprintf("sandbox.network models needs Landlock ABI %d (TCP rules); the kernel has %d", NetworkMinABI, abi)
	}
	return true, ""
}
