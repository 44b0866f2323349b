// Package terminal runs the host's terminals: a real pseudo-terminal
// (creack/pty) per terminal channel, its state reduced by reduce.Terminal
// and every change published on the bus under the terminal's own lock, so
// a snapshot and the actions after it agree. A terminal belongs to the
// host, not to the connection that opened it: it runs until it is
// disposed or the daemon stops. What it keeps is bounded: Scrollback bytes
// of output, and a command terminal that exited is let go once newer ones
// push it out.
package terminal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/ahpd/ahpd/internal/reduce"
	"github.com/creack/pty"
)

const (
	// Scrollback bounds the output a terminal keeps in its state (the
	// snapshot a subscriber gets): 1 MiB, about 10,000 full lines. Past it
	// the oldest output goes, so a terminal printing forever holds no
	// more.
	Scrollback = 1 << 20
	// MaxTerminals bounds the terminals open at once.
	MaxTerminals = 256
	// keepExited is how many exited ! command terminals stay subscribable.
	keepExited = 64
	// readChunk is the most output one terminal/data action carries.
	readChunk = 32 << 10
	// inputQueue bounds input waiting for a child that does not read.
	inputQueue = 64
	// drainWait is how long output may still come after the process
	// exited (a child it left holding the pty).
	drainWait = 2 * time.Second
	// hangupGrace is how long a disposed terminal's processes have after
	// SIGHUP before they are killed.
	hangupGrace = time.Second
)

// ErrExists is returned by Open for a URI that is already a terminal.
var ErrExists = errors.New("terminal exists")

// ErrFull is returned by Open past MaxTerminals.
var ErrFull = errors.New("too many terminals")

// Spec is a terminal to open.
type Spec struct {
	URI   string
	Title string
	Claim ahp.TerminalClaim
	// Dir is the working directory: an existing local path, already
	// confined by the caller.
	Dir        string
	Cols, Rows int
	// Command runs instead of the user's interactive shell (a ! command).
	Command []string
	// Opener is the principal (sender reference) that opened it.
	Opener string
	// Wrap, when set, is applied to the process before it starts: the
	// session's sandbox (internal/sandbox). An error refuses the terminal.
	Wrap func(cmd *exec.Cmd) error
}

// Registry holds the daemon's terminals.
type Registry struct {
	bus *bus.Bus
	log *slog.Logger

	// mu guards terms, exited, onChange and closed.
	mu       sync.Mutex
	terms    map[string]*Terminal
	exited   []string // exited command terminals, oldest first
	onChange func()
	closed   bool

	// changeMu runs one onChange at a time, so the root's list is read
	// and applied in one step: a list read before a terminal changed is
	// never applied after the list read since.
	changeMu sync.Mutex
}

// NewRegistry returns an empty registry publishing on b.
func NewRegistry(b *bus.Bus, log *slog.Logger) *Registry {
	if log == nil {
		log = slog.Default()
	}
	return &Registry{bus: b, log: log, terms: make(map[string]*Terminal)}
}

// OnChange sets what runs when the set of terminals, or what the root
// says of one (title, claim, exit), changes: the host tells root watchers
// (root/terminalsChanged). fn may run with a terminal's lock held, so that
// the root agrees with the terminal by the time the terminal says what
// changed; it may call Infos, which takes no terminal's lock.
func (r *Registry) OnChange(fn func()) {
	r.mu.Lock()
	r.onChange = fn
	r.mu.Unlock()
}

func (r *Registry) changed() {
	r.mu.Lock()
	fn := r.onChange
	r.mu.Unlock()
	if fn != nil {
		r.changeMu.Lock()
		defer r.changeMu.Unlock()
		fn()
	}
}

// Get returns the terminal of uri.
func (r *Registry) Get(uri string) (*Terminal, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.terms[uri]
	return t, ok
}

// Infos lists the terminals for RootState.terminals, by URI.
func (r *Registry) Infos() []ahp.TerminalInfo {
	r.mu.Lock()
	all := make([]*Terminal, 0, len(r.terms))
	for _, t := range r.terms {
		all = append(all, t)
	}
	r.mu.Unlock()
	out := make([]ahp.TerminalInfo, 0, len(all))
	for _, t := range all {
		if info := t.info.Load(); info != nil {
			out = append(out, *info)
		}
	}
	slices.SortFunc(out, func(a, b ahp.TerminalInfo) int {
		switch {
		case a.Resource < b.Resource:
			return -1
		case a.Resource > b.Resource:
			return 1
		}
		return 0
	})
	return out
}

// Open starts a terminal.
func (r *Registry) Open(s Spec) (*Terminal, error) {
	if s.Cols <= 0 {
		s.Cols = 80
	}
	if s.Rows <= 0 {
		s.Rows = 24
	}
	r.mu.Lock()
	switch {
	case r.closed:
		r.mu.Unlock()
		return nil, errors.New("open terminal: the daemon is stopping")
	case r.terms[s.URI] != nil:
		r.mu.Unlock()
		return nil, fmt.Errorf("open terminal %s: %w", s.URI, ErrExists)
	case len(r.terms) >= MaxTerminals:
		r.mu.Unlock()
		return nil, fmt.Errorf("open terminal %s: %w (%d open)", s.URI, ErrFull, MaxTerminals)
	}
	t := &Terminal{reg: r, uri: s.URI, opener: s.Opener, command: s.Command != nil,
		input: make(chan []byte, inputQueue), exited: make(chan struct{}), done: make(chan struct{})}
	cols, rows := s.Cols, s.Rows
	t.st = ahp.TerminalState{Title: s.Title, Cwd: s.Dir, Cols: &cols, Rows: &rows, Claim: s.Claim,
		Lifecycle: &ahp.TerminalLifecycle{Status: ahp.TerminalStatusRunning}}
	t.refreshInfo()
	r.terms[s.URI] = t // reserved under mu, so a second Open of the URI fails
	r.mu.Unlock()
	if err := t.start(s); err != nil {
		r.mu.Lock()
		delete(r.terms, s.URI)
		r.mu.Unlock()
		return nil, err
	}
	r.changed()
	return t, nil
}

// Dispose kills the terminal of uri and forgets it.
func (r *Registry) Dispose(uri string) error {
	r.mu.Lock()
	t, ok := r.terms[uri]
	delete(r.terms, uri)
	r.exited = slices.DeleteFunc(r.exited, func(u string) bool { return u == uri })
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("dispose terminal %s: %w", uri, ahp.ErrResourceNotFound)
	}
	t.kill()
	r.bus.DropChannel(uri)
	r.changed()
	return nil
}

// Close kills every terminal and refuses new ones.
func (r *Registry) Close() {
	r.mu.Lock()
	r.closed = true
	all := make([]*Terminal, 0, len(r.terms))
	for _, t := range r.terms {
		all = append(all, t)
	}
	r.terms = map[string]*Terminal{}
	r.mu.Unlock()
	for _, t := range all {
		t.kill()
	}
}

// noteExited lets go of the oldest exited command terminals past
// keepExited.
func (r *Registry) noteExited(t *Terminal) {
	if !t.command {
		return
	}
	r.mu.Lock()
	if r.terms[t.uri] != t {
		r.mu.Unlock()
		return
	}
	r.exited = append(r.exited, t.uri)
	var drop []string
	for len(r.exited) > keepExited {
		drop = append(drop, r.exited[0])
		r.exited = r.exited[1:]
	}
	r.mu.Unlock()
	for _, u := range drop {
		_ = r.Dispose(u)
	}
}

// Terminal is one running (or exited) terminal.
type Terminal struct {
	reg     *Registry
	uri     string
	opener  string
	command bool

	// mu guards st and kept; every change is published under it.
	mu   sync.Mutex
	st   ahp.TerminalState
	kept int // bytes of output in st.Content
	// info is the terminal's entry of RootState.terminals, stored under mu
	// (refreshInfo) each time st's title, claim or lifecycle changes;
	// Infos reads it without mu. Never changed once stored.
	info atomic.Pointer[ahp.TerminalInfo]

	ptmx  *os.File
	cmd   *exec.Cmd
	input chan []byte
	// exited is closed once the process exited and its output was read;
	// code is its status then.
	exited   chan struct{}
	code     int
	done     chan struct{} // closed by kill
	killOnce sync.Once
}

// URI is the terminal's channel.
func (t *Terminal) URI() string { return t.uri }

// Opener is the principal that opened the terminal.
func (t *Terminal) Opener() string { return t.opener }

// Claim is who holds the terminal now.
func (t *Terminal) Claim() ahp.TerminalClaim {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.st.Claim
}

// refreshInfo stores the root's entry of the terminal as st says it now:
// title, claim and lifecycle, and 1.0's exitCode read off the lifecycle.
// t.mu is held. The entry shares st's lifecycle, which the reducer
// replaces and never writes through.
func (t *Terminal) refreshInfo() {
	claim := t.st.Claim
	info := &ahp.TerminalInfo{Resource: t.uri, Title: t.st.Title, Claim: &claim, Lifecycle: t.st.Lifecycle}
	if l := t.st.Lifecycle; l != nil && l.Status == ahp.TerminalStatusExited {
		info.ExitCode = l.ExitCode
	}
	t.info.Store(info)
}

func (t *Terminal) start(s Spec) error {
	argv := s.Command
	if argv == nil {
		sh := os.Getenv("SHELL")
		if sh == "" {
			sh = "/bin/sh"
		}
		argv = []string{sh}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "COLUMNS=", "LINES=")
	if s.Wrap != nil {
		if err := s.Wrap(cmd); err != nil {
			return fmt.Errorf("open terminal %s: sandbox %s: %w", s.URI, argv[0], err)
		}
	}
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(s.Cols), Rows: uint16(s.Rows)})
	if err != nil {
		return fmt.Errorf("open terminal %s: start %s in %s: %w", s.URI, argv[0], s.Dir, err)
	}
	// Under mu: Dispatch, kill and Interrupt may run on another goroutine
	// as soon as Open has reserved the URI.
	t.mu.Lock()
	t.ptmx, t.cmd = ptmx, cmd
	t.mu.Unlock()
	readDone := make(chan struct{})
	go t.readLoop(readDone)
	go t.writeLoop()
	go t.waitLoop(readDone)
	return nil
}

// readLoop publishes the process's output. Owned by this goroutine: the
// partial UTF-8 sequence carried between reads. A pty read gives at most a
// few KiB; what reads gave while the last batch was published goes out as
// one action (up to readChunk), so a fast printer costs few actions.
func (t *Terminal) readLoop(done chan<- struct{}) {
	defer close(done)
	chunks := make(chan []byte, 16)
	go func() {
		// Owned by this goroutine: the pty's read side.
		defer close(chunks)
		for {
			buf := make([]byte, 4096)
			n, err := t.ptmx.Read(buf)
			if n > 0 {
				chunks <- buf[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	var carry []byte
	for chunk := range chunks {
		batch := append(carry, chunk...)
	gather:
		for len(batch) < readChunk {
			select {
			case more, ok := <-chunks:
				if !ok {
					break gather
				}
				batch = append(batch, more...)
			default:
				break gather
			}
		}
		cut := validPrefix(batch)
		if cut > 0 {
			t.output(string(batch[:cut]))
		}
		carry = append([]byte(nil), batch[cut:]...)
	}
	if len(carry) > 0 {
		t.output(string(carry))
	}
}

// validPrefix is how much of b is whole UTF-8: an incomplete sequence at
// the end waits for the next read (at most 3 bytes).
func validPrefix(b []byte) int {
	for i := len(b); i > 0 && i > len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i-1]) {
			if !utf8.FullRune(b[i-1:]) {
				return i - 1
			}
			break
		}
	}
	return len(b)
}

// output reduces data into the state, trims the scrollback and publishes.
func (t *Terminal) output(data string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := ahp.TerminalData{Data: data}
	reduce.Terminal(&t.st, a)
	t.kept += len(data)
	if t.kept > Scrollback {
		t.kept -= trimFront(t.st.Content, t.kept-Scrollback, &t.st.Content)
	}
	t.reg.bus.Publish(t.uri, a, nil)
}

// trimFront drops n bytes (or a little more, to a rune boundary) of output
// from the front of content, into *out, and returns how many went.
func trimFront(content []ahp.TerminalContentPart, n int, out *[]ahp.TerminalContentPart) int {
	dropped := 0
	parts := slices.Clone(content)
	for len(parts) > 0 && n > 0 {
		p := &parts[0]
		text := &p.Value
		if p.Type == ahp.TerminalPartCommand {
			text = &p.Output
		}
		if len(*text) <= n && len(parts) > 1 {
			dropped += len(*text)
			n -= len(*text)
			parts = parts[1:]
			continue
		}
		cut := min(n, len(*text))
		for cut < len(*text) && !utf8.RuneStart((*text)[cut]) {
			cut++
		}
		*text = (*text)[cut:]
		dropped += cut
		n = 0
	}
	*out = parts
	return dropped
}

// writeLoop writes input to the pty. Owned by this goroutine: the pty's
// write side, so a child that reads nothing blocks only this.
func (t *Terminal) writeLoop() {
	for {
		select {
		case <-t.done:
			return
		case b := <-t.input:
			if _, err := t.ptmx.Write(b); err != nil {
				return
			}
		}
	}
}

// waitLoop waits for the process, lets its output drain, then says its
// exit code.
func (t *Terminal) waitLoop(readDone <-chan struct{}) {
	err := t.cmd.Wait()
	code := 0
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	default:
		code = -1
	}
	select {
	case <-readDone:
	case <-time.After(drainWait):
	case <-t.done:
	}
	t.mu.Lock()
	c := code
	a := ahp.TerminalExited{ExitCode: &c}
	reduce.Terminal(&t.st, a)
	t.code = code
	// The root lists the terminal exited, with its code, until it is
	// disposed, and says so before the terminal does: a client that reads
	// the root on terminal/exited finds the two agreeing.
	t.refreshInfo()
	t.reg.changed()
	t.reg.bus.Publish(t.uri, a, nil)
	t.mu.Unlock()
	close(t.exited)
	t.ptmx.Close() // the pty of an exited process has nothing more to say
	t.reg.noteExited(t)
}

// kill hangs the terminal up: SIGHUP to its process group, SIGKILL after
// hangupGrace, and the pty closed.
func (t *Terminal) kill() {
	t.killOnce.Do(func() {
		close(t.done)
		ptmx, cmd := t.proc()
		if cmd == nil || cmd.Process == nil {
			return
		}
		pid := cmd.Process.Pid
		_ = syscall.Kill(-pid, syscall.SIGHUP)
		go func() {
			select {
			case <-t.exited:
			case <-time.After(hangupGrace):
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				<-t.exited
			}
			ptmx.Close()
		}()
	})
}

// Kill hangs the terminal up now (a command stopped, a chat closed); it
// stays subscribable until disposed.
func (t *Terminal) Kill() { t.kill() }

// Exited is closed once the process exited and its output was read.
func (t *Terminal) Exited() <-chan struct{} { return t.exited }

// Wait waits for the process; the exit code, or ctx's error.
func (t *Terminal) Wait(ctx context.Context) (int, error) {
	select {
	case <-t.exited:
		return t.code, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Interrupt sends SIGINT to the terminal's foreground process group (a
// stopped ! command).
func (t *Terminal) Interrupt() {
	if _, cmd := t.proc(); cmd != nil && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	}
}

// proc is the terminal's pty and process, nil until it started.
func (t *Terminal) proc() (*os.File, *exec.Cmd) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ptmx, t.cmd
}

// Snapshot subscribes sub to the terminal and returns its state.
func (t *Terminal) Snapshot(sub bus.Subscriber) (ahp.Snapshot, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	seq := t.reg.bus.Subscribe(sub, t.uri)
	raw, err := json.Marshal(t.st)
	if err != nil {
		return ahp.Snapshot{}, fmt.Errorf("marshal terminal %s: %w", t.uri, err)
	}
	return ahp.Snapshot{Resource: t.uri, State: json.RawMessage(raw), FromSeq: seq}, nil
}

// Text is the output the terminal keeps, as plain text.
func (t *Terminal) Text() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []byte
	for _, p := range t.st.Content {
		if p.Type == ahp.TerminalPartCommand {
			out = append(out, p.Output...)
		} else {
			out = append(out, p.Value...)
		}
	}
	return string(out)
}

// ErrInputFull is returned by Dispatch when input waits unread.
var ErrInputFull = errors.New("the terminal's input is full: its process reads nothing")

// Dispatch carries out a client's terminal action: input goes to the pty,
// a resize to the pty and the state, a claim, title or clear to the state;
// each is then published (echoed) with origin.
func (t *Terminal) Dispatch(a ahp.Action, origin *ahp.ActionOrigin) error {
	switch a := a.(type) {
	case ahp.TerminalInput:
		select {
		case <-t.done:
			return fmt.Errorf("terminal %s is disposed", t.uri)
		case t.input <- []byte(a.Data):
		default:
			return ErrInputFull
		}
	case ahp.TerminalResized:
		if a.Cols <= 0 || a.Rows <= 0 || a.Cols > 0xffff || a.Rows > 0xffff {
			return fmt.Errorf("terminal/resized: %dx%d is not a size", a.Cols, a.Rows)
		}
	case ahp.TerminalClaimed:
		if a.Claim.Kind != "client" && a.Claim.Kind != "session" {
			return fmt.Errorf("terminal/claimed: claim kind %q is neither client nor session", a.Claim.Kind)
		}
	case ahp.TerminalTitleChanged, ahp.TerminalCleared:
	default:
		return fmt.Errorf("%s is not an action a client sends a terminal", a.ActionType())
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := a.(ahp.TerminalResized); ok {
		// The pty and the state take a size in one step: two resizes
		// (from two connections) cannot reach the pty in one order and
		// the state in the other, leaving the child a size nobody sees.
		if err := pty.Setsize(t.ptmx, &pty.Winsize{Cols: uint16(r.Cols), Rows: uint16(r.Rows)}); err != nil {
			return fmt.Errorf("resize terminal %s: %w", t.uri, err)
		}
	}
	reduce.Terminal(&t.st, a)
	switch a.(type) {
	case ahp.TerminalCleared:
		t.kept = 0
	case ahp.TerminalClaimed, ahp.TerminalTitleChanged:
		// The root takes the new claim or title before the echo goes
		// out, so a client that reads the root on the echo finds it.
		t.refreshInfo()
		t.reg.changed()
	}
	t.reg.bus.Publish(t.uri, a, origin)
	return nil
}
