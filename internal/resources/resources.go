// Package resources carries out the protocol's resource* commands on the
// host's own files: list, read, write, delete, move, copy, mkdir and
// resolve, each confined to the served directories (internal/confine).
// A path is checked before anything is read or written: ".." is cleaned
// away, symlinks are followed to where they really lead, and a path that
// ends up outside every root is refused with PermissionDenied. Errors wrap
// the AHP sentinels the protocol names (NotFound, AlreadyExists, Conflict),
// so the host answers them with the right code.
package resources

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/confine"
)

// MaxBytes bounds one read and one write. A read's answer is one frame, and
// in base64 8 MiB is 10.7 MiB: inside the default 16 MiB frame limit with
// room for the envelope. A write's data is bounded the same so that what a
// client writes it can read back.
const MaxBytes = 8 << 20

// MaxEntries bounds one listing (about 3 MiB of JSON): the protocol has no
// paging for resourceList, so a larger directory is refused, not cut.
const MaxEntries = 50000

// Write modes (ResourceWriteParams.mode).
const (
	ModeTruncate = "truncate"
	ModeAppend   = "append"
	ModeInsert   = "insert"
)

// Entry types.
const (
	TypeFile      = "file"
	TypeDirectory = "directory"
	TypeSymlink   = "symlink"
)

// FS is the host's files as the resource commands reach them.
type FS struct {
	roots []string
	// mu serialises writes, so two appends or inserts to one file do not
	// interleave their read of the tail with the other's write. It guards
	// gens and gen.
	mu sync.Mutex
	// gens is the write each file last had through this FS (by real path):
	// a file's modification time moves only once a clock tick, so two
	// writes of one size within a tick would otherwise share an etag.
	gens map[string]uint64
	gen  uint64
}

// maxGens bounds gens; past it the map starts over, and an etag taken
// before reads as stale (a spurious Conflict, never a lost update).
const maxGens = 10000

// New returns the files under roots (absolute local paths).
func New(roots []string) *FS { return &FS{roots: slices.Clone(roots), gens: make(map[string]uint64)} }

// Entry is one directory entry.
type Entry struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Info is what Resolve says about a path. A client is told its times with
// FormatTime (ResourceResolveResult.mtime and ctime).
type Info struct {
	Path  string
	Type  string
	Size  *int64
	MTime time.Time
	// CTime is when the entry was created, as far as the platform's stat
	// tells (see created).
	CTime time.Time
	ETag  string
}

// FormatTime writes t as the protocol's ISO 8601 times are written, the
// form of JavaScript's Date.toISOString: UTC, milliseconds, "Z".
func FormatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// ContentType is the media type of the file at path holding data (nil when
// unread), without parameters: "text/plain", never
// "text/plain; charset=utf-8" (ResourceReadResult.contentType). It goes by
// the name's extension, then by sniffing data; "" when neither says.
func ContentType(path string, data []byte) string {
	t := mime.TypeByExtension(filepath.Ext(path))
	if t == "" && data != nil {
		t = http.DetectContentType(data)
	}
	if t == "" {
		return ""
	}
	media, _, err := mime.ParseMediaType(t)
	if err != nil {
		return ""
	}
	return media
}

// WriteOptions are resourceWrite's options.
type WriteOptions struct {
	Mode string
	// Position is a byte offset, from the start for truncate and insert,
	// back from the end for append; past either end it means that end
	// (placement). A negative one is refused.
	Position   int64
	CreateOnly bool
	// IfMatch, when set, must equal the file's current ETag.
	IfMatch *string
}

// errOutside answers a path outside the served directories; it never says
// whether the path exists.
func errOutside(path string) error {
	return ahp.Errorf(ahp.ErrPermissionDenied, "%s is outside the served directories", path)
}

// locate returns the real path that path names (symlinks followed, missing
// tail kept), refusing one outside the roots.
func (f *FS) locate(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", ahp.Errorf(ahp.ErrInvalidParams, "%s: not an absolute path", path)
	}
	real, err := confine.ResolveNew(path, f.roots)
	if err != nil {
		return "", errOutside(path)
	}
	return real, nil
}

// locateLink is locate for an operation on the entry itself rather than
// what it points at (delete, move, lstat): the parent is resolved and
// confined, the last element is kept as it is.
func (f *FS) locateLink(path string) (string, error) {
	path = filepath.Clean(path)
	if !filepath.IsAbs(path) {
		return "", ahp.Errorf(ahp.ErrInvalidParams, "%s: not an absolute path", path)
	}
	if f.isRoot(path) {
		return f.locate(path)
	}
	parent, err := f.locate(filepath.Dir(path))
	if err != nil {
		return "", errOutside(path)
	}
	real := filepath.Join(parent, filepath.Base(path))
	if !f.inside(real) {
		return "", errOutside(path)
	}
	return real, nil
}

// inside reports whether real (already resolved) lies in a root.
func (f *FS) inside(real string) bool {
	for _, r := range f.roots {
		if rr, err := filepath.EvalSymlinks(r); err == nil && confine.Within(real, rr) {
			return true
		}
	}
	return false
}

// isRoot reports whether path is one of the served directories.
func (f *FS) isRoot(path string) bool {
	for _, r := range f.roots {
		if filepath.Clean(r) == path {
			return true
		}
		if rr, err := filepath.EvalSymlinks(r); err == nil && rr == path {
			return true
		}
	}
	return false
}

// mapErr turns a filesystem error about path into the protocol's.
func mapErr(op, path string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return ahp.Errorf(ahp.ErrNotFound, "%s %s: no such file or directory", op, path)
	case errors.Is(err, syscall.ENOTEMPTY):
		// Before ErrExist, which ENOTEMPTY also matches.
		return ahp.Errorf(ahp.ErrInvalidParams, "%s %s: directory not empty (set recursive to delete it)", op, path)
	case errors.Is(err, fs.ErrExist):
		return ahp.Errorf(ahp.ErrAlreadyExists, "%s %s: already exists", op, path)
	case errors.Is(err, fs.ErrPermission):
		return ahp.Errorf(ahp.ErrPermissionDenied, "%s %s: %v", op, path, err)
	case errors.Is(err, syscall.ENOTDIR):
		return ahp.Errorf(ahp.ErrNotFound, "%s %s: a parent is not a directory", op, path)
	case errors.Is(err, syscall.EISDIR):
		return ahp.Errorf(ahp.ErrInvalidParams, "%s %s: is a directory", op, path)
	case errors.Is(err, syscall.ELOOP):
		return ahp.Errorf(ahp.ErrPermissionDenied, "%s %s: a symlink is not followed here", op, path)
	}
	var pe *ahp.Error
	if errors.As(err, &pe) {
		return err
	}
	return fmt.Errorf("%s %s: %w", op, path, err)
}

// List returns the entries of directory path, by name.
func (f *FS) List(path string) ([]Entry, error) {
	real, err := f.locate(path)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil, mapErr("list", path, err)
	}
	if !st.IsDir() {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "list %s: not a directory", path)
	}
	d, err := os.Open(real)
	if err != nil {
		return nil, mapErr("list", path, err)
	}
	defer d.Close()
	des, err := d.ReadDir(MaxEntries + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, mapErr("list", path, err)
	}
	if len(des) > MaxEntries {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "list %s: more than %d entries", path, MaxEntries)
	}
	out := make([]Entry, 0, len(des))
	for _, de := range des {
		typ := TypeFile
		switch {
		case de.IsDir():
			typ = TypeDirectory
		case de.Type()&fs.ModeSymlink != 0:
			// A link is listed as what it leads to only when that is
			// inside; one leading out is a plain entry, never looked at.
			if target, err := confine.Resolve(filepath.Join(real, de.Name()), f.roots); err == nil {
				if st, err := os.Stat(target); err == nil && st.IsDir() {
					typ = TypeDirectory
				}
			}
		}
		out = append(out, Entry{Name: de.Name(), Type: typ})
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Read returns the content of file path, at most MaxBytes.
func (f *FS) Read(path string) ([]byte, error) {
	if _, err := f.locate(path); err != nil {
		return nil, err
	}
	file, err := confine.Open(path, f.roots)
	if err != nil {
		if errors.Is(err, confine.ErrOutside) {
			return nil, errOutside(path)
		}
		return nil, mapErr("read", path, err)
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, mapErr("read", path, err)
	}
	if st.IsDir() {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "read %s: is a directory", path)
	}
	if !st.Mode().IsRegular() {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "read %s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(file, MaxBytes+1))
	if err != nil {
		return nil, mapErr("read", path, err)
	}
	if len(data) > MaxBytes {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "read %s: over the %d-byte read limit", path, MaxBytes)
	}
	return data, nil
}

// etag is the version of the file at real: inode, size and modification
// time, so a write from anywhere changes it, and the write it last had
// here, so two writes within one clock tick do too. Called with mu held.
func (f *FS) etag(real string, st fs.FileInfo) string {
	ino := uint64(0)
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		ino = s.Ino
	}
	return strconv.FormatUint(ino, 36) + "-" + strconv.FormatInt(st.Size(), 36) + "-" +
		strconv.FormatInt(st.ModTime().UnixNano(), 36) + "-" + strconv.FormatUint(f.gens[real], 36)
}

// wrote notes a write to real. Called with mu held.
func (f *FS) wrote(real string) {
	if len(f.gens) >= maxGens {
		f.gens = make(map[string]uint64)
	}
	f.gen++
	f.gens[real] = f.gen
}

// Write places data in file path as opts say; a missing file is created,
// a missing parent is NotFound.
func (f *FS) Write(path string, data []byte, opts WriteOptions) error {
	if len(data) > MaxBytes {
		return ahp.Errorf(ahp.ErrInvalidParams, "write %s: %d bytes is over the %d-byte write limit", path, len(data), MaxBytes)
	}
	if opts.Position < 0 {
		return ahp.Errorf(ahp.ErrInvalidParams, "write %s: position %d is negative", path, opts.Position)
	}
	mode := opts.Mode
	if mode == "" {
		mode = ModeTruncate
	}
	if mode != ModeTruncate && mode != ModeAppend && mode != ModeInsert {
		return ahp.Errorf(ahp.ErrInvalidParams, "write %s: unknown mode %q", path, mode)
	}
	real, err := f.locate(path)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := os.Stat(real)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return mapErr("write", path, err)
	}
	if exists && st.IsDir() {
		return ahp.Errorf(ahp.ErrInvalidParams, "write %s: is a directory", path)
	}
	if opts.CreateOnly && exists {
		return ahp.Errorf(ahp.ErrAlreadyExists, "write %s: the file exists and createOnly is set", path)
	}
	if opts.IfMatch != nil && (!exists || f.etag(real, st) != *opts.IfMatch) {
		return ahp.Errorf(ahp.ErrConflict, "write %s: the file is not at version %q", path, *opts.IfMatch)
	}
	size := int64(0)
	if exists {
		size = st.Size()
	}
	at := placement(mode, opts.Position, size)
	// Refused before the file is opened, so a refusal leaves it and its
	// etag alone.
	if mode != ModeTruncate && size-at > MaxBytes {
		return ahp.Errorf(ahp.ErrInvalidParams, "write %s: would shift %d bytes, over the %d-byte limit", path, size-at, MaxBytes)
	}
	flags := os.O_RDWR | os.O_CREATE | syscall.O_NOFOLLOW
	if opts.CreateOnly {
		flags |= os.O_EXCL
	}
	file, err := os.OpenFile(real, flags, 0o644)
	if err != nil {
		return mapErr("write", path, err)
	}
	defer file.Close()
	f.wrote(real)
	switch mode {
	case ModeTruncate:
		if err := file.Truncate(at); err != nil {
			return mapErr("write", path, err)
		}
		if _, err := file.WriteAt(data, at); err != nil {
			return mapErr("write", path, err)
		}
	default:
		tail := make([]byte, size-at)
		if _, err := file.ReadAt(tail, at); err != nil && !errors.Is(err, io.EOF) {
			return mapErr("write", path, err)
		}
		if _, err := file.WriteAt(append(slices.Clone(data), tail...), at); err != nil {
			return mapErr("write", path, err)
		}
	}
	return mapErr("write", path, file.Close())
}

// placement is the byte offset where a write of mode puts its data in a
// file of size bytes. Truncate and insert count position from the start,
// append counts it back from the end. A position past either end lands on
// that end, as VS Code's host conformance suite defines it: the file is
// never padded with zeros, so append prepends, insert and truncate append.
func placement(mode string, position, size int64) int64 {
	if mode == ModeAppend {
		return max(size-position, 0)
	}
	return min(position, size)
}

// Delete removes path (the entry itself, a symlink is not followed); a
// non-empty directory only when recursive. A served directory itself is
// never deleted.
func (f *FS) Delete(path string, recursive bool) error {
	real, err := f.locateLink(path)
	if err != nil {
		return err
	}
	if f.isRoot(real) || f.isRoot(filepath.Clean(path)) {
		return ahp.Errorf(ahp.ErrPermissionDenied, "delete %s: a served directory is not deleted", path)
	}
	if _, err := os.Lstat(real); err != nil {
		return mapErr("delete", path, err)
	}
	if recursive {
		return mapErr("delete", path, os.RemoveAll(real))
	}
	return mapErr("delete", path, os.Remove(real))
}

// Mkdir creates directory path and its parents; an existing directory is
// fine, an existing file is AlreadyExists.
func (f *FS) Mkdir(path string) error {
	real, err := f.locate(path)
	if err != nil {
		return err
	}
	if st, err := os.Stat(real); err == nil {
		if st.IsDir() {
			return nil
		}
		return ahp.Errorf(ahp.ErrAlreadyExists, "mkdir %s: a file is there", path)
	}
	if err := os.MkdirAll(real, 0o755); err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			return ahp.Errorf(ahp.ErrAlreadyExists, "mkdir %s: a parent is a file", path)
		}
		return mapErr("mkdir", path, err)
	}
	// A symlink raced in on the way would have led MkdirAll elsewhere:
	// check where the directory really is.
	if after, err := filepath.EvalSymlinks(real); err != nil || !f.inside(after) {
		return errOutside(path)
	}
	return nil
}

// Resolve stats path: following symlinks (the real path, which must be
// inside), or not (the entry itself).
func (f *FS) Resolve(path string, follow bool) (Info, error) {
	var real string
	var st fs.FileInfo
	var err error
	if follow {
		if real, err = f.locate(path); err != nil {
			return Info{}, err
		}
		st, err = os.Stat(real)
	} else {
		if real, err = f.locateLink(path); err != nil {
			return Info{}, err
		}
		st, err = os.Lstat(real)
	}
	if err != nil {
		return Info{}, mapErr("resolve", path, err)
	}
	info := Info{Path: real, MTime: st.ModTime(), CTime: created(st)}
	if !follow {
		info.Path = filepath.Clean(path)
	}
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		info.Type = TypeSymlink
	case st.IsDir():
		info.Type = TypeDirectory
	default:
		info.Type = TypeFile
		size := st.Size()
		info.Size = &size
		f.mu.Lock()
		info.ETag = f.etag(real, st)
		f.mu.Unlock()
	}
	return info, nil
}

// Move renames src to dst. An existing dst is replaced unless failIfExists.
// A served directory is never moved.
func (f *FS) Move(src, dst string, failIfExists bool) error {
	from, to, err := f.pair("move", src, dst, failIfExists)
	if err != nil {
		return err
	}
	if f.isRoot(from) {
		return ahp.Errorf(ahp.ErrPermissionDenied, "move %s: a served directory is not moved", src)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.clear(to, from); err != nil {
		return mapErr("move", dst, err)
	}
	f.wrote(to)
	err = os.Rename(from, to)
	if errors.Is(err, syscall.EXDEV) {
		// Across file systems (two served roots): copy, then delete.
		if err = copyTree(from, to); err == nil {
			err = os.RemoveAll(from)
		}
	}
	return mapErr("move", src, err)
}

// Copy copies src (a file, or a directory tree) to dst. An existing dst
// is replaced unless failIfExists. Symlinks inside a tree are copied as
// links, never followed, so nothing outside is read.
func (f *FS) Copy(src, dst string, failIfExists bool) error {
	from, to, err := f.pair("copy", src, dst, failIfExists)
	if err != nil {
		return err
	}
	if st, err := os.Lstat(from); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		// The source itself may be a link: copy what it leads to, when
		// that is inside.
		if from, err = f.locate(from); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.clear(to, from); err != nil {
		return mapErr("copy", dst, err)
	}
	f.wrote(to)
	return mapErr("copy", src, copyTree(from, to))
}

// pair locates a move's or copy's two ends: src must exist, dst's parent
// must, and a tree does not go inside itself.
func (f *FS) pair(op, src, dst string, failIfExists bool) (string, string, error) {
	from, err := f.locateLink(src)
	if err != nil {
		return "", "", err
	}
	to, err := f.locateLink(dst)
	if err != nil {
		return "", "", err
	}
	if _, err := os.Lstat(from); err != nil {
		return "", "", mapErr(op, src, err)
	}
	if f.isRoot(to) {
		return "", "", ahp.Errorf(ahp.ErrPermissionDenied, "%s %s: a served directory is not replaced", op, dst)
	}
	if _, err := os.Lstat(to); err == nil {
		if failIfExists {
			return "", "", ahp.Errorf(ahp.ErrAlreadyExists, "%s %s: the destination exists and failIfExists is set", op, dst)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", "", mapErr(op, dst, err)
	}
	if st, err := os.Stat(filepath.Dir(to)); err != nil || !st.IsDir() {
		return "", "", ahp.Errorf(ahp.ErrNotFound, "%s %s: the destination's parent does not exist", op, dst)
	}
	if from == to {
		return "", "", ahp.Errorf(ahp.ErrInvalidParams, "%s: source and destination are the same", op)
	}
	if confine.Within(to, from) {
		return "", "", ahp.Errorf(ahp.ErrInvalidParams, "%s %s: the destination is inside the source", op, dst)
	}
	return from, to, nil
}

// clear removes an existing destination to before it is replaced, unless
// it is a file that a file will replace in one rename.
func (f *FS) clear(to, from string) error {
	dst, err := os.Lstat(to)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	src, err := os.Lstat(from)
	if err != nil {
		return err
	}
	if !dst.IsDir() && !src.IsDir() {
		return nil
	}
	return os.RemoveAll(to)
}

// copyTree copies from to to: a file's bytes and mode, a directory's
// entries, a symlink as a symlink.
func copyTree(from, to string) error {
	st, err := os.Lstat(from)
	if err != nil {
		return err
	}
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(from)
		if err != nil {
			return err
		}
		_ = os.Remove(to)
		return os.Symlink(target, to)
	case st.IsDir():
		if err := os.Mkdir(to, st.Mode().Perm()|0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		des, err := os.ReadDir(from)
		if err != nil {
			return err
		}
		for _, de := range des {
			if err := copyTree(filepath.Join(from, de.Name()), filepath.Join(to, de.Name())); err != nil {
				return err
			}
		}
		return nil
	case st.Mode().IsRegular():
		in, err := os.OpenFile(from, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, st.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	}
	return fmt.Errorf("%s: not a file, directory or symlink", from)
}

// Check says whether path may be reached at all (resourceRequest): it is
// inside the served directories.
func (f *FS) Check(path string) error {
	_, err := f.locate(path)
	return err
}

// Locate is the real path of an existing directory or file path inside the
// served directories (a watch's or a terminal's folder).
func (f *FS) Locate(path string) (string, fs.FileInfo, error) {
	real, err := f.locate(path)
	if err != nil {
		return "", nil, err
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", nil, mapErr("open", path, err)
	}
	return real, st, nil
}
