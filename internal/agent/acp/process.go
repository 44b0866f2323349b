package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/ahpd/ahpd/internal/agent/agentproc"
)

// Shutdown timing: stdin is closed first (an ACP agent exits at EOF),
// then the process group is interrupted, then killed.
const (
	closeGrace     = 2 * time.Second
	interruptGrace = 2 * time.Second
	killWait       = 5 * time.Second
	waitDelay      = 2 * time.Second
)

// maxLine bounds one JSON-RPC line from the agent (the SDK's own bound).
const maxLine = 10 << 20

// maxUnhandledUpdates bounds the session/update notifications read from
// the agent and not yet handled. The SDK queues notifications (1024 at
// most, then it drops the connection); stopping to read at this bound
// keeps a slow chat actor from ever reaching the SDK's, so a slow reader
// slows the agent down instead of failing the turn.
const maxUnhandledUpdates = 512

// process is one running agent and the client connection over its stdio.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	wire   *wireOut
	guard  *guard
	stderr *agentproc.Stderr
	conn   *acpsdk.ClientSideConnection
	log    *slog.Logger
	// endGroup kills what the agent left in its group and crosses the
	// group out of the ledger, once the agent was reaped.
	endGroup func()
	// exited is closed once the process has been reaped; waitErr is set
	// before.
	exited  chan struct{}
	waitErr error

	shutdownOnce sync.Once
}

// startProcess starts the agent in dir and connects client to it;
// sandbox, when set, makes it start through the session's sandbox
// launcher (agent.OpenParams.Sandbox).
func startProcess(bin string, args []string, dir string, env []string, log *slog.Logger, ledger agentproc.Ledger,
	sandbox func(*exec.Cmd) error, client acpsdk.Client) (*process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = waitDelay
	agentproc.SetGroup(cmd)
	if sandbox != nil {
		if err := sandbox(cmd); err != nil {
			return nil, fmt.Errorf("sandbox the ACP agent: %w", err)
		}
	}
	p := &process{cmd: cmd, stderr: agentproc.NewStderr(log, "acp agent stderr", slog.LevelDebug), log: log, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if p.endGroup, err = ledger.Start(cmd); err != nil {
		return nil, err
	}
	log.Debug("acp agent started", "pid", cmd.Process.Pid, "command", bin, "args", strings.Join(args, " "))
	p.guard = newGuard(stdout, func() { agentproc.SignalGroup(cmd, os.Kill) })
	p.wire = newWireOut(p.stdin)
	p.conn = acpsdk.NewClientSideConnection(client, p.wire, p.guard)
	p.conn.SetLogger(log)
	go func() {
		// Reaps the process once its stdout is done (exec's rule: Wait
		// after the reads).
		<-p.conn.Done()
		p.waitErr = cmd.Wait()
		p.endGroup()
		close(p.exited)
	}()
	return p, nil
}

// dead reports whether the connection is gone.
func (p *process) dead() bool {
	select {
	case <-p.conn.Done():
		return true
	default:
		return false
	}
}

// shutdown ends the process: stdin closed, then an interrupt to its
// process group, then a kill; it returns once the process is reaped.
func (p *process) shutdown() {
	p.shutdownOnce.Do(func() {
		_ = p.stdin.Close()
		if p.waitExit(closeGrace) {
			return
		}
		agentproc.SignalGroup(p.cmd, os.Interrupt)
		if p.waitExit(interruptGrace) {
			return
		}
		p.log.Warn("acp agent did not exit on interrupt; killing")
		agentproc.SignalGroup(p.cmd, os.Kill)
		if p.waitExit(killWait) {
			return
		}
		p.guard.close()
	})
	<-p.exited
}

// kill ends the process at once (a fault, or a stop it did not answer).
func (p *process) kill() {
	agentproc.SignalGroup(p.cmd, os.Kill)
	_ = p.stdin.Close()
}

func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// fault describes why the connection ended: garbage on stdout, or the
// process's exit, with the end of its stderr.
func (p *process) fault() error {
	if err := p.guard.fault(); err != nil {
		return err
	}
	select {
	case <-p.exited:
	case <-time.After(waitDelay):
	}
	msg := "the agent exited"
	select {
	case <-p.exited:
		if p.waitErr != nil {
			msg = fmt.Sprintf("the agent exited: %v", p.waitErr)
		}
	default:
		msg = "the agent closed its stdout"
	}
	if tail := p.stderr.Tail(); tail != "" {
		msg += "; stderr: " + tail
	}
	return errors.New(msg)
}

// guard sits between the agent's stdout and the SDK. It hands the SDK
// whole lines, each checked to be a JSON-RPC message: a line that is not
// (garbage) ends the connection with a fault naming it, where the SDK
// would log it and go on. It also stops reading while maxUnhandledUpdates
// session/update notifications wait for the chat actor.
type guard struct {
	r      *bufio.Reader
	src    io.ReadCloser
	onBad  func()
	tokens chan struct{}

	// buf is the rest of the line being handed over (Read's goroutine only).
	buf []byte

	// mu guards bad.
	mu  sync.Mutex
	bad error
	// closed is closed by close: a waiting Read gives up.
	closed    chan struct{}
	closeOnce sync.Once
}

func newGuard(src io.ReadCloser, onBad func()) *guard {
	return &guard{
		r:      bufio.NewReaderSize(src, 64<<10),
		src:    src,
		onBad:  onBad,
		tokens: make(chan struct{}, maxUnhandledUpdates),
		closed: make(chan struct{}),
	}
}

// handled gives back the token of one session/update notification.
func (g *guard) handled() {
	select {
	case <-g.tokens:
	default:
	}
}

func (g *guard) fault() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.bad
}

func (g *guard) close() {
	g.closeOnce.Do(func() { close(g.closed) })
	_ = g.src.Close()
}

// wireMessage is what guard reads of a line.
type wireMessage struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id"`
	Method  string           `json:"method"`
	Params  json.RawMessage  `json:"params"`
	Result  json.RawMessage  `json:"result"`
	Error   json.RawMessage  `json:"error"`
}

func (g *guard) Read(p []byte) (int, error) {
	for len(g.buf) == 0 {
		line, err := g.readLine()
		if err != nil {
			return 0, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var m wireMessage
		if err := json.Unmarshal(line, &m); err != nil || (m.Method == "" && m.ID == nil) {
			return 0, g.fail(fmt.Errorf("the agent wrote something that is not JSON-RPC: %q", agentproc.Clip(string(line), 200)))
		}
		if m.ID == nil && m.Method == acpsdk.ClientMethodSessionUpdate {
			var n acpsdk.SessionNotification
			// Only an update the SDK will hand to the client takes a token;
			// the SDK logs and drops one it cannot decode.
			if json.Unmarshal(m.Params, &n) == nil && n.Validate() == nil {
				select {
				case g.tokens <- struct{}{}:
				case <-g.closed:
					return 0, io.EOF
				}
			}
		}
		g.buf = append(line, '\n')
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	return n, nil
}

func (g *guard) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := g.r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLine {
			return nil, g.fail(fmt.Errorf("the agent wrote a line of more than %d bytes", maxLine))
		}
		if err == nil {
			return bytes.TrimRight(line, "\r\n"), nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 && errors.Is(err, io.EOF) {
			return bytes.TrimRight(line, "\r\n"), nil
		}
		return nil, err
	}
}

func (g *guard) fail(err error) error {
	g.mu.Lock()
	if g.bad == nil {
		g.bad = err
	}
	g.mu.Unlock()
	g.onBad()
	return err
}

// wireOut is the agent's stdin as the SDK writes it (one whole message a
// Write). It counts the permission answers written as cancelled, so a
// stop can send session/cancel only once they are out.
type wireOut struct {
	w io.Writer
	// mu guards cancelled; changed is signalled on it.
	mu        sync.Mutex
	changed   *sync.Cond
	cancelled int
}

func newWireOut(w io.Writer) *wireOut {
	o := &wireOut{w: w}
	o.changed = sync.NewCond(&o.mu)
	return o
}

var cancelledOutcome = []byte(`"outcome":{"outcome":"cancelled"}`)

func (o *wireOut) Write(b []byte) (int, error) {
	n, err := o.w.Write(b)
	if bytes.Contains(b, cancelledOutcome) {
		o.mu.Lock()
		o.cancelled++
		o.changed.Broadcast()
		o.mu.Unlock()
	}
	return n, err
}

// count is how many cancelled permission answers are out.
func (o *wireOut) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cancelled
}

// awaitCancelled waits until want cancelled permission answers are out,
// or d has passed.
func (o *wireOut) awaitCancelled(want int, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	timer := time.AfterFunc(d, func() {
		o.mu.Lock()
		o.changed.Broadcast()
		o.mu.Unlock()
	})
	defer timer.Stop()
	deadline := time.Now().Add(d)
	for o.cancelled < want && time.Now().Before(deadline) {
		o.changed.Wait()
	}
}
