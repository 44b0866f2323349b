package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/ahpd/ahpd/internal/agent/agentproc"
)

// maxLine bounds one JSON-RPC line from the agent: the SDK reads what
// guard hands it with a scanner of this bound, so a longer line could not
// pass (agentproc.MaxLine is the bound of the other CLIs).
const maxLine = 10 << 20

// faultWait bounds how long fault waits for the reap to say the exit.
const faultWait = 2 * time.Second

// maxUnhandledUpdates bounds the session/update notifications read from
// the agent and not yet handled. The SDK queues notifications (1024 at
// most, then it drops the connection); stopping to read at this bound
// keeps a slow chat actor from ever reaching the SDK's, so a slow reader
// slows the agent down instead of failing the turn.
const maxUnhandledUpdates = 512

// process is one running agent and the client connection over its stdio;
// agentproc has the process's lifecycle.
type process struct {
	*agentproc.Proc
	wire  *wireOut
	guard *guard
	conn  *acpsdk.ClientSideConnection
}

// startProcess starts the agent in dir and connects client to it;
// sandbox, when set, makes it start through the session's sandbox
// launcher (agent.OpenParams.Sandbox).
func startProcess(bin string, args []string, dir string, env []string, log *slog.Logger, ledger agentproc.Ledger,
	sandbox func(*exec.Cmd) error, client acpsdk.Client) (*process, error) {
	proc, err := agentproc.Start(agentproc.Spec{
		Name: "acp agent", Bin: bin, Args: args, Dir: dir, Env: env, Sandbox: sandbox,
		Ledger: ledger, Log: log, StderrLevel: slog.LevelDebug,
	})
	if err != nil {
		return nil, err
	}
	p := &process{Proc: proc}
	// A line that is not JSON-RPC kills the group without waiting: the
	// guard runs on the reader the reap waits for.
	p.guard = newGuard(proc.Stdout(), proc.ReadStopped(), func() { proc.Signal(os.Kill) })
	p.wire = newWireOut(proc.Stdin())
	p.conn = acpsdk.NewClientSideConnection(client, p.wire, p.guard)
	p.conn.SetLogger(log)
	go func() {
		// Reaps the process once its stdout is done (exec's rule: Wait
		// after the reads).
		<-p.conn.Done()
		proc.Reap()
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

// fault describes why the connection ended: garbage on stdout, or the
// process's exit, with the end of its stderr.
func (p *process) fault() error {
	if err := p.guard.fault(); err != nil {
		return err
	}
	select {
	case <-p.Exited():
	case <-time.After(faultWait):
	}
	msg := "the agent exited"
	select {
	case <-p.Exited():
		if err := p.WaitErr(); err != nil {
			msg = fmt.Sprintf("the agent exited: %v", err)
		}
	default:
		msg = "the agent closed its stdout"
	}
	if tail := p.Stderr().Tail(); tail != "" {
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
	lines  *agentproc.LineReader
	onBad  func()
	tokens chan struct{}

	// buf is the rest of the line being handed over (Read's goroutine only).
	buf []byte

	// mu guards bad.
	mu  sync.Mutex
	bad error
	// stopped is closed when the process stops being read: a waiting
	// Read gives up.
	stopped <-chan struct{}
}

func newGuard(src io.Reader, stopped <-chan struct{}, onBad func()) *guard {
	return &guard{
		lines:   agentproc.NewLineReader(src, maxLine),
		onBad:   onBad,
		tokens:  make(chan struct{}, maxUnhandledUpdates),
		stopped: stopped,
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
				case <-g.stopped:
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
	line, err := g.lines.Next()
	if errors.Is(err, agentproc.ErrLineTooLong) {
		return nil, g.fail(fmt.Errorf("the agent wrote a line of more than %d bytes", maxLine))
	}
	return line, err
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
