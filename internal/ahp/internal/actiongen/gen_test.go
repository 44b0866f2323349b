package actiongen

import (
	"strings"
	"testing"
)

func TestParseRefusesBadRows(t *testing.T) {
	for _, tc := range []struct{ name, row string }{
		{"too few columns", "chat/delta ChatDelta 0.4.0 - -"},
		{"bad type", "delta ChatDelta 0.4.0 - - plain"},
		{"bad struct", "chat/delta chatDelta 0.4.0 - - plain"},
		{"bad version", "chat/delta ChatDelta 0.4 - - plain"},
		{"bad client column", "chat/delta ChatDelta 0.4.0 yes - plain"},
		{"grant on a server-only action", "chat/delta ChatDelta 0.4.0 - chat:send plain"},
		{"bad grant", "chat/turnStarted ChatTurnStarted 0.4.0 client send plain"},
		{"client action without a grant", "chat/turnStarted ChatTurnStarted 0.4.0 client - plain"},
		{"bad marshal column", "chat/delta ChatDelta 0.4.0 - - json"},
		{"listed twice", "chat/delta ChatDelta 0.4.0 - - plain\nchat/delta ChatDelta 0.4.0 - - plain"},
	} {
		if _, err := Parse([]byte(tc.row)); err == nil {
			t.Errorf("%s: %q parsed", tc.name, tc.row)
		}
	}
	rows, err := Parse([]byte("# comment\n\nchat/turnStarted ChatTurnStarted 0.4.0 client chat:send plain\n"))
	if err != nil || len(rows) != 1 || !rows[0].Client || rows[0].Grant != "chat:send" || !rows[0].Plain {
		t.Fatalf("Parse = %+v, %v", rows, err)
	}
	src, err := Generate(rows)
	if err != nil || !strings.Contains(string(src), `ActionChatTurnStarted: "chat:send"`) {
		t.Fatalf("Generate: %v\n%s", err, src)
	}
}
