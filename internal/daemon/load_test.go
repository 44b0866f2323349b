package daemon_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// TestManyClientsManyChats: many chats driven at once, each watched by
// several clients; every turn ends once, every watcher sees its chats'
// envelopes in increasing serverSeq, and every watcher's fresh snapshot
// agrees. A load test: it runs in make check.
func TestManyClientsManyChats(t *testing.T) {
	t.Parallel()
	testutil.RequireCheck(t, "load test")
	const sessions, chatsPer, watchers, turns = 6, 2, 8, 8
	e := newEnv(t)
	owner := e.client("owner")
	var chats []string
	for s := range sessions {
		sess := fmt.Sprintf("ahp-session:/10ad10ad-0000-4000-8000-%012d", s)
		_, def := e.createSession(owner, sess)
		chats = append(chats, def)
		for c := 1; c < chatsPer; c++ {
			ch := fmt.Sprintf("ahp-chat:/10ad10ad-%04d-4000-8000-%012d", c, s)
			owner.MustCall("createChat", map[string]any{"channel": sess, "chat": ch})
			chats = append(chats, ch)
		}
	}
	var ws []*ahptest.Client
	for w := range watchers {
		c := e.client(fmt.Sprintf("w%d", w))
		for _, ch := range chats {
			c.Subscribe(ch)
		}
		ws = append(ws, c)
	}
	var wg sync.WaitGroup
	for i, ch := range chats {
		driver := ws[i%len(ws)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range turns {
				id := fmt.Sprintf("%d-%d", i, n)
				text := "load " + id
				if n%3 == 0 {
					text = "[tool] " + text
				}
				if end := sendTurn(t, driver, ch, id, text); end.Type() != "chat/turnComplete" {
					t.Errorf("turn %s ended %s", id, end.Type())
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, c := range ws {
		for i, ch := range chats {
			awaitEnd(t, c, ch, fmt.Sprintf("%d-%d", i, turns-1))
		}
		all := c.Envelopes()
		for i := 1; i < len(all); i++ {
			if all[i].ServerSeq <= all[i-1].ServerSeq {
				t.Fatalf("client %s: serverSeq %d after %d", c.ID, all[i].ServerSeq, all[i-1].ServerSeq)
			}
		}
	}
	for _, ch := range chats {
		var want string
		for _, c := range ws {
			st := chatOf(t, c, ch)
			if len(st.Turns) != turns || st.ActiveTurn != nil {
				t.Fatalf("%s at %s: %d turns, active %v", ch, c.ID, len(st.Turns), st.ActiveTurn != nil)
			}
			for _, tr := range st.Turns {
				if tr.State != ahp.TurnComplete {
					t.Fatalf("%s turn %s is %s", ch, tr.ID, tr.State)
				}
			}
			got := canon(t, st)
			if want == "" {
				want = got
			} else if got != want {
				t.Fatalf("%s: clients disagree", ch)
			}
		}
	}
}
