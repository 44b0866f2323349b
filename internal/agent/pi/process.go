package pi

import (
	"log/slog"

	"github.com/ahpd/ahpd/internal/agent/agentproc"
)

// process is one running pi; agentproc has its lifecycle (start, stdin
// queue, bounded stdout lines, close and kill), pi only the wire.
type process = agentproc.Proc

// stdinQueue bounds the stdin lines waiting for pi to read them; a command
// past it is refused (the conversation reports it), never dropped.
const stdinQueue = 1024

// startProcess starts pi with args. Its stdout is split on LF only (pi's
// framing: U+2028 is no separator); handleLine gets every line and
// processExited is called once the process has been reaped, both on the
// reader goroutine.
func (c *conversation) startProcess(args []string) (*process, error) {
	p, err := agentproc.Start(agentproc.Spec{
		Name: "pi", Bin: c.bin, Args: args, Dir: c.cwd, Env: c.pi.opts.environ(),
		Sandbox: c.sandbox, Ledger: c.pi.opts.Ledger,
		Log: c.log, StderrLevel: slog.LevelInfo, StdinQueue: stdinQueue,
	})
	if err != nil {
		return nil, err
	}
	go func() {
		p.ReadLines(agentproc.MaxLine, func(line []byte) { c.handleLine(p, line) })
		c.processExited(p)
	}()
	return p, nil
}
