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

// batchConn is the socket under one websocket connection.
type batchConn struct {
	net.Conn
	// mu guards batching and w: gorilla writes from the writer goroutine
	// and, for a pong, from the reader.
	mu       sync.Mutex
	batching bool
	w        *bufio.Writer
	br       *bufio.ReadWriter
}

// Write buffers while a batch is open, and writes through otherwise.
func (c *batchConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.batching {
		return c.w.Write(p)
	}
	return c.Conn.Write(p)
}

// begin opens a batch.
func (c *batchConn) begin() {
	c.mu.Lock()
	c.batching = true
	c.mu.Unlock()
}

// end writes what the batch gathered and closes it.
func (c *batchConn) end() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batching = false
	return c.w.Flush()
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
	w.conn.w = bufio.NewWriterSize(nc, batchBuffer)
	// gorilla reads what the server already buffered through brw.Reader
	// and writes its handshake answer through brw.Writer, whose Flush
	// reaches the socket directly (no batch is open yet).
	return w.conn, brw, nil
}
