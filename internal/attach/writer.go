package attach

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/uuid"

	"github.com/ahpd/ahpd/internal/confine"
)

// Writer writes attachment bytes under Root (<data dir>/attachments). The
// chat actor calls it when it admits a turn, before the turn is said
// (C-ATT-07); each call writes one new file, in a folder of its own, and
// never touches an existing one (C-ATT-08).
type Writer struct {
	Root string
	// NewID names each attachment's folder; uuid.NewString when nil.
	NewID func() string
}

// ErrNoRoot is returned by a Writer with no Root: the host keeps no
// attachments, and each stays as sent (C-ATT-19).
var ErrNoRoot = errors.New("no attachments folder configured")

// Write writes data for the attachment labelled label of session and
// returns the file's path.
func (w Writer) Write(session, label string, data []byte) (string, error) {
	path, _, err := w.WriteFrom(session, label, bytes.NewReader(data))
	return path, err
}

// WriteFrom writes what r gives for the attachment labelled label of
// session, as it comes, and returns the file's path and size. When r
// fails (bytes that do not decode) nothing is left behind.
func (w Writer) WriteFrom(session, label string, r io.Reader) (string, int64, error) {
	if w.Root == "" {
		return "", 0, ErrNoRoot
	}
	id := uuid.NewString
	if w.NewID != nil {
		id = w.NewID
	}
	path := Location(w.Root, session, id(), label)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", 0, fmt.Errorf("write attachment %q: %w", label, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", 0, fmt.Errorf("write attachment %q: %w", label, err)
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		_ = os.Remove(dir) // its own folder, empty again
		return "", 0, fmt.Errorf("write attachment %q: %w", label, err)
	}
	return path, n, nil
}

// ReadOwn reads the bytes of a file the model takes as an image or inline
// text, refusing one larger than limit (it then goes by path). The file is
// read only when it really lies inside one of roots (the session's
// attachments folder, the chat's directories): a client's tag never makes
// the host read a file the agent itself would have to ask for.
func ReadOwn(path string, limit int64, roots []string) ([]byte, error) {
	f, err := confine.Open(path, roots)
	if err != nil {
		return nil, fmt.Errorf("read attachment: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read attachment %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read attachment %s: not a regular file", path)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("read attachment %s: %d bytes is over %d", path, fi.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read attachment %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("read attachment %s: grew over %d bytes", path, limit)
	}
	return data, nil
}
