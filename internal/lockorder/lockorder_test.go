package lockorder

import (
	"strings"
	"sync"
	"testing"
)

// The pure rule: a goroutine takes mutexes in increasing rank.
func TestHeldCheck(t *testing.T) {
	tests := []struct {
		name    string
		held    held
		take    Rank
		wantErr string
	}{
		{name: "nothing held", take: Bus},
		{name: "a lower rank held", held: held{HostRoot}, take: Bus},
		{name: "the whole chain in order", held: held{HostRoot, Bus, HostClient}, take: Outbox},
		{name: "a higher rank held", held: held{Bus}, take: HostRoot, wantErr: "taking HostRoot while holding Bus"},
		{name: "the same rank held", held: held{HostSessions}, take: HostSessions, wantErr: "taking HostSessions while holding HostSessions"},
		{name: "out of order deep in the chain", held: held{HostRoot, Outbox}, take: HostClient, wantErr: "while holding Outbox"},
		{name: "no rank", take: 0, wantErr: "of no rank"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.held.check(tt.take)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("check(%v) with %v held: %v", tt.take, tt.held, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("check(%v) with %v held: %v, want %q", tt.take, tt.held, err, tt.wantErr)
			}
		})
	}
}

func TestHeldWithout(t *testing.T) {
	h := held{HostRoot, Bus, HostClient}
	if got := h.without(Bus); len(got) != 2 || got[0] != HostRoot || got[1] != HostClient {
		t.Fatalf("without(Bus) = %v", got)
	}
	if got := (held{HostRoot}).without(Outbox); len(got) != 1 {
		t.Fatalf("without a rank not held changed it: %v", got)
	}
}

// Every rank has a name, and the names are distinct.
func TestRankNames(t *testing.T) {
	seen := map[string]bool{}
	for r := Rank(1); r < lastRank; r++ {
		n := r.String()
		if strings.HasPrefix(n, "Rank(") || seen[n] {
			t.Fatalf("rank %d is named %q", int(r), n)
		}
		seen[n] = true
	}
}

// Under lockcheck an inversion panics at the Lock that makes it, and the
// right order does not; each goroutine's holdings are its own.
func TestMutexChecksOrder(t *testing.T) {
	if !enabled {
		t.Skip("the check is built with -tags lockcheck (make test)")
	}
	root, bus := &Mutex{Rank: HostRoot}, &Mutex{Rank: Bus}
	root.Lock()
	bus.Lock()
	bus.Unlock()
	root.Unlock()

	var wg sync.WaitGroup
	wg.Go(func() { // another goroutine holding Bus does not bind this one
		bus.Lock()
		bus.Unlock()
	})
	wg.Wait()

	bus.Lock()
	defer bus.Unlock()
	defer func() {
		p := recover()
		err, _ := p.(error)
		if err == nil || !strings.Contains(err.Error(), "taking HostRoot while holding Bus") {
			t.Fatalf("an inversion: recovered %v", p)
		}
	}()
	root.Lock()
	root.Unlock()
	t.Fatal("taking HostRoot under Bus did not panic")
}
