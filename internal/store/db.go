package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// database is the SQLite pool the store reads and writes through: its
// prepared statements and the writer token every write holds. It is safe
// for concurrent use.
type database struct {
	pool *sql.DB

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
	// wrote is told each time the writer token is let go, after whatever
	// its holder wrote committed or rolled back (the checkpointer's nudge;
	// nil until Open sets it).
	wrote func()

	// stmtMu guards stmts.
	stmtMu sync.Mutex
	// stmts caches prepared statements by query text. Every query is a
	// constant of this package, so the set is small and fixed; parsing the
	// upserts on each call was a third of PutTurn's time.
	stmts map[string]*sql.Stmt
}

// newDatabase wraps an open pool.
func newDatabase(pool *sql.DB) *database {
	return &database{
		pool:     pool,
		writeSem: make(chan struct{}, 1),
		stmts:    make(map[string]*sql.Stmt),
	}
}

// checkPragmas verifies the connection really got WAL and foreign keys; a
// store that silently ran without them would lose cascades or durability.
func (d *database) checkPragmas(ctx context.Context) error {
	var mode string
	if err := d.pool.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("read journal_mode: %w", err)
	}
	if mode != "wal" {
		return fmt.Errorf("journal_mode is %q, want wal", mode)
	}
	var fk int
	if err := d.pool.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
		return fmt.Errorf("read foreign_keys: %w", err)
	}
	if fk != 1 {
		return fmt.Errorf("foreign_keys is off")
	}
	return nil
}

// writeExec runs one write statement, holding the writer token. SQLite runs
// a lone statement as its own transaction (autocommit), so this is one
// transaction without the two extra round trips of BEGIN and COMMIT. It is
// safe from the stale-snapshot SQLITE_BUSY that BEGIN IMMEDIATE exists to
// avoid because the token keeps every other writer of this Store out; one
// daemon owns the file, and a second process writing it is not supported.
func (d *database) writeExec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return d.writeExecThen(ctx, nil, query, args...)
}

// writeExecThen is writeExec with then (when not nil) run once the
// statement succeeded: inside the writer's grouped transaction at once,
// otherwise once the statement committed, still holding the writer token
// (the search index keeps a turn's text so, store/searchindex.go).
func (d *database) writeExecThen(ctx context.Context, then func(), query string, args ...any) (sql.Result, error) {
	if tx, ok := ctx.Value(batchTxKey{}).(*sql.Tx); ok {
		// Inside the writer's grouped transaction, which holds the token.
		st, err := d.stmt(ctx, query)
		if err != nil {
			return nil, err
		}
		res, err := tx.StmtContext(ctx, st).ExecContext(ctx, args...)
		if err == nil && then != nil {
			then()
		}
		return res, err
	}
	select {
	case d.writeSem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer d.releaseWriter()
	st, err := d.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	res, err := st.ExecContext(ctx, args...)
	if err == nil && then != nil {
		then()
	}
	return res, err
}

// releaseWriter lets the writer token go and tells wrote.
func (d *database) releaseWriter() {
	<-d.writeSem
	if d.wrote != nil {
		d.wrote()
	}
}

// stmt returns the prepared statement for query, preparing it on first use.
func (d *database) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	d.stmtMu.Lock()
	defer d.stmtMu.Unlock()
	if st, ok := d.stmts[query]; ok {
		return st, nil
	}
	if d.stmts == nil {
		return nil, ErrClosed
	}
	st, err := d.pool.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	d.stmts[query] = st
	return st, nil
}

// query runs a read through its prepared statement.
func (d *database) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := d.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// queryRow is query for a single row; a failure to prepare surfaces from
// Scan, like any other error of *sql.Row.
func (d *database) queryRow(ctx context.Context, query string, args ...any) scanner {
	st, err := d.stmt(ctx, query)
	if err != nil {
		return errScanner{err}
	}
	return st.QueryRowContext(ctx, args...)
}

// txExec runs a write inside tx through its prepared statement.
func (d *database) txExec(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	st, err := d.stmt(ctx, query)
	if err != nil {
		return err
	}
	_, err = tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	return err
}

// txQueryRow is txExec for a statement that returns a row (RETURNING).
func (d *database) txQueryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) scanner {
	st, err := d.stmt(ctx, query)
	if err != nil {
		return errScanner{err}
	}
	return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
}

// withWrite runs fn in one write transaction (BEGIN IMMEDIATE), holding the
// writer token. fn's error rolls the transaction back and is returned as is.
func (d *database) withWrite(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if tx, ok := ctx.Value(batchTxKey{}).(*sql.Tx); ok {
		// Inside the writer's grouped transaction: the op's savepoint
		// undoes fn's writes if it fails.
		return fn(tx)
	}
	select {
	case d.writeSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer d.releaseWriter()

	tx, err := d.pool.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// close closes the prepared statements, then the pool.
func (d *database) close() error {
	d.stmtMu.Lock()
	for _, st := range d.stmts {
		st.Close()
	}
	d.stmts = nil
	d.stmtMu.Unlock()
	return d.pool.Close()
}
