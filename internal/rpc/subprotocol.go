package rpc

import (
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/gorilla/websocket"
)

// A browser's WebSocket can set neither an Authorization header nor any
// other header but Sec-WebSocket-Protocol, and a ?tkn= query would put the
// token in a URL (history, proxy logs). So a page presents its token as a
// subprotocol: it offers Subprotocol and TokenSubprotocolPrefix followed by
// the token in unpadded base64url (a subprotocol must be an HTTP token, and
// a connection token may hold any character). The server answers with
// Subprotocol only, so the token is never echoed.
const (
	// Subprotocol is the one subprotocol the server selects when offered.
	Subprotocol = "ahpd"
	// TokenSubprotocolPrefix starts the subprotocol that carries a token.
	TokenSubprotocolPrefix = "ahpd.token."
)

// maxSubprotocolToken bounds the encoded token read from the header.
const maxSubprotocolToken = 4096

// subprotocolToken returns the token a request offers as a subprotocol, or
// "" when it offers none (or one that is not valid base64url).
func subprotocolToken(r *http.Request) string {
	for _, p := range websocket.Subprotocols(r) {
		enc, ok := strings.CutPrefix(p, TokenSubprotocolPrefix)
		if !ok || enc == "" || len(enc) > maxSubprotocolToken {
			continue
		}
		tok, err := base64.RawURLEncoding.DecodeString(enc)
		if err != nil {
			return ""
		}
		return string(tok)
	}
	return ""
}

// TokenSubprotocol is the subprotocol that presents token (for tests and Go
// clients that want the browser's way).
func TokenSubprotocol(token string) string {
	return TokenSubprotocolPrefix + base64.RawURLEncoding.EncodeToString([]byte(token))
}
