package script

import (
	"fmt"

	"github.com/ahpd/ahpd/internal/agent"
)

// Input requests. A turn whose text holds [ask] asks "Pick a colour" with
// the options red and blue (request "<turn>-ask-1", question "colour") and
// waits for the answer (InputAnswered); its answer then says "You picked
// <option>", or "You picked nothing (<response>)" when the request was
// declined or cancelled.

const (
	askQuestion = "colour"
	askMessage  = "Pick a colour"
)

// askWait is an input request waiting in a turn.
type askWait struct {
	id     string
	answer chan agent.InputAnswer // 1-buffered
}

// InputAnswered takes the user's answer to the request the running turn
// waits on.
func (c *conversation) InputAnswered(turnID, requestID string, answer agent.InputAnswer) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.active
	if a == nil || a.turn.ID != turnID {
		return fmt.Errorf("answer input request %s: turn %s is not running", requestID, turnID)
	}
	if a.ask == nil || a.ask.id != requestID {
		return fmt.Errorf("answer input request %s: no such request waits in turn %s", requestID, turnID)
	}
	select {
	case a.ask.answer <- answer:
		return nil
	default:
		return fmt.Errorf("answer input request %s: it was already answered", requestID)
	}
}

// askColour asks the turn's question and returns what the answer says.
func (r *turnRun) askColour() (string, error) {
	c, t := r.c, r.a.turn
	req := agent.InputRequest{
		ID:      r.ids + "-ask-1",
		Message: askMessage,
		Questions: []agent.InputQuestion{{
			ID: askQuestion, Kind: agent.InputSingleSelect, Title: "Colour", Message: askMessage, Required: true,
			Options: []agent.InputOption{{ID: "red", Label: "red"}, {ID: "blue", Label: "blue"}},
		}},
	}
	w := &askWait{id: req.ID, answer: make(chan agent.InputAnswer, 1)}
	// Set before the request goes out, so an answer that follows it finds it.
	c.mu.Lock()
	r.a.ask = w
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		r.a.ask = nil
		c.mu.Unlock()
	}()
	r.last = agent.EventInputRequest
	if !c.emit(agent.Event{Kind: agent.EventInputRequest, TurnID: t.ID, Input: &req}) {
		return "", errClosed
	}
	ans, err := awaitAnswer(r, w.answer)
	if err != nil {
		return "", err
	}
	if ans.Response != agent.InputAccept {
		return fmt.Sprintf("You picked nothing (%s)", ans.Response), nil
	}
	v := ans.Values[askQuestion]
	picked := v.Text
	for _, o := range req.Questions[0].Options {
		if o.ID == picked {
			picked = o.Label
		}
	}
	if picked == "" && len(v.Freeform) > 0 {
		picked = v.Freeform[0]
	}
	if picked == "" {
		picked = "nothing"
	}
	return "You picked " + picked, nil
}

// awaitAnswer waits for what the host hands the running turn on ch (an
// input answer, a client tool's result, its confirmation), or for the
// turn's stop or the conversation's close.
func awaitAnswer[T any](r *turnRun, ch <-chan T) (T, error) {
	var zero T
	select {
	case v := <-ch:
		return v, nil
	case <-r.a.stop:
		return zero, errStopped
	case <-r.c.done:
		return zero, errClosed
	}
}

var _ agent.InputAnswerer = (*conversation)(nil)
