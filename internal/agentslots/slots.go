package agentslots

import "fmt"

// state is where a member stands in the pool.
type state int

const (
	// out: the member holds no slot and waits for none.
	out state = iota
	// waiting: the member is in the queue for a slot.
	waiting
	// holding: the member holds a slot (its agent conversation runs, or is
	// about to open on a grant).
	holding
)

func (s state) String() string {
	switch s {
	case out:
		return "out"
	case waiting:
		return "waiting"
	case holding:
		return "holding"
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// effectKind is what the pool asks of a member's actor.
type effectKind int

const (
	// grant: a queued request was granted; the member now holds a slot.
	grant effectKind = iota
	// closeIdle: the member's idle agent is the least recently used one
	// and a turn waits for its slot; close it if it is still idle.
	closeIdle
)

func (k effectKind) String() string {
	if k == grant {
		return "grant"
	}
	return "close"
}

// effect is one message for a member's actor, delivered after the pool's
// lock is released.
type effect struct {
	kind effectKind
	m    *Member
}

// slots is the pool's bookkeeping, pure: no lock, no I/O, no clock. Every
// operation returns the effects it decided, which the Pool delivers.
//
// The invariants, after every operation:
//   - at most max members hold a slot (max <= 0: no limit);
//   - a member waits only while every slot is held, in FIFO order;
//   - there are as many close requests out as members waiting, as long
//     as idle members are left to ask (asked: closing), and never more.
type slots struct {
	max int
	// holders are the members holding a slot.
	holders map[*Member]struct{}
	queue   []*Member
	closing int
	// clock orders the members' last use (Member.used): the idle member
	// with the smallest is the least recently used.
	clock uint64
}

// acquire asks a slot for m: granted at once when one is free (or m holds
// one), else m joins the queue and an idle member may be asked to close.
func (s *slots) acquire(m *Member) (bool, []effect) {
	switch m.state {
	case holding:
		return true, nil
	case waiting:
		return false, nil
	}
	if s.max <= 0 || len(s.holders) < s.max {
		s.hold(m)
		return true, nil
	}
	m.state = waiting
	s.queue = append(s.queue, m)
	return false, s.settle(nil)
}

// hold gives m a slot; it is busy until it says it is idle.
func (s *slots) hold(m *Member) {
	if s.holders == nil {
		s.holders = make(map[*Member]struct{})
	}
	m.state = holding
	m.idle = false
	s.holders[m] = struct{}{}
	s.clock++
	m.used = s.clock
}

// release takes m out of the pool: its slot is given to the head of the
// queue, or it leaves the queue. Releasing a member that is out does
// nothing, so a release is counted once however often it is said.
func (s *slots) release(m *Member) []effect {
	switch m.state {
	case holding:
		delete(s.holders, m)
	case waiting:
		for i, q := range s.queue {
			if q == m {
				s.queue = append(s.queue[:i], s.queue[i+1:]...)
				break
			}
		}
	}
	if m.closing {
		m.closing = false
		s.closing--
	}
	m.state, m.idle = out, false
	return s.settle(nil)
}

// setIdle says whether m's agent could be closed now without losing
// anything. A member turning idle was used last now.
func (s *slots) setIdle(m *Member, idle bool) []effect {
	if m.state != holding || m.idle == idle {
		return nil
	}
	m.idle = idle
	if idle {
		s.clock++
		m.used = s.clock
		return s.settle(nil)
	}
	return nil
}

// declined: m was asked to close and did not (it had work by then, or its
// actor could not be reached). It counts as busy until it says otherwise,
// and another idle member is asked in its place.
func (s *slots) declined(m *Member) []effect {
	if m.closing {
		m.closing = false
		s.closing--
	}
	m.idle = false
	return s.settle(nil)
}

// settle grants free slots to the queue in order, then asks the least
// recently used idle members to close, one for each waiting member no
// close request is out for yet.
func (s *slots) settle(effs []effect) []effect {
	for len(s.queue) > 0 && (s.max <= 0 || len(s.holders) < s.max) {
		m := s.queue[0]
		s.queue = s.queue[1:]
		s.hold(m)
		effs = append(effs, effect{grant, m})
	}
	if len(s.queue) == 0 {
		s.queue = nil
	}
	// A request left the queue (a stop, its chat closed): the close
	// requests beyond what still waits are taken back, so no agent is
	// ended for nobody (Member.CloseWanted).
	for m := range s.holders {
		if s.closing <= len(s.queue) {
			break
		}
		if m.closing {
			m.closing = false
			s.closing--
		}
	}
	for s.closing < len(s.queue) {
		m := s.leastRecentlyUsedIdle()
		if m == nil {
			break
		}
		m.closing = true
		s.closing++
		effs = append(effs, effect{closeIdle, m})
	}
	return effs
}

// leastRecentlyUsedIdle is the idle member not yet asked to close that was
// used longest ago, nil when there is none.
func (s *slots) leastRecentlyUsedIdle() *Member {
	var lru *Member
	for m := range s.holders {
		if m.idle && !m.closing && (lru == nil || m.used < lru.used) {
			lru = m
		}
	}
	return lru
}
