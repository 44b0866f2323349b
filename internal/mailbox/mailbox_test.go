package mailbox

import (
	"errors"
	"sync"
	"testing"
)

func TestPushPopOrder(t *testing.T) {
	b := New[int](0)
	for i := range 5 {
		if err := b.Push(i); err != nil {
			t.Fatal(err)
		}
	}
	<-b.Wake()
	got := b.Pop(nil)
	for i, v := range got {
		if v != i {
			t.Fatalf("got %v, want 0..4 in order", got)
		}
	}
	if b.Len() != 0 {
		t.Fatalf("Len after Pop = %d", b.Len())
	}
}

func TestPushNeverBlocksWhenFull(t *testing.T) {
	b := New[int](2)
	_ = b.Push(1)
	_ = b.Push(2)
	if err := b.Push(3); !errors.Is(err, ErrFull) {
		t.Fatalf("third push: %v, want ErrFull", err)
	}
	b.Close()
	b.Pop(nil)
	if err := b.Push(4); !errors.Is(err, ErrClosed) {
		t.Fatalf("push after close: %v, want ErrClosed", err)
	}
}

func TestManyProducersOneConsumer(t *testing.T) {
	const producers, each = 8, 500
	b := New[int](producers * each)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := b.Push(p*each + i); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	seen := make(map[int]bool)
	last := make([]int, producers)
	for i := range last {
		last[i] = -1
	}
	go func() { wg.Wait(); close(done) }()
	var buf []int
	for finished := false; !finished; {
		select {
		case <-b.Wake():
		case <-done:
			finished = true
		}
		buf = b.Pop(buf)
		for _, v := range buf {
			p := v / each
			if v <= last[p] {
				t.Fatalf("producer %d: %d after %d", p, v, last[p])
			}
			last[p] = v
			seen[v] = true
		}
	}
	buf = b.Pop(buf)
	for _, v := range buf {
		seen[v] = true
	}
	if len(seen) != producers*each {
		t.Fatalf("saw %d items, want %d", len(seen), producers*each)
	}
}

func TestCloseIfEmpty(t *testing.T) {
	b := New[int](0)
	_ = b.Push(1)
	if b.CloseIfEmpty() {
		t.Fatal("closed with an item queued")
	}
	b.Pop(nil)
	if !b.CloseIfEmpty() {
		t.Fatal("did not close when empty")
	}
	if err := b.Push(2); !errors.Is(err, ErrClosed) {
		t.Fatalf("push after CloseIfEmpty: %v", err)
	}
}
