package ahp

import (
	"fmt"
	"net/url"
	"strings"
)

// ClientScheme is the scheme of a file a connected client hosts (VS Code's
// src/vs/platform/agentHost/common/agentClientUri.ts). The owning
// connection's clientId is the authority, and the client's own URI is
// folded into the path:
//
//	vscode-agent-client://<clientId>/<scheme>/<authority or ->/<path>
//	vscode-agent-client://client-1/file/-/Users/u/notes.txt  ⇔  file:///Users/u/notes.txt on client-1
//
// An opaque client URI (no leading slash in its path, such as
// untitled:Untitled-1) marks its scheme with a trailing "!". The query and
// fragment are the client URI's own.
const ClientScheme = "vscode-agent-client"

const clientPrefix = ClientScheme + "://"

// ClientFile is a vscode-agent-client URI taken apart.
type ClientFile struct {
	// ClientID is the owning connection's clientId.
	ClientID string
	// URI is the file's URI on the client, as the client named it (its
	// percent-encoding kept): what a reverse request carries.
	URI string
}

// IsClientURI reports whether u is of the client-hosted scheme (any case,
// as URI schemes are).
func IsClientURI(u string) bool {
	return len(u) >= len(clientPrefix) && strings.EqualFold(u[:len(clientPrefix)], clientPrefix)
}

// ParseClientURI takes a vscode-agent-client URI apart. It refuses what
// names no client, a scheme that is not one, and a path with a "." or ".."
// segment or a NUL: a client's files are its own to confine, so the host
// forwards only a path that means one thing.
func ParseClientURI(u string) (ClientFile, error) {
	if !IsClientURI(u) {
		return ClientFile{}, fmt.Errorf("%q is not a %s: URI", u, ClientScheme)
	}
	rest := u[len(clientPrefix):]
	var suffix string // ?query#fragment, carried to the client's URI
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest, suffix = rest[:i], rest[i:]
	}
	authority, path, ok := strings.Cut(rest, "/")
	if !ok {
		return ClientFile{}, fmt.Errorf("%q names no file of the client", u)
	}
	id, err := url.PathUnescape(authority)
	if err != nil || id == "" {
		return ClientFile{}, fmt.Errorf("%q names no client (the authority is the clientId)", u)
	}
	scheme, path, ok := strings.Cut(path, "/")
	if !ok {
		return ClientFile{}, fmt.Errorf("%q names no file of the client", u)
	}
	opaque := strings.HasSuffix(scheme, "!")
	scheme = strings.TrimSuffix(scheme, "!")
	if !validScheme(scheme) {
		return ClientFile{}, fmt.Errorf("%q: %q is not a URI scheme", u, scheme)
	}
	origAuthority, origPath, hasPath := strings.Cut(path, "/")
	if origAuthority == "-" {
		origAuthority = ""
	}
	if hasPath {
		origPath = "/" + origPath
	} else {
		origPath = "/"
	}
	if err := checkSegments(origPath); err != nil {
		return ClientFile{}, fmt.Errorf("%q: %w", u, err)
	}
	var b strings.Builder
	b.WriteString(strings.ToLower(scheme))
	b.WriteString(":")
	if opaque {
		b.WriteString(strings.TrimPrefix(origPath, "/"))
	} else {
		b.WriteString("//")
		b.WriteString(origAuthority)
		b.WriteString(origPath)
	}
	b.WriteString(suffix)
	return ClientFile{ClientID: id, URI: b.String()}, nil
}

// checkSegments refuses a "." or ".." segment (in any spelling) and a NUL.
func checkSegments(path string) error {
	for _, seg := range strings.Split(path, "/") {
		plain, err := url.PathUnescape(seg)
		if err != nil {
			return fmt.Errorf("the path has a malformed escape: %v", err)
		}
		if plain == "." || plain == ".." {
			return fmt.Errorf("the path has a %q segment", plain)
		}
		if strings.ContainsRune(plain, 0) {
			return fmt.Errorf("the path has a NUL")
		}
	}
	return nil
}

// ClientURI wraps a URI of client clientID's into the client-hosted scheme;
// ok is false when uri is not an absolute URI (scheme:...).
func ClientURI(clientID, uri string) (string, bool) {
	scheme, rest, ok := strings.Cut(uri, ":")
	if !ok || !validScheme(scheme) {
		return "", false
	}
	var suffix string
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest, suffix = rest[:i], rest[i:]
	}
	authority, path := "-", rest
	if after, hier := strings.CutPrefix(rest, "//"); hier {
		var p string
		authority, p, _ = strings.Cut(after, "/")
		path = "/" + p
		if authority == "" {
			authority = "-"
		}
	} else if !strings.HasPrefix(rest, "/") {
		scheme += "!" // opaque
		path = "/" + rest
	}
	return clientPrefix + url.PathEscape(clientID) + "/" + scheme + "/" + authority + path + suffix, true
}
