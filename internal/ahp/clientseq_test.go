package ahp

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseClientSeq(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want int64
		ok   bool
	}{
		{"1", 1, true},
		{"0", 0, true},
		{"9007199254740991", MaxClientSeq, true},
		{"9007199254740992", 0, false},
		{"18446744073709551616", 0, false},
		{"1.5", 0, false},
		{"1.0", 0, false},
		{"1e3", 0, false},
		{"-1", 0, false},
		{`"abc"`, 0, false},
		{`"1"`, 0, false},
		{"null", 0, false},
		{"", 0, false},
		{"true", 0, false},
		{"01", 0, false},
	} {
		got, err := ParseClientSeq(json.RawMessage(tc.raw))
		if tc.ok != (err == nil) || got != tc.want {
			t.Errorf("ParseClientSeq(%s) = %d, %v; want %d ok %v", tc.raw, got, err, tc.want, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "clientSeq") {
			t.Errorf("ParseClientSeq(%s): %v does not name the field", tc.raw, err)
		}
	}
}
