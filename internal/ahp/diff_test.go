package ahp

import (
	"encoding/json"
	"testing"
)

func TestDiffChatSummary(t *testing.T) {
	fork := &ChatOrigin{Kind: "fork", Chat: "ahp-chat:/a", TurnID: "t1"}
	base := ChatSummary{Resource: "ahp-chat:/b", Title: "x", Status: StatusIdle, ModifiedAt: "1", Origin: fork}
	cases := []struct {
		name string
		b    func(ChatSummary) ChatSummary
		want string
	}{
		{"nothing changed", func(s ChatSummary) ChatSummary { return s }, "null"},
		// C-FROM-18: a title change re-sends the origin whole.
		{"title, with the origin", func(s ChatSummary) ChatSummary { s.Title = "y"; return s },
			`{"title":"y","origin":{"kind":"fork","chat":"ahp-chat:/a","turnId":"t1"}}`},
		{"status and time", func(s ChatSummary) ChatSummary { s.Status = StatusInProgress; s.ModifiedAt = "2"; return s },
			`{"status":8,"modifiedAt":"2","origin":{"kind":"fork","chat":"ahp-chat:/a","turnId":"t1"}}`},
		{"directories", func(s ChatSummary) ChatSummary { s.WorkingDirectories = []URI{"file:///w"}; return s },
			`{"origin":{"kind":"fork","chat":"ahp-chat:/a","turnId":"t1"},"workingDirectories":["file:///w"]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _ := json.Marshal(DiffChatSummary(base, c.b(base)))
			if string(got) != c.want {
				t.Fatalf("got %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestDiffSessionSummary(t *testing.T) {
	a := SessionSummary{Resource: "s", Title: "x", Status: StatusIdle, ModifiedAt: "1", DefaultChat: "c1"}
	if _, any := DiffSessionSummary(a, a); any {
		t.Fatal("equal summaries differ")
	}
	b := a
	b.Title, b.DefaultChat = "y", "c2"
	b.Chats = []SessionChatSummary{{Resource: "c2", Title: "y", Status: StatusIdle}}
	p, any := DiffSessionSummary(a, b)
	got, _ := json.Marshal(p)
	if !any || string(got) != `{"title":"y","chats":[{"resource":"c2","title":"y","status":1}],"defaultChat":"c2"}` {
		t.Fatalf("diff = %s", got)
	}
}
