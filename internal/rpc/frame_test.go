package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"reflect"
	"sync"
	"testing"
	"unsafe"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/ahpd/ahpd/internal/ahp"
)

func TestParseFrame(t *testing.T) {
	tests := []struct {
		name     string
		frame    string
		wantKind frameKind
		wantCode int    // when refused
		wantID   string // echoed id when refused; "" for null
	}{
		// Accepted shapes.
		{name: "request with integer id", frame: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, wantKind: frameRequest},
		{name: "request with string id", frame: `{"jsonrpc":"2.0","id":"a","method":"ping"}`, wantKind: frameRequest},
		{name: "request with params array", frame: `{"jsonrpc":"2.0","id":0,"method":"x","params":[1]}`, wantKind: frameRequest},
		{name: "request with null params", frame: `{"jsonrpc":"2.0","id":2,"method":"x","params":null}`, wantKind: frameRequest},
		{name: "request with extension members", frame: `{"jsonrpc":"2.0","id":3,"method":"x","x-trace":"t"}`, wantKind: frameRequest},
		{name: "request surrounded by whitespace", frame: " \n{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"x\"}\n", wantKind: frameRequest},
		{name: "largest integer id jsonrpc2 echoes", frame: `{"jsonrpc":"2.0","id":9223372036854775807,"method":"x"}`, wantKind: frameRequest},
		{name: "notification has no id", frame: `{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-chat:/c1"}}`, wantKind: frameNotification},
		{name: "response with result", frame: `{"jsonrpc":"2.0","id":5,"result":null}`, wantKind: frameResponse},
		{name: "response with error and null id", frame: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":1}}`, wantKind: frameResponse},

		// -32700: not JSON.
		{name: "truncated JSON is a parse error", frame: `{"jsonrpc":"2.0"`, wantCode: ahp.CodeParseError},
		{name: "empty frame is a parse error", frame: ``, wantCode: ahp.CodeParseError},
		{name: "two values are a parse error", frame: `{} {}`, wantCode: ahp.CodeParseError},

		// -32600: JSON, but not one JSON-RPC message.
		{name: "batches are not supported", frame: `[{"jsonrpc":"2.0","id":1,"method":"x"}]`, wantCode: ahp.CodeInvalidRequest},
		{name: "a message is an object", frame: `true`, wantCode: ahp.CodeInvalidRequest},
		{name: "jsonrpc must be 2.0", frame: `{"jsonrpc":2.0,"id":1,"method":"x"}`, wantCode: ahp.CodeInvalidRequest, wantID: "1"},
		{name: "method required", frame: `{"jsonrpc":"2.0","id":"q"}`, wantCode: ahp.CodeInvalidRequest, wantID: `"q"`},
		{name: "method is a string", frame: `{"jsonrpc":"2.0","id":1,"method":null}`, wantCode: ahp.CodeInvalidRequest, wantID: "1"},
		{name: "params is structured", frame: `{"jsonrpc":"2.0","id":1,"method":"x","params":3}`, wantCode: ahp.CodeInvalidRequest, wantID: "1"},
		{name: "request id null is refused", frame: `{"jsonrpc":"2.0","id":null,"method":"x"}`, wantCode: ahp.CodeInvalidRequest},
		{name: "request id must fit int64", frame: `{"jsonrpc":"2.0","id":9223372036854775808,"method":"x"}`, wantCode: ahp.CodeInvalidRequest, wantID: "9223372036854775808"},
		{name: "request id exponent is refused", frame: `{"jsonrpc":"2.0","id":1e3,"method":"x"}`, wantCode: ahp.CodeInvalidRequest, wantID: "1e3"},
		{name: "request id array is unreadable", frame: `{"jsonrpc":"2.0","id":[1],"method":"x"}`, wantCode: ahp.CodeInvalidRequest},
		{name: "request cannot carry error", frame: `{"jsonrpc":"2.0","id":1,"method":"x","error":null}`, wantCode: ahp.CodeInvalidRequest, wantID: "1"},
		{name: "members are case-sensitive", frame: `{"jsonrpc":"2.0","id":1,"method":"x","RESULT":1}`, wantCode: ahp.CodeInvalidRequest, wantID: "1"},
		{name: "members fold like encoding/json", frame: `{"jsonrpc":"2.0","id":1,"method":"x","reſult":1}`, wantCode: ahp.CodeInvalidRequest, wantID: "1"},
		{name: "members appear once", frame: `{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}`, wantCode: ahp.CodeInvalidRequest, wantID: "2"},
		{name: "response needs an id", frame: `{"jsonrpc":"2.0","result":1}`, wantCode: ahp.CodeInvalidRequest},
		{name: "response id must be unsigned", frame: `{"jsonrpc":"2.0","id":-1,"result":1}`, wantCode: ahp.CodeInvalidRequest, wantID: "-1"},
		{name: "response error needs a code", frame: `{"jsonrpc":"2.0","id":1,"error":{"message":"x"}}`, wantCode: ahp.CodeInvalidRequest, wantID: "1"},
		{name: "response error code is an integer", frame: `{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}`, wantCode: ahp.CodeInvalidRequest, wantID: "1"},
		{name: "response error message is a string", frame: `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":2}}`, wantCode: ahp.CodeInvalidRequest, wantID: "1"},
		{name: "response error members are case-sensitive", frame: `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","Code":"x"}}`, wantCode: ahp.CodeInvalidRequest, wantID: "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, ferr := parseFrame([]byte(tt.frame))
			kind := env.kind
			if tt.wantCode == 0 {
				if ferr != nil {
					t.Fatalf("refused: %v", ferr.err)
				}
				if kind != tt.wantKind {
					t.Errorf("kind %d, want %d", kind, tt.wantKind)
				}
				return
			}
			if ferr == nil {
				t.Fatalf("accepted as kind %d, want code %d", kind, tt.wantCode)
			}
			if code, _, _ := ahp.WireError(ferr.err); code != tt.wantCode || string(ferr.id) != tt.wantID {
				t.Errorf("refused with code %d id %q (%v), want code %d id %q", code, ferr.id, ferr.err, tt.wantCode, tt.wantID)
			}
		})
	}
}

// anyMessageType is the type jsonrpc2 hands to ObjectStream.ReadObject (an
// unexported *anyMessage), captured from a real jsonrpc2.Conn so the fuzz
// test decodes exactly what ReadObject decodes.
var anyMessageType = sync.OnceValue(func() reflect.Type {
	types := make(chan reflect.Type, 1)
	jc := jsonrpc2.NewConn(context.Background(), captureStream{types}, jsonrpc2.HandlerWithError(
		func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) (any, error) { return nil, nil }))
	typ := <-types
	<-jc.DisconnectNotify()
	return typ
})

// captureStream reports the type of the first ReadObject target and ends.
type captureStream struct{ types chan reflect.Type }

func (s captureStream) ReadObject(v any) error {
	select {
	case s.types <- reflect.TypeOf(v).Elem():
	default:
	}
	return io.EOF
}
func (captureStream) WriteObject(any) error { return nil }
func (captureStream) Close() error          { return nil }

// FuzzFrame feeds arbitrary frames through the frame reader. It must never
// panic; a refused frame is answered by a valid -32700/-32600 response; an
// accepted frame decodes into jsonrpc2's message type as the kind
// parseFrame said, and parseFrame read what jsonrpc2's own decoder reads:
// the method, the params (as a value), the id, the result and the error.
func FuzzFrame(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://"}}`,
		`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-chat:/c1","action":{}}}`,
		`{"jsonrpc":"2.0","id":"x","result":{"ok":true}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"m","data":[1]}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"x"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"x","Method":5}`,
		`{"jsonrpc":"2.0","id":-0,"method":"x","params":null,"meta":{}}`,
		`{"jsonrpc":"2.0","id":1.0,"result":1,"error":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","id":"y"}`,
		`{"jsonrpc":"2.0","id":18446744073709551615,"result":1}`,
		`{`, `"`, `nul`, `1e999`, "\xff", ` `,
	} {
		f.Add([]byte(seed))
	}
	msgType := anyMessageType()
	f.Fuzz(func(t *testing.T, data []byte) {
		env, ferr := parseFrame(data)
		kind := env.kind
		if ferr != nil {
			var resp struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			frame := ferr.frame()
			if err := json.Unmarshal(frame, &resp); err != nil {
				t.Fatalf("error reply %q is not JSON: %v", frame, err)
			}
			if resp.JSONRPC != "2.0" || len(resp.ID) == 0 ||
				(resp.Error.Code != ahp.CodeParseError && resp.Error.Code != ahp.CodeInvalidRequest) {
				t.Fatalf("error reply %s", frame)
			}
			return
		}
		v := reflect.New(msgType)
		if err := decodeInto(v.Interface(), data); err != nil {
			t.Fatalf("checkFrame accepted %q as kind %d, but jsonrpc2 cannot decode it: %v", data, kind, err)
		}
		// anyMessage{request *Request; response *Response}: read the
		// unexported fields through reflect.
		request, response := v.Elem().FieldByName("request"), v.Elem().FieldByName("response")
		switch kind {
		case frameRequest, frameNotification:
			if request.IsNil() || !response.IsNil() {
				t.Fatalf("%q: kind %d but jsonrpc2 decoded request=%v response=%v", data, kind, !request.IsNil(), !response.IsNil())
			}
			want := exported(request).(*jsonrpc2.Request)
			if want.Notif != (kind == frameNotification) || want.Notif != env.req.Notif {
				t.Fatalf("%q: kind %d (Notif %v) but jsonrpc2 Notif=%v", data, kind, env.req.Notif, want.Notif)
			}
			if want.Method != env.req.Method || want.ID != env.req.ID {
				t.Fatalf("%q: read method %q id %v, jsonrpc2 %q %v", data, env.req.Method, env.req.ID, want.Method, want.ID)
			}
			if !sameJSON(t, paramsOf(want), paramsOf(&env.req)) {
				t.Fatalf("%q: read params %s, jsonrpc2 %s", data, paramsOf(&env.req), paramsOf(want))
			}
		case frameResponse:
			if !request.IsNil() || response.IsNil() {
				t.Fatalf("%q: response but jsonrpc2 decoded request=%v response=%v", data, !request.IsNil(), !response.IsNil())
			}
			want := exported(response).(*jsonrpc2.Response)
			if want.ID != env.resp.ID || (want.Result == nil) != (env.resp.Result == nil) ||
				(want.Error == nil) != (env.resp.Error == nil) {
				t.Fatalf("%q: read %+v, jsonrpc2 %+v", data, env.resp, want)
			}
			if want.Result != nil && !sameJSON(t, *want.Result, *env.resp.Result) {
				t.Fatalf("%q: read result %s, jsonrpc2 %s", data, *env.resp.Result, *want.Result)
			}
			if want.Error != nil && (want.Error.Code != env.resp.Error.Code || want.Error.Message != env.resp.Error.Message) {
				t.Fatalf("%q: read error %+v, jsonrpc2 %+v", data, env.resp.Error, want.Error)
			}
		default:
			t.Fatalf("%q: accepted with kind %d", data, kind)
		}
	})
}

// sameJSON reports whether a and b hold the same JSON value (nil for
// none); numbers compare by their text.
func sameJSON(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	decode := func(raw json.RawMessage) any {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
		return v
	}
	return reflect.DeepEqual(decode(a), decode(b))
}

// decodeInto decodes data into a fresh value of v's type and stores it in
// v only on success.
func decodeInto(v any, data []byte) error {
	rv := reflect.ValueOf(v)
	fresh := reflect.New(rv.Elem().Type())
	if err := json.Unmarshal(data, fresh.Interface()); err != nil {
		return err
	}
	rv.Elem().Set(fresh.Elem())
	return nil
}

// exported reads an unexported field of an addressable struct value.
func exported(field reflect.Value) any {
	return reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem().Interface()
}
