package reduce

import (
	"encoding/json"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// TestTerminalReducer: the terminal actions a VS Code window relies on,
// table by table. A session's claim keeps every field it names (its chat,
// turn and tool call); an exit is said both as 1.0's exitCode and as the
// later protocol's lifecycle, and the two agree; a clear drops the output
// and keeps the size and the claim.
func TestTerminalReducer(t *testing.T) {
	code := func(i int) *int { return &i }
	size := func(i int) *int { return &i }
	running := &ahp.TerminalLifecycle{Status: ahp.TerminalStatusRunning}
	client := ahp.TerminalClaim{Kind: "client", ClientID: "c1"}
	sessionClaim := ahp.TerminalClaim{Kind: "session", Session: "script:/s1", Chat: "ahp-chat:/c1", TurnID: "turn-1", ToolCallID: "tool-1"}
	cases := []struct {
		name    string
		initial ahp.TerminalState
		actions []ahp.Action
		want    string
	}{
		{
			name:    "a session claim keeps its chat, turn and tool call",
			initial: ahp.TerminalState{Title: "sh", Claim: client},
			actions: []ahp.Action{ahp.TerminalClaimed{Claim: sessionClaim}},
			want:    `{"title":"sh","content":[],"claim":{"kind":"session","session":"script:/s1","chat":"ahp-chat:/c1","turnId":"turn-1","toolCallId":"tool-1"}}`,
		},
		{
			name:    "a claim goes back to the client whole",
			initial: ahp.TerminalState{Title: "sh", Claim: sessionClaim},
			actions: []ahp.Action{ahp.TerminalClaimed{Claim: client}},
			want:    `{"title":"sh","content":[],"claim":{"kind":"client","clientId":"c1"}}`,
		},
		{
			name:    "an exit sets exitCode and the exited lifecycle with the same code",
			initial: ahp.TerminalState{Title: "sh", Claim: client, Lifecycle: running},
			actions: []ahp.Action{ahp.TerminalExited{ExitCode: code(3)}},
			want:    `{"title":"sh","content":[],"exitCode":3,"lifecycle":{"status":"exited","exitCode":3},"claim":{"kind":"client","clientId":"c1"}}`,
		},
		{
			name:    "an exit the runtime gave no code for is exited without one",
			initial: ahp.TerminalState{Title: "sh", Claim: client, Lifecycle: running},
			actions: []ahp.Action{ahp.TerminalExited{}},
			want:    `{"title":"sh","content":[],"lifecycle":{"status":"exited"},"claim":{"kind":"client","clientId":"c1"}}`,
		},
		{
			name:    "a clear drops the output and keeps the size, claim and lifecycle",
			initial: ahp.TerminalState{Title: "sh", Claim: client, Lifecycle: running},
			actions: []ahp.Action{ahp.TerminalResized{Cols: 111, Rows: 37}, ahp.TerminalData{Data: "CLEAR_MARKER\r\n"}, ahp.TerminalCleared{}, ahp.TerminalData{Data: "$ "}},
			want:    `{"title":"sh","cols":111,"rows":37,"content":[{"type":"unclassified","value":"$ "}],"lifecycle":{"status":"running"},"claim":{"kind":"client","clientId":"c1"}}`,
		},
		{
			name:    "successive resizes keep the latest",
			initial: ahp.TerminalState{Title: "sh", Cols: size(90), Rows: size(30), Claim: client},
			actions: []ahp.Action{ahp.TerminalResized{Cols: 100, Rows: 35}, ahp.TerminalResized{Cols: 140, Rows: 50}},
			want:    `{"title":"sh","cols":140,"rows":50,"content":[],"claim":{"kind":"client","clientId":"c1"}}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := c.initial
			for _, a := range c.actions {
				Terminal(&st, a)
			}
			got, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("state\n got %s\nwant %s", got, c.want)
			}
		})
	}
}
