package script

import (
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/ahpd/ahpd/internal/agent"
)

// Client-run tools (C-SUB-14). A turn whose text holds [clienttool:ID]
// calls a tool the client ID runs ("<turn>-client-1"), and a turn whose
// text holds [worker:clienttool:ID] has its worker call one
// ("<worker>-client-1"). The call waits for the client's result and for the
// confirmation of that result (ClientToolResult, ClientToolResultConfirmed);
// the answer then says "client said: <output> (approved|denied)".

var (
	clientToolRE       = regexp.MustCompile(`\[clienttool:([^\]\s]+)\]`)
	workerClientToolRE = regexp.MustCompile(`\[worker:clienttool:([^\]\s]+)\]`)
)

// clientWait is a client-run call waiting in a turn.
type clientWait struct {
	id        string
	result    chan agent.ClientToolResult // 1-buffered
	confirmed chan bool                   // 1-buffered
}

// ClientToolResult takes a client's run of a call this conversation left to
// it.
func (c *conversation) ClientToolResult(turnID, toolCallID string, result agent.ClientToolResult) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, err := c.clientWaitLocked(turnID, toolCallID)
	if err != nil {
		return err
	}
	select {
	case w.result <- result:
		return nil
	default:
		return fmt.Errorf("client tool call %s: a result was already given", toolCallID)
	}
}

// ClientToolResultConfirmed takes the confirmation of that result.
func (c *conversation) ClientToolResultConfirmed(turnID, toolCallID string, approved bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, err := c.clientWaitLocked(turnID, toolCallID)
	if err != nil {
		return err
	}
	select {
	case w.confirmed <- approved:
		return nil
	default:
		return fmt.Errorf("client tool call %s: its result was already confirmed", toolCallID)
	}
}

func (c *conversation) clientWaitLocked(turnID, toolCallID string) (*clientWait, error) {
	a := c.active
	if a == nil || a.turn.ID != turnID {
		return nil, fmt.Errorf("client tool call %s: turn %s is not running", toolCallID, turnID)
	}
	if a.client == nil || a.client.id != toolCallID {
		return nil, fmt.Errorf("client tool call %s: no such call waits in turn %s", toolCallID, turnID)
	}
	return a.client, nil
}

// clientToolCall runs a call the client runs, as the turn's own (worker
// "") or its worker's, and returns what the answer says of it.
func (r *turnRun) clientToolCall(id, client, worker string) (string, error) {
	c, t := r.c, r.a.turn
	input, _ := json.Marshal(map[string]string{"text": t.Text})
	call := agent.ToolCall{ID: id, Name: "client_echo", DisplayName: "Client echo", Client: client,
		Input: string(input), Invocation: "client echo " + t.Text}
	w := &clientWait{id: id, result: make(chan agent.ClientToolResult, 1), confirmed: make(chan bool, 1)}
	c.mu.Lock()
	r.a.client = w
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		r.a.client = nil
		c.mu.Unlock()
	}()
	for _, k := range []agent.EventKind{agent.EventToolStart, agent.EventToolReady} {
		ev := call
		if !c.emit(agent.Event{Kind: k, TurnID: t.ID, Worker: worker, ToolCall: &ev}) {
			return "", errClosed
		}
	}
	res, err := awaitAnswer(r, w.result)
	if err != nil {
		return "", err
	}
	approved, err := awaitAnswer(r, w.confirmed)
	if err != nil {
		return "", err
	}
	verdict := "denied"
	if approved {
		verdict = "approved"
	}
	return fmt.Sprintf("client said: %s (%s)", res.Output, verdict), nil
}

var _ agent.ClientToolRunner = (*conversation)(nil)
