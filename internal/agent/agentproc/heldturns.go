package agentproc

import (
	"context"
	"errors"
	"fmt"

	"github.com/ahpd/ahpd/internal/agent"
)

// MaxHeld bounds the turns a conversation holds behind the running one.
// The host runs one turn at a time, so at most a turn sent behind a
// stopped turn that is still ending waits; more is refused, not dropped.
const MaxHeld = 4

// HeldTurns is what a conversation that runs one turn at a time (pi, acp,
// cofold) does with a turn sent to it: run it at once, or hold it behind
// the running one and run the held turns in order (C-TURN-103, 104). The
// conversation's lock guards it.
type HeldTurns struct{ turns []agent.Turn }

// Admit takes a turn sent with ctx: an error for a done ctx, an empty id
// or a closed conversation, or a turn past MaxHeld; else it holds t
// behind a running turn, or says to run it now (runNow) when none runs.
func (h *HeldTurns) Admit(ctx context.Context, t agent.Turn, closed, running bool) (runNow bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("send turn %s: %w", t.ID, err)
	}
	if t.ID == "" {
		return false, errors.New("send turn: empty turn id")
	}
	if closed {
		return false, fmt.Errorf("send turn %s: conversation closed", t.ID)
	}
	if !running {
		return true, nil
	}
	if len(h.turns) >= MaxHeld {
		return false, fmt.Errorf("send turn %s: %d turns already wait behind the running one", t.ID, len(h.turns))
	}
	h.turns = append(h.turns, t)
	return false, nil
}

// Next takes the first held turn; false when none waits.
func (h *HeldTurns) Next() (agent.Turn, bool) {
	if len(h.turns) == 0 {
		return agent.Turn{}, false
	}
	t := h.turns[0]
	h.turns = h.turns[1:]
	return t, true
}

// Drop takes every held turn: a stop or a close ends them.
func (h *HeldTurns) Drop() []agent.Turn {
	turns := h.turns
	h.turns = nil
	return turns
}
