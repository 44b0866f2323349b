package durableraw

import (
	"database/sql"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// recording is a small turn as an ahpd subscriber would record it.
var recording = Recording{
	TurnID:  "rec-turn",
	Channel: "ahp-chat:/rec",
	Frames: []string{
		`{"jsonrpc":"2.0","method":"action","params":{"channel":"ahp-chat:/rec","action":{"type":"chat/turnStarted","turnId":"rec-turn"}}}`,
		`{"jsonrpc":"2.0","method":"action","params":{"channel":"ahp-chat:/rec","action":{"type":"chat/delta","turnId":"rec-turn","content":"echo"}}}`,
		`{"jsonrpc":"2.0","method":"action","params":{"channel":"ahp-chat:/rec","action":{"type":"chat/turnComplete","turnId":"rec-turn"}}}`,
	},
	EndBody: `{"id":"rec-turn","state":"complete"}`,
}

// dial connects to srv and joins chat as the benchmark's clients do.
func dial(t *testing.T, url, chat string) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	for _, f := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"subscribe","params":{"channel":"` + chat + `"}}`,
	} {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(f)); err != nil {
			t.Fatal(err)
		}
		if _, data, err := readFrame(ws); err != nil || !strings.Contains(string(data), `"result":{}`) {
			t.Fatalf("reply to %s: %s, %v", f, data, err)
		}
	}
	return ws
}

func readFrame(ws *websocket.Conn) (int, []byte, error) {
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	return ws.ReadMessage()
}

func startServer(t *testing.T, db string, beforeCommit ...func([]pendingRow)) string {
	t.Helper()
	s, err := New(Options{DB: db, Recording: recording})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range beforeCommit {
		s.writer.beforeCommit = f
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return "ws" + strings.TrimPrefix(ts.URL, "http")
}

const turnFrame = `{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-chat:/live","clientSeq":1,"action":{"type":"chat/turnStarted","turnId":"t7","startedAt":"2026-12-02T00:00:00Z","message":{"text":"hi","origin":{"kind":"user"}}}}}`

// TestTurnRowsCommittedBeforeTheirFrames: when a member reads a turn's
// first frame, the turn's start row is already in the database, as
// running; the frames up to the last go out while the end row's commit is
// held back, and when a member reads the last, the end row is in, as
// complete with the recorded end body (the turn's id put in).
func TestTurnRowsCommittedBeforeTheirFrames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raw.db")
	release := make(chan struct{})
	url := startServer(t, path, func(batch []pendingRow) {
		for _, p := range batch {
			if p.state == "complete" {
				<-release
			}
		}
	})
	driver := dial(t, url, "ahp-chat:/live")
	watcher := dial(t, url, "ahp-chat:/live")
	reader, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	stored := func() (state, body string) {
		t.Helper()
		err := reader.QueryRow(`SELECT state, body FROM turns WHERE chat = ? AND id = ?`, "ahp-chat:/live", "t7").Scan(&state, &body)
		if err != nil {
			t.Fatalf("the turn's row: %v", err)
		}
		return state, body
	}
	if err := driver.WriteMessage(websocket.TextMessage, []byte(turnFrame)); err != nil {
		t.Fatal(err)
	}
	for k := range recording.Frames {
		if k == len(recording.Frames)-1 {
			close(release)
		}
		_, data, err := readFrame(watcher)
		if err != nil {
			t.Fatalf("frame %d: %v", k, err)
		}
		state, body := stored()
		switch k {
		default:
			if state != "running" || !strings.Contains(body, `"message":{"text":"hi"`) {
				t.Errorf("at frame %d the row is %s %s, want the running start", k, state, body)
			}
		case len(recording.Frames) - 1:
			if state != "complete" || body != `{"id":"t7","state":"complete"}` {
				t.Errorf("at the last frame the row is %s %s, want the recorded end", state, body)
			}
			if !strings.Contains(string(data), "chat/turnComplete") {
				t.Errorf("the last frame is %s", data)
			}
		}
	}
}

// TestFramesCarryTheTurnAndChat: every member gets every recorded frame,
// with the turn's id and the room's channel in place of the recorded ones;
// the bare server (no database) sends the same frames.
func TestFramesCarryTheTurnAndChat(t *testing.T) {
	for _, db := range []string{filepath.Join(t.TempDir(), "raw.db"), ""} {
		url := startServer(t, db)
		driver := dial(t, url, "ahp-chat:/live")
		watcher := dial(t, url, "ahp-chat:/live")
		other := dial(t, url, "ahp-chat:/other")
		if err := driver.WriteMessage(websocket.TextMessage, []byte(turnFrame)); err != nil {
			t.Fatal(err)
		}
		for _, ws := range []*websocket.Conn{driver, watcher} {
			for k, rec := range recording.Frames {
				_, data, err := readFrame(ws)
				if err != nil {
					t.Fatalf("db %q, frame %d: %v", db, k, err)
				}
				want := strings.ReplaceAll(strings.ReplaceAll(rec, "rec-turn", "t7"), "ahp-chat:/rec", "ahp-chat:/live")
				if string(data) != want {
					t.Errorf("db %q, frame %d: %s, want %s", db, k, data, want)
				}
			}
		}
		// A member of another chat gets nothing of this turn.
		_ = other.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, data, err := other.ReadMessage(); err == nil {
			t.Errorf("db %q: another chat's member read %s", db, data)
		}
	}
}

// TestGroupCommit: rows queued while the writer is busy share its next
// transaction, and every waiter hears its commit.
func TestGroupCommit(t *testing.T) {
	w, err := openWriter(filepath.Join(t.TempDir(), "raw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	const n = 40
	errs := make(chan error, n)
	for i := range n {
		go func() {
			errs <- w.commit(row{chat: "c", id: string(rune('a' + i)), seq: i, state: "running", body: []byte(`{}`)})
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var count int
	if err := w.db.QueryRow(`SELECT count(*) FROM turns`).Scan(&count); err != nil || count != n {
		t.Fatalf("%d rows (%v), want %d", count, err, n)
	}
}

// TestBurstWritesEveryTurnToEveryMember: a burst writes the recorded
// frames of turns turns, each turn's own id put in, to every member of
// the room, the one that asked included, and to no other room; a burst of
// a room nobody joined ends the asker's connection.
func TestBurstWritesEveryTurnToEveryMember(t *testing.T) {
	url := startServer(t, "")
	driver := dial(t, url, "ahp-chat:/live")
	watcher := dial(t, url, "ahp-chat:/live")
	other := dial(t, url, "ahp-chat:/other")
	const turns = 3
	if err := driver.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"x-burst","params":{"channel":"ahp-chat:/live","turns":3}}`)); err != nil {
		t.Fatal(err)
	}
	for _, ws := range []*websocket.Conn{driver, watcher} {
		for k := range turns {
			for i, want := range recording.Frames {
				want = strings.ReplaceAll(want, "rec-turn", fmt.Sprintf("burst-%d", k))
				want = strings.ReplaceAll(want, "ahp-chat:/rec", "ahp-chat:/live")
				_, data, err := readFrame(ws)
				if err != nil || string(data) != want {
					t.Fatalf("turn %d frame %d: %s (%v), want %s", k, i, data, err, want)
				}
			}
		}
	}
	_ = other.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, data, err := other.ReadMessage(); err == nil {
		t.Fatalf("another room got %s", data)
	}
	if err := driver.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"x-burst","params":{"channel":"ahp-chat:/nobody","turns":3}}`)); err != nil {
		t.Fatal(err)
	}
	if _, data, err := readFrame(driver); err == nil {
		t.Fatalf("a burst of no room was answered %s", data)
	}
}
