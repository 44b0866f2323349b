package agentproc

import (
	"path/filepath"
)

// InstallPaths are what running the CLI at bin needs to read when its
// session is sandboxed (agent.Info.SandboxRead): the directory of bin
// and, for a CLI npm installed (a link into node_modules), the whole
// node_modules tree its real file lies in, its dependencies included.
func InstallPaths(bin string) []string {
	if bin == "" {
		return nil
	}
	out := []string{filepath.Dir(bin)}
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return out
	}
	dir := filepath.Dir(real)
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		if filepath.Base(d) == "node_modules" {
			dir = d
		}
	}
	return append(out, dir)
}
