package ahp

import "testing"

// TestParseVersion: a version is three non-negative integers, with an
// optional pre-release or build suffix that does not count.
func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in                  string
		major, minor, patch int
		ok                  bool
	}{
		{"1.0.0", 1, 0, 0, true},
		{"0.10.3", 0, 10, 3, true},
		{"1.2.3-rc.1", 1, 2, 3, true},
		{"1.2.3+build", 1, 2, 3, true},
		{"1.0", 0, 0, 0, false},
		{"1.0.0.0", 0, 0, 0, false},
		{"1..0", 0, 0, 0, false},
		{"1.0.", 0, 0, 0, false},
		{"a.b.c", 0, 0, 0, false},
		{"", 0, 0, 0, false},
		{"-1.0.0", 0, 0, 0, false},
	} {
		major, minor, patch, ok := parseVersion(tc.in)
		if ok != tc.ok || major != tc.major || minor != tc.minor || patch != tc.patch {
			t.Errorf("parseVersion(%q) = %d.%d.%d %v, want %d.%d.%d %v", tc.in, major, minor, patch, ok, tc.major, tc.minor, tc.patch, tc.ok)
		}
	}
	if n := testing.AllocsPerRun(100, func() { ActionKnownTo(ActionChatTurnStarted, "1.0.0") }); n != 0 {
		t.Errorf("ActionKnownTo allocates %v times a call, want none", n)
	}
}
