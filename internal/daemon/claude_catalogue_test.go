package daemon_test

import (
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/agent/claude"
	"github.com/ahpd/ahpd/internal/ahp"
)

// TestClaudeCatalogue: a host that never registered a session (another
// data dir, the same Claude config) is asked by a VS Code window for the
// derived default chat of claude:/<id>; the CLI's transcript is in the
// catalogue, so the session is registered, its turns read back, and the
// next turn resumes the conversation (C-FIRST-08, 09, C-COMP-07).
func TestClaudeCatalogue(t *testing.T) {
	t.Parallel()
	ce := newClaudeEnv(t, claude.StopEndsTurn)
	a := ce.client("a")
	const id = "cafec1a0-0000-4000-8000-000000000001"
	sess := "claude:/" + id
	def := ahp.DefaultChatURI(sess)
	a.MustCall("createSession", map[string]any{"channel": sess, "provider": claude.Provider})
	a.Subscribe(def)
	for i, text := range []string{"first words", "second words"} {
		if end := sendTurn(t, a, def, []string{"t1", "t2"}[i], text); end.Type() != "chat/turnComplete" {
			t.Fatalf("turn %d ended %s", i, end.Type())
		}
	}
	ce.stop()
	ce.cfg.DataDir = t.TempDir() // the store is not there: only the CLI's transcript
	ce.start()

	b := ce.client("b")
	cs := chatOf(t, b, def)
	if got := strings.Join(texts(cs.Turns), "|"); got != "first words|second words" {
		t.Fatalf("read back from the catalogue: %q", got)
	}
	if st := sessionState(t, b, sess); st.DefaultChat != def || st.Provider != claude.Provider {
		t.Fatalf("catalogue session: %+v", st)
	}
	b.Subscribe(def)
	if end := sendTurn(t, b, def, "t3", "third words"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t3 ended %s", end.Type())
	}
	if !ce.requestSays(id, "first words") {
		t.Fatal("the resumed conversation did not carry its history to the model")
	}
}
