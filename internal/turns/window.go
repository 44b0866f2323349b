package turns

import (
	"slices"

	"github.com/ahpd/ahpd/internal/ahp"
)

// Window is the engine's view of how much of the chat its state holds: a
// loaded chat keeps only its newest ended turns (the host's window, issue
// #34), and the host's store holds the older ones. Turn st.Turns[i] is the
// chat's turn Older()+i.
type Window struct{ e *Engine }

// Window is what the engine's state holds of the chat's turns.
func (e *Engine) Window() Window { return Window{e} }

// Older is how many of the chat's turns come before the ones the state
// holds.
func (w Window) Older() int { return w.e.older }

// Trim drops the n oldest turns the state holds, which the host has
// stored, and what the engine knew of them; it returns their ids. The
// newest turn always stays: resuming it and the holds read it.
func (w Window) Trim(n int) []string {
	e := w.e
	n = min(n, len(e.st.Turns)-1)
	if n <= 0 {
		return nil
	}
	ids := make([]string, n)
	for i := range n {
		ids[i] = e.st.Turns[i].ID
		delete(e.turns, ids[i])
	}
	// Moved down in place and the tail cleared, so the dropped turns are
	// garbage and the backing array never grows past the window.
	kept := copy(e.st.Turns, e.st.Turns[n:])
	clear(e.st.Turns[kept:])
	e.st.Turns = e.st.Turns[:kept]
	e.older += n
	return ids
}

// Reload replaces the turns the state holds with ts, the chat's turns
// from older on, and what the engine knows of them with infos (by id):
// a rewind to a turn older than the state's brings it back first. It
// forgets the turns it held.
func (w Window) Reload(older int, ts []ahp.Turn, infos map[string]TurnInfo) {
	e := w.e
	for _, t := range e.st.Turns {
		delete(e.turns, t.ID)
	}
	e.st.Turns = ts
	if e.st.Turns == nil {
		e.st.Turns = []ahp.Turn{}
	}
	e.older = max(older, 0)
	for id, info := range infos {
		e.Remember(id, info)
	}
}

// known reports whether id names one of the chat's turns: running, held in
// the state, or older (the host says).
func (w Window) known(id string) bool {
	return w.holds(id) || w.e.older > 0 && w.e.host.OlderTurn(id)
}

// holds reports whether the state holds turn id: running, or among the
// ended turns it keeps.
func (w Window) holds(id string) bool {
	st := &w.e.st
	if st.ActiveTurn != nil && st.ActiveTurn.ID == id {
		return true
	}
	return slices.ContainsFunc(st.Turns, func(t ahp.Turn) bool { return t.ID == id })
}

// sayAgain tells a repeated start of a known turn, which changes nothing.
// One the state holds is reduced as any action is (a no-op); one older
// than the state's is told unreduced: the reducer, not finding it, would
// take it for a new turn.
func (w Window) sayAgain(a ahp.ChatTurnStarted, origin *ahp.ActionOrigin) {
	if !w.holds(a.TurnID) {
		w.e.host.Tell(a, origin)
		return
	}
	w.e.Apply(a, origin)
}
