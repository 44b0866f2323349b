package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
)

// Site is what one daemon knows about confining its sessions: the
// launcher, what stays secret, $HOME, the default mode, what the config
// adds per backend, and whether the kernel can do it. The daemon builds
// one (NewSite); it is read-only afterwards and safe to share.
type Site struct {
	// Exe is the launcher: ahpd itself (os.Executable), or the test
	// binary whose TestMain calls RunIfLauncher.
	Exe string
	// TempRoot holds each session's private temp dir (<data dir>/tmp).
	TempRoot string
	// Secrets are what no confined process may read: the data dir, the
	// config file, the token files.
	Secrets []string
	// Home is $HOME.
	Home string
	// Default is the mode of a session that names none (sandbox.default).
	Default Mode
	// Backends are the paths the config adds per backend (provider id).
	Backends map[string]Paths
	// Network is how confined processes may use the network
	// (sandbox.network); Ports are the TCP ports NetworkModels allows.
	Network Network
	Ports   []uint16

	abi     int
	missing string
	// listenPort is the daemon's own port, once it listens (AllowOwnPort):
	// its host tools are served there.
	listenPort *atomic.Uint32
}

func (s *Site) ownPort() uint16 {
	if s.listenPort == nil {
		return 0
	}
	return uint16(s.listenPort.Load())
}

// AllowOwnPort adds the daemon's own port, known once it listens, to
// what NetworkModels allows.
func (s *Site) AllowOwnPort(port uint16) {
	if s != nil && s.listenPort != nil {
		s.listenPort.Store(uint32(port))
	}
}

// NewSite fills in the kernel's Landlock ABI and returns s.
func NewSite(s Site) *Site {
	s.abi, s.missing = kernelABI()
	s.listenPort = new(atomic.Uint32)
	if s.Default == "" {
		s.Default = Off
	}
	return &s
}

// testUnavailable, when set, is why Landlock is taken as missing: the
// switch tests use to see a mode refused (SetUnavailableForTest).
var testUnavailable atomic.Pointer[string]

// SetUnavailableForTest makes every Site answer as if the kernel had no
// Landlock, with reason, until the returned restore is called. A test
// using it must not run in parallel with tests that sandbox.
func SetUnavailableForTest(reason string) (restore func()) {
	testUnavailable.Store(&reason)
	return func() { testUnavailable.Store(nil) }
}

// UnavailableEnv, set to a reason, makes a process take Landlock as
// missing: the switch for tests that run ahpd as a command. It can only
// refuse modes, never confine less.
const UnavailableEnv = "AHPD_TEST_LANDLOCK_UNAVAILABLE"

// ABI is the kernel's Landlock ABI (0 without one) and why it is missing.
func (s *Site) ABI() (int, string) {
	if r := testUnavailable.Load(); r != nil {
		return 0, *r
	}
	if r := os.Getenv(UnavailableEnv); r != "" {
		return 0, r
	}
	if s == nil {
		return kernelABI()
	}
	return s.abi, s.missing
}

// Available says whether mode can run here, with the site's network
// rule, and why not.
func (s *Site) Available(m Mode) (bool, string) {
	abi, missing := s.ABI()
	if ok, why := Availability(m, abi, missing); !ok || !m.Confines() || s == nil {
		return ok, why
	}
	return NetworkAvailability(s.Network, abi)
}

// Policy is the policy of a session's processes: mode, the session (its
// URI names its private temp dir, created here), its working
// directories, and the paths its backend (provider) declared. An
// unavailable mode is an error, never a weaker policy.
func (s *Site) Policy(mode Mode, session, provider string, folders []string, backend Paths) (Policy, error) {
	return s.policy(mode, session, provider, folders, backend, true)
}

// Check is Policy without its side effect (the temp dir is not made):
// whether a session so set up could be confined, and why not.
func (s *Site) Check(mode Mode, session, provider string, folders []string, backend Paths) error {
	_, err := s.policy(mode, session, provider, folders, backend, false)
	return err
}

func (s *Site) policy(mode Mode, session, provider string, folders []string, backend Paths, create bool) (Policy, error) {
	if !mode.Confines() {
		return Policy{Mode: Off}, nil
	}
	if s == nil {
		return Policy{}, fmt.Errorf("sandbox %s: this daemon has no sandbox site", mode)
	}
	if ok, reason := s.Available(mode); !ok {
		return Policy{}, fmt.Errorf("sandbox %s is unavailable here: %s", mode, reason)
	}
	if s.TempRoot == "" {
		return Policy{}, errors.New("sandbox: no root for the sessions' temp dirs")
	}
	tmp := s.tempDir(session)
	if create {
		if err := os.MkdirAll(tmp, 0o700); err != nil {
			return Policy{}, fmt.Errorf("sandbox: the session's temp dir: %w", err)
		}
	}
	extra := s.Backends[provider]
	in := Inputs{
		Mode:    mode,
		Folders: resolveAll(folders),
		TempDir: resolve(tmp),
		Backend: Paths{
			ReadWrite: resolveAll(append(append([]string(nil), backend.ReadWrite...), extra.ReadWrite...)),
			ReadOnly:  resolveAll(append(append([]string(nil), backend.ReadOnly...), extra.ReadOnly...)),
		},
		Secrets: resolveAll(s.Secrets),
		Home:    resolve(s.Home),
	}
	p, err := Plan(in, listDir)
	if err != nil || s.Network != NetworkModels {
		return p, err
	}
	p.Network = NetworkModels
	p.ConnectTCP = append([]uint16(nil), s.Ports...)
	if own := s.ownPort(); own != 0 && !slices.Contains(p.ConnectTCP, own) {
		p.ConnectTCP = append(p.ConnectTCP, own)
	}
	return p, nil
}

// Wrapper is what a process of the session is started through: Wrap
// with this site's launcher and p (nil when p confines nothing).
func (s *Site) Wrapper(p Policy) func(*exec.Cmd) error {
	if !p.Mode.Confines() {
		return nil
	}
	exe := s.Exe
	return func(cmd *exec.Cmd) error { return Wrap(exe, p, cmd) }
}

// listDir is Plan's Lister on the real file system.
func listDir(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(des))
	for i, de := range des {
		names[i] = de.Name()
	}
	return names, nil
}

// resolve makes path absolute and follows its symlinks where it exists:
// Landlock grants the real file.
func resolve(path string) string {
	if path == "" {
		return ""
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return filepath.Clean(path)
}

func resolveAll(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if p != "" {
			out = append(out, resolve(p))
		}
	}
	return out
}

// tempDir is session's private temp dir: under TempRoot, named by a hash
// of the session URI (any URI makes a safe, fixed-length name).
func (s *Site) tempDir(session string) string {
	sum := sha256.Sum256([]byte(session))
	return filepath.Join(s.TempRoot, hex.EncodeToString(sum[:8]))
}

// RemoveTemp removes session's temp dir and what its processes left in
// it: disposeSession calls it. A nil Site, or no TempRoot, removes nothing.
func (s *Site) RemoveTemp(session string) error {
	if s == nil || s.TempRoot == "" {
		return nil
	}
	return os.RemoveAll(s.tempDir(session))
}
