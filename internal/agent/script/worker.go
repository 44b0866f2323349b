package script

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ahpd/ahpd/internal/agent"
)

// Workers (subagents). A turn whose text holds a [worker...] marker calls
// the tool "Task" ("<turnID>-task-1"), which spawns a worker conversation:
// the worker's events carry the call's id in Event.Worker.
//
//	[worker]          the worker answers "worker: <prompt>" in deltas and ends;
//	                  the call completes, then the turn answers as usual
//	[worker:hold]     the worker says one delta, then waits for StopWorker or
//	                  the turn's stop
//	[worker:confirm]  the worker calls a tool ("<call>-tool-1") that waits for
//	                  Confirm(turnID, that id)
//	[worker:nested]   the worker spawns a worker of its own ("<call>-task-1")
//	                  from its own conversation
//	[worker:bg]       a background worker: the call returns at once and the turn
//	                  answers and ends; the worker says one delta, then runs on
//	                  until a later turn's text holds [release] (then it ends
//	                  complete), StopWorker, or Close
//
// The worker's prompt is "work on: <turn text>".

// workerMarkers are what a turn asks of its worker.
type workerMarkers struct {
	on, hold, confirm, nested, background bool
}

func parseWorkerMarkers(text string) workerMarkers {
	has := func(m string) bool { return strings.Contains(text, m) }
	return workerMarkers{
		on:         has("[worker"),
		hold:       has("[worker:hold]"),
		confirm:    has("[worker:confirm]"),
		nested:     has("[worker:nested]"),
		background: has("[worker:bg]"),
	}
}

// workerStopLocked returns the stop channel of worker id, made on first use.
// c.mu must be held.
func (c *conversation) workerStopLocked(id string) chan struct{} {
	if c.workerStops == nil {
		c.workerStops = make(map[string]chan struct{})
	}
	ch, ok := c.workerStops[id]
	if !ok {
		ch = make(chan struct{})
		c.workerStops[id] = ch
	}
	return ch
}

// StopWorker stops one worker and leaves the turn that spawned it running;
// the worker ends cancelled and its call fails.
func (c *conversation) StopWorker(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.workerStopLocked(id)
	select {
	case <-ch:
	default:
		close(ch)
	}
	return nil
}

// releaseWorkersLocked ends the background workers' wait ([release]).
// c.mu must be held.
func (c *conversation) releaseWorkersLocked() {
	if c.release == nil {
		c.release = make(chan struct{})
	}
	select {
	case <-c.release:
	default:
		close(c.release)
	}
}

func (c *conversation) releaseChan() chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.release == nil {
		c.release = make(chan struct{})
	}
	return c.release
}

// errWorkerStopped: StopWorker stopped the worker.
var errWorkerStopped = fmt.Errorf("worker stopped")

// workerRun is one worker of a turn.
type workerRun struct {
	r      *turnRun
	id     string
	in     string // the worker whose conversation spawned it; "" for the turn's own
	prompt string
	stop   chan struct{}
	parts  int
}

// spawnWorker runs the turn's Task call and its worker, on the loop
// goroutine (a background worker runs on in a goroutine of its own).
func (r *turnRun) spawnWorker() error {
	c, t := r.c, r.a.turn
	wm := parseWorkerMarkers(t.Text)
	id := r.ids + "-task-1"
	prompt := "work on: " + t.Text
	if err := r.taskCall(id, "", prompt, wm.background); err != nil {
		return err
	}
	c.mu.Lock()
	stop := c.workerStopLocked(id)
	c.mu.Unlock()
	w := &workerRun{r: r, id: id, prompt: prompt, stop: stop}
	if wm.background {
		done := agent.ToolCall{ID: id, Name: "Task", DisplayName: "Task", Success: true, Output: "worker started in the background"}
		if !c.emit(agent.Event{Kind: agent.EventToolDone, TurnID: t.ID, ToolCall: &done}) {
			return errClosed
		}
		release := c.releaseChan()
		c.bg.Add(1)
		go func() {
			defer c.bg.Done()
			w.background(release)
		}()
		return nil
	}
	err := w.body(wm)
	return r.workerDone(w, "", err)
}

// taskCall reports the spawning call, ready, and the worker it spawned.
func (r *turnRun) taskCall(id, in, prompt string, background bool) error {
	c, t := r.c, r.a.turn
	input, _ := json.Marshal(map[string]any{"description": "script worker", "prompt": prompt, "subagent_type": "general-purpose", "run_in_background": background})
	call := agent.ToolCall{ID: id, Name: "Task", DisplayName: "Task", Input: string(input), Invocation: "Task: script worker"}
	r.last = agent.EventToolStart
	for _, ev := range []agent.Event{
		{Kind: agent.EventToolStart, TurnID: t.ID, Worker: in, ToolCall: &call},
		{Kind: agent.EventToolReady, TurnID: t.ID, Worker: in, ToolCall: &call},
		{Kind: agent.EventWorkerStarted, TurnID: t.ID, Worker: in, Spawn: &agent.WorkerSpawn{
			ID: id, Prompt: prompt, AgentName: "general-purpose", Description: "script worker", Background: background,
		}},
	} {
		if !c.emit(ev) {
			return errClosed
		}
	}
	return nil
}

// workerDone reports a worker's end and its call's, by how body ended: a
// turn's stop or close goes on up.
func (r *turnRun) workerDone(w *workerRun, in string, err error) error {
	c, t := r.c, r.a.turn
	end := &agent.End{Outcome: agent.OutcomeComplete}
	done := agent.ToolCall{ID: w.id, Name: "Task", DisplayName: "Task", Success: true, Output: "worker done"}
	switch err {
	case nil:
	case errWorkerStopped:
		end.Outcome = agent.OutcomeCancelled
		done.Success, done.Output, done.Error = false, "", "worker stopped"
	case errStopped:
		c.emit(agent.Event{Kind: agent.EventWorkerEnded, TurnID: t.ID, Spawn: &agent.WorkerSpawn{ID: w.id}, End: &agent.End{Outcome: agent.OutcomeCancelled}})
		return err
	default:
		return err
	}
	if !c.emit(agent.Event{Kind: agent.EventWorkerEnded, TurnID: t.ID, Spawn: &agent.WorkerSpawn{ID: w.id}, End: end}) {
		return errClosed
	}
	if !c.emit(agent.Event{Kind: agent.EventToolDone, TurnID: t.ID, Worker: in, ToolCall: &done}) {
		return errClosed
	}
	return nil
}

// body is the worker's conversation.
func (w *workerRun) body(wm workerMarkers) error {
	r := w.r
	pieces := split("worker: "+w.prompt, answerDeltas)
	if err := w.text(pieces[0]); err != nil {
		return err
	}
	if wm.hold {
		if err := w.wait(); err != nil {
			return err
		}
	}
	if wm.confirm {
		if err := w.toolCall(); err != nil {
			return err
		}
	}
	if m := workerClientToolRE.FindStringSubmatch(w.r.a.turn.Text); m != nil {
		said, err := w.r.clientToolCall(w.id+"-client-1", m[1], w.id)
		if err != nil {
			return err
		}
		if err := w.text(" " + said); err != nil {
			return err
		}
	}
	if wm.nested {
		nested := &workerRun{r: r, id: w.id + "-task-1", in: w.id, prompt: "nested: " + w.prompt}
		r.c.mu.Lock()
		nested.stop = r.c.workerStopLocked(nested.id)
		r.c.mu.Unlock()
		if err := r.taskCall(nested.id, w.id, nested.prompt, false); err != nil {
			return err
		}
		err := nested.body(workerMarkers{})
		if err := r.workerDone(nested, w.id, err); err != nil {
			return err
		}
	}
	for _, p := range pieces[1:] {
		if err := w.check(); err != nil {
			return err
		}
		if err := w.text(p); err != nil {
			return err
		}
	}
	return nil
}

// background is a [worker:bg] worker, on its own goroutine.
func (w *workerRun) background(release chan struct{}) {
	c, t := w.r.c, w.r.a.turn
	end := &agent.End{Outcome: agent.OutcomeComplete}
	err := w.text("worker: " + w.prompt)
	if err == nil {
		err = w.waitBackground(release)
	}
	if err == nil {
		err = w.text(" (released)")
	}
	switch err {
	case nil:
	case errWorkerStopped:
		end.Outcome = agent.OutcomeCancelled
	default:
		return
	}
	c.emit(agent.Event{Kind: agent.EventWorkerEnded, TurnID: t.ID, Spawn: &agent.WorkerSpawn{ID: w.id}, End: end})
}

func (w *workerRun) waitBackground(release chan struct{}) error {
	select {
	case <-release:
		return nil
	case <-w.stop:
		return errWorkerStopped
	case <-w.r.c.done:
		return errClosed
	}
}

// check reports the worker's stop, the turn's stop or a close.
func (w *workerRun) check() error {
	select {
	case <-w.stop:
		return errWorkerStopped
	default:
	}
	return w.r.check()
}

// wait holds the worker until its stop, the turn's stop or a close.
func (w *workerRun) wait() error {
	select {
	case <-w.stop:
		return errWorkerStopped
	case <-w.r.a.stop:
		return errStopped
	case <-w.r.c.done:
		return errClosed
	}
}

func (w *workerRun) text(s string) error {
	ev := agent.Event{Kind: agent.EventText, TurnID: w.r.a.turn.ID, Worker: w.id, Text: s}
	if w.parts == 0 {
		w.parts++
		ev.PartID = fmt.Sprintf("%s-md-%d", w.id, w.parts)
	}
	if !w.r.c.emit(ev) {
		return errClosed
	}
	return nil
}

// toolCall is the worker's own tool call, waiting for Confirm.
func (w *workerRun) toolCall() error {
	c, t := w.r.c, w.r.a.turn
	call := agent.ToolCall{ID: w.id + "-tool-1", Name: "echo", DisplayName: "Echo", Input: `{"text":"worker"}`, Invocation: "echo worker", NeedsConfirmation: true}
	c.mu.Lock()
	w.r.a.waitingTool = call.ID
	c.mu.Unlock()
	for _, k := range []agent.EventKind{agent.EventToolStart, agent.EventToolReady} {
		if !c.emit(agent.Event{Kind: k, TurnID: t.ID, Worker: w.id, ToolCall: &call}) {
			return errClosed
		}
	}
	done := call
	select {
	case approved := <-w.r.a.confirm:
		done.Success = approved
	case <-w.stop:
		return errWorkerStopped
	case <-w.r.a.stop:
		return errStopped
	case <-c.done:
		return errClosed
	}
	if done.Success {
		done.Output = "worker"
	} else {
		done.Error = "denied"
	}
	if !c.emit(agent.Event{Kind: agent.EventToolDone, TurnID: t.ID, Worker: w.id, ToolCall: &done}) {
		return errClosed
	}
	return nil
}

var _ agent.WorkerStopper = (*conversation)(nil)
