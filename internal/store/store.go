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

	// maxOpenConns bounds the pool. See Store.writeSem for why more than one.
	maxOpenConns = 4

	// defaultHighWater is the queue length past which Enqueue logs a warning.
	defaultHighWater = 10_000
)

// Store is the daemon's SQLite database. All methods are safe for concurrent
// use.
type Store struct {
	db     *sql.DB
	path   string
	logger *slog.Logger

	// writeSem serialises writers; it holds one token.
	//
	// The pool has several connections so that, in WAL mode, readers (a
	// client paging through a long transcript) never wait for the writer.
	// SQLite allows only one writer at a time anyway; taking this token
	// before writing makes writers queue here, where the wait honours ctx and
	// wakes at once, instead of inside SQLite's busy handler, which sleeps and
	// polls. Every write goes through writeExec (one statement) or withWrite
	// (several statements in one transaction). The write-behind writer is
	// just one more holder of the token, so sync writes and queued ones
	// interleave safely.
	writeSem chan struct{}

	// queue is the ordered write-behind queue and its writer (queue.go).
	queue *queue

	// stmtMu guards stmts.
	stmtMu sync.Mutex
	// stmts caches prepared statements by query text. Every query is a
	// constant of this package, so the set is small and fixed; parsing the
	// upserts on each call was a third of PutTurn's time.
	stmts map[string]*sql.Stmt

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
	db, err := sql.Open("sqlite", dsn(abs))
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	db.SetMaxOpenConns(maxOpenConns)
	db.SetMaxIdleConns(maxOpenConns)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)

	s := &Store{
		db:       db,
		path:     abs,
		logger:   logger.With("component", "store"),
		writeSem: make(chan struct{}, 1),
		stmts:    make(map[string]*sql.Stmt),
	}
	s.queue = newQueue(s)
	ctx := context.Background()
	if err := s.checkPragmas(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	if err := s.migrate(ctx, migs); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	go s.queue.writer()
	return s, nil
}

// dsn builds the driver's connection string. The path goes into a file: URI,
// escaped, so names holding '?', '#' or '%' survive; the _pragma and
// _txlock parameters are applied by the driver on every new connection.
func dsn(abs string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	// Write transactions start with BEGIN IMMEDIATE: they take the write lock
	// up front instead of upgrading a read lock later, which in WAL mode can
	// fail with SQLITE_BUSY without waiting. Read-only transactions still use
	// a plain BEGIN (the driver honours sql.TxOptions.ReadOnly).
	q.Set("_txlock", "immediate")
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}

// checkPragmas verifies the connection really got WAL and foreign keys; a
// store that silently ran without them would lose cascades or durability.
func (s *Store) checkPragmas(ctx context.Context) error {
	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("read journal_mode: %w", err)
	}
	if mode != "wal" {
		return fmt.Errorf("journal_mode is %q, want wal", mode)
	}
	var fk int
	if err := s.db.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
		return fmt.Errorf("read foreign_keys: %w", err)
	}
	if fk != 1 {
		return fmt.Errorf("foreign_keys is off")
	}
	return nil
}

// Path reports the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Close drains the write-behind queue (every op enqueued before Close runs),
// then closes the database. It is safe to call more than once; later calls
// return the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.queue.close()
		if st := s.Stats(); st.WriteErrors > 0 {
			s.logger.Warn("store closed after write errors", "write_errors", st.WriteErrors, "written", st.Written)
		}
		s.stmtMu.Lock()
		for _, st := range s.stmts {
			st.Close()
		}
		s.stmts = nil
		s.stmtMu.Unlock()
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("close store %s: %w", s.path, err)
		}
	})
	return s.closeErr
}

// writeExec runs one write statement, holding the writer token. SQLite runs
// a lone statement as its own transaction (autocommit), so this is one
// transaction without the two extra round trips of BEGIN and COMMIT. It is
// safe from the stale-snapshot SQLITE_BUSY that BEGIN IMMEDIATE exists to
// avoid because the token keeps every other writer of this Store out; one
// daemon owns the file, and a second process writing it is not supported.
func (s *Store) writeExec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if tx, ok := ctx.Value(batchTxKey{}).(*sql.Tx); ok {
		// Inside the writer's grouped transaction, which holds the token.
		st, err := s.stmt(ctx, query)
		if err != nil {
			return nil, err
		}
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	select {
	case s.writeSem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.writeSem }()
	st, err := s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// stmt returns the prepared statement for query, preparing it on first use.
func (s *Store) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st, ok := s.stmts[query]; ok {
		return st, nil
	}
	if s.stmts == nil {
		return nil, ErrClosed
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s.stmts[query] = st
	return st, nil
}

// query runs a read through its prepared statement.
func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// queryRow is query for a single row; a failure to prepare surfaces from
// Scan, like any other error of *sql.Row.
func (s *Store) queryRow(ctx context.Context, query string, args ...any) scanner {
	st, err := s.stmt(ctx, query)
	if err != nil {
		return errScanner{err}
	}
	return st.QueryRowContext(ctx, args...)
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

type errScanner struct{ err error }

func (e errScanner) Scan(...any) error { return e.err }

// withWrite runs fn in one write transaction (BEGIN IMMEDIATE), holding the
// writer token. fn's error rolls the transaction back and is returned as is.
func (s *Store) withWrite(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if tx, ok := ctx.Value(batchTxKey{}).(*sql.Tx); ok {
		// Inside the writer's grouped transaction: the op's savepoint
		// undoes fn's writes if it fails.
		return fn(tx)
	}
	select {
	case s.writeSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writeSem }()

	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

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
