package pi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// sessionStore finds and writes pi's session files under root
// (<agent dir>/sessions).
type sessionStore struct {
	root string
}

// dirOf is pi's session folder for cwd: --<cwd with separators as ->--.
func (s sessionStore) dirOf(cwd string) string {
	safe := strings.TrimLeft(cwd, `/\`)
	safe = strings.NewReplacer("/", "-", `\`, "-", ":", "-").Replace(safe)
	return filepath.Join(s.root, "--"+safe+"--")
}

// newPath names a session file for conversation id in cwd's folder, as
// pi names its own: <ISO time with : and . as ->_<id>.jsonl. The folder is
// made; the file is pi's to write.
func (s sessionStore) newPath(cwd, id string) string {
	dir := s.dirOf(cwd)
	_ = os.MkdirAll(dir, 0o700)
	ts := strings.NewReplacer(":", "-", ".", "-").Replace(time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
	return filepath.Join(dir, ts+"_"+id+".jsonl")
}

// all lists the session files of conversation id, oldest first.
func (s sessionStore) all(id string) ([]string, error) {
	if !validID(id) {
		return nil, fmt.Errorf("bad conversation id %q", id)
	}
	files, err := filepath.Glob(filepath.Join(s.root, "*", "*_"+id+".jsonl"))
	if err != nil {
		return nil, err
	}
	sort.Slice(files, func(i, j int) bool { return filepath.Base(files[i]) < filepath.Base(files[j]) })
	return files, nil
}

// find is the newest session file of conversation id (a rewind writes a
// newer one); fs.ErrNotExist when there is none.
func (s sessionStore) find(id string) (string, error) {
	files, err := s.all(id)
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return "", fmt.Errorf("pi session %s: %w", id, fs.ErrNotExist)
	}
	return files[len(files)-1], nil
}

// entry is one line of a session file, kept as written.
type entry struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	ParentID  *string         `json:"parentId"`
	Timestamp string          `json:"timestamp"`
	Cwd       string          `json:"cwd"`
	Message   *agentMessage   `json:"message"`
	Summary   string          `json:"summary"`
	Tokens    int             `json:"tokensBefore"`
	raw       json.RawMessage `json:"-"`
}

func (e *entry) parent() string {
	if e.ParentID == nil {
		return ""
	}
	return *e.ParentID
}

func (e *entry) time() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, e.Timestamp)
	return t
}

// maxSessionFile bounds what is read of a session file.
const maxSessionFile = 512 << 20

// readSession reads a session file's header and entries. Lines that are
// not JSON are skipped, as pi skips them.
func readSession(path string) (header entry, entries []*entry, err error) {
	f, err := os.Open(path)
	if err != nil {
		return header, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, maxSessionFile))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		e := &entry{}
		if json.Unmarshal(line, e) != nil {
			continue
		}
		if e.Type == "session" {
			header = *e
			continue
		}
		if e.ID == "" {
			continue
		}
		e.raw = append(json.RawMessage(nil), line...)
		entries = append(entries, e)
	}
	return header, entries, sc.Err()
}

// branch is the active branch of a session: the entries from the root to
// the leaf (pi's leaf is the last entry written), or to the entry at when
// it is set.
func branch(entries []*entry, at string) ([]*entry, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	byID := make(map[string]*entry, len(entries))
	for _, e := range entries {
		byID[e.ID] = e
	}
	leaf := entries[len(entries)-1]
	if at != "" {
		if leaf = byID[at]; leaf == nil {
			return nil, fmt.Errorf("no entry %s in the session", at)
		}
	}
	var out []*entry
	for e, n := leaf, 0; e != nil; e, n = byID[e.parent()], n+1 {
		if n > len(entries) {
			return nil, errors.New("the session's entries loop")
		}
		out = append(out, e)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// leafOf is the id of the last entry of a session file: where the turn
// that just ended left the conversation, its point.
func leafOf(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	const tail = 1 << 20
	off := max(fi.Size()-tail, 0)
	buf := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	lines := bytes.Split(bytes.TrimRight(buf, "\n"), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		var e entry
		if json.Unmarshal(lines[i], &e) == nil && e.ID != "" && e.Type != "session" {
			return e.ID, nil
		}
	}
	if off > 0 {
		_, entries, err := readSession(path)
		if err != nil {
			return "", err
		}
		if len(entries) > 0 {
			return entries[len(entries)-1].ID, nil
		}
	}
	return "", errors.New("the session has no entries")
}

// cut writes a new session file for conversation id holding the branch of
// src from its root through the entry at (a fork's copy, or a rewind's
// cut), with src as its parent session, as pi's own branching does; the
// new file is newer than any other of id, so find returns it. A branch
// with no answer in it is not written (pi would write its entries twice):
// the conversation starts afresh.
func (s sessionStore) cut(src, at, cwd, id string) (string, error) {
	_, entries, err := readSession(src)
	if err != nil {
		return "", fmt.Errorf("read pi session %s: %w", src, err)
	}
	path, err := branch(entries, at)
	if err != nil {
		return "", fmt.Errorf("cut pi session %s: %w", src, err)
	}
	dst := s.newPath(cwd, id)
	if old, _ := s.find(id); old != "" && filepath.Base(old) >= filepath.Base(dst) {
		// Two cuts within a millisecond: keep the names ordered.
		time.Sleep(2 * time.Millisecond)
		dst = s.newPath(cwd, id)
	}
	answered := false
	for _, e := range path {
		if e.Type == "message" && e.Message != nil && e.Message.Role == "assistant" {
			answered = true
		}
	}
	if !answered {
		return dst, nil
	}
	header, _ := json.Marshal(map[string]any{
		"type": "session", "version": 3, "id": id,
		"timestamp": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "cwd": cwd, "parentSession": src,
	})
	var b bytes.Buffer
	b.Write(header)
	b.WriteByte('\n')
	for _, e := range path {
		if e.Type == "label" {
			continue
		}
		b.Write(e.raw)
		b.WriteByte('\n')
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o600); err != nil {
		return "", fmt.Errorf("write pi session: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", fmt.Errorf("write pi session: %w", err)
	}
	return dst, nil
}
