package chat

import (
	"fmt"
	"os/exec"
	"slices"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/sandbox"
	"github.com/ahpd/ahpd/internal/sessionconfig"
)

// sandboxWrap is what every process of this chat's session starts
// through (issue 36): the session's sandbox mode (its config, else the
// daemon's default) applied to its folders, its private temp dir and, for
// the agent's own process, the paths its backend declared (info). nil
// when the session is not sandboxed. An error, when the mode cannot run
// here or the folders cannot be confined, means nothing may start: a
// chosen sandbox is never dropped. The rules applied go to the chat's log.
func (c *Chat) sandboxWrap(what string, info agent.Info) (func(*exec.Cmd) error, error) {
	site := c.cfg.Env.Sandbox
	mode := sandbox.Off
	if site != nil {
		mode = site.Default
	}
	if c.cfg.SessionConfig != nil {
		if v, ok := c.cfg.SessionConfig()[sessionconfig.KeySandbox].(string); ok {
			m, err := sandbox.ParseMode(v)
			if err != nil {
				return nil, err
			}
			mode = m
		}
	}
	if !mode.Confines() {
		return nil, nil
	}
	backend := sandbox.Paths{ReadWrite: slices.Clone(info.SandboxWrite), ReadOnly: slices.Clone(info.SandboxRead)}
	p, err := site.Policy(mode, c.cfg.Session, c.cfg.Provider, c.cfg.Directories, backend)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	c.log.Info("sandbox applied", "to", what, "mode", string(p.Mode), "write", p.ReadWrite, "read", p.ReadOnly, "tmpdir", p.TempDir)
	return site.Wrapper(p), nil
}
