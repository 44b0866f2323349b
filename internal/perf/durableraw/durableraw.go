// Package durableraw is the baseline of the whole-turn and load figures of
// docs/PERFORMANCE.md: a bare gorilla/websocket turn server that keeps
// ahpd's durability rule, "publish only what is stored", and does nothing
// else. The benchmarks in internal/daemon run it in a process of its own,
// beside ahpd in another, and drive both with the same clients.
//
// Clients join a chat (a room) with the frames they send ahpd: initialize
// and createSession get an empty result, subscribe joins the room named by
// its channel. A dispatchAction of chat/turnStarted is a turn: its start
// row is committed (SQLite, ahpd's pragmas, one writer), the recorded
// frames of an ahpd turn go to every member of the room with the turn's id
// and the room's channel put in, the end row is committed, then the last
// frame (chat/turnComplete) goes out. With no database it is the bare
// server: the same frames, nothing stored.
//
// A burst (method "x-burst", params {"channel", "turns"}) is the fan-out
// baseline: every member of the room gets turns turns' recorded frames,
// each member from a writer goroutine of its own, as fast as it reads
// them, with nothing stored and no turn run.
package durableraw

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// A Recording is one turn as an ahpd subscriber got it, the benchmark's
// capture of a real run: what the server writes for every turn.
type Recording struct {
	// TurnID is the recorded turn's id; each turn puts its own in its place.
	TurnID string `json:"turnId"`
	// Channel is the recorded chat's URI; each room puts its own in its place.
	Channel string `json:"channel"`
	// Frames are every frame the subscriber read from the turn's echo to
	// its chat/turnComplete, in order; the last is the turn's ending.
	Frames []string `json:"frames"`
	// EndBody is the turn's body as ahpd stored it at its end (JSON).
	EndBody string `json:"endBody"`
}

// Options configure a Server.
type Options struct {
	// DB is the SQLite file turns are stored in (created when missing).
	// Empty makes the bare server, which stores nothing.
	DB string
	// Recording is the turn every turn replays; it needs at least one frame.
	Recording Recording
	// Logger is told why a connection ended badly; nil discards.
	Logger *slog.Logger
}

// Server is the durable raw turn server; it is an http.Handler that
// upgrades every request to a websocket. It is safe for concurrent use.
type Server struct {
	frames  []template
	endBody template
	writer  *writer // nil: the bare server
	log     *slog.Logger
	up      websocket.Upgrader

	// roomsMu guards rooms.
	roomsMu sync.Mutex
	rooms   map[string]*room
}

// room is one chat: its members and its turns.
type room struct {
	channel string

	// turnMu is held for a whole turn: one turn at a time per chat, as
	// ahpd's chat actor runs them; it also guards seq.
	turnMu sync.Mutex
	seq    int

	// membersMu guards members.
	membersMu sync.Mutex
	members   []*member
}

// member is one connection; writeMu serialises its writes (replies from
// its read loop, turns of its room from the driver's).
type member struct {
	ws      *websocket.Conn
	writeMu sync.Mutex
}

// New opens the store (when Options.DB is set) and returns the server.
func New(o Options) (*Server, error) {
	if len(o.Recording.Frames) == 0 {
		return nil, errors.New("durableraw: the recording has no frame")
	}
	if o.Recording.TurnID == "" || o.Recording.Channel == "" {
		return nil, errors.New("durableraw: the recording names no turn or channel")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		log:   log,
		rooms: map[string]*room{},
		// The benchmark's clients send no Origin; ahpd's door checks more,
		// which is not the durability rule's work.
		up: websocket.Upgrader{},
	}
	holes := []string{o.Recording.TurnID, o.Recording.Channel}
	for _, f := range o.Recording.Frames {
		s.frames = append(s.frames, newTemplate([]byte(f), holes))
	}
	s.endBody = newTemplate([]byte(o.Recording.EndBody), holes)
	if o.DB != "" {
		w, err := openWriter(o.DB)
		if err != nil {
			return nil, err
		}
		s.writer = w
	}
	return s, nil
}

// Close stops the writer (rows already queued are committed first) and
// closes the store. Connections are the http.Server's to close.
func (s *Server) Close() error {
	if s.writer == nil {
		return nil
	}
	return s.writer.close()
}

// maxFrame bounds a frame the server reads.
const maxFrame = 1 << 20

// request is what the server reads of a client's frame.
type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Channel string `json:"channel"`
		// Turns is a burst's count of turns.
		Turns  int `json:"turns"`
		Action struct {
			Type      string          `json:"type"`
			TurnID    string          `json:"turnId"`
			StartedAt string          `json:"startedAt"`
			Message   json.RawMessage `json:"message"`
		} `json:"action"`
	} `json:"params"`
}

// ServeHTTP upgrades the request and runs the connection's read loop.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ws, err := s.up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer ws.Close()
	// A client's frames are a few hundred bytes; the bound keeps a
	// stray client from holding the server's memory.
	ws.SetReadLimit(maxFrame)
	m := &member{ws: ws}
	var joined []*room
	defer func() {
		for _, rm := range joined {
			rm.leave(m)
		}
	}()
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		var req request
		if err := json.Unmarshal(data, &req); err != nil {
			s.log.Warn("durableraw: a frame that is not JSON", "err", err)
			return
		}
		switch req.Method {
		case "subscribe":
			rm := s.room(req.Params.Channel)
			rm.join(m)
			joined = append(joined, rm)
		case "x-burst":
			s.roomsMu.Lock()
			rm := s.rooms[req.Params.Channel]
			s.roomsMu.Unlock()
			if rm == nil || req.Params.Turns <= 0 || req.Params.Turns > maxBurstTurns {
				s.log.Warn("durableraw: a burst of no room or a bad count", "channel", req.Params.Channel, "turns", req.Params.Turns)
				return
			}
			s.burst(rm, req.Params.Turns)
		case "dispatchAction":
			if req.Params.Action.Type != "chat/turnStarted" {
				break
			}
			s.roomsMu.Lock()
			rm := s.rooms[req.Params.Channel]
			s.roomsMu.Unlock()
			if rm == nil {
				s.log.Warn("durableraw: a turn in a chat nobody joined", "channel", req.Params.Channel)
				return
			}
			if err := s.turn(rm, req); err != nil {
				s.log.Warn("durableraw: turn failed", "channel", rm.channel, "err", err)
				return
			}
		}
		if len(req.ID) > 0 {
			if err := m.write(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{}}`, req.ID)); err != nil {
				return
			}
		}
	}
}

// room returns the chat's room, making it on first use.
func (s *Server) room(channel string) *room {
	s.roomsMu.Lock()
	defer s.roomsMu.Unlock()
	rm := s.rooms[channel]
	if rm == nil {
		rm = &room{channel: channel}
		s.rooms[channel] = rm
	}
	return rm
}

// turnBody is a turn's start row body: what a running turn holds when it
// starts (its id, the user's message, its state and start).
type turnBody struct {
	ID        string          `json:"id"`
	Message   json.RawMessage `json:"message"`
	State     string          `json:"state"`
	StartedAt string          `json:"startedAt"`
}

// turn runs one turn of rm: the start row committed before the first
// frame is written, the end row before the last.
func (s *Server) turn(rm *room, req request) error {
	a := req.Params.Action
	rm.turnMu.Lock()
	defer rm.turnMu.Unlock()
	seq := rm.seq
	rm.seq++
	started, _ := time.Parse(time.RFC3339Nano, a.StartedAt)
	if s.writer != nil {
		body, err := json.Marshal(turnBody{ID: a.TurnID, Message: a.Message, State: "running", StartedAt: a.StartedAt})
		if err != nil {
			return err
		}
		if err := s.writer.commit(row{chat: rm.channel, id: a.TurnID, seq: seq, state: "running", startedAt: started, body: body}); err != nil {
			return fmt.Errorf("store the start of turn %s: %w", a.TurnID, err)
		}
	}
	values := []string{a.TurnID, rm.channel}
	members := rm.snapshot()
	last := len(s.frames) - 1
	var frame []byte
	for _, t := range s.frames[:last] {
		frame = t.render(frame[:0], values)
		broadcast(members, frame)
	}
	if s.writer != nil {
		body := s.endBody.render(nil, values)
		if err := s.writer.commit(row{chat: rm.channel, id: a.TurnID, seq: seq, state: "complete", startedAt: started, body: body}); err != nil {
			return fmt.Errorf("store the end of turn %s: %w", a.TurnID, err)
		}
	}
	broadcast(members, s.frames[last].render(frame[:0], values))
	return nil
}

// maxBurstTurns bounds a burst.
const maxBurstTurns = 100_000

// burst writes turns turns' recorded frames to every member of rm, one
// writer goroutine a member, and returns once they have all been written.
func (s *Server) burst(rm *room, turns int) {
	members := rm.snapshot()
	var wg sync.WaitGroup
	for _, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var frame []byte
			for k := range turns {
				values := []string{fmt.Sprintf("burst-%d", k), rm.channel}
				for _, t := range s.frames {
					frame = t.render(frame[:0], values)
					if m.write(frame) != nil {
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// broadcast writes frame to every member; a member whose write fails is
// left to its read loop, which sees the broken connection and leaves.
func broadcast(members []*member, frame []byte) {
	for _, m := range members {
		_ = m.write(frame)
	}
}

func (m *member) write(frame []byte) error {
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	return m.ws.WriteMessage(websocket.TextMessage, frame)
}

func (rm *room) join(m *member) {
	rm.membersMu.Lock()
	defer rm.membersMu.Unlock()
	rm.members = append(rm.members, m)
}

func (rm *room) leave(m *member) {
	rm.membersMu.Lock()
	defer rm.membersMu.Unlock()
	for i, x := range rm.members {
		if x == m {
			rm.members = append(rm.members[:i], rm.members[i+1:]...)
			return
		}
	}
}

// snapshot is the room's members now (a copy: writes happen unlocked).
func (rm *room) snapshot() []*member {
	rm.membersMu.Lock()
	defer rm.membersMu.Unlock()
	return append([]*member(nil), rm.members...)
}

// template is a recorded frame cut at each occurrence of the values a turn
// puts in (hole i is values[i]), so a turn renders it with appends only.
type template struct {
	parts [][]byte // literal bytes; between parts[k] and parts[k+1] goes values[holes[k]]
	holes []int
}

func newTemplate(frame []byte, values []string) template {
	var t template
	for {
		at, which := -1, -1
		for i, v := range values {
			if j := bytes.Index(frame, []byte(v)); j >= 0 && (at < 0 || j < at) {
				at, which = j, i
			}
		}
		if at < 0 {
			t.parts = append(t.parts, frame)
			return t
		}
		t.parts = append(t.parts, frame[:at])
		t.holes = append(t.holes, which)
		frame = frame[at+len(values[which]):]
	}
}

func (t template) render(dst []byte, values []string) []byte {
	for k, p := range t.parts {
		dst = append(dst, p...)
		if k < len(t.holes) {
			dst = append(dst, values[t.holes[k]]...)
		}
	}
	return dst
}

// row is one turn row, as ahpd's turns table holds it.
type row struct {
	chat, id  string
	seq       int
	state     string
	startedAt time.Time
	body      []byte
}

// pendingRow is a row waiting for the writer; done gets the result of the
// transaction that held it.
type pendingRow struct {
	row
	done chan error
}

// writer is the store's one writer: a goroutine that takes every row
// queued while it was busy, commits them in one transaction and wakes
// their waiters (a group commit, as ahpd's store does; no timer). Its
// queue needs no bound of its own: a turn waits for its row's commit, so
// at most one row per room is ever queued.
type writer struct {
	db   *sql.DB
	stmt *sql.Stmt

	// mu guards queue and closing.
	mu      sync.Mutex
	queue   []pendingRow
	closing bool

	wake chan struct{} // 1-buffered: the queue is not empty, or closing
	done chan struct{} // closed when run has returned

	// beforeCommit, when set (tests), is called with each batch before
	// its COMMIT, on the writer goroutine.
	beforeCommit func([]pendingRow)
}

// openWriter opens path with ahpd's pragmas (internal/store/store.go dsn:
// WAL, synchronous=NORMAL, foreign keys, a busy timeout, BEGIN IMMEDIATE),
// makes the turns table and starts the writer goroutine.
func openWriter(path string) (*writer, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("durableraw: open %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Set("_txlock", "immediate")
	dsn := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("durableraw: open %s: %w", abs, err)
	}
	// The columns, keys and indexes of ahpd's turns table (the ones a
	// turn's rows are written through); the chat's own row is not kept.
	ctx := context.Background()
	for _, ddl := range []string{
		`CREATE TABLE IF NOT EXISTS turns (
			chat       TEXT NOT NULL,
			id         TEXT NOT NULL,
			seq        INTEGER NOT NULL CHECK (seq >= 0),
			state      TEXT NOT NULL CHECK (state IN ('running', 'complete', 'cancelled', 'error')),
			started_at INTEGER,
			body       TEXT,
			PRIMARY KEY (chat, id)
		) STRICT`,
		`CREATE UNIQUE INDEX IF NOT EXISTS turns_by_seq ON turns (chat, seq)`,
		`CREATE INDEX IF NOT EXISTS turns_running ON turns (chat) WHERE state = 'running'`,
	} {
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			db.Close()
			return nil, fmt.Errorf("durableraw: create the turns table in %s: %w", abs, err)
		}
	}
	stmt, err := db.PrepareContext(ctx, `INSERT INTO turns (chat, id, seq, state, started_at, body)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (chat, id) DO UPDATE SET
			seq = excluded.seq, state = excluded.state, started_at = excluded.started_at, body = excluded.body`)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("durableraw: prepare the turn upsert: %w", err)
	}
	w := &writer{db: db, stmt: stmt, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go w.run()
	return w, nil
}

// commit queues r and returns once the transaction holding it committed.
func (w *writer) commit(r row) error {
	done := make(chan error, 1)
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		return errors.New("durableraw: the store is closed")
	}
	w.queue = append(w.queue, pendingRow{row: r, done: done})
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return <-done
}

// run is the writer goroutine; only it writes the database.
func (w *writer) run() {
	defer close(w.done)
	for range w.wake {
		w.mu.Lock()
		batch, closing := w.queue, w.closing
		w.queue = nil
		w.mu.Unlock()
		if len(batch) > 0 {
			err := w.write(batch)
			for _, p := range batch {
				p.done <- err
			}
		}
		if closing {
			return
		}
	}
}

// write commits batch in one transaction.
func (w *writer) write(batch []pendingRow) error {
	ctx := context.Background()
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	st := tx.StmtContext(ctx, w.stmt)
	for _, p := range batch {
		if _, err := st.ExecContext(ctx, p.chat, p.id, p.seq, p.state, p.startedAt.UnixMilli(), string(p.body)); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("write turn %s/%s: %w", p.chat, p.id, err)
		}
	}
	if w.beforeCommit != nil {
		w.beforeCommit(batch)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// close commits what is queued, stops the goroutine and closes the store.
func (w *writer) close() error {
	w.mu.Lock()
	already := w.closing
	w.closing = true
	w.mu.Unlock()
	if !already {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	<-w.done
	if already {
		return nil
	}
	w.stmt.Close()
	return w.db.Close()
}
