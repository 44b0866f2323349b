package acp

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/ahpd/ahpd/internal/agent"
)

// TestAgentRequestIDZero: a request the agent sends with id 0 (agents
// count their ids from 0) is answered under id 0, and a read outside the
// chat's directories is answered with an error.
func TestAgentRequestIDZero(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{Name: "wire", Command: "sh"})
	if err != nil {
		t.Fatal(err)
	}
	c := newConversation(a, "sh", agent.OpenParams{ConversationID: "w", Directories: []string{dir}})
	defer c.Close()
	pc := &procClient{c: c, ready: make(chan struct{})}
	close(pc.ready)
	toClient, agentOut := io.Pipe()
	clientOut, fromClient := io.Pipe()
	conn := acpsdk.NewClientSideConnection(pc, fromClient, toClient)
	_ = conn
	replies := bufio.NewScanner(clientOut)
	send := func(id int, path string) map[string]any {
		t.Helper()
		line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "fs/read_text_file",
			"params": map[string]any{"sessionId": "s", "path": path}})
		if _, err := agentOut.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
		got := make(chan map[string]any, 1)
		go func() {
			var m map[string]any
			if replies.Scan() {
				_ = json.Unmarshal(replies.Bytes(), &m)
			}
			got <- m
		}()
		select {
		case m := <-got:
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("no reply")
		}
		return nil
	}
	m := send(0, filepath.Join(dir, "f.txt"))
	if id, ok := m["id"].(float64); !ok || id != 0 {
		t.Fatalf("reply %v: want id 0", m)
	}
	if r, _ := m["result"].(map[string]any); r["content"] != "inside" {
		t.Fatalf("reply %v: want the file's content", m)
	}
	m = send(1, "/etc/hostname")
	if m["error"] == nil || !strings.Contains(jsonText(m), "outside") {
		t.Fatalf("read outside answered %v", m)
	}
	_ = agentOut.Close()
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
