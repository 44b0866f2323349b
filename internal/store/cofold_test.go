package store

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

func cofoldBodies(t *testing.T, s *Store, conv string) []string {
	t.Helper()
	msgs, err := s.Cofold().Messages(context.Background(), conv)
	must(t, err)
	out := make([]string, 0, len(msgs))
	for i, m := range msgs {
		if m.Seq != i {
			t.Fatalf("%s: message %d has seq %d", conv, i, m.Seq)
		}
		out = append(out, string(m.Body))
	}
	return out
}

// TestCofoldConversation: messages append in order (a seq is never
// overwritten), a fork copies the source cut at a point, a rewind cuts,
// a delete removes, and all of it survives a reopen.
func TestCofoldConversation(t *testing.T) {
	s, path := openTemp(t)
	ctx := context.Background()
	var msgs []CofoldMessage
	for i, b := range []string{`"a"`, `"b"`, `"c"`, `"d"`} {
		msgs = append(msgs, CofoldMessage{Seq: i, Turn: "t", Body: json.RawMessage(b)})
	}
	must(t, s.Cofold().Append(ctx, "c1", msgs))
	if err := s.Cofold().Append(ctx, "c1", msgs[3:]); err == nil {
		t.Error("a stored seq was written again")
	}
	if err := s.Cofold().Append(ctx, "c1", []CofoldMessage{{Seq: 4, Body: json.RawMessage("{bad")}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("malformed body: %v", err)
	}
	must(t, s.Cofold().Fork(ctx, "c1", "f1", 2))
	must(t, s.Cofold().Fork(ctx, "c1", "f1", 2)) // again: the same copy
	must(t, s.Cofold().Cut(ctx, "c1", 3))
	must(t, s.Cofold().Fork(ctx, "c1", "gone", 1))
	must(t, s.Cofold().Delete(ctx, "gone"))
	s.Close()

	s, _ = openAt(t, path)
	defer s.Close()
	for conv, want := range map[string][]string{"c1": {`"a"`, `"b"`, `"c"`}, "f1": {`"a"`, `"b"`}, "gone": {}} {
		got := cofoldBodies(t, s, conv)
		if len(got) != len(want) {
			t.Errorf("%s = %v, want %v", conv, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s = %v, want %v", conv, got, want)
			}
		}
	}
}
