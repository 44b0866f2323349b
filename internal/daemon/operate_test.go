package daemon_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/claude"
	"github.com/ahpd/ahpd/internal/agent/script"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// createSession with a progressToken sends that client root/progress, step
// by step up to the total, and nobody else.
func TestCreateSessionSendsProgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := e.client("a"), e.client("b")
	a.MustCall("createSession", map[string]any{"channel": "script:/5d0c0a4e-8e53-4a4f-9a55-7f1c2b3a0001", "provider": "script", "progressToken": "tok-1"})
	var steps []int
	for len(steps) < 3 {
		n := a.AwaitNotificationWhere("root/progress", func(p json.RawMessage) bool {
			var v struct {
				ProgressToken string `json:"progressToken"`
				Progress      int    `json:"progress"`
			}
			return json.Unmarshal(p, &v) == nil && v.ProgressToken == "tok-1" && v.Progress == len(steps)+1
		})
		var v struct {
			Progress int `json:"progress"`
			Total    int `json:"total"`
		}
		if err := json.Unmarshal(n.Params, &v); err != nil || v.Total != 3 {
			t.Fatalf("root/progress %s: want total 3", n.Params)
		}
		steps = append(steps, v.Progress)
	}
	// b saw the session added (after the last step was sent to a) and no
	// progress of a's.
	b.AwaitNotification("root/sessionAdded")
	for _, f := range b.Frames() {
		if f.Method == "root/progress" {
			t.Fatalf("another client got a's progress: %s", f.Params)
		}
	}
	// Without a token, no progress.
	a.MustCall("createSession", map[string]any{"channel": "script:/5d0c0a4e-8e53-4a4f-9a55-7f1c2b3a0002", "provider": "script"})
	count := 0
	for _, f := range a.Frames() {
		if f.Method == "root/progress" {
			count++
		}
	}
	if count != 3 {
		t.Fatalf("%d root/progress after a createSession without a token, want still 3", count)
	}
}

// A CLI installed after the daemon started is picked up: the next
// createSession probes the agents again and root/agentsChanged says the
// backend is available.
func TestCreateSessionProbesAgentsAgain(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "claude")
	cl := claude.New(claude.Options{Binary: bin})
	reg, err := agent.NewRegistry(script.New(script.Options{}), cl)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, reg)
	c := ahptest.Dial(t, e.d.URL(), "")
	res := c.Initialize("c", ahp.RootURI)
	_ = res
	root, _ := c.Subscribe(ahp.RootURI)
	if !strings.Contains(claudeDescription(t, root), "unavailable") {
		t.Fatalf("claude is not listed unavailable before its CLI exists: %s", root)
	}
	// The CLI appears (any executable: only its presence is probed).
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 9.9.9\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c.MustCall("createSession", map[string]any{"channel": "script:/5d0c0a4e-8e53-4a4f-9a55-7f1c2b3a0003", "provider": "script"})
	env := c.AwaitAction(ahp.RootURI, "root/agentsChanged")
	if d := claudeDescription(t, env.Action); strings.Contains(d, "unavailable") {
		t.Fatalf("root/agentsChanged still says claude is unavailable: %s", env.Action)
	}
	// Nothing changed since: the next createSession publishes nothing.
	before := len(c.Envelopes())
	c.MustCall("createSession", map[string]any{"channel": "script:/5d0c0a4e-8e53-4a4f-9a55-7f1c2b3a0004", "provider": "script"})
	for _, e := range c.Envelopes()[before:] {
		if e.Type() == "root/agentsChanged" {
			t.Fatalf("root/agentsChanged with nothing changed: %s", e.Action)
		}
	}
}

func claudeDescription(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v struct {
		Agents []ahp.AgentInfo `json:"agents"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("agents: %v: %s", err, raw)
	}
	for _, a := range v.Agents {
		if a.Provider == "claude" {
			return a.Description
		}
	}
	t.Fatalf("no claude agent in %s", raw)
	return ""
}

// Load layers defaults, file, env and flags into one Config and says where
// each value came from; the same bad value is refused naming its source
// in each layer.
func TestLoadLayersAndSources(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(file, []byte(`{"turnsView": 9, "attachmentFetchLimitBytes": 0, "agents": {"claude": {"stopEnds": "query"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := daemon.Load(daemon.LoadInput{
		File:  file,
		Env:   []string{"AHPD_TURNS_VIEW=11", "AHPD_PORT=1", "AHPD_URL=ignored"},
		Flags: []daemon.Setting{{Key: "port", Source: "flag --port", Values: []string{"2"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	if c.TurnsView != 11 || c.Port != 2 || c.AttachmentFetchLimitBytes != 0 || c.ReplayLog != 8192 {
		t.Fatalf("config %+v", c)
	}
	for key, want := range map[string]string{
		"turnsView": "env AHPD_TURNS_VIEW", "port": "flag --port", "replayLog": "default",
		"attachmentFetchLimitBytes": "file " + file, "agents.claude.stopEnds": "file " + file,
	} {
		if got := l.SourceOf(key); got != want {
			t.Errorf("source of %s = %q, want %q", key, got, want)
		}
	}
	if !strings.Contains(string(c.Agents["claude"]), "query") {
		t.Errorf("agents.claude lost: %s", c.Agents["claude"])
	}
	// A missing optional file is no error; a missing named one is.
	if _, err := daemon.Load(daemon.LoadInput{File: filepath.Join(t.TempDir(), "none.json"), FileOptional: true}); err != nil {
		t.Errorf("optional missing file: %v", err)
	}
	if _, err := daemon.Load(daemon.LoadInput{File: filepath.Join(t.TempDir(), "none.json")}); err == nil {
		t.Errorf("a named missing file was accepted")
	}
}

// Daemon.Shutdown (SIGTERM) mid-turn: both clients see a notice that the
// host is stopping and then chat/turnCancelled; the restarted daemon reads
// the turn back cancelled with the notice (not hostRestarted).
func TestShutdownEndsRunningTurnsCancelled(t *testing.T) {
	e := newEnv(t)
	a, b := e.client("a"), e.client("b")
	_, chat := e.createSession(a, "script:/5d0c0a4e-8e53-4a4f-9a55-7f1c2b3a0010")
	a.Subscribe(chat)
	b.Subscribe(chat)
	startTurn(a, chat, "t1", "[hold] stay")
	a.AwaitAction(chat, "chat/responsePart")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.d.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	e.d = nil
	for name, c := range map[string]*ahptest.Client{"a": a, "b": b} {
		c.AwaitAction(chat, "chat/turnCancelled") // frames already sent may still be in flight
		var notice, end int64
		for _, env := range c.Envelopes() {
			if env.Channel != chat {
				continue
			}
			var part ahp.ResponsePart
			if env.Type() == "chat/responsePart" && env.Field("part", &part) == nil && part.Kind == ahp.PartSystemNotification && strings.Contains(part.Content, "stopping") {
				notice = env.ServerSeq
			}
			if env.Type() == "chat/turnCancelled" && turnID(env) == "t1" {
				end = env.ServerSeq
			}
		}
		if notice == 0 || end == 0 || notice > end {
			t.Fatalf("client %s: notice at %d, cancelled at %d; want the notice, then the ending", name, notice, end)
		}
	}
	e.start()
	c := e.client("c")
	raw, _ := c.Subscribe(chat)
	cs := chatState(t, raw)
	if len(cs.Turns) != 1 || cs.Turns[0].State != ahp.TurnCancelled {
		t.Fatalf("after restart: %s", raw)
	}
}
