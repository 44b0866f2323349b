//go:build linux

package daemon_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/daemon"
)

// childrenRunning counts this process's children running bin (zombies
// not counted): the agent processes the in-process daemon started.
func childrenRunning(t *testing.T, bin string) int {
	t.Helper()
	n, err := countChildren(bin)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// countChildren is childrenRunning for a goroutine other than the test's.
func countChildren(bin string) (int, error) {
	des, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	me, n := strconv.Itoa(os.Getpid()), 0
	for _, de := range des {
		if _, err := strconv.Atoi(de.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", de.Name(), "stat"))
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(stat), ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[0] == "Z" || f[1] != me {
			continue
		}
		if cmd, _ := os.ReadFile(filepath.Join("/proc", de.Name(), "cmdline")); strings.HasPrefix(string(cmd), bin+"\x00") {
			n++
		}
	}
	return n, nil
}

// TestIdleAgentsEndWhileWatched: three chats a client watches, each with
// an ACP agent process, idle past agentIdleSeconds: no agent process is
// left, the chats stay subscribed, and the next turn of each resumes its
// conversation (the fake replays the turn it kept, session/load). (Issue
// 34 §5.)
func TestIdleAgentsEndWhileWatched(t *testing.T) {
	e := newACPFakeEnvWith(t, nil, func(c *daemon.Config) { c.AgentIdleSeconds = 1 }, "-state", t.TempDir())
	bin := e.bin
	a := e.client("watcher")
	var chats []string
	for i := range 3 {
		sess := fmt.Sprintf("ahp-session:/acc0de00-0000-4000-8000-00000000034%d", i)
		a.MustCall("createSession", map[string]any{"channel": sess, "provider": "fake-acp"})
		def := sessionState(t, a, sess).DefaultChat
		a.Subscribe(def)
		if end := sendTurn(t, a, def, "t1", "hello"); end.Type() != "chat/turnComplete" {
			t.Fatalf("%s t1 ended with %s: %s", def, end.Type(), end.Action)
		}
		chats = append(chats, def)
	}
	if n := childrenRunning(t, bin); n != 3 {
		t.Fatalf("%d agent processes after the first turns, want 3", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for childrenRunning(t, bin) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // polls for the agent-idle timers (1 s)
	}
	if n := childrenRunning(t, bin); n != 0 {
		t.Fatalf("%d agent processes left 10 s after the chats went idle (agentIdleSeconds 1)", n)
	}
	for _, def := range chats {
		if end := sendTurn(t, a, def, "t2", "[history]"); end.Type() != "chat/turnComplete" {
			t.Fatalf("%s t2 ended with %s: %s", def, end.Type(), end.Action)
		}
		if got := clMarkdown(chatOf(t, a, def).Turns[1]); got != "loaded 1 turns" {
			t.Errorf("%s: the turn after the agent ended answered %q, want the conversation resumed (loaded 1 turns)", def, got)
		}
	}
}
