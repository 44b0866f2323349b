package acp

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/ahpd/ahpd/internal/agent/agentproc"
)

// stateDirEnv are the variables by which an ACP agent's entry may move
// the agent's state: each one the entry's own env sets to an absolute path
// is the agent's to write when sandboxed (made if missing, since the
// kernel can grant only what exists). The daemon's own environment is not
// read for them: its XDG folders hold other programs' settings.
var stateDirEnv = []string{"CODEX_HOME", "COPILOT_HOME", "CLAUDE_CONFIG_DIR",
	"XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"}

// homeStateDirs are where the known ACP agents keep their state under
// HOME when their entry names no other place: Gemini CLI ~/.gemini (under
// GEMINI_CLI_HOME when set), Codex ~/.codex, Copilot CLI ~/.copilot.
var homeStateDirs = map[string]string{"gemini": ".gemini", "codex-acp": ".codex", "codex": ".codex", "copilot": ".copilot"}

// sandboxPaths are what an ACP agent needs when its session is sandboxed
// (agent.Info.SandboxWrite, SandboxRead): the npm cache under the HOME it
// gets (npx-run adapters), the state folders its entry's env names and
// the one the known agents keep under HOME, and its installation to read.
// An adapter that keeps state elsewhere is given it in the config's
// sandbox.backends.<provider>.
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
	own := map[string]string{}
	for _, kv := range a.opts.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			own[k] = v
		}
	}
	for _, k := range stateDirEnv {
		if dir := own[k]; filepath.IsAbs(dir) {
			_ = os.MkdirAll(dir, 0o700)
			write = append(write, dir)
		}
	}
	bin, err := a.binary()
	if err == nil {
		read = agentproc.InstallPaths(bin)
	}
	if sub, ok := homeStateDirs[filepath.Base(bin)]; ok && err == nil {
		base := home
		if g := own["GEMINI_CLI_HOME"]; sub == ".gemini" && filepath.IsAbs(g) {
			base = g
		}
		if base != "" && !(sub == ".codex" && own["CODEX_HOME"] != "") && !(sub == ".copilot" && own["COPILOT_HOME"] != "") {
			write = append(write, filepath.Join(base, sub))
		}
	}
	return write, read
}
