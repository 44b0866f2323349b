package acp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/ahpd/ahpd/internal/agent/agentproc"
)

// Terminal bounds: how many a conversation runs at once, how much output
// each keeps (the last bytes; the agent may ask for less), and how long
// one may run before it is killed.
const (
	maxTerminals      = 8
	maxTerminalOutput = 1 << 20
	maxTerminalTime   = 30 * time.Minute
)

// terminals are the terminal/* commands a conversation's agent runs.
type terminals struct {
	ledger agentproc.Ledger
	// sandbox confines each command as the agent is confined
	// (agent.OpenParams.Sandbox); nil for an unsandboxed session.
	sandbox func(*exec.Cmd) error
	// mu guards byID and next.
	mu   sync.Mutex
	byID map[string]*terminal
	next int
}

type terminal struct {
	cmd   *exec.Cmd
	limit int
	// exited is closed once the command was reaped.
	exited chan struct{}
	timer  *time.Timer
	// endGroup kills what the command left in its group and crosses the
	// group out of the ledger, once the command was reaped.
	endGroup func()
	// mu guards out, truncated, code and signal.
	mu        sync.Mutex
	out       []byte
	truncated bool
	code      *int
	signal    *string
}

func newTerminals(ledger agentproc.Ledger, sandbox func(*exec.Cmd) error) *terminals {
	return &terminals{ledger: ledger, sandbox: sandbox, byID: make(map[string]*terminal)}
}

// create starts a command in dirs[0], or in the request's cwd when that
// lies inside the chat's directories.
func (ts *terminals) create(dirs []string, req acpsdk.CreateTerminalRequest, env []string) (string, error) {
	if req.Command == "" {
		return "", errors.New("empty command")
	}
	dir := dirs[0]
	if req.Cwd != nil && *req.Cwd != "" {
		real, err := confined(dirs, *req.Cwd)
		if err != nil {
			return "", err
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("cwd %s is not a directory", *req.Cwd)
		}
		dir = real
	}
	limit := maxTerminalOutput
	if req.OutputByteLimit != nil && *req.OutputByteLimit >= 0 && *req.OutputByteLimit < limit {
		limit = *req.OutputByteLimit
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.byID) >= maxTerminals {
		return "", fmt.Errorf("%d terminals are open; release one first", maxTerminals)
	}
	cmd := exec.Command(req.Command, req.Args...)
	cmd.Dir = dir
	cmd.Env = append([]string(nil), env...)
	for _, e := range req.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	agentproc.SetGroup(cmd)
	if ts.sandbox != nil {
		if err := ts.sandbox(cmd); err != nil {
			return "", fmt.Errorf("sandbox %s: %w", req.Command, err)
		}
	}
	t := &terminal{cmd: cmd, limit: limit, exited: make(chan struct{})}
	cmd.Stdout = t
	cmd.Stderr = t
	cmd.WaitDelay = time.Second
	end, err := ts.ledger.Start(cmd)
	if err != nil {
		return "", err
	}
	t.endGroup = end
	ts.next++
	id := "term-" + strconv.Itoa(ts.next)
	ts.byID[id] = t
	t.timer = time.AfterFunc(maxTerminalTime, func() { agentproc.SignalGroup(cmd, os.Kill) })
	go t.reap()
	return id, nil
}

// Write keeps the last limit bytes of output, cut at a character start.
func (t *terminal) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.out = append(t.out, b...)
	if over := len(t.out) - t.limit; over > 0 {
		cut := over
		for cut < len(t.out) && !utf8.RuneStart(t.out[cut]) {
			cut++
		}
		t.out = append(t.out[:0], t.out[cut:]...)
		t.truncated = true
	}
	return len(b), nil
}

func (t *terminal) reap() {
	err := t.cmd.Wait()
	t.endGroup()
	t.timer.Stop()
	t.mu.Lock()
	var ee *exec.ExitError
	switch {
	case err == nil:
		code := 0
		t.code = &code
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			s := ws.Signal().String()
			t.signal = &s
		} else {
			code := ee.ExitCode()
			t.code = &code
		}
	default:
		code := -1
		t.code = &code
	}
	t.mu.Unlock()
	close(t.exited)
}

func (ts *terminals) get(id string) (*terminal, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.byID[id]
	if t == nil {
		return nil, fmt.Errorf("no terminal %q", id)
	}
	return t, nil
}

func (t *terminal) status() *acpsdk.TerminalExitStatus {
	select {
	case <-t.exited:
	default:
		return nil
	}
	return &acpsdk.TerminalExitStatus{ExitCode: t.code, Signal: t.signal}
}

func (ts *terminals) output(id string) (acpsdk.TerminalOutputResponse, error) {
	t, err := ts.get(id)
	if err != nil {
		return acpsdk.TerminalOutputResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	st := t.status()
	t.mu.Lock()
	defer t.mu.Unlock()
	return acpsdk.TerminalOutputResponse{Output: string(t.out), Truncated: t.truncated, ExitStatus: st}, nil
}

// outputOf is a terminal's output for a tool call's content ("" when
// unknown).
func (ts *terminals) outputOf(id string) string {
	r, err := ts.output(id)
	if err != nil {
		return ""
	}
	return r.Output
}

func (ts *terminals) wait(ctx context.Context, id string) (acpsdk.WaitForTerminalExitResponse, error) {
	t, err := ts.get(id)
	if err != nil {
		return acpsdk.WaitForTerminalExitResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	select {
	case <-t.exited:
	case <-ctx.Done():
		return acpsdk.WaitForTerminalExitResponse{}, ctx.Err()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return acpsdk.WaitForTerminalExitResponse{ExitCode: t.code, Signal: t.signal}, nil
}

func (ts *terminals) kill(id string) error {
	t, err := ts.get(id)
	if err != nil {
		return acpsdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	agentproc.SignalGroup(t.cmd, os.Kill)
	return nil
}

// release kills the command if it still runs and forgets the terminal.
func (ts *terminals) release(id string) error {
	ts.mu.Lock()
	t := ts.byID[id]
	delete(ts.byID, id)
	ts.mu.Unlock()
	if t == nil {
		return acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no terminal %q", id)})
	}
	agentproc.SignalGroup(t.cmd, os.Kill)
	return nil
}

// killAll kills and forgets every terminal (the process ended).
func (ts *terminals) killAll() {
	ts.mu.Lock()
	all := ts.byID
	ts.byID = make(map[string]*terminal)
	ts.mu.Unlock()
	for _, t := range all {
		agentproc.SignalGroup(t.cmd, os.Kill)
	}
}
