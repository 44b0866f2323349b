package host

import (
	"encoding/json"

	"github.com/ahpd/ahpd/internal/ahp"
)

// progressParams is root/progress (AHP 0.5.0): how far a createSession
// that carried a progressToken has come.
type progressParams struct {
	Channel       string `json:"channel"`
	ProgressToken string `json:"progressToken"`
	Progress      int    `json:"progress"`
	Total         int    `json:"total,omitempty"`
	Message       string `json:"message,omitempty"`
}

// createProgress is the number of steps createSession reports.
const createProgress = 3

// progress tells cl alone, when it gave a progress token, that step of
// createProgress is reached.
func (h *Host) progress(cl *client, token string, step int, message string) {
	if token == "" || cl == nil {
		return
	}
	raw, err := json.Marshal(progressParams{Channel: ahp.RootURI, ProgressToken: token, Progress: step, Total: createProgress, Message: message})
	if err != nil {
		return
	}
	cl.Deliver("root/progress", raw)
}
