package daemon_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/script"
	"github.com/ahpd/ahpd/internal/ahp"
)

// chatMemoryTurns is how many turns BenchmarkChatMemory runs in all:
// AHPD_BENCH_CHAT_TURNS, 100,000 by default (issue #34).
func chatMemoryTurns() int {
	if n, err := strconv.Atoi(os.Getenv("AHPD_BENCH_CHAT_TURNS")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

// BenchmarkChatMemory: a chat's memory is bounded by what is live, not by
// its history (issue #34). 100 chats, each watched by the client that
// drives it, run 1,000 turns in all; the daemon's live heap is measured;
// they run on to 100,000 turns, and it is measured again: the second must be
// within 1.5× of the first (the ratio). Then every turn must still read back
// whole, by a subscribe without a view and by fetchTurns pages from the end,
// from a client that joins afterwards.
func BenchmarkChatMemory(b *testing.B) {
	const chats, firstTurns = 100, 1000
	total := max(chatMemoryTurns(), 2*firstTurns)
	for range b.N {
		reg, err := agent.NewRegistry(script.New(script.Options{}))
		if err != nil {
			b.Fatal(err)
		}
		e := benchEnv(b, reg)
		setup := dialWatcher(b, e.d.URL())
		setup.send(b, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"setup"}}`)
		setup.readUntil(b, `"id":0`)
		defs := make([]string, chats)
		drivers := make([]*rawWatcher, chats)
		for i := range chats {
			sess := fmt.Sprintf("script:/3e3a0000-0000-4000-8000-%012d", i)
			setup.send(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"createSession","params":{"channel":%q,"provider":"script"}}`, i+1, sess))
			setup.readUntil(b, fmt.Sprintf(`"id":%d,`, i+1))
			defs[i] = ahp.DefaultChatURI(sess)
			w := dialWatcher(b, e.d.URL())
			w.send(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"m%d"}}`, i))
			w.readUntil(b, `"id":1`)
			w.send(b, `{"jsonrpc":"2.0","id":2,"method":"subscribe","params":{"channel":"`+defs[i]+`"}}`)
			w.readUntil(b, `"id":2`)
			drivers[i] = w
		}
		// run drives every chat from turn from to turn to, in parallel.
		run := func(from, to int) {
			var wg sync.WaitGroup
			for i, w := range drivers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := from; n < to; n++ {
						w.send(b, fmt.Sprintf(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":%q,"clientSeq":%d,"action":{"type":"chat/turnStarted","turnId":%q,"startedAt":"2026-12-06T00:00:00Z","message":{"text":%q,"origin":{"kind":"user"}}}}}`,
							defs[i], n+1, memoryTurnID(i, n), memoryTurnText(i, n)))
						w.readUntil(b, `"chat/turnComplete"`)
					}
				}()
			}
			wg.Wait()
		}
		perChat := total / chats
		run(0, firstTurns/chats)
		first := memInUse()
		if path := os.Getenv("AHPD_BENCH_HEAPPROFILE"); path != "" {
			writeHeapProfile(b, path+".first")
		}
		started := time.Now()
		run(firstTurns/chats, perChat)
		ran := time.Since(started)
		after := memInUse()
		if path := os.Getenv("AHPD_BENCH_HEAPPROFILE"); path != "" {
			writeHeapProfile(b, path)
		}
		ratio := float64(after) / float64(first)
		b.ReportMetric(float64(after)/(1<<20), "ahpd-MiB-after-all")
		b.ReportMetric(float64(first)/(1<<20), "first-MiB-after-1000")
		b.ReportMetric(ratio, "ratio")
		if ratio > 1.5 {
			b.Fatalf("the live heap after %d turns is %.2f× the heap after %d (%d against %d bytes): more than 1.5×", chats*perChat, ratio, firstTurns, after, first)
		}
		started = time.Now()
		reader := dialWatcher(b, e.d.URL())
		reader.send(b, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"reader"}}`)
		reader.readUntil(b, `"id":1`)
		id := 10
		for i, def := range defs {
			id++
			whole := readSnapshot(b, reader, id, `{"channel":"`+def+`"}`)
			checkWhole(b, "subscribe without a view", i, perChat, whole.Turns)
			reader.send(b, `{"jsonrpc":"2.0","method":"unsubscribe","params":{"channel":"`+def+`"}}`)
			id++
			paged := readSnapshot(b, reader, id, `{"channel":"`+def+`","view":{"turns":0}}`)
			var turns []ahp.Turn
			for cursor := paged.TurnsNextCursor; cursor != nil; {
				id++
				var page ahp.ChatTurnsLoaded
				page, cursor = fetchPage(b, reader, id, def, *cursor)
				turns = append(page.Turns, turns...)
			}
			checkWhole(b, "fetchTurns", i, perChat, turns)
			reader.send(b, `{"jsonrpc":"2.0","method":"unsubscribe","params":{"channel":"`+def+`"}}`)
		}
		b.Logf("%d turns in %v (%.0f/s); every turn read back twice in %v", chats*(perChat-firstTurns/chats), ran.Round(time.Millisecond),
			float64(chats*(perChat-firstTurns/chats))/ran.Seconds(), time.Since(started).Round(time.Millisecond))
	}
}

// writeHeapProfile writes the live heap's profile to path
// (AHPD_BENCH_HEAPPROFILE, and path.first after the first 1,000 turns):
// what the ratio is made of.
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

func memoryTurnID(chat, n int) string   { return fmt.Sprintf("m%d-%d", chat, n) }
func memoryTurnText(chat, n int) string { return fmt.Sprintf("turn %d of chat %d", n, chat) }

// readSnapshot subscribes with params and returns the chat state it
// answers.
func readSnapshot(b *testing.B, w *rawWatcher, id int, params string) ahp.ChatState {
	b.Helper()
	w.send(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscribe","params":%s}`, id, params))
	marker := []byte(fmt.Sprintf(`"id":%d,`, id))
	for {
		_, data, err := w.ws.ReadMessage()
		if err != nil {
			b.Fatalf("subscribe %s: %v", params, err)
		}
		if !bytes.Contains(data, marker) {
			continue
		}
		var reply struct {
			Result struct {
				Snapshot struct {
					State ahp.ChatState `json:"state"`
				} `json:"snapshot"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(data, &reply); err != nil || reply.Error != nil {
			b.Fatalf("subscribe %s: %v %s", params, err, reply.Error)
		}
		return reply.Result.Snapshot.State
	}
}

// fetchPage asks for the page before cursor and returns the
// chat/turnsLoaded it published, and the cursor of the page before it.
func fetchPage(b *testing.B, w *rawWatcher, id int, chat, cursor string) (ahp.ChatTurnsLoaded, *string) {
	b.Helper()
	w.send(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"fetchTurns","params":{"channel":%q,"cursor":%q}}`, id, chat, cursor))
	marker := []byte(fmt.Sprintf(`"id":%d,`, id))
	var page *ahp.ChatTurnsLoaded
	for {
		_, data, err := w.ws.ReadMessage()
		if err != nil {
			b.Fatalf("fetchTurns %s: %v", cursor, err)
		}
		if bytes.Contains(data, []byte(`"chat/turnsLoaded"`)) {
			var n struct {
				Params struct {
					Action ahp.ChatTurnsLoaded `json:"action"`
				} `json:"params"`
			}
			if err := json.Unmarshal(data, &n); err != nil {
				b.Fatalf("chat/turnsLoaded: %v", err)
			}
			page = &n.Params.Action
			continue
		}
		if !bytes.Contains(data, marker) {
			continue
		}
		if bytes.Contains(data, []byte(`"error"`)) || page == nil {
			b.Fatalf("fetchTurns %s answered %s with no page before it", cursor, data)
		}
		return *page, page.TurnsNextCursor
	}
}

// checkWhole fails unless turns are chat's n turns, in order, each ended
// complete with its message and the script agent's whole answer.
func checkWhole(b *testing.B, how string, chat, n int, turns []ahp.Turn) {
	b.Helper()
	if len(turns) != n {
		b.Fatalf("%s: chat %d read back %d turns, want %d", how, chat, len(turns), n)
	}
	for k, t := range turns {
		text := memoryTurnText(chat, k)
		ok := t.ID == memoryTurnID(chat, k) && t.State == ahp.TurnComplete && t.Message.Text == text && t.Usage != nil &&
			len(t.ResponseParts) == 1 && t.ResponseParts[0].Kind == ahp.PartMarkdown && t.ResponseParts[0].Content == "echo: "+text
		if !ok {
			raw, _ := json.Marshal(t)
			b.Fatalf("%s: chat %d turn %d does not read back whole: %s", how, chat, k, raw)
		}
	}
}
