package agentproc

import "testing"

// TestParseEntry: a ledger file names its own pid and a start time; any
// other text is refused rather than acted on.
func TestParseEntry(t *testing.T) {
	tests := []struct {
		name, file, text string
		want             entry
		ok               bool
	}{
		{"written by Start", "4242", "4242 987654\n", entry{4242, 987654}, true},
		{"no start time known", "4242", "4242 0\n", entry{4242, 0}, true},
		{"pid not the file's name", "4242", "4243 1\n", entry{}, false},
		{"init is never a group of ours", "1", "1 5\n", entry{}, false},
		{"negative pid (a kill of every process)", "-1", "-1 5\n", entry{}, false},
		{"one field", "4242", "4242\n", entry{}, false},
		{"three fields", "4242", "4242 1 2\n", entry{}, false},
		{"start not a number", "4242", "4242 soon\n", entry{}, false},
		{"empty", "4242", "", entry{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseEntry(tc.file, tc.text)
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("parseEntry(%q, %q) = %v, %v; want %v, ok %v", tc.file, tc.text, got, err, tc.want, tc.ok)
			}
			if tc.ok {
				if back, _ := parseEntry(tc.file, got.String()); back != got {
					t.Errorf("%v does not read back: %v", got, back)
				}
			}
		})
	}
}

// TestJudge: a group is killed when its leader is dead (members may be
// left) or is the very process written down; a pid reused by a later
// process, or one whose start cannot be told, is left alone.
func TestJudge(t *testing.T) {
	tests := []struct {
		name      string
		e         entry
		alive     bool
		start     uint64
		startKnow bool
		want      leftover
	}{
		{"leader dead: members may remain", entry{10, 500}, false, 0, false, leftoverEnd},
		{"leader alive, same start", entry{10, 500}, true, 500, true, leftoverEnd},
		{"pid reused by a later process", entry{10, 500}, true, 900, true, leftoverGone},
		{"start not known now", entry{10, 500}, true, 0, false, leftoverGone},
		{"start not written down", entry{10, 0}, true, 500, true, leftoverGone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := judge(tc.e, tc.alive, tc.start, tc.startKnow); got != tc.want {
				t.Errorf("judge = %v, want %v", got, tc.want)
			}
		})
	}
}
