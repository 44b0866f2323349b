package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/ahpd/ahpd/internal/ahp"
)

// frameKind is what a valid frame carries.
type frameKind int

const (
	frameRequest      frameKind = iota + 1 // has a method and an id: answered exactly once
	frameNotification                      // has a method and no id: never answered
	frameResponse                          // has result or error: a client's answer to a server request
)

// envelope is one valid frame, read once (parseFrame): the connection
// dispatches it without decoding it again. It is expressed in jsonrpc2's
// message types, and a frame reads here as jsonrpc2 would read it (FuzzFrame
// checks it against jsonrpc2's own decoder), without jsonrpc2's round trip
// of params through map[string]any.
type envelope struct {
	kind frameKind
	// req is a request or notification: Method, Params (nil when absent
	// or null), ID and Notif. Meta is not read.
	req jsonrpc2.Request
	// resp is a response: ID (zero, with nullID, when null), Result (nil
	// when it carries an error) and Error.
	resp   jsonrpc2.Response
	nullID bool
}

// frameError is a frame the connection answers itself: a frame it cannot
// read as one JSON-RPC message never reaches the Handler, and never closes
// the connection (STYLE.md trap 1).
type frameError struct {
	// id is the raw id to echo, or nil for null: JSON-RPC 2.0 §5 answers
	// with a null id when the id cannot be read.
	id json.RawMessage
	// err wraps ahp.ErrParse or ahp.ErrInvalidRequest.
	err error
}

func parseError(err error) *frameError {
	return &frameError{err: ahp.Errorf(ahp.ErrParse, "%v", err)}
}

func invalidRequest(id json.RawMessage, format string, args ...any) *frameError {
	return &frameError{id: id, err: ahp.Errorf(ahp.ErrInvalidRequest, format, args...)}
}

// frame returns the JSON-RPC error response for e.
func (e *frameError) frame() []byte {
	return errorFrame(e.id, e.err)
}

// errorFrame renders {"jsonrpc":"2.0","id":id,"error":{code,message,data}} for
// err through ahp.WireError. id nil is rendered as null.
func errorFrame(id json.RawMessage, err error) []byte {
	code, message, data := ahp.WireError(err)
	wire := wireError{Code: code, Message: message}
	if data != nil {
		if b, mErr := json.Marshal(data); mErr == nil {
			wire.Data = b
		}
	}
	if id == nil {
		id = json.RawMessage("null")
	}
	b, mErr := json.Marshal(wireResponse{JSONRPC: "2.0", ID: id, Error: &wire})
	if mErr != nil {
		// Only a malformed id could get here, and ids are checked before
		// they are echoed; answer with a null id rather than nothing.
		b, _ = json.Marshal(wireResponse{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &wire})
	}
	return b
}

type wireResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   *wireError      `json:"error,omitempty"`
}

type wireError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Member names of the JSON-RPC envelope and of its error object.
//
// encoding/json matches struct fields case-insensitively (with Unicode
// folding), and jsonrpc2 decodes envelopes into structs, so a frame carrying
// "Method" or "reſult" next to the real member would be read differently by
// jsonrpc2 than by us. Such frames, and frames repeating a member, are
// refused: JSON-RPC member names are case-sensitive.
var (
	envelopeMembers = []string{"jsonrpc", "id", "method", "params", "result", "error", "meta"}
	errorMembers    = []string{"code", "message", "data"}
)

// parseFrame validates one text frame as a single JSON-RPC 2.0 message of a
// shape jsonrpc2 v0.2.3 can decode without error, and reads it. It never
// panics and does not keep data: what the envelope holds is copied.
//
// Rules (JSON-RPC 2.0 §4–5; batches are not supported):
//   - not JSON → -32700;
//   - JSON but not an object (batches included) → -32600;
//   - "jsonrpc" must be "2.0";
//   - a request or notification has a string "method", no "result"/"error",
//     and "params" an object, an array or null;
//   - a request id is a string or an integer in [0, 2^63) (what jsonrpc2
//     can echo); a null id is refused, since jsonrpc2 would take the
//     request for a notification and never answer it;
//   - a response has exactly one of "result"/"error", an id (string,
//     integer in [0, 2^64) or null), and an error object {code, message, data?}.
func parseFrame(data []byte) (envelope, *frameError) {
	if !json.Valid(data) {
		var v json.RawMessage
		err := json.Unmarshal(data, &v)
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return envelope{}, parseError(err)
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	switch trimmed[0] {
	case '{':
	case '[':
		return envelope{}, invalidRequest(nil, "batch requests are not supported")
	default:
		return envelope{}, invalidRequest(nil, "a message must be a JSON object")
	}
	m, dup, err := objectMembers(trimmed, envelopeMembers)
	if err != nil {
		return envelope{}, invalidRequest(nil, "%v", err)
	}

	// Read the id first so every later refusal can echo it.
	id, hasID := m["id"]
	var echo json.RawMessage
	if hasID && (id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9')) {
		echo = id
	}
	if dup != "" {
		return envelope{}, invalidRequest(echo, "%s", dup)
	}
	if v, ok := m["jsonrpc"]; !ok || !isString(v, "2.0") {
		return envelope{}, invalidRequest(echo, `jsonrpc: must be "2.0"`)
	}

	method, hasMethod := m["method"]
	_, hasResult := m["result"]
	errObj, hasError := m["error"]
	switch {
	case hasMethod:
		if hasResult || hasError {
			return envelope{}, invalidRequest(echo, "a request cannot carry result or error")
		}
		if method[0] != '"' {
			return envelope{}, invalidRequest(echo, "method: must be a string")
		}
		if p, ok := m["params"]; ok && p[0] != '{' && p[0] != '[' && p[0] != 'n' {
			return envelope{}, invalidRequest(echo, "params: must be an object or an array")
		}
		env := envelope{kind: frameNotification, req: jsonrpc2.Request{Notif: true}}
		if err := json.Unmarshal(method, &env.req.Method); err != nil {
			return envelope{}, invalidRequest(echo, "method: %v", err)
		}
		if p, ok := m["params"]; ok && p[0] != 'n' {
			env.req.Params = &p
		}
		if !hasID {
			return env, nil
		}
		switch {
		case id[0] == '"':
			env.req.ID.IsString = true
			if err := json.Unmarshal(id, &env.req.ID.Str); err != nil {
				return envelope{}, invalidRequest(nil, "id: %v", err)
			}
		case id[0] == 'n':
			return envelope{}, invalidRequest(nil, "id: null is not supported in a request")
		case echo != nil:
			n, err := strconv.ParseInt(string(id), 10, 64)
			if err != nil || n < 0 {
				return envelope{}, invalidRequest(echo, "id: must be a string or a non-negative integer")
			}
			env.req.ID.Num = uint64(n)
		default:
			return envelope{}, invalidRequest(nil, "id: must be a string or a non-negative integer")
		}
		env.kind, env.req.Notif = frameRequest, false
		return env, nil

	case hasResult || hasError:
		if hasResult && hasError {
			return envelope{}, invalidRequest(echo, "a response carries result or error, not both")
		}
		if !hasID {
			return envelope{}, invalidRequest(nil, "id: required in a response")
		}
		env := envelope{kind: frameResponse}
		switch {
		case id[0] == '"':
			env.resp.ID.IsString = true
			if err := json.Unmarshal(id, &env.resp.ID.Str); err != nil {
				return envelope{}, invalidRequest(nil, "id: %v", err)
			}
		case id[0] == 'n':
			env.nullID = true
		case echo != nil:
			n, err := strconv.ParseUint(string(id), 10, 64)
			if err != nil {
				return envelope{}, invalidRequest(echo, "id: must be a string or a non-negative integer")
			}
			env.resp.ID.Num = n
		default:
			return envelope{}, invalidRequest(nil, "id: must be a string or a non-negative integer")
		}
		if hasError {
			if err := checkErrorObject(errObj); err != nil {
				return envelope{}, invalidRequest(echo, "error: %v", err)
			}
			env.resp.Error = new(jsonrpc2.Error)
			if err := json.Unmarshal(errObj, env.resp.Error); err != nil {
				return envelope{}, invalidRequest(echo, "error: %v", err)
			}
			return env, nil
		}
		result := m["result"]
		env.resp.Result = &result
		return env, nil

	default:
		return envelope{}, invalidRequest(echo, "method: required")
	}
}

// checkErrorObject checks a response's error member: {code, message, data?}.
func checkErrorObject(raw json.RawMessage) error {
	if raw[0] != '{' {
		return errors.New("must be an object")
	}
	m, dup, err := objectMembers(raw, errorMembers)
	if err != nil {
		return err
	}
	if dup != "" {
		return errors.New(dup)
	}
	code, ok := m["code"]
	if !ok {
		return errors.New("code: required")
	}
	if _, err := strconv.ParseInt(string(code), 10, 64); err != nil {
		return errors.New("code: must be an integer")
	}
	message, ok := m["message"]
	if !ok || message[0] != '"' {
		return errors.New("message: must be a string")
	}
	return nil
}

// objectMembers returns the members of the JSON object data (already known
// to be valid JSON) whose names are in names. dup describes the first
// member that repeats one of names or differs from one only by case; it is
// empty when there is none.
func objectMembers(data []byte, names []string) (members map[string]json.RawMessage, dup string, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, "", err
	}
	members = make(map[string]json.RawMessage, len(names))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, "", err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, "", fmt.Errorf("unexpected token %v", tok)
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, "", err
		}
		for _, name := range names {
			switch {
			case key == name:
				if _, seen := members[name]; seen && dup == "" {
					dup = fmt.Sprintf("member %q: appears twice", name)
				}
				members[name] = value
			case dup == "" && strings.EqualFold(key, name):
				dup = fmt.Sprintf("member %q: names are case-sensitive (want %q)", key, name)
			}
		}
	}
	return members, dup, nil
}

// isString reports whether raw is the JSON string want.
func isString(raw json.RawMessage, want string) bool {
	var s string
	return raw[0] == '"' && json.Unmarshal(raw, &s) == nil && s == want
}
