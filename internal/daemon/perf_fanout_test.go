//go:build linux

package daemon_test

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fanoutPrompt is the turn of the fan-out figure (issue 37): reasoning
// deltas, then the answer, from the script agent.
const fanoutPrompt = "[think] hello"

// fanoutCalls numbers the sub-benchmarks' runs: the testing package runs
// each more than once under -benchtime=Nx (N > 1) or -count, against the
// same servers, and a run in the chat of the one before found its turn
// ids taken and waited for endings that never came.
var fanoutCalls atomic.Int64

// BenchmarkFanoutVsRaw: one chat's turns of fanoutPrompt, the driver
// keeping four in flight (one running, the others waiting as pending
// messages), watched by N subscribers; ahpd in a process of its own
// against a raw burst of the same bytes from the bare raw server in
// another: the recorded frames of the same turn, as many turns, written to
// the same subscribers by a writer goroutine each, as fast as they read,
// with no turn run and nothing stored. Each round runs fanoutTurns turns
// on each, alternating (200: the raw burst of 40 turns at N=10 lasted
// about 8 ms, and its figure moved 290–464k envelopes a second run to
// run). Reported: envelopes delivered per second to the
// subscribers (the driver not counted), their ratio (the goal: ≥ 0.3 at
// N=10, ≥ 0.6 at N=100), and turns delivered per second (a turn counted
// once per subscriber that read its ending), which tells whether ahpd
// sent envelopes the recording does not hold.
func BenchmarkFanoutVsRaw(b *testing.B) {
	const rounds, fanoutTurns, inFlight = 3, 200, 4
	_, rawBin := perfBinaries(b)
	ahpd := startPerfAhpd(b, 512)
	rec := recordTurnOf(b, ahpd, "fanrec", fanoutPrompt)
	bare := startPerfServer(b, serverBare, b.TempDir(), rawBin, "-recording", rec)
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			servers := []*perfServer{ahpd, bare}
			chats := map[*perfServer]*perfChats{}
			for _, s := range servers {
				chats[s] = joinChats(b, s, fmt.Sprintf("fan%d-%d", n, fanoutCalls.Add(1)), 1, n+1)
				fanoutRound(b, chats[s], "warm", inFlight, inFlight, s == bare) // warm up
			}
			tally := map[*perfServer]*fanoutTally{ahpd: {}, bare: {}}
			b.ResetTimer()
			for i := range b.N {
				for r := range rounds {
					for _, s := range servers {
						tally[s].add(fanoutRound(b, chats[s], fmt.Sprintf("f%d-%d-%d", n, i, r), fanoutTurns, inFlight, s == bare))
					}
				}
			}
			a, raw := tally[ahpd], tally[bare]
			b.ReportMetric(a.envPerSecond(), "ahpd-env/s")
			b.ReportMetric(raw.envPerSecond(), "raw-env/s")
			b.ReportMetric(a.turnsPerSecond(), "ahpd-turns/s")
			b.ReportMetric(raw.turnsPerSecond(), "raw-turns/s")
			b.ReportMetric(a.envPerSecond()/raw.envPerSecond(), "ratio")
		})
	}
}

// fanoutTally is what the rounds of one server measured.
type fanoutTally struct {
	envelopes, turns int
	elapsed          time.Duration
}

func (t *fanoutTally) add(u fanoutTally) {
	t.envelopes += u.envelopes
	t.turns += u.turns
	t.elapsed += u.elapsed
}

func (t *fanoutTally) envPerSecond() float64 { return float64(t.envelopes) / t.elapsed.Seconds() }

func (t *fanoutTally) turnsPerSecond() float64 { return float64(t.turns) / t.elapsed.Seconds() }

// fanoutRound runs turns turns in the chat of chats, its driver keeping
// inFlight dispatched and not yet ended (burst: asks the bare raw server
// for a burst of turns turns), and waits until every watcher read every
// turn's ending. It returns what the watchers read and how long it took
// from the first dispatch.
func fanoutRound(b *testing.B, chats *perfChats, prefix string, turns, inFlight int, burst bool) fanoutTally {
	b.Helper()
	chat, clients := chats.uris[0], chats.clients[0]
	driver, watchers := clients[0], clients[1:]
	ending := []byte(`"chat/turnComplete"`)
	counts := make([]int, len(watchers))
	errs := make(chan error, len(watchers)+1)
	var wg sync.WaitGroup
	for i, w := range watchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ended := 0; ended < turns; {
				frame, err := w.readUntil("")
				if err != nil {
					errs <- fmt.Errorf("watcher %d after %d endings: %w", i, ended, err)
					return
				}
				counts[i]++
				if bytes.Contains(frame, ending) {
					ended++
				}
			}
		}()
	}
	start := time.Now()
	sent := 0
	if burst {
		if err := driver.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"x-burst","params":{"channel":%q,"turns":%d}}`, chat, turns)); err != nil {
			b.Fatal(err)
		}
		sent, inFlight = turns, 0
	}
	for ; sent < min(inFlight, turns); sent++ {
		if err := driver.startTurn(chat, fmt.Sprintf("%s-%d", prefix, sent), fanoutPrompt); err != nil {
			b.Fatal(err)
		}
	}
	for ended := 0; ended < turns; {
		if _, err := driver.readUntil(string(ending)); err != nil {
			b.Fatalf("driver after %d endings: %v", ended, err)
		}
		ended++
		if sent < turns {
			if err := driver.startTurn(chat, fmt.Sprintf("%s-%d", prefix, sent), fanoutPrompt); err != nil {
				b.Fatal(err)
			}
			sent++
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	t := fanoutTally{turns: turns * len(watchers), elapsed: elapsed}
	for _, c := range counts {
		t.envelopes += c
	}
	return t
}
