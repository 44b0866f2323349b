package daemon_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/store"
	"github.com/ahpd/ahpd/internal/testutil"
)

// TestTurnsSeenEndedAreStoredUnderLoad: under many chats ending turns at
// once, every turn a client saw end is already stored as ended when it is
// seen, read without flushing the write queue (issue 18: under load the
// write-behind queue held 35,401 turns "running" that clients had seen end;
// CHATS.md "Durability").
func TestTurnsSeenEndedAreStoredUnderLoad(t *testing.T) {
	t.Parallel()
	testutil.RequireCheck(t, "load test")
	e := newEnv(t)
	const chats, turns = 60, 5
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []string
	for i := range chats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := e.client(fmt.Sprintf("load-%d", i))
			_, def := e.createSession(c, fmt.Sprintf("ahp-session:/10ad5707-0000-4000-8000-%012d", i))
			c.Subscribe(def)
			for j := range turns {
				id := fmt.Sprintf("t%d-%d", i, j)
				end := sendTurn(t, c, def, id, "[slow] load")
				seen := time.Now()
				rec, ok, err := e.d.Store().Turn(context.Background(), def, id)
				mu.Lock()
				switch {
				case err != nil || !ok:
					bad = append(bad, fmt.Sprintf("%s: not stored (%v)", id, err))
				case rec.State == store.TurnRunning:
					bad = append(bad, fmt.Sprintf("%s: seen %s, stored running", id, end.Type()))
				case time.Since(seen) > time.Second:
					bad = append(bad, fmt.Sprintf("%s: the read took %s", id, time.Since(seen)))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d of %d turns: %v", len(bad), chats*turns, bad[:min(len(bad), 10)])
	}
}
