package daemon_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/agent/pi"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

// TestPiCatalogue: a session pi wrote on its own (`pi -p`, outside ahpd, in
// the agent dir ahpd serves) is in the catalogue: a client naming pi:/<its
// id> gets the session registered and listed by listSessions, its turn read
// back from pi's session file, and the next turn resumes it: the model sees
// what was said outside ahpd (C-FIRST-08, 09).
func TestPiCatalogue(t *testing.T) {
	t.Parallel()
	pe := newPiEnv(t, piAnthropic)
	bin := fakemodel.Agent(t, "pi")
	// The user's own pi setup: the same providers in the agent dir's
	// models.json (ahpd writes it only when it starts a pi).
	var cfg struct {
		Providers json.RawMessage `json:"providers"`
	}
	if err := json.Unmarshal(pe.cfg.Agents[pi.Provider], &cfg); err != nil {
		t.Fatal(err)
	}
	models, _ := json.Marshal(map[string]json.RawMessage{"providers": cfg.Providers})
	if err := os.WriteFile(filepath.Join(pe.agentDir, "models.json"), models, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", "--model", piAnthropic, "said outside ahpd")
	cmd.Dir = pe.workDir
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "PI_CODING_AGENT_DIR="+pe.agentDir, "PI_OFFLINE=1", "PI_TELEMETRY=0")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "fake reply: said outside ahpd") {
		t.Fatalf("pi -p: %v: %s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(pe.agentDir, "sessions", "*", "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("pi wrote %q", files)
	}
	name := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
	id := name[strings.LastIndexByte(name, '_')+1:]

	sess := "pi:/" + id
	def := ahp.DefaultChatURI(sess)
	a := pe.client("a")
	cs := chatOf(t, a, def)
	if got := texts(cs.Turns); !slices.Equal(got, []string{"said outside ahpd"}) {
		t.Fatalf("read back from the catalogue: %q", got)
	}
	if got := clMarkdown(cs.Turns[0]); got != "fake reply: said outside ahpd" {
		t.Errorf("the turn read back answers %q", got)
	}
	var listed bool
	for _, s := range sessionList(t, a) {
		if string(s.Resource) == sess && s.Provider == "pi" {
			listed = true
		}
	}
	if !listed {
		t.Errorf("listSessions does not list %s", sess)
	}
	a.Subscribe(def)
	if end := sendTurn(t, a, def, "t2", "said inside ahpd"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t2 ended with %s: %s", end.Type(), end.Action)
	}
	want := []string{"user:said outside ahpd", "assistant:fake reply: said outside ahpd", "user:said inside ahpd"}
	if got := pe.history(); !slices.Equal(got, want) {
		t.Errorf("the resumed pi sent %q, want %q", got, want)
	}
}
