package cofold

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ahpd/ahpd/internal/agent"
)

// offeredTools are the tools the model is offered in mode (plan offers
// only what reads), and the host's tools.
func offeredTools(mode string, host *agent.HostTools) []toolSpec {
	var out []toolSpec
	for _, s := range toolSpecs() {
		if _, refused := needsAsk(mode, toolClass(s.Name)); !refused {
			out = append(out, s)
		}
	}
	return append(out, hostToolSpecs(host)...)
}

func displayName(tool string) string {
	switch tool {
	case "read_file":
		return "Read"
	case "write_file":
		return "Write"
	case "edit_file":
		return "Edit"
	case "list_dir":
		return "List"
	case "glob":
		return "Glob"
	case "grep":
		return "Grep"
	case "bash":
		return "Bash"
	case renameChatTool:
		return "Rename chat"
	case sessionContextTool:
		return "Read chat"
	}
	return tool
}

// invocation is a one-line description of a call.
func invocation(name string, in toolInput, host map[string]any) string {
	switch name {
	case "bash":
		return "Run `" + firstLine(in.Command) + "`"
	case "read_file", "write_file", "edit_file":
		return displayName(name) + " " + in.Path
	case "list_dir":
		if in.Path == "" {
			return "List the working directory"
		}
		return "List " + in.Path
	case "glob", "grep":
		return displayName(name) + " " + in.Pattern
	case renameChatTool:
		return fmt.Sprintf("Rename the chat to %q", host["title"])
	case sessionContextTool:
		return fmt.Sprintf("Read chat %v", host["chat"])
	}
	return name
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// runCalls runs an assistant message's calls one by one and returns their
// results for the model. Each call's readiness and result are reported; a
// call that needs it waits for Confirm. After a stop, the calls left are
// answered as cancelled.
func (c *conversation) runCalls(r *run, mode string, calls []Call) []Result {
	results := make([]Result, 0, len(calls))
	for _, call := range calls {
		if c.isStopped(r) {
			results = append(results, Result{CallID: call.ID, Name: call.Name, Output: "cancelled: the turn was stopped", IsError: true})
			continue
		}
		results = append(results, c.runCall(r, mode, call))
	}
	return results
}

func (c *conversation) runCall(r *run, mode string, call Call) Result {
	tc := &agent.ToolCall{ID: call.ID, Name: call.Name, DisplayName: displayName(call.Name), Input: call.Input}
	fail := func(msg string) Result {
		done := *tc
		done.Error = msg
		c.push(agent.Event{Kind: agent.EventToolDone, TurnID: r.turn.ID, ToolCall: &done})
		return Result{CallID: call.ID, Name: call.Name, Output: msg, IsError: true}
	}
	var in toolInput
	var hostArgs map[string]any
	if err := json.Unmarshal([]byte(orDefault(call.Input, "{}")), &in); err != nil {
		// Malformed arguments go back to the model as the call's error.
		tc.Invocation = call.Name
		c.push(agent.Event{Kind: agent.EventToolReady, TurnID: r.turn.ID, ToolCall: tc})
		return fail(fmt.Sprintf("malformed arguments for %s: %v; send a JSON object", call.Name, err))
	}
	host := isHostTool(call.Name)
	if host {
		_ = json.Unmarshal([]byte(orDefault(call.Input, "{}")), &hostArgs)
	}
	tc.Invocation = invocation(call.Name, in, hostArgs)
	known := false
	for _, s := range offeredTools(ModeBypass, c.hostTools) {
		known = known || s.Name == call.Name
	}
	// The host's tools ask nothing: the host checks what they touch.
	ask, refused := needsAsk(mode, toolClass(call.Name))
	if host {
		ask, refused = false, false
	}
	tc.NeedsConfirmation = ask && known
	if toolClass(call.Name) == "edit" && !refused {
		// The host's changeset takes the file as it is before the edit
		// from here: a call that asks nothing runs before the host reads.
		tc.Before = c.tools.snapshot(in.Path)
	}
	// The call waits for Confirm before ToolReady goes out: a client may
	// answer the moment it sees it (registered after, a quick answer found
	// no such call waiting, and the call waited for ever).
	var ch chan bool
	if ask && known && !refused {
		ch = c.ask(r, call.ID)
	}
	c.push(agent.Event{Kind: agent.EventToolReady, TurnID: r.turn.ID, ToolCall: tc})
	switch {
	case !known:
		return fail(fmt.Sprintf("no tool named %q", call.Name))
	case refused:
		return fail(fmt.Sprintf("%s is refused in %s mode, which only reads", call.Name, mode))
	}
	if ask {
		var approved bool
		select {
		case approved = <-ch:
		case <-r.ctx.Done():
		}
		if !approved {
			// The client's answer already ended the call (cancelled).
			msg := "the user denied this call"
			if c.isStopped(r) {
				msg = "cancelled: the turn was stopped"
			}
			return Result{CallID: call.ID, Name: call.Name, Output: msg, IsError: true}
		}
	}
	var out string
	var err error
	if host {
		out, err = callHostTool(r.ctx, c.hostTools, call.Name, hostArgs)
	} else {
		out, err = c.tools.run(r.ctx, call.Name, call.Input)
	}
	if err != nil {
		return fail(err.Error())
	}
	done := *tc
	done.Success, done.Output, done.PastTense = true, out, pastTense(call.Name, tc.Invocation)
	c.push(agent.Event{Kind: agent.EventToolDone, TurnID: r.turn.ID, ToolCall: &done})
	return Result{CallID: call.ID, Name: call.Name, Output: out}
}

func pastTense(name, inv string) string {
	switch name {
	case "bash":
		return "Ran " + strings.TrimPrefix(inv, "Run ")
	case "read_file":
		return "Read " + strings.TrimPrefix(inv, "Read ")
	case "write_file":
		return "Wrote " + strings.TrimPrefix(inv, "Write ")
	case "edit_file":
		return "Edited " + strings.TrimPrefix(inv, "Edit ")
	case renameChatTool:
		return "Renamed the chat"
	case sessionContextTool:
		return "Read " + strings.TrimPrefix(inv, "Read ")
	}
	return inv
}
