package turns

import "testing"

func TestParseHostCommand(t *testing.T) {
	for _, tc := range []struct {
		text string
		want HostCommand
		ok   bool
	}{
		{"/rename Fix the tests", HostCommand{CommandRename, "Fix the tests"}, true},
		{"/rename   padded  ", HostCommand{CommandRename, "padded"}, true},
		{"/rename", HostCommand{CommandRename, ""}, true},
		{"/rename\tTabbed", HostCommand{CommandRename, "Tabbed"}, true},
		{"/renamed x", HostCommand{}, false},
		{"rename x", HostCommand{}, false},
		{"/compact", HostCommand{}, false},
		{" /rename x", HostCommand{}, false},
	} {
		got, ok := ParseHostCommand(tc.text)
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseHostCommand(%q) = %+v, %v; want %+v, %v", tc.text, got, ok, tc.want, tc.ok)
		}
		if route := RouteOf(tc.text); (route == RouteHost) != tc.ok {
			t.Errorf("RouteOf(%q) = %s", tc.text, route)
		}
	}
}
