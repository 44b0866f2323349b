package claude

import (
	"log/slog"

	"github.com/ahpd/ahpd/internal/agent/agentproc"
)

// process is one running CLI; agentproc has its lifecycle (start, stdin
// queue, bounded stdout lines, close and kill), claude only the wire.
type process = agentproc.Proc

// stdinQueue bounds the stdin lines waiting for the CLI to read them.
const stdinQueue = 1 << 16

// startProcess starts the CLI with args. handleLine gets every stdout line
// and processExited is called once the process has been reaped; both run
// on the reader goroutine.
func (c *conversation) startProcess(args []string) (*process, error) {
	p, err := agentproc.Start(agentproc.Spec{
		Name: "claude", Bin: c.bin, Args: args, Dir: c.cwd, Env: c.opts.environ(),
		Sandbox: agentproc.ToCmd(c.params.Sandbox), Ledger: c.opts.Ledger,
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

// writeLine queues one stdin line, saying when it was dropped.
func (c *conversation) writeLine(p *process, line []byte) {
	if err := p.WriteLine(line); err != nil {
		c.log.Warn("claude stdin write dropped", "err", err)
	}
}
