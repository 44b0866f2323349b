package localendpoint

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ahpd/ahpd/internal/confine"
)

// The registry's directories under a user-data directory. The last two
// are kept owner-only (0700), as VS Code and its CLI keep them; the files
// are 0600: each holds a connection token.
var registryDirs = []string{"agent-host", "local-endpoint", "entries"}

// Bounds on what a prune reads: the first maxScan names of the entries
// directory, and entry files up to maxEntryBytes (a real one is ~300 bytes).
const (
	maxScan       = 4096
	maxEntryBytes = 64 << 10
)

// ErrRefused is a registry path ahpd will not write through: a link, a
// non-directory or another user's directory where a registry directory
// should be, or a file that would land outside the user-data directory.
var ErrRefused = errors.New("refused")

// EntriesDir is where userData's registry files are.
func EntriesDir(userData string) string {
	return filepath.Join(append([]string{userData}, registryDirs...)...)
}

// Publish writes e as its own file in userData's registry and returns the
// file's path. userData must be an existing absolute directory (it may be
// a link to one: users move their VS Code data). Below it each registry
// directory is made when missing and must then be a real directory of this
// user, not a link; the file must resolve inside userData. The file is
// written to a fresh 0600 temporary name in the same directory, synced and
// renamed over its canonical name, so a reader sees it whole or not at all
// (readers skip the non-.json temporary).
func Publish(userData string, e Entry) (string, error) {
	entries, root, err := prepare(userData)
	if err != nil {
		return "", err
	}
	final := filepath.Join(entries, e.FileName())
	if _, err := confine.ResolveNew(final, []string{root}); err != nil {
		return "", fmt.Errorf("local endpoint %s: %w: %w", final, ErrRefused, err)
	}
	data, err := json.Marshal(e)
	if err != nil {
		return "", fmt.Errorf("local endpoint entry: %w", err)
	}
	tmp := filepath.Join(entries, randomHex()+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil {
		return "", fmt.Errorf("local endpoint %s: %w", tmp, err)
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, final)
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("local endpoint %s: %w", final, werr)
	}
	// A umask can only narrow 0600; this keeps it exact whatever it was.
	if err := os.Chmod(final, 0o600); err != nil {
		return final, fmt.Errorf("local endpoint %s: %w", final, err)
	}
	return final, nil
}

// Remove deletes one published file by its exact path; a file already gone
// is no error. The entries directory stays: another host may be about to
// write into it.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove local endpoint %s: %w", path, err)
	}
	return nil
}

// Prune removes from userData's registry the entries a dead ahpd (or a
// dead `code agent host`) left: standalone TCP entries on loopback, under
// their canonical names, whose pid alive says is gone. Editor entries,
// malformed files, links, temporaries and entries of a live pid are left
// alone; a missing registry prunes nothing. It returns the paths removed.
func Prune(userData string, alive func(pid int) bool) ([]string, error) {
	entries, err := existingEntriesDir(userData)
	if err != nil || entries == "" {
		return nil, err
	}
	d, err := os.Open(entries)
	if err != nil {
		return nil, fmt.Errorf("local endpoints %s: %w", entries, err)
	}
	names, err := d.ReadDir(maxScan)
	d.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("local endpoints %s: %w", entries, err)
	}
	var removed []string
	for _, de := range names {
		name := de.Name()
		if !strings.HasSuffix(name, ".json") || !de.Type().IsRegular() {
			continue
		}
		p := filepath.Join(entries, name)
		e, ok := readEntry(p)
		if !ok || !Prunable(e, name) || alive(e.PID) {
			continue
		}
		if err := Remove(p); err != nil {
			return removed, err
		}
		removed = append(removed, p)
	}
	return removed, nil
}

// readEntry reads and parses one entry file, never through a link and
// never more than maxEntryBytes.
func readEntry(p string) (Entry, bool) {
	f, err := os.OpenFile(p, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return Entry{}, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxEntryBytes+1))
	if err != nil || len(data) > maxEntryBytes {
		return Entry{}, false
	}
	return Parse(data)
}

// prepare makes (when missing) and checks userData's registry directories,
// returning the entries directory and userData's real path.
func prepare(userData string) (entries, root string, err error) {
	root, err = realDir(userData)
	if err != nil {
		return "", "", err
	}
	dir := root
	for i, name := range registryDirs {
		dir = filepath.Join(dir, name)
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", "", fmt.Errorf("local endpoint directory %s: %w", dir, err)
		}
		if err := checkDir(dir); err != nil {
			return "", "", err
		}
		if i > 0 {
			if err := os.Chmod(dir, 0o700); err != nil {
				return "", "", fmt.Errorf("local endpoint directory %s: %w", dir, err)
			}
		}
	}
	return dir, root, nil
}

// existingEntriesDir is prepare without making anything: "" when userData
// or a registry directory does not exist.
func existingEntriesDir(userData string) (string, error) {
	root, err := realDir(userData)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	dir := root
	for _, name := range registryDirs {
		dir = filepath.Join(dir, name)
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		if err := checkDir(dir); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// realDir resolves userData, which must be an absolute path naming a
// directory.
func realDir(userData string) (string, error) {
	if !filepath.IsAbs(userData) {
		return "", fmt.Errorf("VS Code user data %q: %w: not an absolute path", userData, ErrRefused)
	}
	real, err := filepath.EvalSymlinks(userData)
	if err != nil {
		return "", fmt.Errorf("VS Code user data: %w", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("VS Code user data: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("VS Code user data %s: %w: not a directory", userData, ErrRefused)
	}
	return real, nil
}

// checkDir refuses a registry directory that is a link, not a directory,
// or another user's.
func checkDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("local endpoint directory %s: %w", dir, err)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("local endpoint directory %s: %w: it is a symlink", dir, ErrRefused)
	case !fi.IsDir():
		return fmt.Errorf("local endpoint directory %s: %w: not a directory", dir, ErrRefused)
	case !ownedByMe(fi):
		return fmt.Errorf("local endpoint directory %s: %w: owned by another user", dir, ErrRefused)
	}
	return nil
}

func randomHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
