package claude

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
)

// writeTranscript puts a transcript for conversation id run in cwd under
// a config dir and returns the backend reading it.
func writeTranscript(t *testing.T, id, cwd, jsonl string) *Claude {
	t.Helper()
	cfg := t.TempDir()
	path := transcriptPath(cfg, id, cwd)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(jsonl), 0o600); err != nil {
		t.Fatal(err)
	}
	return New(Options{ConfigDir: cfg})
}

// C-COMP-07: ReadTurns gives the transcript's turns in the backend-neutral
// form, each naming its point; outcomes, errors, usage, parts and times
// carry over.
func TestReadTurnsIsNeutral(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "branched.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	c := writeTranscript(t, "conv-1", cwd, string(data))
	turns, err := c.ReadTurns(t.Context(), "conv-1", []string{cwd})
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		id, text, point string
		outcome         agent.Outcome
		kinds           string
	}
	wants := []want{
		{"u1", "one", "a3", agent.OutcomeComplete, "reasoning toolCall markdown"},
		{"u2", "two", "i2", agent.OutcomeCancelled, "toolCall"},
		{"u3", "three", "a6", agent.OutcomeComplete, "notice markdown"},
		{"u4", "boom", "a7", agent.OutcomeError, ""},
		{"u5", "never answered", "u5", agent.OutcomeCancelled, ""},
	}
	if len(turns) != len(wants) {
		t.Fatalf("%d turns, want %d", len(turns), len(wants))
	}
	for i, w := range wants {
		got := turns[i]
		var kinds []string
		for _, p := range got.Parts {
			kinds = append(kinds, p.Kind.String())
		}
		if got.ID != w.id || got.Text != w.text || got.Point != w.point || got.Outcome != w.outcome || strings.Join(kinds, " ") != w.kinds {
			t.Errorf("turn %d: %s %q %s %v [%s], want %s %q %s %v [%s]", i,
				got.ID, got.Text, got.Point, got.Outcome, strings.Join(kinds, " "), w.id, w.text, w.point, w.outcome, w.kinds)
		}
	}
	one := turns[0]
	if one.Usage == nil || one.Usage.InputTokens != 30 || one.Started.IsZero() {
		t.Errorf("turn one usage %+v started %v", one.Usage, one.Started)
	}
	if tool := one.Parts[1]; !tool.Done || tool.Tool == nil || tool.Tool.Output != "file" || tool.Tool.PastTense != "Ran `ls`" {
		t.Errorf("turn one's call %+v", tool)
	}
	if len(one.Steering) != 1 || one.Steering[0] != "steer me" {
		t.Errorf("turn one's steering %q", one.Steering)
	}
	if boom := turns[3]; boom.ErrorType != "api_error" || boom.ErrorMessage != "API Error: 500 fake server error" {
		t.Errorf("error turn %q %q", boom.ErrorType, boom.ErrorMessage)
	}
	if turns[4].Usage != nil {
		t.Errorf("a turn nothing answered has usage %+v", turns[4].Usage)
	}

	if _, err := c.ReadTurns(t.Context(), "conv-2", []string{cwd}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a conversation never kept: %v, want fs.ErrNotExist", err)
	}
	for _, bad := range []string{"", "../conv-1", `a\b`} {
		if _, err := c.ReadTurns(t.Context(), bad, []string{cwd}); err == nil {
			t.Errorf("id %q read back", bad)
		}
	}
}

// A call the user denied reads back denied (the CLI's result is the
// denial the backend wrote); C-TURN-17, C-TURN-18: the CLI's answer after
// a stop to the call it was stopped in reads back unanswered, so the call
// reads cancelled, as every client saw it; a call answered before a stop
// that came while the model wrote reads back answered.
func TestReadBackToolCallEndings(t *testing.T) {
	const jsonl = `{"type":"user","uuid":"u1","parentUuid":null,"timestamp":"2026-01-02T03:04:05.000Z","message":{"role":"user","content":"denied"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m1","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"tu1","name":"Bash","input":{"command":"touch x"}}]}}
{"type":"user","uuid":"r1","parentUuid":"a1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":"The user denied this tool call.","is_error":true}]}}
{"type":"assistant","uuid":"a2","parentUuid":"r1","message":{"id":"m2","role":"assistant","model":"claude-x","content":[{"type":"text","text":"tool done"}]}}
{"type":"user","uuid":"u2","parentUuid":"a2","message":{"role":"user","content":"stopped at the ask"}}
{"type":"assistant","uuid":"a3","parentUuid":"u2","message":{"id":"m3","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"tu2","name":"Bash","input":{"command":"touch y"}}]}}
{"type":"user","uuid":"r2","parentUuid":"a3","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu2","content":"The user doesn't want to proceed with this tool use.","is_error":true}]}}
{"type":"user","uuid":"i2","parentUuid":"r2","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]}}
{"type":"user","uuid":"u3","parentUuid":"i2","message":{"role":"user","content":"stopped while writing"}}
{"type":"assistant","uuid":"a4","parentUuid":"u3","message":{"id":"m4","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"tu3","name":"Bash","input":{"command":"echo hi"}}]}}
{"type":"user","uuid":"r3","parentUuid":"a4","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu3","content":"hi","is_error":false}]}}
{"type":"assistant","uuid":"a5","parentUuid":"r3","message":{"id":"m5","role":"assistant","model":"claude-x","content":[{"type":"text","text":"par"}]}}
{"type":"user","uuid":"i3","parentUuid":"a5","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]}}
`
	cwd := t.TempDir()
	c := writeTranscript(t, "conv-1", cwd, jsonl)
	turns, err := c.ReadTurns(t.Context(), "conv-1", []string{cwd})
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 3 {
		t.Fatalf("%d turns", len(turns))
	}
	denied := turns[0].Parts[0]
	if !denied.Done || !denied.Denied || turns[0].Outcome != agent.OutcomeComplete {
		t.Errorf("denied call %+v in a %v turn", denied, turns[0].Outcome)
	}
	stopped := turns[1].Parts[0]
	if stopped.Done || stopped.Denied || stopped.Tool.Error != "" || turns[1].Outcome != agent.OutcomeCancelled || turns[1].Point != "i2" {
		t.Errorf("call stopped at its ask %+v %+v in a %v turn ending at %s", stopped, *stopped.Tool, turns[1].Outcome, turns[1].Point)
	}
	answered := turns[2].Parts[0]
	if !answered.Done || answered.Tool.Output != "hi" || turns[2].Outcome != agent.OutcomeCancelled || turns[2].Parts[1].Text != "par" {
		t.Errorf("call answered before the stop %+v in a %v turn", answered, turns[2].Outcome)
	}
}
