package agentslots

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// A case is a script of operations on named members of a pool of max
// slots, and the effects it must decide, in order ("grant c", "close a"),
// then who holds and who waits. After every step the pool never has more
// than max holders.
type slotsCase struct {
	name    string
	max     int
	steps   []string // "acquire a", "release a", "idle a", "busy a", "decline a"
	effects []string
	// granted lists the acquires answered at once, in order.
	granted []string
	holding []string
	waiting []string
	// closing lists the members a close request is out for at the end.
	closing []string
}

func TestSlotRules(t *testing.T) {
	cases := []slotsCase{
		{name: "a free slot is granted at once",
			max: 2, steps: []string{"acquire a", "acquire b"},
			granted: []string{"a", "b"}, holding: []string{"a", "b"}},
		{name: "past max a request waits, and no idle agent means no close request",
			max: 2, steps: []string{"acquire a", "acquire b", "acquire c"},
			granted: []string{"a", "b"}, holding: []string{"a", "b"}, waiting: []string{"c"}},
		{name: "acquire of a member that holds is granted again without a second slot",
			max: 1, steps: []string{"acquire a", "acquire a"},
			granted: []string{"a", "a"}, holding: []string{"a"}},
		{name: "a waiting member asking again keeps its place",
			max: 1, steps: []string{"acquire a", "acquire b", "acquire c", "acquire b", "release a"},
			granted: []string{"a"}, effects: []string{"grant b"}, holding: []string{"b"}, waiting: []string{"c"}},
		{name: "the least recently used idle agent is asked to close",
			max: 2, steps: []string{"acquire a", "acquire b", "idle b", "idle a", "acquire c"},
			granted: []string{"a", "b"}, effects: []string{"close b"}, holding: []string{"a", "b"}, waiting: []string{"c"}, closing: []string{"b"}},
		{name: "its release grants the waiting member",
			max: 2, steps: []string{"acquire a", "acquire b", "idle b", "idle a", "acquire c", "release b"},
			effects: []string{"close b", "grant c"}, holding: []string{"a", "c"}},
		{name: "an agent busy again is not asked; the next idle one is",
			max: 2, steps: []string{"acquire a", "acquire b", "idle a", "idle b", "busy a", "acquire c"},
			effects: []string{"close b"}, holding: []string{"a", "b"}, waiting: []string{"c"}, closing: []string{"b"}},
		{name: "a declined close asks the next least recently used idle agent",
			max: 3, steps: []string{"acquire a", "acquire b", "acquire x", "idle a", "idle b", "acquire c", "decline a"},
			effects: []string{"close a", "close b"}, holding: []string{"a", "b", "x"}, waiting: []string{"c"}, closing: []string{"b"}},
		{name: "an agent turning idle while a request waits is asked at once",
			max: 1, steps: []string{"acquire a", "acquire b", "idle a"},
			effects: []string{"close a"}, holding: []string{"a"}, waiting: []string{"b"}, closing: []string{"a"}},
		{name: "one close request per waiting member, not more",
			max: 3, steps: []string{"acquire a", "acquire b", "acquire x", "idle a", "idle b", "idle x", "acquire c"},
			effects: []string{"close a"}, holding: []string{"a", "b", "x"}, waiting: []string{"c"}, closing: []string{"a"}},
		{name: "two waiting members ask two idle agents",
			max: 2, steps: []string{"acquire a", "acquire b", "idle b", "idle a", "acquire c", "acquire d"},
			effects: []string{"close b", "close a"}, holding: []string{"a", "b"}, waiting: []string{"c", "d"}, closing: []string{"a", "b"}},
		{name: "slots go to the queue in FIFO order",
			max: 1, steps: []string{"acquire a", "acquire b", "acquire c", "acquire d", "release a", "release b"},
			effects: []string{"grant b", "grant c"}, holding: []string{"c"}, waiting: []string{"d"}},
		{name: "a cancelled waiting member leaves the queue and is never granted",
			max: 1, steps: []string{"acquire a", "acquire b", "acquire c", "release b", "release a"},
			effects: []string{"grant c"}, holding: []string{"c"}},
		{name: "a release said twice frees one slot",
			max: 1, steps: []string{"acquire a", "acquire b", "acquire c", "release a", "release a"},
			effects: []string{"grant b"}, holding: []string{"b"}, waiting: []string{"c"}},
		{name: "a member asked to close that releases for another reason still frees its slot once",
			max: 1, steps: []string{"acquire a", "idle a", "acquire b", "release a", "idle b", "acquire c"},
			effects: []string{"close a", "grant b", "close b"}, holding: []string{"b"}, waiting: []string{"c"}, closing: []string{"b"}},
		{name: "a close request is taken back when the request it was for leaves the queue",
			max: 1, steps: []string{"acquire a", "idle a", "acquire b", "release b"},
			effects: []string{"close a"}, holding: []string{"a"}},
		{name: "of two close requests, one is taken back when one of two waiting leaves",
			max: 2, steps: []string{"acquire a", "acquire b", "idle a", "idle b", "acquire c", "acquire d", "release d"},
			effects: []string{"close a", "close b"}, holding: []string{"a", "b"}, waiting: []string{"c"}, closing: []string{"x"}},
		{name: "an agent idle again after its close request was taken back can be asked again",
			max: 1, steps: []string{"acquire a", "idle a", "acquire b", "release b", "acquire c"},
			effects: []string{"close a", "close a"}, holding: []string{"a"}, waiting: []string{"c"}, closing: []string{"a"}},
		{name: "no limit: everyone holds",
			max: 0, steps: []string{"acquire a", "acquire b", "acquire c"},
			granted: []string{"a", "b", "c"}, holding: []string{"a", "b", "c"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &slots{max: tc.max}
			members := map[string]*Member{}
			member := func(name string) *Member {
				if members[name] == nil {
					members[name] = &Member{name: name}
				}
				return members[name]
			}
			var effects, granted []string
			for _, step := range tc.steps {
				op, name, _ := strings.Cut(step, " ")
				m := member(name)
				var effs []effect
				switch op {
				case "acquire":
					var ok bool
					ok, effs = s.acquire(m)
					if ok {
						granted = append(granted, name)
					}
				case "release":
					effs = s.release(m)
				case "idle":
					effs = s.setIdle(m, true)
				case "busy":
					effs = s.setIdle(m, false)
				case "decline":
					effs = s.declined(m)
				default:
					t.Fatalf("unknown step %q", step)
				}
				for _, e := range effs {
					effects = append(effects, e.kind.String()+" "+e.m.name)
				}
				if tc.max > 0 && len(s.holders) > tc.max {
					t.Fatalf("after %q: %d hold a slot, max %d", step, len(s.holders), tc.max)
				}
			}
			if tc.granted != nil && !slices.Equal(granted, tc.granted) {
				t.Errorf("granted at once %v, want %v", granted, tc.granted)
			}
			if !slices.Equal(effects, tc.effects) {
				t.Errorf("effects %v, want %v", effects, tc.effects)
			}
			var holders, waiting, closing []string
			for name, m := range members {
				if m.state == holding {
					holders = append(holders, name)
				}
				if m.closing {
					closing = append(closing, name)
				}
			}
			slices.Sort(holders)
			slices.Sort(closing)
			if len(closing) != s.closing {
				t.Errorf("%d members are closing, the count says %d", len(closing), s.closing)
			}
			// Which of several is taken back is not a rule: "x" stands
			// for any one.
			if len(tc.closing) == 1 && tc.closing[0] == "x" && len(closing) == 1 {
				closing = tc.closing
			}
			if !slices.Equal(closing, tc.closing) {
				t.Errorf("closing %v, want %v", closing, tc.closing)
			}
			for _, m := range s.queue {
				waiting = append(waiting, m.name)
			}
			if !slices.Equal(holders, tc.holding) {
				t.Errorf("holding %v, want %v", holders, tc.holding)
			}
			if !slices.Equal(waiting, tc.waiting) {
				t.Errorf("waiting %v, want %v", waiting, tc.waiting)
			}
		})
	}
}

// TestPoolPostsOutsideItsLock: a grant and a close request reach the
// member's actor through its post func, called after the pool's lock is
// released (the func takes the lock again, which would deadlock inside).
func TestPoolPostsOutsideItsLock(t *testing.T) {
	p := New(1, nil)
	var got []string
	post := func(name string) func(func()) error {
		return func(fn func()) error {
			p.Stats() // takes p.mu: would hang if posted under it
			got = append(got, name)
			fn()
			return nil
		}
	}
	var a, b *Member
	a = p.Join("a", post("a"), func() {}, func() { a.Release() })
	b = p.Join("b", post("b"), func() {}, func() {})
	if !a.Acquire() {
		t.Fatal("a was not granted the free slot")
	}
	a.Idle(true)
	if b.Acquire() {
		t.Fatal("b was granted a slot a holds")
	}
	if !b.Holding() || a.Holding() {
		t.Fatalf("after a closed: a holds %v, b holds %v; want b", a.Holding(), b.Holding())
	}
	if fmt.Sprint(got) != "[a b]" {
		t.Fatalf("posted to %v, want [a b] (a's close request, then b's grant)", got)
	}
}

// TestPoolReleasesAGrantNobodyTakes: a grant whose chat has ended (its
// post fails) goes to the next in the queue; a close request it cannot
// deliver asks the next idle agent.
func TestPoolReleasesAGrantNobodyTakes(t *testing.T) {
	p := New(1, nil)
	gone := func(func()) error { return errors.New("chat closed") }
	var granted []string
	ok := func(name string) func(func()) error {
		return func(fn func()) error { granted = append(granted, name); fn(); return nil }
	}
	a := p.Join("a", ok("a"), func() {}, func() {})
	b := p.Join("b", gone, func() {}, func() {})
	c := p.Join("c", ok("c"), func() {}, func() {})
	a.Acquire()
	b.Acquire()
	c.Acquire()
	a.Release()
	if b.Holding() || !c.Holding() {
		t.Fatalf("b holds %v, c holds %v: the slot b could not take should be c's", b.Holding(), c.Holding())
	}
	if h, w := p.Stats(); h != 1 || w != 0 {
		t.Fatalf("%d hold, %d wait; want 1, 0", h, w)
	}

	// c is idle, but its close request cannot be delivered; x waits on.
	p2 := New(1, nil)
	d := p2.Join("d", gone, func() {}, func() {})
	x := p2.Join("x", ok("x"), func() {}, func() {})
	d.Acquire()
	d.Idle(true)
	if x.Acquire() || !x.Waiting() {
		t.Fatal("x should wait for the slot d holds")
	}
	if !d.Holding() {
		t.Fatal("d lost its slot to a close request it never got")
	}
}

// TestNilMemberAlwaysHolds: a chat without a pool (tests, a host built
// without one) is never held back.
func TestNilMemberAlwaysHolds(t *testing.T) {
	var p *Pool
	m := p.Join("a", nil, nil, nil)
	if !m.Acquire() || !m.Holding() || m.Waiting() {
		t.Fatal("a nil member must always hold")
	}
	m.Idle(true)
	m.Declined()
	m.Release()
}

// TestPoolUnderConcurrentChats: twelve actors, each with a mailbox of its
// own, use a pool of three from their own goroutines: each turn asks a
// slot, waits for its grant when none is free, works, goes idle, and
// closes its agent when the pool asks. Every turn runs, never more than
// three hold a slot, and at the end nobody waits.
func TestPoolUnderConcurrentChats(t *testing.T) {
	const chats, turns, slotsMax = 12, 20, 3
	p := New(slotsMax, nil)
	var running atomic.Int32
	var wg sync.WaitGroup
	for i := range chats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inbox := make(chan func(), 64)
			post := func(fn func()) error {
				select {
				case inbox <- fn:
					return nil
				default:
					return errors.New("inbox full")
				}
			}
			var m *Member
			open, granted := false, false
			m = p.Join(fmt.Sprintf("chat%d", i), post,
				func() { granted = true },
				func() {
					if !m.CloseWanted() {
						return
					}
					if open {
						open = false
						running.Add(-1)
						m.Release()
					}
				})
			for range turns {
				if !open {
					granted = m.Acquire()
					for !granted {
						(<-inbox)()
						if !granted && !m.Waiting() && !m.Holding() {
							granted = m.Acquire() // a grant the pool could not post
						}
					}
					open = true
					if n := running.Add(1); n > slotsMax {
						t.Errorf("%d agents open at once, max %d", n, slotsMax)
					}
				}
				m.Idle(false)
				for len(inbox) > 0 {
					(<-inbox)()
				}
				m.Idle(true)
			}
			if open {
				open = false
				running.Add(-1)
			}
			m.Release()
			for len(inbox) > 0 {
				(<-inbox)()
			}
		}()
	}
	wg.Wait()
	if h, w := p.Stats(); h != 0 || w != 0 {
		t.Fatalf("after every chat left: %d hold, %d wait", h, w)
	}
}
