package acp

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/ahpd/ahpd/internal/agent/agentproc"
)

// sandboxPaths are what an ACP agent needs when its session is sandboxed
// (agent.Info.SandboxWrite, SandboxRead): the npm cache under the HOME it
// gets (npx-run adapters) and its installation to read. An adapter that
// keeps state elsewhere (Claude's keeps ~/.claude) is given it in the
// config's sandbox.backends.<provider>.
func (a *Agent) sandboxPaths() (write, read []string) {
	home := ""
	for _, kv := range a.environ() {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home != "" {
		write = append(write, filepath.Join(home, ".npm"))
	}
	if bin, err := a.binary(); err == nil {
		read = agentproc.InstallPaths(bin)
	}
	return write, read
}
