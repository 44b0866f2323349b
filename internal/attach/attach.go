// Package attach holds the rules for the files a message carries, decided
// once for every backend (CHATS.md "Attachments", C-ATT-01): what the host
// does with each attachment as sent (write its bytes, leave it, read it
// through the client, resolve a chat reference), how each one reaches the
// model (as an image, inlined, or by path), where written bytes go, and the
// excerpt a chat attachment becomes.
//
// Everything here is pure except Writer (writer.go), which the chat actor
// calls when it admits a turn, before the turn is said (C-ATT-07). The host
// resolves chat attachments with ChatExcerpt and Pointer before it hands the
// action to the chat actor, so no chat actor ever waits on another.
package attach

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/ahpd/ahpd/internal/ahp"
)

// Limits (CHATS.md "Attachments").
const (
	// ImageLimit is the largest pasted image that goes to the model as an
	// image: 5 MiB (C-ATT-02; reading 1 in docs/CHATS.md).
	ImageLimit = 5 << 20
	// InlineTextLimit is the largest pasted text that is inlined: 64 KiB
	// (C-ATT-04, 05).
	InlineTextLimit = 64 << 10
	// DefaultFetchLimit is attachmentFetchLimitBytes when the daemon's
	// config says nothing: 32 MiB (C-ATT-15).
	DefaultFetchLimit = 32 << 20
)

// SnapshotMetaKey is the _meta tag that marks a file as the message's own:
// a copy of something pasted or of a buffer a client had unsaved (C-ATT-38).
const SnapshotMetaKey = "vscode.agentHost.snapshotAttachment"

// How an attachment reaches the model: the three kinds it can become
// (C-ATT-37; reading 13 in docs/CHATS.md).
const (
	AsImage  = "image"
	AsInline = "inline"
	AsPath   = "path"
)

// Disposition is what the host does with an attachment as the client sent
// it.
type Disposition int

const (
	// Keep leaves the attachment exactly as sent (C-ATT-13, 17, 18).
	Keep Disposition = iota
	// Write writes its inline bytes to a file, and the message carries the
	// path from then on (C-ATT-07..10).
	Write
	// Fetch reads it through the client that sent it and writes it the same
	// way (C-ATT-11, 12).
	Fetch
	// Resolve turns a chat reference into a pointer for the backend
	// (C-ATT-22, 23).
	Resolve
)

func (d Disposition) String() string {
	switch d {
	case Keep:
		return "keep"
	case Write:
		return "write"
	case Fetch:
		return "fetch"
	case Resolve:
		return "resolve"
	}
	return fmt.Sprintf("Disposition(%d)", int(d))
}

// PlanOptions are what Plan needs beyond the attachment.
type PlanOptions struct {
	// CanFetch: the client that sent the message can be asked for a
	// resource (a server→client resourceRead). Without it, a resource on a
	// scheme the host does not serve is left as sent (reading 12).
	CanFetch bool
	// FetchLimit is attachmentFetchLimitBytes: 0 asks for any size.
	FetchLimit int64
}

// Plan says what the host does with a as sent.
func Plan(a ahp.MessageAttachment, o PlanOptions) Disposition {
	switch a.Type {
	case ahp.AttachmentChat:
		return Resolve // C-ATT-22
	case ahp.AttachmentEmbeddedResource:
		if a.Data == "" {
			return Keep
		}
		return Write // C-ATT-07
	case ahp.AttachmentResource:
		if IsDirectory(a) {
			return Keep // C-ATT-13
		}
		if IsFileURI(string(a.URI)) {
			return Keep // C-ATT-18: readable where it stands
		}
		if !o.CanFetch {
			return Keep // C-ATT-17
		}
		if !WithinFetchLimit(a.SizeHint, o.FetchLimit) {
			return Keep // C-ATT-14
		}
		return Fetch // C-ATT-11
	}
	// simple and annotations carry nothing to fetch or write.
	return Keep
}

// WithinFetchLimit reports whether a resource of sizeHint may be asked for
// under limit: a limit of 0 asks for any size (C-ATT-16), and a resource
// whose size is not hinted is asked for.
func WithinFetchLimit(sizeHint *int64, limit int64) bool {
	if limit == 0 || sizeHint == nil {
		return true
	}
	return *sizeHint <= limit
}

// IsDirectory reports whether a names a directory.
func IsDirectory(a ahp.MessageAttachment) bool {
	return a.DisplayKind == "directory" || mediaType(a.ContentType) == "inode/directory"
}

// IsFileURI reports whether u is a file: URI.
func IsFileURI(u string) bool {
	scheme, _, ok := strings.Cut(u, ":")
	return ok && strings.EqualFold(scheme, "file")
}

// Own reports whether a is tagged as the message's own copy (C-ATT-38).
func Own(a ahp.MessageAttachment) bool {
	v, ok := a.Meta[SnapshotMetaKey]
	if !ok || v == nil {
		return false
	}
	if b, isBool := v.(bool); isBool {
		return b
	}
	return true
}

// Classify says how an attachment of contentType and size reaches the
// model. own is whether its bytes are the message's own (pasted, written by
// this host, or tagged SnapshotMetaKey); a file somebody works in goes by
// path for the model to read (C-ATT-39).
func Classify(contentType string, size int64, own bool) string {
	if !own {
		return AsPath
	}
	switch {
	case IsImage(contentType):
		if size <= ImageLimit {
			return AsImage // C-ATT-02
		}
		return AsPath // C-ATT-03
	case strings.HasPrefix(mediaType(contentType), "image/"):
		return AsPath // C-ATT-03: any other image, svg among them
	case IsText(contentType):
		if size <= InlineTextLimit {
			return AsInline // C-ATT-04
		}
		return AsPath // C-ATT-05
	}
	return AsPath // C-ATT-06
}

// IsImage reports whether contentType is an image the model takes as one:
// jpeg, png, gif or webp (C-ATT-02).
func IsImage(contentType string) bool {
	switch mediaType(contentType) {
	case "image/jpeg", "image/jpg", "image/png", "image/gif", "image/webp":
		return true
	}
	return false
}

// IsText reports whether contentType is text.
func IsText(contentType string) bool {
	mt := mediaType(contentType)
	if strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml") {
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/x-javascript",
		"application/typescript", "application/yaml", "application/x-yaml", "application/toml",
		"application/x-sh", "application/sql":
		return true
	}
	return false
}

// mediaType is contentType without parameters, lower-cased.
func mediaType(contentType string) string {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// maxNameBytes keeps a file name under the 255 bytes most file systems
// allow for one path segment.
const maxNameBytes = 200

// FileName is label made fit for one path segment: the characters a path
// segment cannot hold on any common file system (separators, NUL and other
// control characters, and Windows' reserved <>:"|?*) are replaced with
// '_'; an empty name or a dot name becomes "attachment" (C-ATT-09).
func FileName(label string) string {
	var b strings.Builder
	for _, r := range label {
		switch {
		case r < 0x20 || r == 0x7f:
			b.WriteRune('_')
		case strings.ContainsRune(`/\<>:"|?*`, r):
			b.WriteRune('_')
		default:
			b.WriteRune(r)
		}
	}
	name := strings.TrimRight(b.String(), " ")
	if len(name) > maxNameBytes {
		cut := maxNameBytes
		for cut > 0 && !validCut(name, cut) {
			cut--
		}
		name = name[:cut]
	}
	if name == "" || strings.Trim(name, ".") == "" {
		return "attachment"
	}
	return name
}

// validCut reports whether s may be cut at byte i without splitting a rune.
func validCut(s string, i int) bool {
	return i == len(s) || s[i] < 0x80 || s[i] >= 0xC0
}

// SessionFolder names a session's own attachments folder: the session's
// id, or its whole URI when it has no id (FileName makes either a path
// segment).
func SessionFolder(sessionURI string) string {
	if id, ok := ahp.SessionID(sessionURI); ok && id != "" {
		return id
	}
	return sessionURI
}

// Location is where the bytes of one attachment are written: a folder of
// their own named by id (a UUID) under the session's attachments folder,
// under the label made fit for a path segment (C-ATT-09).
func Location(root, session, id, label string) string {
	return filepath.Join(root, FileName(session), id, FileName(label))
}

// Decode returns an embedded resource's bytes (base64, padded or not).
func Decode(a ahp.MessageAttachment) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(a.Data)
	if err != nil {
		if b2, err2 := base64.RawStdEncoding.DecodeString(strings.TrimRight(a.Data, "=")); err2 == nil {
			return b2, nil
		}
		return nil, fmt.Errorf("decode attachment %q: %w", a.Label, err)
	}
	return b, nil
}

// DecodeReader streams the bytes of base64 text r, padded or not, as
// Decode reads them, holding no more than a small buffer: an attachment's
// data is decoded straight into its file (Writer.WriteFrom).
func DecodeReader(r io.Reader) io.Reader {
	return base64.NewDecoder(base64.RawStdEncoding, &unpadded{r: r})
}

// unpadded is base64 text without its padding: the '=' at its end, and
// the line breaks among them, are dropped. A '=' with text after it is
// passed on, for RawStdEncoding to refuse, as StdEncoding refuses padding
// in the middle.
type unpadded struct {
	r   io.Reader
	buf [4096]byte
	out []byte
	// padded: a '=' was read after the last byte of text.
	padded bool
	err    error
}

func (u *unpadded) Read(p []byte) (int, error) {
	for len(u.out) == 0 {
		if u.err != nil {
			return 0, u.err
		}
		n, err := u.r.Read(u.buf[:])
		u.out, u.err = u.take(u.buf[:n]), err
	}
	n := copy(p, u.out)
	u.out = u.out[n:]
	return n, nil
}

// take returns what of chunk is passed on: all of it but a tail of '=' and
// line breaks, which waits for the text after it, if any.
func (u *unpadded) take(chunk []byte) []byte {
	end := len(chunk)
	for end > 0 && isPadding(chunk[end-1]) {
		end--
	}
	tailPadded := bytes.IndexByte(chunk[end:], '=') >= 0
	if end == 0 {
		u.padded = u.padded || tailPadded
		return nil
	}
	out := chunk[:end]
	if u.padded {
		out = append([]byte{'='}, out...)
	}
	u.padded = tailPadded
	return out
}

func isPadding(c byte) bool { return c == '=' || c == '\r' || c == '\n' }

// Written is a as the message carries it once its size bytes were written
// to path: a resource naming the file, tagged as the message's own, with
// the bytes gone (C-ATT-10).
func Written(a ahp.MessageAttachment, path string, size int64) ahp.MessageAttachment {
	meta := make(map[string]any, len(a.Meta)+1)
	for k, v := range a.Meta {
		meta[k] = v
	}
	meta[SnapshotMetaKey] = true
	return ahp.MessageAttachment{
		Type:        ahp.AttachmentResource,
		Label:       a.Label,
		Range:       a.Range,
		DisplayKind: a.DisplayKind,
		Meta:        meta,
		ContentType: a.ContentType,
		Selection:   a.Selection,
		URI:         ahp.URI(ahp.FileURI(path)),
		SizeHint:    &size,
	}
}
