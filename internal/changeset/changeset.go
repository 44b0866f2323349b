// Package changeset holds the pure rules of the host's changesets: which
// tool calls change which file, the channel and content URIs a changeset
// is served under, the line counts of an edit and the bounds on what is
// kept. The chat actor (internal/chat/changesets.go) does the I/O.
package changeset

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Scheme is the changeset channels' scheme; ContentScheme that of the
// before and after contents a changeset's files point at (read with
// resourceRead).
const (
	Scheme        = "ahp-changeset"
	ContentScheme = "ahp-changeset-content"
)

// Change kinds of the catalogue (Changeset.changeKind).
const (
	KindTurn = "turn"
	KindChat = "session"
)

// MaxFileBytes bounds a content the host keeps: a larger file's edit is
// listed without contents (and cannot be undone).
const MaxFileBytes = 1 << 20

// Reasons a file's contents were not kept.
const (
	SkipTooLarge = "too large"
	SkipBinary   = "binary"
)

// pathKeys are the input keys that name the file a call writes, by tool:
// claude's Write, Edit, MultiEdit and NotebookEdit, cofold's write_file and
// edit_file, pi's write and edit.
var pathKeys = map[string]string{
	"Write":        "file_path",
	"Edit":         "file_path",
	"MultiEdit":    "file_path",
	"NotebookEdit": "notebook_path",
	"write_file":   "path",
	"edit_file":    "path",
	"write":        "path",
	"edit":         "path",
}

// Target returns the path a tool call of tool with input (JSON text)
// writes, as the call names it (maybe relative); ok is false for a call
// that changes no file this host can name.
func Target(tool, input string) (path string, ok bool) {
	key, known := pathKeys[tool]
	if !known {
		return "", false
	}
	var in map[string]any
	if json.Unmarshal([]byte(input), &in) != nil {
		return "", false
	}
	p, _ := in[key].(string)
	return p, p != ""
}

// ChangesFiles reports whether a call of kind (an ACP tool kind, which the
// ACP backend names its calls by) changes the files it names.
func ChangesFiles(kind string) bool {
	return kind == "edit" || kind == "delete" || kind == "move"
}

// Skip says why content is not kept ("" when it is).
func Skip(content []byte) string {
	switch {
	case len(content) > MaxFileBytes:
		return SkipTooLarge
	case bytes.IndexByte(content, 0) >= 0 || !utf8.Valid(content):
		return SkipBinary
	}
	return ""
}

// chatSegment is the chat's URI in a URI path segment.
func chatSegment(chat string) string { return base64.RawURLEncoding.EncodeToString([]byte(chat)) }

func parseChatSegment(seg string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil || len(b) == 0 {
		return "", false
	}
	return string(b), true
}

// TurnTemplate is the catalogue's template of chat's per-turn changesets.
func TurnTemplate(chat string) string {
	return Scheme + ":/" + chatSegment(chat) + "/turn/{turnId}"
}

// TurnURI is the channel of the changeset of chat's turn.
func TurnURI(chat, turn string) string {
	return Scheme + ":/" + chatSegment(chat) + "/turn/" + url.PathEscape(turn)
}

// ChatURI is the channel of the changeset of everything chat changed.
func ChatURI(chat string) string { return Scheme + ":/" + chatSegment(chat) + "/chat" }

// Channel is a parsed changeset channel: its chat, and its turn ("" for
// the whole chat's).
type Channel struct {
	Chat string
	Turn string
}

// IsChannel reports whether uri is of the changeset scheme.
func IsChannel(uri string) bool { return strings.HasPrefix(uri, Scheme+":") }

// ParseChannel reads a changeset channel URI.
func ParseChannel(uri string) (Channel, bool) {
	rest, ok := strings.CutPrefix(uri, Scheme+":/")
	if !ok {
		return Channel{}, false
	}
	seg, tail, _ := strings.Cut(rest, "/")
	chat, ok := parseChatSegment(seg)
	if !ok {
		return Channel{}, false
	}
	if tail == "chat" {
		return Channel{Chat: chat}, true
	}
	raw, ok := strings.CutPrefix(tail, "turn/")
	if !ok || raw == "" || strings.Contains(raw, "/") {
		return Channel{}, false
	}
	turn, err := url.PathUnescape(raw)
	if err != nil || turn == "" || turn == "{turnId}" {
		return Channel{}, false
	}
	return Channel{Chat: chat, Turn: turn}, true
}

// ContentURI names content hash (hex sha256) kept for chat.
func ContentURI(chat, hash string) string {
	return ContentScheme + ":/" + chatSegment(chat) + "/" + hash
}

// IsContent reports whether uri is of the content scheme.
func IsContent(uri string) bool { return strings.HasPrefix(uri, ContentScheme+":") }

// ParseContent reads a content URI: the chat it was kept for and its hash.
func ParseContent(uri string) (chat, hash string, ok bool) {
	rest, ok := strings.CutPrefix(uri, ContentScheme+":/")
	if !ok {
		return "", "", false
	}
	seg, hash, _ := strings.Cut(rest, "/")
	chat, ok = parseChatSegment(seg)
	if !ok || len(hash) != 64 || strings.Trim(hash, "0123456789abcdef") != "" {
		return "", "", false
	}
	return chat, hash, true
}

// maxCells bounds the line matching: past it the changed middle counts as
// all removed and all added.
const maxCells = 4_000_000

// Diff counts the lines added and removed from before to after: the
// common head and tail are set aside, the middle matched by longest common
// subsequence.
func Diff(before, after []byte) (added, removed int) {
	a, b := lines(before), lines(after)
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	if len(a) == 0 || len(b) == 0 || len(a)*len(b) > maxCells {
		return len(b), len(a)
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				cur[j] = prev[j-1] + 1
			case prev[j] >= cur[j-1]:
				cur[j] = prev[j]
			default:
				cur[j] = cur[j-1]
			}
		}
		prev, cur = cur, prev
	}
	common := prev[len(b)]
	return len(b) - common, len(a) - common
}

// lines splits text into lines; a final newline ends the last line.
func lines(text []byte) []string {
	if len(text) == 0 {
		return nil
	}
	s := strings.TrimSuffix(string(text), "\n")
	return strings.Split(s, "\n")
}
