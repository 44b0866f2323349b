package rpc

import (
	"bufio"
	"net"
	"net/http"
	"sync"
)

// A connection writes what its outbox collected in one go: gorilla writes
// each message to the socket as it is finished, one syscall per frame,
// which was three quarters of the daemon's CPU when a hundred clients
// watched one stream (issue 18). batchConn sits under gorilla: while the
// writer goroutine writes a batch, frames gather in a buffer, and the
// batch goes out in one write when it is done.

// batchBuffer is the buffer a batch gathers in; a larger batch is written
// as the buffer fills.
const batchBuffer = 64 << 10

// batchBuffers lends a batch its buffer for as long as it is open, so an
// idle connection holds none (4,000 connections held 64 KiB each, 250 MiB,
// whether they wrote or not: issue 37's memory under load).
var batchBuffers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, batchBuffer) }}

// batchConn is the socket under one websocket connection.
type batchConn struct {
	net.Conn
	// mu guards w: gorilla writes from the writer goroutine and, for a
	// pong, from the reader. w is the open batch's buffer, nil when no
	// batch is open.
	mu sync.Mutex
	w  *bufio.Writer
}

// Write buffers while a batch is open, and writes through otherwise.
func (c *batchConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w != nil {
		return c.w.Write(p)
	}
	return c.Conn.Write(p)
}

// begin opens a batch with a buffer from the pool.
func (c *batchConn) begin() {
	w := batchBuffers.Get().(*bufio.Writer)
	w.Reset(c.Conn)
	c.mu.Lock()
	c.w = w
	c.mu.Unlock()
}

// end writes what the batch gathered, closes it and returns its buffer.
func (c *batchConn) end() error {
	c.mu.Lock()
	w := c.w
	c.w = nil
	var err error
	if w != nil {
		err = w.Flush()
	}
	c.mu.Unlock()
	if w != nil {
		w.Reset(nil) // the pool keeps no socket alive
		batchBuffers.Put(w)
	}
	return err
}

// batchingWriter hands gorilla's Upgrade a hijacked socket wrapped in a
// batchConn; conn is set once Upgrade has hijacked it.
type batchingWriter struct {
	http.ResponseWriter
	conn *batchConn
}

func (w *batchingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.conn = &batchConn{Conn: nc}
	// gorilla reads what the server already buffered through brw.Reader
	// and writes its handshake answer through brw.Writer, whose Flush
	// reaches the socket directly (no batch is open yet).
	return w.conn, brw, nil
}
