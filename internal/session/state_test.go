package session

import (
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/store"
)

// TestOpenedStateIsModifiedWhenItsNewestChatWas: a session's modification
// time is its newest chat's, read from the chats' records (each chat's
// commit stores it), so a session record written before its last turns
// still opens, and lists, with the time the clients were told.
func TestOpenedStateIsModifiedWhenItsNewestChatWas(t *testing.T) {
	base := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	rec := store.SessionRecord{URI: "script:/s", Provider: "script", CreatedAt: base, ModifiedAt: base, DefaultChat: "c1"}
	for _, tc := range []struct {
		name  string
		chats []time.Time
		want  time.Time
	}{
		{"no chat: the record's", nil, base},
		{"an older chat: the record's", []time.Time{base.Add(-time.Hour)}, base},
		{"the newest chat's", []time.Time{base.Add(time.Minute), base.Add(3 * time.Minute), base.Add(2 * time.Minute)}, base.Add(3 * time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var chats []store.ChatRecord
			for i, m := range tc.chats {
				chats = append(chats, store.ChatRecord{URI: "c" + string(rune('1'+i)), Session: rec.URI, CreatedAt: base, ModifiedAt: m})
			}
			st := stateOf(rec, chats)
			if want := iso(tc.want); st.ModifiedAt != want {
				t.Fatalf("state modified at %s, want %s", st.ModifiedAt, want)
			}
			if sum := Summarize(rec, chats); sum.ModifiedAt != iso(tc.want) {
				t.Fatalf("summary modified at %s, want %s", sum.ModifiedAt, iso(tc.want))
			}
		})
	}
}
