package claude

import (
	"os"
	"path/filepath"

	"github.com/ahpd/ahpd/internal/agent/agentproc"
)

// sandboxPaths are what the CLI needs when its session is sandboxed
// (agent.Info.SandboxWrite, SandboxRead): its config dir (sessions,
// projects, settings), ~/.claude.json and its backup, its caches and
// state, all under the HOME the CLI gets; and its installation to read.
func (o Options) sandboxPaths() (write, read []string) {
	home := o.lookupEnv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	write = []string{o.configDir()}
	if home != "" {
		write = append(write,
			filepath.Join(home, ".claude"),
			filepath.Join(home, ".claude.json"),
			filepath.Join(home, ".claude.json.backup"),
			filepath.Join(home, ".cache", "claude"),
			filepath.Join(home, ".cache", "claude-cli-nodejs"),
			filepath.Join(home, ".local", "state", "claude"),
			filepath.Join(home, ".local", "share", "claude"))
	}
	if bin, err := o.binary(); err == nil {
		read = agentproc.InstallPaths(bin)
	}
	return write, read
}
