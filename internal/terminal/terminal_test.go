package terminal

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/creack/pty"
)

// TestValidPrefix: an incomplete UTF-8 sequence at the end of a read waits
// for the next one; anything else goes out whole.
func TestValidPrefix(t *testing.T) {
	e := []byte("é") // 0xC3 0xA9
	euro := []byte("€")
	for _, tc := range []struct {
		in   []byte
		want int
	}{
		{[]byte("abc"), 3},
		{append([]byte("ab"), e[0]), 2},
		{append([]byte("ab"), e...), 4},
		{append([]byte("a"), euro[:2]...), 1},
		{append([]byte("a"), euro...), 4},
		{[]byte{0xff, 0xfe}, 2}, // invalid bytes are not held back
		{nil, 0},
	} {
		if got := validPrefix(tc.in); got != tc.want {
			t.Errorf("validPrefix(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestTrimFront: the scrollback drops whole old parts first, then the front
// of the oldest kept one, at a rune boundary; the newest part is never
// dropped whole.
func TestTrimFront(t *testing.T) {
	un := func(v string) ahp.TerminalContentPart {
		return ahp.TerminalContentPart{Type: ahp.TerminalPartUnclassified, Value: v}
	}
	cmd := func(out string) ahp.TerminalContentPart {
		return ahp.TerminalContentPart{Type: ahp.TerminalPartCommand, CommandID: "c", Output: out}
	}
	for _, tc := range []struct {
		name    string
		in      []ahp.TerminalContentPart
		n       int
		want    []string
		dropped int
	}{
		{"front of one part", []ahp.TerminalContentPart{un("abcdef")}, 2, []string{"cdef"}, 2},
		{"a whole old part", []ahp.TerminalContentPart{un("ab"), cmd("cdef")}, 2, []string{"cdef"}, 2},
		{"into the next part", []ahp.TerminalContentPart{un("ab"), cmd("cdef")}, 3, []string{"def"}, 3},
		{"a rune boundary", []ahp.TerminalContentPart{un("aéb")}, 2, []string{"b"}, 3},
		{"never the last part whole", []ahp.TerminalContentPart{un("ab")}, 5, []string{""}, 2},
	} {
		var out []ahp.TerminalContentPart
		dropped := trimFront(tc.in, tc.n, &out)
		var got []string
		for _, p := range out {
			got = append(got, p.Value+p.Output)
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || dropped != tc.dropped {
			t.Errorf("%s: %q dropped %d, want %q dropped %d", tc.name, got, dropped, tc.want, tc.dropped)
		}
		for _, s := range got {
			if !utf8.ValidString(s) {
				t.Errorf("%s: %q is cut inside a rune", tc.name, s)
			}
		}
	}
}

// recorder is a bus subscriber that keeps the action types it is sent,
// and what the registry's root list said of the terminal at each one.
type recorder struct {
	mu    sync.Mutex
	reg   *Registry
	uri   string
	types []string
	// seenAt is the root's entry of uri when each action arrived.
	seenAt []ahp.TerminalInfo
	// root is the last list the registry's change hook read.
	root []ahp.TerminalInfo
}

func (r *recorder) Deliver(_ string, params json.RawMessage) {
	var env struct {
		Action struct {
			Type string `json:"type"`
		} `json:"action"`
	}
	_ = json.Unmarshal(params, &env)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.types = append(r.types, env.Action.Type)
	for _, i := range r.root {
		if i.Resource == r.uri {
			r.seenAt = append(r.seenAt, i)
		}
	}
}

func (r *recorder) Knows(string) bool { return true }
func (r *recorder) ClientID() string  { return "recorder" }

// onChange is the registry's hook: the host reads Infos for the root.
func (r *recorder) onChange() {
	infos := r.reg.Infos()
	r.mu.Lock()
	r.root = infos
	r.mu.Unlock()
}

// TestRootAgreesBeforeTheTerminalSays: a claim, a title and an exit reach
// the root's list before the terminal publishes them, so a client that
// reads the root on terminal/claimed, titleChanged or exited finds it
// agreeing (the suite's "an exited terminal remains discoverable with its
// exit code until disposal" read the root right behind terminal/exited
// and found the terminal still running). The exit is said as exitCode and
// as the exited lifecycle in the terminal and in the root alike.
func TestRootAgreesBeforeTheTerminalSays(t *testing.T) {
	b := bus.NewBus(1024)
	reg := NewRegistry(b, nil)
	defer reg.Close()
	uri := "agenthost-terminal://test/root"
	rec := &recorder{reg: reg, uri: uri}
	reg.OnChange(rec.onChange)
	term, err := reg.Open(Spec{URI: uri, Title: "sh", Claim: ahp.TerminalClaim{Kind: "client", ClientID: "c1"},
		Dir: t.TempDir(), Command: []string{"/bin/sh", "-c", "read line; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := term.Snapshot(rec); err != nil {
		t.Fatal(err)
	}
	claim := ahp.TerminalClaim{Kind: "session", Session: "script:/s1", Chat: "ahp-chat:/c1", TurnID: "turn-1", ToolCallID: "tool-1"}
	for _, a := range []ahp.Action{ahp.TerminalClaimed{Claim: claim}, ahp.TerminalTitleChanged{Title: "renamed"}, ahp.TerminalInput{Data: "go\n"}} {
		if err := term.Dispatch(a, nil); err != nil {
			t.Fatal(err)
		}
	}
	if code, err := term.Wait(context.Background()); err != nil || code != 3 {
		t.Fatalf("exit %d, %v", code, err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var exited *ahp.TerminalInfo
	for i, typ := range rec.types {
		seen := rec.seenAt[i]
		switch typ {
		case ahp.ActionTerminalClaimed:
			if *seen.Claim != claim {
				t.Errorf("on terminal/claimed the root has %+v", *seen.Claim)
			}
		case ahp.ActionTerminalTitleChanged:
			if seen.Title != "renamed" {
				t.Errorf("on terminal/titleChanged the root has title %q", seen.Title)
			}
		case ahp.ActionTerminalExited:
			exited = &seen
		}
	}
	if exited == nil || exited.Lifecycle == nil || exited.Lifecycle.Status != ahp.TerminalStatusExited ||
		exited.Lifecycle.ExitCode == nil || *exited.Lifecycle.ExitCode != 3 || exited.ExitCode == nil || *exited.ExitCode != 3 {
		t.Fatalf("on terminal/exited (actions %v) the root has %+v", rec.types, exited)
	}
	snap, err := term.Snapshot(rec)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := snap.State.(json.RawMessage)
	var st ahp.TerminalState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	if st.Lifecycle == nil || st.Lifecycle.Status != ahp.TerminalStatusExited || *st.Lifecycle.ExitCode != 3 || *st.ExitCode != 3 || st.Claim != claim {
		t.Fatalf("terminal state %s", raw)
	}
}

// TestResizeAndStateAgree: resizes from many goroutines at once leave the
// pty the size the state says.
func TestResizeAndStateAgree(t *testing.T) {
	reg := NewRegistry(bus.NewBus(1024), nil)
	defer reg.Close()
	term, err := reg.Open(Spec{URI: "agenthost-terminal://test/resize", Title: "sh", Claim: ahp.TerminalClaim{Kind: "client", ClientID: "c1"},
		Dir: t.TempDir(), Command: []string{"/bin/sh", "-c", "read line"}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			if err := term.Dispatch(ahp.TerminalResized{Cols: 40 + i, Rows: 10 + i}, nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	ptmx, _ := term.proc()
	ws, err := pty.GetsizeFull(ptmx)
	if err != nil {
		t.Fatal(err)
	}
	term.mu.Lock()
	cols, rows := *term.st.Cols, *term.st.Rows
	term.mu.Unlock()
	if int(ws.Cols) != cols || int(ws.Rows) != rows {
		t.Fatalf("the pty is %dx%d, the state says %dx%d", ws.Cols, ws.Rows, cols, rows)
	}
}

// TestDispatchRefusals: a size that is none (zero, negative, past a pty's
// 16 bits), a claim of neither kind and an action a client does not send a
// terminal are refused, and leave the pty, the state and the root's entry
// as they were.
func TestDispatchRefusals(t *testing.T) {
	reg := NewRegistry(bus.NewBus(1024), nil)
	defer reg.Close()
	claim := ahp.TerminalClaim{Kind: "client", ClientID: "c1"}
	term, err := reg.Open(Spec{URI: "agenthost-terminal://test/refusals", Title: "sh", Claim: claim,
		Dir: t.TempDir(), Cols: 90, Rows: 30, Command: []string{"/bin/sh", "-c", "read line"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []ahp.Action{
		ahp.TerminalResized{Cols: 0, Rows: 30},
		ahp.TerminalResized{Cols: 90, Rows: -1},
		ahp.TerminalResized{Cols: 0x10000, Rows: 30},
		ahp.TerminalResized{Cols: 90, Rows: 1 << 20},
		ahp.TerminalClaimed{Claim: ahp.TerminalClaim{Kind: "anyone"}},
		ahp.TerminalExited{},
		ahp.TerminalData{Data: "forged output"},
	} {
		if err := term.Dispatch(a, nil); err == nil {
			t.Errorf("%s %+v was taken", a.ActionType(), a)
		}
	}
	ptmx, _ := term.proc()
	ws, err := pty.GetsizeFull(ptmx)
	if err != nil {
		t.Fatal(err)
	}
	term.mu.Lock()
	st := term.st
	term.mu.Unlock()
	if ws.Cols != 90 || ws.Rows != 30 || *st.Cols != 90 || *st.Rows != 30 || st.Claim != claim ||
		st.Lifecycle.Status != ahp.TerminalStatusRunning || st.ExitCode != nil || strings.Contains(term.Text(), "forged") {
		t.Fatalf("after the refusals: pty %dx%d, state %+v", ws.Cols, ws.Rows, st)
	}
	infos := reg.Infos()
	if len(infos) != 1 || *infos[0].Claim != claim || infos[0].ExitCode != nil || infos[0].Lifecycle.Status != ahp.TerminalStatusRunning {
		t.Fatalf("after the refusals the root lists %+v", infos)
	}
}
