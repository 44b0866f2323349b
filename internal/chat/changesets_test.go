package chat

import (
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/store"
)

// TestChatWideChangeset: the chat's changeset shows each file once, from
// the first turn's before to the last turn's after, reviewed only when
// every turn's record of it is (C-TURN-19).
func TestChatWideChangeset(t *testing.T) {
	files := []store.ChangesetFile{
		{Turn: "t1", Path: "/w/a", BeforeExists: true, BeforeHash: "a0", AfterExists: true, AfterHash: "a1", Reviewed: true, ToolCall: "c1"},
		{Turn: "t1", Path: "/w/b", AfterExists: true, AfterHash: "b1"},
		{Turn: "t2", Path: "/w/a", BeforeExists: true, BeforeHash: "a1", AfterExists: false, ToolCall: "c2"},
		{Turn: "t3", Path: "/w/c", BeforeExists: true, AfterExists: true, Skipped: "binary"},
	}
	got := chatWide(files)
	if len(got) != 3 {
		t.Fatalf("%d files: %+v", len(got), got)
	}
	a := got[0]
	if a.Path != "/w/a" || a.BeforeHash != "a0" || a.AfterExists || a.AfterHash != "" || a.Turn != "t2" || a.ToolCall != "c2" || a.Reviewed {
		t.Errorf("a merged: %+v", a)
	}
	if got[1].Path != "/w/b" || got[1].BeforeExists || got[2].Skipped != "binary" {
		t.Errorf("b, c: %+v %+v", got[1], got[2])
	}
}

// TestFileSideSame: kept contents compare by bytes; a side not kept by its
// size and modification time; existence first.
func TestFileSideSame(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name string
		a, b fileSide
		want bool
	}{
		{"both absent", fileSide{}, fileSide{}, true},
		{"created", fileSide{}, fileSide{exists: true, data: []byte{}}, false},
		{"same bytes", fileSide{exists: true, data: []byte("x")}, fileSide{exists: true, data: []byte("x")}, true},
		{"other bytes", fileSide{exists: true, data: []byte("x")}, fileSide{exists: true, data: []byte("y")}, false},
		{"large, untouched", fileSide{exists: true, skipped: "too large", size: 5, mod: now}, fileSide{exists: true, skipped: "too large", size: 5, mod: now}, true},
		{"large, touched", fileSide{exists: true, skipped: "too large", size: 5, mod: now}, fileSide{exists: true, skipped: "too large", size: 5, mod: now.Add(time.Second)}, false},
		{"became text", fileSide{exists: true, skipped: "binary", size: 1, mod: now}, fileSide{exists: true, data: []byte("x"), size: 1, mod: now}, false},
	} {
		if got := tc.a.same(tc.b); got != tc.want {
			t.Errorf("%s: same = %v", tc.name, got)
		}
	}
}
