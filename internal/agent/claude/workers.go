package claude

import (
	"encoding/json"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/google/uuid"
)

// Workers (subagents). The CLI runs a subagent when the model calls its
// Task tool (named Agent in later versions). The subagent's stream lines
// carry parent_tool_use_id = the spawning call's id; the call's
// tool_result ends it. They map to agent events with Event.Worker set:
//
//	tool_use Task/Agent ready           → EventWorkerStarted (prompt, type)
//	assistant line of the subagent      → text, reasoning, its tool calls
//	user line of the subagent           → its tool calls' results
//	tool_result of the spawning call    → EventWorkerEnded, then the call's end
//
// A subagent's partial stream_events are not read: its whole assistant
// lines carry the same text. The CLI offers no per-subagent stop over
// stream-json (stop_task is for background tasks and not measured here), so
// a stop in a worker chat stops the turn the worker runs in (C-SUB-13).

// isSpawnTool reports whether a tool spawns a subagent.
func isSpawnTool(name string) bool { return name == "Task" || name == "Agent" }

// spawnInput is the input of a Task/Agent call.
type spawnInput struct {
	Description     string `json:"description"`
	Prompt          string `json:"prompt"`
	SubagentType    string `json:"subagent_type"`
	RunInBackground bool   `json:"run_in_background"`
}

// spawnWorker reports the worker a ready Task/Agent call spawned. c.mu
// must be held.
func (c *conversation) spawnWorker(t *hostTurn, id string, ts *toolState) {
	if !isSpawnTool(ts.name) || ts.spawn {
		return
	}
	var in spawnInput
	_ = json.Unmarshal(ts.input, &in)
	ts.spawn = true
	c.emit(agent.Event{Kind: agent.EventWorkerStarted, TurnID: t.id, Worker: ts.worker, Spawn: &agent.WorkerSpawn{
		ID: id, Prompt: in.Prompt, AgentName: in.SubagentType, Description: in.Description, Background: in.RunInBackground,
	}})
}

// workerEnded reports the end of the worker call id spawned. c.mu must be
// held.
func (c *conversation) workerEnded(t *hostTurn, id string, failed bool) {
	end := &agent.End{Outcome: agent.OutcomeComplete}
	if failed {
		end.Outcome = agent.OutcomeError
	}
	c.emit(agent.Event{Kind: agent.EventWorkerEnded, TurnID: t.id, Spawn: &agent.WorkerSpawn{ID: id}, End: end})
}

// knownWorker reports whether id is a call of turn t that spawned a worker.
func (c *conversation) knownWorker(t *hostTurn, id string) bool {
	ts := t.tools[id]
	return ts != nil && ts.spawn
}

// handleWorkerLine handles a line of a subagent's conversation. c.mu must
// be held.
func (c *conversation) handleWorkerLine(l *outLine, worker string) {
	t := c.current()
	if t == nil || l.Message == nil || !c.knownWorker(t, worker) {
		return
	}
	switch l.Type {
	case "assistant":
		if hasValue(l.Error) {
			return
		}
		for _, b := range l.Message.blocks() {
			switch b.Type {
			case "text":
				if b.Text != "" {
					c.emit(agent.Event{Kind: agent.EventText, TurnID: t.id, Worker: worker, PartID: uuid.NewString(), Text: b.Text})
				}
			case "thinking":
				if b.Thinking != "" {
					c.emit(agent.Event{Kind: agent.EventReasoning, TurnID: t.id, Worker: worker, PartID: uuid.NewString(), Text: b.Thinking})
				}
			case "tool_use":
				c.startTool(t, b.ID, b.Name, worker)
				input := b.Input
				if len(input) == 0 {
					input = json.RawMessage("{}")
				}
				c.readyTool(t, b.ID, input)
			}
		}
	case "user":
		if !l.IsReplay {
			c.toolResults(t, l)
		}
	}
}
