package main

import (
	"os"
	"regexp"
	"strings"
	"time"
)

// replyKind is what the fake answers with.
type replyKind int

const (
	replyText       replyKind = iota // "fake reply: <text>" in a few deltas
	replySlow                        // many small deltas, slowDelay apart (or, with a wait path, the first, then the rest once it exists)
	replyTool                        // a bash tool call running command
	replyThink                       // a thinking block, then the text reply
	replyError                       // HTTP 500
	replyOverloaded                  // HTTP 529 overloaded_error
	replyToolDone                    // "tool done", after a tool result
	replyTask                        // a call of the CLI's subagent tool (Task or Agent) with prompt
	replyCall                        // the next call of a [[call NAME ARGS]] script
	replyDrop                        // a few text deltas, then the connection is cut
)

// slowDeltas and slowDelay shape a [slow] reply: about six seconds.
// waitPoll is how often a [wait:PATH] reply looks for PATH.
const (
	slowDeltas = 40
	slowDelay  = 150 * time.Millisecond
	waitPoll   = 20 * time.Millisecond
)

// plan is the reply chosen for one request.
type plan struct {
	kind replyKind
	// text is the prompt text the reply echoes.
	text string
	// command is the bash command of a tool call.
	command string
	// callName and callArgs are the tool and raw arguments of a replyCall;
	// callArgs is sent as written, so a script can send malformed JSON.
	callName string
	callArgs string
	// wait is the path a [wait:PATH] reply (a replySlow) waits for.
	wait string
}

// message is a request message reduced to what the script reads.
type message struct {
	role string
	// texts are the text blocks, <system-reminder> sections removed.
	texts []string
	// toolResult: the message carries a tool result.
	toolResult bool
}

var (
	reminderRE = regexp.MustCompile(`(?s)<system-reminder>.*?</system-reminder>`)
	bashRE     = regexp.MustCompile(`\[bash:([^\]]*)\]`)
	taskRE     = regexp.MustCompile(`\[task:([^\]]*)\]`)
	waitRE     = regexp.MustCompile(`\[wait:([^\]]*)\]`)
	// callRE is one step of a multi-step tool script: [[call NAME ARGS]].
	callRE = regexp.MustCompile(`(?s)\[\[call ([A-Za-z0-9_]+) (.*?)\]\]`)
)

// stripReminders drops the <system-reminder> sections claude wraps its own
// context in.
func stripReminders(s string) string {
	return strings.TrimSpace(reminderRE.ReplaceAllString(s, ""))
}

// decide picks the reply from the last message whose role is not "system"
// (claude ≥2.1 sends queued input and reminders as role "system" entries
// inside messages[]). Within that message it reads the last text block, so
// a user message claude merged from several prompts answers the newest.
func decide(msgs []message) plan {
	var last *message
	for i := len(msgs) - 1; i >= 0; i-- {
		if r := msgs[i].role; r != "system" && r != "developer" {
			last = &msgs[i]
			break
		}
	}
	if last == nil {
		return plan{kind: replyText}
	}
	if p, ok := scripted(msgs); ok {
		return p
	}
	if last.toolResult {
		return plan{kind: replyToolDone}
	}
	text := ""
	for i := len(last.texts) - 1; i >= 0; i-- {
		if t := strings.TrimSpace(last.texts[i]); t != "" {
			text = t
			break
		}
	}
	p := plan{kind: replyText, text: text}
	switch {
	case strings.Contains(text, "[error]"):
		p.kind = replyError
	case strings.Contains(text, "[overloaded]"):
		p.kind = replyOverloaded
	case strings.Contains(text, "[drop]"):
		p.kind = replyDrop
	case taskRE.MatchString(text):
		p.kind = replyTask
		p.command = taskRE.FindStringSubmatch(text)[1]
	case bashRE.MatchString(text):
		p.kind = replyTool
		p.command = bashRE.FindStringSubmatch(text)[1]
	case strings.Contains(text, "[tool]"):
		p.kind = replyTool
		p.command = "echo fake-tool-ran"
	case strings.Contains(text, "[think]"):
		p.kind = replyThink
	case strings.Contains(text, "[slow]"):
		p.kind = replySlow
	case waitRE.MatchString(text):
		p.kind = replySlow
		p.wait = waitRE.FindStringSubmatch(text)[1]
	}
	return p
}

// pace waits before delta i of a replySlow: slowDelay before each; with a
// wait path, nothing before the first and, before the second, until the
// path exists (a test opens the gate when it is ready: the reply is
// streaming for as long as it needs, however slow the machine). It reports
// false once done is closed (the client hung up).
func (p plan) pace(done <-chan struct{}, i int) bool {
	if p.wait == "" {
		select {
		case <-done:
			return false
		case <-time.After(slowDelay):
			return true
		}
	}
	for i == 1 {
		if _, err := os.Stat(p.wait); err == nil {
			return true
		}
		select {
		case <-done:
			return false
		case <-time.After(waitPoll):
		}
	}
	return true
}

// reply is the answer text of a plan that answers in text.
func (p plan) reply() string {
	if p.kind == replyToolDone {
		return "tool done"
	}
	return "fake reply: " + p.text
}

// pieces cuts s into deltas of at most n bytes without splitting a rune.
func pieces(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		end := min(n, len(s))
		for end < len(s) && end > 0 && !runeStart(s[end]) {
			end--
		}
		if end == 0 {
			end = len(s)
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }

// parseAnthropic reduces an Anthropic Messages request.
func parseAnthropic(req map[string]any) []message {
	raw, _ := req["messages"].([]any)
	out := make([]message, 0, len(raw))
	for _, m := range raw {
		mm, _ := m.(map[string]any)
		if mm == nil {
			continue
		}
		msg := message{}
		msg.role, _ = mm["role"].(string)
		switch c := mm["content"].(type) {
		case string:
			msg.texts = append(msg.texts, stripReminders(c))
		case []any:
			for _, b := range c {
				bm, _ := b.(map[string]any)
				switch bm["type"] {
				case "text":
					t, _ := bm["text"].(string)
					msg.texts = append(msg.texts, stripReminders(t))
				case "tool_result":
					msg.toolResult = true
				}
			}
		}
		out = append(out, msg)
	}
	return out
}

// parseOpenAI reduces an OpenAI Chat Completions request.
func parseOpenAI(req map[string]any) []message {
	raw, _ := req["messages"].([]any)
	out := make([]message, 0, len(raw))
	for _, m := range raw {
		mm, _ := m.(map[string]any)
		if mm == nil {
			continue
		}
		msg := message{}
		msg.role, _ = mm["role"].(string)
		if msg.role == "tool" {
			msg.toolResult = true
		}
		switch c := mm["content"].(type) {
		case string:
			msg.texts = append(msg.texts, stripReminders(c))
		case []any:
			for _, b := range c {
				bm, _ := b.(map[string]any)
				if bm["type"] == "text" {
					t, _ := bm["text"].(string)
					msg.texts = append(msg.texts, stripReminders(t))
				}
			}
		}
		out = append(out, msg)
	}
	return out
}

// bashTool finds the shell tool among the request's tools: its name and
// whether its input schema takes a "description". Anthropic tools are
// {name, input_schema}; OpenAI tools are {type, function:{name, parameters}}.
func bashTool(req map[string]any) (name string, takesDescription bool) {
	tools, _ := req["tools"].([]any)
	name = "Bash"
	for _, t := range tools {
		tm, _ := t.(map[string]any)
		if fn, ok := tm["function"].(map[string]any); ok {
			tm = map[string]any{"name": fn["name"], "input_schema": fn["parameters"]}
		}
		n, _ := tm["name"].(string)
		if !strings.EqualFold(n, "bash") {
			continue
		}
		schema, _ := tm["input_schema"].(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		_, takesDescription = props["description"]
		return n, takesDescription
	}
	return name, false
}

// subagentTool finds the CLI's subagent tool among the request's tools:
// "Task" in older versions, "Agent" in newer ones; "" when it offers none
// (a subagent's own request).
func subagentTool(req map[string]any) string {
	tools, _ := req["tools"].([]any)
	for _, t := range tools {
		tm, _ := t.(map[string]any)
		if n, _ := tm["name"].(string); n == "Task" || n == "Agent" {
			return n
		}
	}
	return ""
}

// toolInput is the input of the scripted bash call.
func toolInput(command string, takesDescription bool) map[string]any {
	in := map[string]any{"command": command}
	if takesDescription {
		in["description"] = "fake tool call"
	}
	return in
}

// scripted answers a [[call NAME ARGS]] script: the latest user message
// with text holds the steps, and each assistant message since it is one
// step taken, so the k-th answer after it is the k-th call. Once every
// step is taken the script answers as without one ("tool done" after a
// tool result).
func scripted(msgs []message) (plan, bool) {
	start := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.role != "user" || m.toolResult {
			continue
		}
		if text := strings.Join(m.texts, "\n"); strings.TrimSpace(text) != "" {
			start = i
			break
		}
	}
	if start < 0 {
		return plan{}, false
	}
	steps := callRE.FindAllStringSubmatch(strings.Join(msgs[start].texts, "\n"), -1)
	taken := 0
	for _, m := range msgs[start+1:] {
		if m.role == "assistant" {
			taken++
		}
	}
	if taken >= len(steps) {
		return plan{}, false
	}
	return plan{kind: replyCall, callName: steps[taken][1], callArgs: steps[taken][2]}, true
}
