package turns

import (
	"encoding/json"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
)

// Input requests: a backend asks the user (agent.EventInputRequest), the
// chat shows it as an inputRequest part (chat/inputRequested), a client
// answers it (chat/inputCompleted), and the answer, with the drafts the
// clients synced (chat/inputAnswerChanged), goes back to the backend
// (agent.InputAnswerer). The running turn (Active) keeps which requests
// its backend made; the Engine only routes (events.go, Client).

// ask records the running turn's request in and returns the action that
// says it as an inputRequest part; false for a request without an id. A
// request said again with the same id replaces the unanswered one (the
// reducer keeps its drafts).
func (t *Active) ask(in *agent.InputRequest) (ahp.ChatInputRequested, bool) {
	if in == nil || in.ID == "" {
		return ahp.ChatInputRequested{}, false
	}
	if t.asked == nil {
		t.asked = map[string]bool{}
	}
	t.asked[in.ID] = true
	t.lastKind = ahp.PartInputRequest
	return ahp.ChatInputRequested{Request: InputRequest(in)}, true
}

// InputRequest is the protocol's form of a backend's request.
func InputRequest(in *agent.InputRequest) ahp.ChatInputRequest {
	r := ahp.ChatInputRequest{ID: in.ID, Message: in.Message, URL: in.URL}
	for _, q := range in.Questions {
		wq := ahp.ChatInputQuestion{ID: q.ID, Kind: q.Kind, Title: q.Title, Message: q.Message}
		if q.Required {
			wq.Required = &q.Required
		}
		if q.AllowFreeform {
			wq.AllowFreeformInput = &q.AllowFreeform
		}
		for _, o := range q.Options {
			wo := ahp.ChatInputOption{ID: o.ID, Label: o.Label, Description: o.Description}
			if o.Recommended {
				wo.Recommended = &o.Recommended
			}
			wq.Options = append(wq.Options, wo)
		}
		r.Questions = append(r.Questions, wq)
	}
	return r
}

// inputRefusal is why a client's answer a cannot be taken in state st,
// "" when it can: a response AHP does not name, or no open request of
// that id in the running turn.
func inputRefusal(st *ahp.ChatState, a ahp.ChatInputCompleted) string {
	switch {
	case a.Response != agent.InputAccept && a.Response != agent.InputDecline && a.Response != agent.InputCancel:
		return ReasonBadInputResponse
	case !inputWaitsIn(st, a.RequestID):
		return ReasonNoInputRequest
	}
	return ""
}

// handAnswer hands answer a, already applied to st, to the backend of the
// running turn t when that backend asked it and takes answers; nil t (no
// turn runs) hands nothing.
func (t *Active) handAnswer(st *ahp.ChatState, a ahp.ChatInputCompleted) error {
	if t == nil || !t.asked[a.RequestID] || t.Conv == nil {
		return nil
	}
	answerer, ok := t.Conv.(agent.InputAnswerer)
	if !ok {
		return nil
	}
	return answerer.InputAnswered(t.ID, a.RequestID, InputAnswer(st, a))
}

// InputAnswer is the backend's form of completed request a: its response
// and, accepted, the answers the part holds now (the drafts clients synced
// with a's own laid over them).
func InputAnswer(st *ahp.ChatState, a ahp.ChatInputCompleted) agent.InputAnswer {
	out := agent.InputAnswer{Response: a.Response}
	if a.Response != agent.InputAccept {
		return out
	}
	answers := a.Answers
	if at := st.ActiveTurn; at != nil {
		for _, p := range at.ResponseParts {
			if p.Kind == ahp.PartInputRequest && p.Request != nil && p.Request.ID == a.RequestID && p.Response != "" {
				answers = p.Request.Answers
			}
		}
	}
	for id, ans := range answers {
		if ans.State == "skipped" || ans.Value == nil {
			continue
		}
		if out.Values == nil {
			out.Values = map[string]agent.InputValue{}
		}
		out.Values[id] = inputValue(*ans.Value, ans.FreeformValues)
	}
	return out
}

// inputValue decodes one answer's value by its kind; a value that does
// not decode as its kind says nothing.
func inputValue(v ahp.ChatInputAnswerValue, freeform []string) agent.InputValue {
	out := agent.InputValue{Freeform: append(append([]string(nil), v.FreeformValues...), freeform...)}
	switch v.Kind {
	case "text", "selected":
		_ = json.Unmarshal(v.Value, &out.Text)
	case "number":
		_ = json.Unmarshal(v.Value, &out.Number)
	case "boolean":
		_ = json.Unmarshal(v.Value, &out.Bool)
	case "selected-many":
		_ = json.Unmarshal(v.Value, &out.Selected)
	}
	return out
}
