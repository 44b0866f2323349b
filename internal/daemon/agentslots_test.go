//go:build linux

package daemon_test

import (
	"bufio"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// processSampler counts the agent processes running (bin's children of
// this process) every few milliseconds until stop, keeping the most seen.
type processSampler struct {
	done chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	most int
	err  error
}

func sampleProcesses(bin string) *processSampler {
	s := &processSampler{done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			n, err := countChildren(bin)
			s.mu.Lock()
			s.most, s.err = max(s.most, n), err
			s.mu.Unlock()
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the most processes seen at once.
func (s *processSampler) stop(t *testing.T) int {
	close(s.done)
	s.wg.Wait()
	if s.err != nil {
		t.Fatalf("count agent processes: %v", s.err)
	}
	return s.most
}

// metric reads one unlabelled value of the daemon's /metrics.
func metric(t *testing.T, e *testEnv, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + e.d.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return f
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return 0
}

// awaitMetric polls /metrics until name reads want.
func awaitMetric(t *testing.T, e *testEnv, name string, want float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for metric(t, e, name) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s is %v after 10 s, want %v", name, metric(t, e, name), want)
		}
		time.Sleep(10 * time.Millisecond) // polls the daemon's gauge
	}
}

// isSlotNotice reports whether p is the notice of a turn waiting for one
// of 2 agent processes: a systemNotification naming maxAgentProcesses,
// marked in its _meta.
func isSlotNotice(p ahp.ResponsePart) bool {
	return p.Kind == ahp.PartSystemNotification && strings.Contains(p.Content, "maxAgentProcesses") &&
		p.Meta[chat.SlotWaitMetaKey] == float64(2)
}

// slotNotice is the notice part of a turn waiting for an agent process, ""
// when it has none.
func slotNotice(tr ahp.Turn) string {
	for _, p := range tr.ResponseParts {
		if isSlotNotice(p) {
			return p.Content
		}
	}
	return ""
}

// awaitSlotNotice waits for the notice part of turn id saying it waits for
// an agent process.
func awaitSlotNotice(t *testing.T, c *ahptest.Client, chat, id string) {
	t.Helper()
	c.AwaitEnvelope("the agent slot notice of "+id, func(e ahptest.Envelope) bool {
		if e.Channel != chat || e.Type() != "chat/responsePart" || turnID(e) != id {
			return false
		}
		var part ahp.ResponsePart
		return e.Field("part", &part) == nil && isSlotNotice(part)
	})
}

// TestMaxAgentProcesses: with maxAgentProcesses 2, three chats a client
// watches, each with a fake ACP agent process (issue 34 §5):
//   - never more than 2 agent processes run, sampled all through the test;
//   - the third chat's turn runs after the least recently used idle agent
//     is ended, and that chat's next turn resumes its conversation;
//   - while both processes have a turn running, a third turn waits with a
//     notice in the turn; a stop ends it cancelled and takes it out of
//     the queue; the next one waits and runs once a slot frees;
//   - every conversation resumed after its process was ended resumes
//     (the fake's [history], replayed from -state);
//   - a turn whose session is disposed while it waits leaves the queue,
//     and no agent is ended for it.
func TestMaxAgentProcesses(t *testing.T) {
	// Not parallel: it counts every process of the fake agent's binary.
	e := newACPFakeEnvWith(t, nil, func(c *daemon.Config) {
		c.MaxAgentProcesses = 2
		c.AgentIdleSeconds = -1 // only the slots end agents here
	}, "-state", t.TempDir())
	bin := e.bin
	sampler := sampleProcesses(bin)
	a := e.client("watcher")
	var chats [3]string
	for i := range chats {
		sess := fmt.Sprintf("ahp-session:/acc0de00-0000-4000-8000-00000000035%d", i)
		a.MustCall("createSession", map[string]any{"channel": sess, "provider": "fake-acp"})
		chats[i] = sessionState(t, a, sess).DefaultChat
		a.Subscribe(chats[i])
	}
	A, B, C := chats[0], chats[1], chats[2]
	answer := func(chat, id string) string {
		t.Helper()
		return clMarkdown(turnOf(t, chatOf(t, a, chat), id))
	}
	run := func(chat, id, text string) {
		t.Helper()
		if end := sendTurn(t, a, chat, id, text); end.Type() != "chat/turnComplete" {
			t.Fatalf("%s %s ended with %s: %s", chat, id, end.Type(), end.Action)
		}
	}

	t.Run("the third agent ends the least recently used idle one", func(t *testing.T) {
		run(A, "a1", "hello")
		run(B, "b1", "hello")
		run(C, "c1", "hello")
		if n := childrenRunning(t, bin); n != 2 {
			t.Fatalf("%d agent processes after three chats' turns, want 2", n)
		}
		// B ran after A: its process was kept, A's ended.
		run(B, "b2", "[history]")
		if got := answer(B, "b2"); got != "not loaded" {
			t.Errorf("B's process should have been kept (the more recently used), but it answered %q", got)
		}
		run(A, "a2", "[history]")
		if got := answer(A, "a2"); got != "loaded 1 turns" {
			t.Errorf("A's turn after its agent was ended answered %q, want its conversation resumed (loaded 1 turns)", got)
		}
	})

	gateA, gateB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	t.Run("a turn that finds every process busy waits with a notice, and a stop takes it out", func(t *testing.T) {
		// A and B hold the two processes, each with a turn running.
		startTurn(a, A, "a3", "[wait:"+gateA+"]")
		awaitTyped(t, a, A, "chat/responsePart", "a3")
		startTurn(a, B, "b3", "[wait:"+gateB+"]")
		awaitTyped(t, a, B, "chat/responsePart", "b3")
		startTurn(a, C, "c2", "[history]")
		awaitSlotNotice(t, a, C, "c2")
		awaitMetric(t, e.testEnv, "ahpd_agent_slots_waiting", 1)
		if st := chatOf(t, a, C); st.ActiveTurn == nil || st.ActiveTurn.ID != "c2" {
			t.Fatalf("c2 is not running while it waits: %+v", st.ActiveTurn)
		}
		awaitAccepted(t, a, stopTurn(a, C, "c2"))
		if end := awaitEnd(t, a, C, "c2"); end.Type() != "chat/turnCancelled" {
			t.Fatalf("the stopped waiting turn ended with %s: %s", end.Type(), end.Action)
		}
		awaitMetric(t, e.testEnv, "ahpd_agent_slots_waiting", 0)
		if got := slotNotice(turnOf(t, chatOf(t, a, C), "c2")); got == "" {
			t.Error("the cancelled turn does not keep its notice")
		}
	})

	t.Run("a waiting turn runs once a slot frees", func(t *testing.T) {
		startTurn(a, C, "c3", "[history]")
		awaitSlotNotice(t, a, C, "c3")
		writeFile(t, gateA, "") // A's turn ends: A is idle, its process goes to C
		if end := awaitEnd(t, a, A, "a3"); end.Type() != "chat/turnComplete" {
			t.Fatalf("a3 ended with %s: %s", end.Type(), end.Action)
		}
		if end := awaitEnd(t, a, C, "c3"); end.Type() != "chat/turnComplete" {
			t.Fatalf("the waiting turn ended with %s: %s", end.Type(), end.Action)
		}
		tr := turnOf(t, chatOf(t, a, C), "c3")
		if slotNotice(tr) == "" {
			t.Error("the turn that waited does not say it waited")
		}
		// c2 never reached the agent: C's conversation holds c1 alone.
		if got := clMarkdown(tr); got != "loaded 1 turns" {
			t.Errorf("C's turn after it waited answered %q, want its conversation resumed (loaded 1 turns)", got)
		}
		writeFile(t, gateB, "")
		if end := awaitEnd(t, a, B, "b3"); end.Type() != "chat/turnComplete" {
			t.Fatalf("b3 ended with %s: %s", end.Type(), end.Action)
		}
		// C went idle before B: C's process is the one A's next turn takes.
		run(A, "a4", "[history]")
		if got := answer(A, "a4"); got != "loaded 3 turns" {
			t.Errorf("A's turn after its agent was ended for C answered %q, want its conversation resumed (loaded 3 turns)", got)
		}
		run(B, "b4", "[history]")
		if got := answer(B, "b4"); got != "not loaded" {
			t.Errorf("B's process should have been kept, but it answered %q", got)
		}
	})

	t.Run("a session disposed while its turn waits leaves the queue", func(t *testing.T) {
		gateA, gateB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
		startTurn(a, A, "a5", "[wait:"+gateA+"]")
		awaitTyped(t, a, A, "chat/responsePart", "a5")
		startTurn(a, B, "b5", "[wait:"+gateB+"]")
		awaitTyped(t, a, B, "chat/responsePart", "b5")
		const sess = "ahp-session:/acc0de00-0000-4000-8000-000000000359"
		a.MustCall("createSession", map[string]any{"channel": sess, "provider": "fake-acp"})
		D := sessionState(t, a, sess).DefaultChat
		a.Subscribe(D)
		startTurn(a, D, "d1", "hello")
		awaitSlotNotice(t, a, D, "d1")
		awaitMetric(t, e.testEnv, "ahpd_agent_slots_waiting", 1)
		a.MustCall("disposeSession", map[string]any{"channel": sess})
		awaitMetric(t, e.testEnv, "ahpd_agent_slots_waiting", 0)
		writeFile(t, gateA, "")
		writeFile(t, gateB, "")
		for chat, id := range map[string]string{A: "a5", B: "b5"} {
			if end := awaitEnd(t, a, chat, id); end.Type() != "chat/turnComplete" {
				t.Fatalf("%s ended with %s: %s", id, end.Type(), end.Action)
			}
		}
		// Nobody waits: both agents stay. A's is still the process that
		// resumed its conversation for a4 (a new one would load 5 turns).
		run(A, "a6", "[history]")
		if got := answer(A, "a6"); got != "loaded 3 turns" {
			t.Errorf("A's process was ended for a turn that no longer waited: it answered %q, want loaded 3 turns (a4's process)", got)
		}
	})

	if most := sampler.stop(t); most != 2 {
		t.Errorf("at most %d agent processes ran at once, want 2 (maxAgentProcesses) and no more", most)
	}
	if n := metric(t, e.testEnv, "ahpd_agent_slots_held"); n != 2 {
		t.Errorf("ahpd_agent_slots_held %v, want 2", n)
	}
}
