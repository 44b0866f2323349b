package host

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/rpc"
)

func TestClientErrorPassesFileCodesOnly(t *testing.T) {
	cases := []struct {
		code     int64
		want     int
		mentions string
	}{
		{ahp.CodeNotFound, ahp.CodeNotFound, "client c: why"},
		{ahp.CodePermissionDenied, ahp.CodePermissionDenied, "client c: why"},
		{ahp.CodeAlreadyExists, ahp.CodeAlreadyExists, "client c: why"},
		{ahp.CodeConflict, ahp.CodeConflict, "client c: why"},
		{ahp.CodeInvalidParams, ahp.CodeInvalidParams, "client c: why"},
		// The client failing is not the file's fault: an internal error
		// naming the client's code.
		{ahp.CodeMethodNotFound, ahp.CodeInternalError, "error -32601: why"},
		{ahp.CodeInternalError, ahp.CodeInternalError, "error -32603: why"},
		{ahp.CodeSessionNotFound, ahp.CodeInternalError, "error -32001: why"},
		{ahp.CodeAuthRequired, ahp.CodeInternalError, "error -32007: why"},
		{-1234, ahp.CodeInternalError, "error -1234: why"},
	}
	for _, c := range cases {
		err := clientError("c", "resourceRead", &rpc.CallError{Code: c.code, Message: "why"})
		code, msg, _ := ahp.WireError(err)
		if code != c.want || !strings.Contains(msg, c.mentions) {
			t.Errorf("client code %d: %d %q, want %d mentioning %q", c.code, code, msg, c.want, c.mentions)
		}
	}
	long := clientError("c", "resourceRead", &rpc.CallError{Code: ahp.CodeNotFound, Message: strings.Repeat("é", 1000)})
	if _, msg, _ := ahp.WireError(long); len(msg) > maxClientText+64 || !utf8.ValidString(msg) || !errors.Is(long, ahp.ErrNotFound) {
		t.Fatalf("a long message passed on as %d bytes", len(msg))
	}
}

func TestClipKeepsValidUTF8(t *testing.T) {
	s := clip(strings.Repeat("€", maxClientText)) // 3 bytes each: the bound falls inside one
	if s != strings.Repeat("€", maxClientText/3) {
		t.Fatalf("clip gave %d bytes ending %q, want %d whole characters", len(s), s[len(s)-4:], maxClientText/3)
	}
	if got := clip("a\xffb"); got != "a\uFFFDb" {
		t.Fatalf("clip(invalid) = %q", got)
	}
}

func TestClientTime(t *testing.T) {
	for raw, want := range map[string]string{
		`"2026-12-05T05:27:22.923Z"`:       "2026-12-05T05:27:22.923Z",
		`"2026-12-05T06:27:22.9231+01:00"`: "2026-12-05T05:27:22.923Z",
		`1796448442923`:                    "2026-12-05T05:27:22.923Z",
		`"yesterday"`:                      "",
		`-5`:                               "",
		`{}`:                               "",
		``:                                 "",
	} {
		if got := clientTime(json.RawMessage(raw)); got != want {
			t.Errorf("clientTime(%s) = %q, want %q", raw, got, want)
		}
	}
}
