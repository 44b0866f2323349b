// Package store keeps the host's durable facts in one SQLite file: sessions,
// their chats, every finished turn, a marker for the turn that is running (so
// a crash is seen on restart), and a few daemon settings.
//
// The host and the actors call it. Reads are synchronous. Writes go through
// one ordered queue that a single writer goroutine drains: Enqueue hands it
// work and returns at once (write-behind, for what may lag: a running turn's
// progress, positions), Commit waits until the work is committed (for every
// fact a client is about to be shown). Ops that wait together share one
// transaction, so many chats ending at once cost one commit.
//
// Protocol JSON (turn bodies, drafts, origins, configs) is opaque here: it is
// stored and returned as json.RawMessage, checked only for being valid JSON.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Sentinels. Errors returned by the store wrap one of these (or a driver
// error) with the operation and the key it was working on.
var (
	// ErrNotFound: an update named a chat (or session) that is not stored.
	ErrNotFound = errors.New("not found")
	// ErrInvalid: a record that cannot be stored as given (missing key,
	// unknown state, malformed JSON).
	ErrInvalid = errors.New("invalid record")
	// ErrSchemaTooNew: the database was written by a newer ahpd.
	ErrSchemaTooNew = errors.New("database schema is newer than this binary")
	// ErrClosed: the store was used after Close.
	ErrClosed = errors.New("store is closed")
)

const (
	// busyTimeout is how long a connection waits for a lock held by another
	// connection (another process on the same file, or a reader during a
	// checkpoint) before failing with SQLITE_BUSY.
	busyTimeout = 5 * time.Second

	// maxOpenConns bounds the pool. See database.writeSem for why more than one.
	maxOpenConns = 4

	// defaultHighWater is the queue length past which Enqueue logs a warning.
	defaultHighWater = 10_000
)

// Store is the daemon's SQLite database. All methods are safe for concurrent
// use.
type Store struct {
	// db is the SQLite pool, its prepared statements and the writer
	// token (db.go).
	db     *database
	path   string
	logger *slog.Logger

	// queue is the ordered write-behind queue and its writer (queue.go).
	queue *queue

	// search keeps the search index up to date with the turns marked
	// for it (searchindex.go).
	search *indexer

	// checkpoints copies the WAL back into the database file off the
	// writer's path (checkpoint.go).
	checkpoints *checkpointer

	closeOnce sync.Once
	closeErr  error
}

// Open opens (creating if missing, with its directory) the database at path,
// sets the pragmas, applies pending migrations, and starts the write-behind
// writer. A database whose schema is newer than this binary knows is refused
// with an error wrapping ErrSchemaTooNew. logger may be nil.
func Open(path string, logger *slog.Logger) (*Store, error) {
	return openWith(path, logger, migrations)
}

// openWith is Open with a migration list, so tests can exercise the runner.
func openWith(path string, logger *slog.Logger, migs []migration) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if path == "" {
		return nil, fmt.Errorf("open store: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	db, err := sql.Open("sqlite", dsn(abs, fmt.Sprintf("wal_autocheckpoint(%d)", walBackstopFrames)))
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	db.SetMaxOpenConns(maxOpenConns)
	db.SetMaxIdleConns(maxOpenConns)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)

	s := &Store{
		db:     newDatabase(db),
		path:   abs,
		logger: logger.With("component", "store"),
	}
	s.queue = newQueue(s)
	s.search = &indexer{db: s.db, logger: s.logger}
	s.checkpoints = newCheckpointer(s.db, abs, s.logger)
	ctx := context.Background()
	if err := s.db.checkPragmas(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	if err := s.migrate(ctx, migs); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	if err := s.search.load(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	s.db.wrote = s.checkpoints.nudge
	go s.checkpoints.loop()
	go s.queue.writer()
	return s, nil
}

// dsn builds the driver's connection string. The path goes into a file: URI,
// escaped, so names holding '?', '#' or '%' survive; the _pragma and
// _txlock parameters are applied by the driver on every new connection:
// the durability pragmas every connection to the file keeps, then extra
// ones.
func dsn(abs string, extra ...string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	for _, p := range extra {
		q.Add("_pragma", p)
	}
	// Write transactions start with BEGIN IMMEDIATE: they take the write lock
	// up front instead of upgrading a read lock later, which in WAL mode can
	// fail with SQLITE_BUSY without waiting. Read-only transactions still use
	// a plain BEGIN (the driver honours sql.TxOptions.ReadOnly).
	q.Set("_txlock", "immediate")
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}

// Path reports the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Close drains the write-behind queue (every op enqueued before Close runs),
// then closes the database. It is safe to call more than once; later calls
// return the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.queue.close()
		s.checkpoints.close()
		if st := s.Stats(); st.WriteErrors > 0 {
			s.logger.Warn("store closed after write errors", "write_errors", st.WriteErrors, "written", st.Written)
		}
		if err := s.db.close(); err != nil {
			s.closeErr = fmt.Errorf("close store %s: %w", s.path, err)
		}
	})
	return s.closeErr
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

type errScanner struct{ err error }

func (e errScanner) Scan(...any) error { return e.err }

// Column helpers. Times are stored as Unix nanoseconds (NULL for the zero
// time) and returned in UTC; string lists as JSON arrays; opaque JSON as
// TEXT (NULL for a nil RawMessage).

func timeValue(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

func timeFrom(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

func rawValue(what string, raw json.RawMessage) (any, error) {
	if raw == nil {
		return nil, nil
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("%w: %s is not valid JSON", ErrInvalid, what)
	}
	return string(raw), nil
}

func rawFrom(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

func listValue(list []string) string {
	b, _ := json.Marshal(list) // a []string always marshals
	return string(b)
}

func listFrom(text string) ([]string, error) {
	var list []string
	if err := json.Unmarshal([]byte(text), &list); err != nil {
		return nil, fmt.Errorf("decode working directories: %w", err)
	}
	return list, nil
}

func boolValue(b bool) int {
	if b {
		return 1
	}
	return 0
}
