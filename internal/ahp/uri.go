package ahp

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// Channel URIs.
//
// Sessions are named by the client: VS Code mints `<provider>:/<uuid>`,
// other clients `ahp-session:/<uuid>`. Chats come in three spellings
// (vscode-agent-host.md §4):
//
//	ahp-chat://default/<base64url(sessionUri)>            VS Code's derived default chat
//	ahp-chat://subagent/<base64url(sessionUri)>/<toolCallId>  a worker chat an older VS Code computes
//	ahp-chat:/<id>                                        an opaque chat of exactly that URI
//
// base64url is unpadded. An opaque `ahp-chat:/<id>` never names a session:
// <id> is the chat's own id (C-FIRST-16).
const (
	RootURI          = "ahp-root://"
	rootURIShort     = "ahp-root:"
	SessionScheme    = "ahp-session"
	ChatScheme       = "ahp-chat"
	defaultAuthority = "default"
	subagentAuth     = "subagent"
)

// IsRootURI reports whether u names the root channel; VS Code may print it
// as `ahp-root:` once a URI parser has dropped the empty authority.
func IsRootURI(u string) bool { return u == RootURI || u == rootURIShort }

// IsChatURI reports whether u is in the ahp-chat scheme.
func IsChatURI(u string) bool { return strings.HasPrefix(u, ChatScheme+":") }

// SessionID returns the id a session URI carries (`<scheme>:/<id>` or
// `<scheme>://<id>`), and whether u has a session URI's shape.
func SessionID(u string) (string, bool) {
	scheme, rest, ok := strings.Cut(u, ":")
	if !ok || !validScheme(scheme) || scheme == ChatScheme || strings.HasPrefix(scheme, "ahp-") && scheme != SessionScheme {
		return "", false
	}
	id := strings.TrimLeft(rest, "/")
	if id == "" || strings.ContainsAny(id, "/?#") {
		return "", false
	}
	return id, true
}

// IsSessionURI reports whether u has a session URI's shape.
func IsSessionURI(u string) bool { _, ok := SessionID(u); return ok }

// SessionProviderScheme returns the URI's scheme when it is a provider
// scheme (VS Code's `<provider>:/<uuid>`), "" for `ahp-session:`.
func SessionProviderScheme(u string) string {
	scheme, _, _ := strings.Cut(u, ":")
	if scheme == SessionScheme {
		return ""
	}
	return scheme
}

func validScheme(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return true
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func unb64(s string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return "", false
	}
	return string(b), true
}

// DefaultChatURI is the URI VS Code computes for a session's default chat.
func DefaultChatURI(session string) string {
	return ChatScheme + "://" + defaultAuthority + "/" + b64(session)
}

// SubagentChatURI is the URI an older VS Code computes for the worker chat
// of a tool call.
func SubagentChatURI(session, toolCallID string) string {
	return ChatScheme + "://" + subagentAuth + "/" + b64(session) + "/" + url.PathEscape(toolCallID)
}

// OpaqueChatURI is `ahp-chat:/<id>`.
func OpaqueChatURI(id string) string { return ChatScheme + ":/" + id }

// ChatURIKind says which spelling a chat URI uses.
type ChatURIKind int

const (
	ChatURIInvalid ChatURIKind = iota
	// ChatURIOpaque is `ahp-chat:/<id>`.
	ChatURIOpaque
	// ChatURIDefault is `ahp-chat://default/<base64url(session)>`.
	ChatURIDefault
	// ChatURISubagent is `ahp-chat://subagent/<base64url(session)>/<toolCallId>`.
	ChatURISubagent
	// ChatURIDerived is VS Code's `ahp-chat://<chatId>/<base64url(session)>`
	// for a peer chat it created.
	ChatURIDerived
)

func (k ChatURIKind) String() string {
	switch k {
	case ChatURIOpaque:
		return "opaque"
	case ChatURIDefault:
		return "default"
	case ChatURISubagent:
		return "subagent"
	case ChatURIDerived:
		return "derived"
	}
	return "invalid"
}

// ParsedChatURI is what a chat URI says.
type ParsedChatURI struct {
	Kind ChatURIKind
	// ID is the opaque id, or the chat id of a derived URI.
	ID string
	// Session is the session URI a default, subagent or derived URI encodes.
	Session string
	// ToolCallID is a subagent URI's tool call.
	ToolCallID string
}

// ParseChatURI reads a chat URI. It never guesses a session out of an
// opaque URI.
func ParseChatURI(u string) (ParsedChatURI, error) {
	rest, ok := strings.CutPrefix(u, ChatScheme+":")
	if !ok {
		return ParsedChatURI{}, fmt.Errorf("%q is not an %s URI", u, ChatScheme)
	}
	if authPath, ok := strings.CutPrefix(rest, "//"); ok {
		auth, path, _ := strings.Cut(authPath, "/")
		if auth == "" || path == "" {
			return ParsedChatURI{}, fmt.Errorf("chat URI %q: missing authority or path", u)
		}
		segs := strings.Split(path, "/")
		session, ok := unb64(segs[0])
		if !ok || !IsSessionURI(session) {
			return ParsedChatURI{}, fmt.Errorf("chat URI %q: path does not encode a session URI", u)
		}
		switch {
		case auth == defaultAuthority && len(segs) == 1:
			return ParsedChatURI{Kind: ChatURIDefault, Session: session}, nil
		case auth == subagentAuth && len(segs) == 2 && segs[1] != "":
			tc, err := url.PathUnescape(segs[1])
			if err != nil {
				return ParsedChatURI{}, fmt.Errorf("chat URI %q: tool call id: %w", u, err)
			}
			return ParsedChatURI{Kind: ChatURISubagent, Session: session, ToolCallID: tc}, nil
		case len(segs) == 1:
			return ParsedChatURI{Kind: ChatURIDerived, ID: auth, Session: session}, nil
		}
		return ParsedChatURI{}, fmt.Errorf("chat URI %q: unexpected path", u)
	}
	id := strings.TrimPrefix(rest, "/")
	if id == "" || strings.ContainsAny(id, "/?#") {
		return ParsedChatURI{}, fmt.Errorf("chat URI %q: missing id", u)
	}
	return ParsedChatURI{Kind: ChatURIOpaque, ID: id}, nil
}

// LocalPath turns a directory URI (file:///x) or a plain absolute path into
// a local absolute path.
func LocalPath(u string) (string, error) {
	if filepath.IsAbs(u) {
		return filepath.Clean(u), nil
	}
	pu, err := url.Parse(u)
	if err != nil || pu.Scheme != "file" || pu.Path == "" {
		return "", fmt.Errorf("%q is not a file: URI or an absolute path", u)
	}
	if pu.Host != "" && pu.Host != "localhost" {
		return "", fmt.Errorf("%q names another host", u)
	}
	return filepath.Clean(pu.Path), nil
}

// LocalPaths is LocalPath over a list.
func LocalPaths(uris []string) ([]string, error) {
	out := make([]string, 0, len(uris))
	for _, u := range uris {
		p, err := LocalPath(u)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// FileURI turns a local path into a file: URI.
func FileURI(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// DerivedChatURI is VS Code's ahp-chat://<chatId>/<base64url(session)>.
func DerivedChatURI(session, chatID string) string {
	return ChatScheme + "://" + chatID + "/" + b64(session)
}

// MintChatURI mints the URI of a chat the host opens itself in a session
// (a tool's chat, a worker): in the format of the session's default chat
// (C-FIRST-04). A session whose default chat is VS Code's derived URI gets
// the derived form VS Code itself uses for a peer chat
// (buildChatUri(session, id)); any other gets an opaque ahp-chat:/<id>.
func MintChatURI(session, defaultChat, id string) string {
	if SpeaksDerivedURIs(defaultChat) {
		return DerivedChatURI(session, id)
	}
	return OpaqueChatURI(id)
}

// SpeaksDerivedURIs reports whether a session whose default chat is
// defaultChat names its chats in VS Code's derived form
// (ahp-chat://<id>/<base64url(session)>); the host mints the chats it opens
// there in that form too (C-FIRST-04, C-SUB-02).
func SpeaksDerivedURIs(defaultChat string) bool {
	p, err := ParseChatURI(defaultChat)
	return err == nil && (p.Kind == ChatURIDefault || p.Kind == ChatURIDerived)
}

// annotationsSuffix nests a session's annotations channel under its URI
// (VS Code's buildAnnotationsUri): <session>/annotations.
const annotationsSuffix = "/annotations"

// AnnotationsURI is the session's annotations channel.
func AnnotationsURI(session string) string { return session + annotationsSuffix }

// AnnotationsSession returns the session an annotations channel belongs to,
// and whether u is one.
func AnnotationsSession(u string) (string, bool) {
	session, ok := strings.CutSuffix(u, annotationsSuffix)
	if !ok || !IsSessionURI(session) {
		return "", false
	}
	return session, true
}
