package agentproc

import (
	"context"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
)

// TestHeldTurnsAdmit: what Admit refuses, runs at once, and holds.
func TestHeldTurnsAdmit(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name            string
		ctx             context.Context
		id              string
		closed, running bool
		held            int
		runNow          bool
		wantErr         string
	}{
		{"an idle conversation runs the turn now", context.Background(), "t1", false, false, 0, true, ""},
		{"a running turn holds the next", context.Background(), "t2", false, true, 0, false, ""},
		{"a done context is refused", done, "t1", false, false, 0, false, "send turn t1: context canceled"},
		{"an empty id is refused", context.Background(), "", false, false, 0, false, "empty turn id"},
		{"a closed conversation refuses", context.Background(), "t1", true, false, 0, false, "conversation closed"},
		{"past MaxHeld is refused, not dropped", context.Background(), "t9", false, true, MaxHeld, false, "4 turns already wait"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h HeldTurns
			for range tt.held {
				if _, err := h.Admit(context.Background(), agent.Turn{ID: "h"}, false, true); err != nil {
					t.Fatal(err)
				}
			}
			runNow, err := h.Admit(tt.ctx, agent.Turn{ID: tt.id}, tt.closed, tt.running)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || runNow != tt.runNow {
				t.Fatalf("runNow %v, err %v; want %v", runNow, err, tt.runNow)
			}
		})
	}
}

// TestHeldTurnsRunInOrder: held turns come out oldest first, and Drop
// takes what is left.
func TestHeldTurnsRunInOrder(t *testing.T) {
	var h HeldTurns
	for _, id := range []string{"a", "b", "c"} {
		if _, err := h.Admit(context.Background(), agent.Turn{ID: id}, false, true); err != nil {
			t.Fatal(err)
		}
	}
	if next, ok := h.Next(); !ok || next.ID != "a" {
		t.Fatalf("next %v %v, want a", next, ok)
	}
	if dropped := h.Drop(); len(dropped) != 2 || dropped[0].ID != "b" || dropped[1].ID != "c" {
		t.Fatalf("dropped %v, want b c", dropped)
	}
	if _, ok := h.Next(); ok {
		t.Fatal("a turn left after Drop")
	}
}
