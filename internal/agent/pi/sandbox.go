package pi

import (
	"os"
	"path/filepath"

	"github.com/ahpd/ahpd/internal/agent/agentproc"
)

// sandboxPaths are what pi needs when its session is sandboxed
// (agent.Info.SandboxWrite, SandboxRead): its agent dir (models,
// settings, sessions) and the npm cache under the HOME it gets; and its
// installation to read.
func (o Options) sandboxPaths() (write, read []string) {
	write = []string{o.agentDir()}
	home := o.lookupEnv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home != "" {
		write = append(write, filepath.Join(home, ".npm"))
	}
	if bin, err := o.binary(); err == nil {
		read = agentproc.InstallPaths(bin)
	}
	return write, read
}
