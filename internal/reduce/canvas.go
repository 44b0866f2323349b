package reduce

import "github.com/ahpd/ahpd/internal/ahp"

// Canvas applies a canvas-channel action to s. canvas/stateChanged is the
// channel's only action and replaces the whole state (AHP-1.0.md §9); any
// other action changes nothing and reports false.
func Canvas(s *ahp.CanvasState, a ahp.Action) bool {
	switch a := a.(type) {
	case ahp.CanvasStateChanged:
		*s = a.Canvas
		return true
	}
	return false
}
