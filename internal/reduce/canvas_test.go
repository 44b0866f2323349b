package reduce

import (
	"encoding/json"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// TestCanvasReducer: canvas/stateChanged replaces the whole state (a field
// the new state leaves out is gone, C-CANV-05); nothing else changes it.
func TestCanvasReducer(t *testing.T) {
	open := ahp.CanvasState{InstanceID: "i1", ExtensionID: "ahpd.show-page", ExtensionName: "Show page", CanvasID: "page", Title: "Preview", Status: "Serving", URL: "http://127.0.0.1:5173/"}
	for _, tc := range []struct {
		name    string
		before  ahp.CanvasState
		action  ahp.Action
		want    ahp.CanvasState
		changed bool
	}{
		{"state from nothing", ahp.CanvasState{}, ahp.CanvasStateChanged{Canvas: open}, open, true},
		{"a full replace drops the url", open, ahp.CanvasStateChanged{Canvas: ahp.CanvasState{InstanceID: "i1", ExtensionID: "ahpd.show-page", CanvasID: "page", Status: "Closed"}},
			ahp.CanvasState{InstanceID: "i1", ExtensionID: "ahpd.show-page", CanvasID: "page", Status: "Closed"}, true},
		{"a chat action is not the canvas's", open, ahp.ChatCanvasesChanged{}, open, false},
		{"a session rename is not the canvas's", open, ahp.SessionTitleChanged{Title: "x"}, open, false},
		{"an unknown action", open, ahp.UnknownAction{Type: "canvas/future"}, open, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.before
			if got := Canvas(&s, tc.action); got != tc.changed {
				t.Fatalf("changed %v, want %v", got, tc.changed)
			}
			if s != tc.want {
				t.Fatalf("state %+v, want %+v", s, tc.want)
			}
		})
	}
}

// TestChatCanvasesReducer: chat/canvasesChanged replaces ChatState.canvases
// in the order given (C-CANV-02); an empty list leaves no key (C-CANV-03).
func TestChatCanvasesReducer(t *testing.T) {
	a, b := ahp.CanvasReference{Resource: "ahp-canvas:/c/a"}, ahp.CanvasReference{Resource: "ahp-canvas:/c/b"}
	for _, tc := range []struct {
		name   string
		before []ahp.CanvasReference
		set    []ahp.CanvasReference
		want   []ahp.CanvasReference
	}{
		{"first canvas", nil, []ahp.CanvasReference{a}, []ahp.CanvasReference{a}},
		{"opening order kept", []ahp.CanvasReference{a}, []ahp.CanvasReference{a, b}, []ahp.CanvasReference{a, b}},
		{"one closed", []ahp.CanvasReference{a, b}, []ahp.CanvasReference{b}, []ahp.CanvasReference{b}},
		{"none left", []ahp.CanvasReference{b}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ahp.ChatState{Canvases: tc.before}
			Chat(&s, ahp.ChatCanvasesChanged{Canvases: tc.set})
			if len(s.Canvases) != len(tc.want) {
				t.Fatalf("canvases %v, want %v", s.Canvases, tc.want)
			}
			for i := range tc.want {
				if s.Canvases[i] != tc.want[i] {
					t.Fatalf("canvases %v, want %v", s.Canvases, tc.want)
				}
			}
			raw, err := s.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if has := containsKey(raw, "canvases"); has != (len(tc.want) > 0) {
				t.Fatalf("canvases key present %v for %v: %s", has, tc.want, raw)
			}
		})
	}
}

func containsKey(raw []byte, key string) bool {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return false
	}
	_, ok := m[key]
	return ok
}
