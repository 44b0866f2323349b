package sandbox

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Paths are paths a process may write (ReadWrite) and only read
// (ReadOnly): directories, or single files.
type Paths struct {
	ReadWrite []string `json:"readWrite,omitempty"`
	ReadOnly  []string `json:"readOnly,omitempty"`
}

// SystemPaths are what every confined process reads (the binaries,
// libraries, configuration and /proc the CLIs and shells need) and
// writes (/dev: the terminal, /dev/null, /dev/shm). The shared /tmp is
// not among them: a session has a private temp dir instead.
var SystemPaths = Paths{
	ReadWrite: []string{"/dev"},
	ReadOnly:  []string{"/usr", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/opt", "/proc", "/sys", "/run"},
}

// Inputs are what a session's policy is made from. Every path is
// absolute and, where it exists, already resolved through its symlinks
// (Landlock grants apply to the real files).
type Inputs struct {
	Mode Mode
	// Folders are the session's working directories (its worktree, where
	// it has one).
	Folders []string
	// TempDir is the session's private temp dir (TMPDIR).
	TempDir string
	// Backend are the directories the backend's CLI needs (its install,
	// its state and caches), with what the config adds for the backend.
	Backend Paths
	// System are the system's paths (SystemPaths when empty).
	System Paths
	// Secrets are what no confined process may read: the daemon's data
	// dir, its config file, its token files.
	Secrets []string
	// Home is $HOME: read in Workspace, not in Strict.
	Home string
}

// Policy is what a confined process may read and write. It is what the
// launcher receives (as JSON) and applies.
type Policy struct {
	Mode      Mode     `json:"mode"`
	ReadWrite []string `json:"readWrite,omitempty"`
	ReadOnly  []string `json:"readOnly,omitempty"`
	// TempDir is where TMPDIR points.
	TempDir string `json:"tempDir,omitempty"`
	// Network is NetworkOpen (any connection) or NetworkModels: TCP
	// connections only to the ports of ConnectTCP (Landlock ABI 4).
	Network Network `json:"network,omitempty"`
	// ConnectTCP are the ports a NetworkModels process may connect to.
	ConnectTCP []uint16 `json:"connectTCP,omitempty"`
}

// Lister lists the names of a directory's entries: the one piece of I/O
// Plan needs, handed in (os.ReadDir's names in the daemon, a map in
// tests).
type Lister func(dir string) ([]string, error)

// ConflictError is a session Plan refuses: a path it must grant holds a
// secret, and Landlock, an allow-list, cannot take a subpath back out of
// a granted one.
type ConflictError struct {
	// Role says which grant ("working directory", "backend path", ...).
	Role   string
	Path   string
	Secret string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s %s holds %s, which a sandboxed agent must never read; Landlock cannot hide a path inside a granted one, so serve a folder that does not hold the daemon's data, config or tokens", e.Role, e.Path, e.Secret)
}

// Plan computes the policy of a session (pure: the only I/O is list).
//
// Narrow grants (the session's folders, its temp dir, the backend's
// paths) that hold a secret are refused with a ConflictError. Broad read
// grants (the system's paths, and $HOME in Workspace) that hold a secret
// are granted by their entries instead: Plan lists the root, grants each
// entry that holds no secret whole, skips each entry that is a secret,
// and descends only into those that hold one. So with the data dir in
// ~/.local/share/ahpd, $HOME is granted as its entries but ~/.local, which
// is granted as its entries but ~/.local/share, which is granted as its
// entries but ahpd. What is created later at a split level (a new entry
// of $HOME's top level) is not readable until the next process starts.
func Plan(in Inputs, list Lister) (Policy, error) {
	if !in.Mode.Confines() {
		return Policy{Mode: Off}, nil
	}
	system := in.System
	if len(system.ReadWrite) == 0 && len(system.ReadOnly) == 0 {
		system = SystemPaths
	}
	var secrets []string
	for _, s := range in.Secrets {
		if s == "" {
			continue
		}
		if !filepath.IsAbs(s) {
			return Policy{}, fmt.Errorf("sandbox: secret path %q is not absolute", s)
		}
		secrets = append(secrets, filepath.Clean(s))
	}
	p := Policy{Mode: in.Mode, TempDir: in.TempDir}
	narrow := func(role string, paths []string, into *[]string) error {
		for _, path := range paths {
			if path == "" {
				continue
			}
			if !filepath.IsAbs(path) {
				return fmt.Errorf("sandbox: %s %q is not absolute", role, path)
			}
			path = filepath.Clean(path)
			for _, s := range secrets {
				if Holds(path, s) {
					return &ConflictError{Role: role, Path: path, Secret: s}
				}
			}
			*into = append(*into, path)
		}
		return nil
	}
	if in.TempDir == "" {
		return Policy{}, fmt.Errorf("sandbox: no temp dir for the session")
	}
	if err := narrow("working directory", in.Folders, &p.ReadWrite); err != nil {
		return Policy{}, err
	}
	if err := narrow("temp dir", []string{in.TempDir}, &p.ReadWrite); err != nil {
		return Policy{}, err
	}
	if err := narrow("backend path", in.Backend.ReadWrite, &p.ReadWrite); err != nil {
		return Policy{}, err
	}
	if err := narrow("backend path", in.Backend.ReadOnly, &p.ReadOnly); err != nil {
		return Policy{}, err
	}
	broadRead := slices.Clone(system.ReadOnly)
	if in.Mode == Workspace && in.Home != "" {
		broadRead = append(broadRead, in.Home)
	}
	for _, root := range system.ReadWrite {
		granted, err := split(filepath.Clean(root), secrets, list)
		if err != nil {
			return Policy{}, err
		}
		p.ReadWrite = append(p.ReadWrite, granted...)
	}
	for _, root := range broadRead {
		if !filepath.IsAbs(root) {
			return Policy{}, fmt.Errorf("sandbox: path %q is not absolute", root)
		}
		granted, err := split(filepath.Clean(root), secrets, list)
		if err != nil {
			return Policy{}, err
		}
		p.ReadOnly = append(p.ReadOnly, granted...)
	}
	p.ReadWrite = tidy(p.ReadWrite)
	p.ReadOnly = tidy(p.ReadOnly)
	return p, nil
}

// split grants root whole when it holds no secret, and otherwise each
// of its entries that is not a secret, descending into those that hold
// one. A root that is itself a secret grants nothing.
func split(root string, secrets []string, list Lister) ([]string, error) {
	holdsOne := false
	for _, s := range secrets {
		if s == root {
			return nil, nil
		}
		if Holds(root, s) {
			holdsOne = true
		}
	}
	if !holdsOne {
		return []string{root}, nil
	}
	names, err := list(root)
	if err != nil {
		return nil, fmt.Errorf("sandbox: list %s to keep %s out: %w", root, strings.Join(secrets, ", "), err)
	}
	var out []string
	for _, name := range names {
		if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
			continue
		}
		sub, err := split(filepath.Join(root, name), secrets, list)
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
	}
	return out, nil
}

// Holds reports whether path is dir or lies beneath it (both clean and
// absolute).
func Holds(dir, path string) bool {
	if dir == path || dir == "/" {
		return true
	}
	return strings.HasPrefix(path, dir+"/")
}

// tidy sorts and removes duplicates.
func tidy(paths []string) []string {
	slices.Sort(paths)
	return slices.Compact(paths)
}

// Summary is the policy in one line for the session's log.
func (p Policy) Summary() string {
	if !p.Mode.Confines() {
		return "off"
	}
	return fmt.Sprintf("%s: write %s; read %s; TMPDIR %s", p.Mode, strings.Join(p.ReadWrite, ", "), strings.Join(p.ReadOnly, ", "), p.TempDir)
}
