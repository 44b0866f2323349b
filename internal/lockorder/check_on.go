//go:build lockcheck

package lockorder

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
)

const enabled = true

// registry is every goroutine's held ranks, by goroutine id.
var registry = struct {
	sync.Mutex
	byGoroutine map[uint64]held
}{byGoroutine: make(map[uint64]held)}

func acquire(r Rank) {
	g := goid()
	registry.Lock()
	h := registry.byGoroutine[g]
	err := h.check(r)
	if err == nil {
		registry.byGoroutine[g] = append(h, r)
	}
	registry.Unlock()
	if err != nil {
		panic(err)
	}
}

func release(r Rank) {
	g := goid()
	registry.Lock()
	defer registry.Unlock()
	h := registry.byGoroutine[g].without(r)
	if len(h) == 0 {
		delete(registry.byGoroutine, g)
		return
	}
	registry.byGoroutine[g] = h
}

// goid is the calling goroutine's id, read from its stack header
// ("goroutine 42 [running]:"); only this debug build pays for it.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}
