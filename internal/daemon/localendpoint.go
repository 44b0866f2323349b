package daemon

import (
	"os"
	"path/filepath"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/localendpoint"
)

// VSCodeUserDataFound are this user's existing VS Code user-data folders
// (every known build, per OS, as VS Code resolves them): where ahpd serve
// publishes its entry when the config names none. It is ahpd serve's to
// call, not Start's, so a daemon a test starts writes into no real VS Code
// folder.
func VSCodeUserDataFound() []string {
	var out []string
	for _, dir := range localendpoint.UserDataDirs(localendpoint.ProcessEnv()) {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			out = append(out, dir)
		}
	}
	return out
}

// localEndpointTarget is where the entry goes: the config's folders (made
// when missing: the user named them), else the ones ahpd serve found
// (only existing ones), else nowhere.
type localEndpointTarget struct {
	dirs     []string
	explicit bool
}

func localEndpointDirs(cfg Config, o Options) localEndpointTarget {
	switch {
	case cfg.NoLocalEndpoint:
		return localEndpointTarget{}
	case len(cfg.VSCodeUserData) > 0:
		dirs := make([]string, 0, len(cfg.VSCodeUserData))
		for _, d := range cfg.VSCodeUserData {
			if abs, err := filepath.Abs(d); err == nil {
				dirs = append(dirs, abs)
			}
		}
		return localEndpointTarget{dirs: dirs, explicit: true}
	default:
		return localEndpointTarget{dirs: o.VSCodeUserData}
	}
}

// publishLocalEndpoints puts the daemon's entry in each target folder's
// registry, after removing the entries a dead ahpd left there. A folder
// that cannot take it is logged and skipped: the daemon serves anyway, as
// VS Code's own hosts do when they cannot publish. The listener must accept
// on 127.0.0.1 (localendpoint.PublishPort), else nothing is published.
func (d *Daemon) publishLocalEndpoints(target localEndpointTarget) {
	if len(target.dirs) == 0 {
		return
	}
	port, err := localendpoint.PublishPort(d.Addr())
	if err != nil {
		d.log.Info("not published in VS Code's local endpoint registry", "reason", err)
		return
	}
	entry := localendpoint.NewStandalone(os.Getpid(), port, ahp.ProtocolVersion, d.localToken)
	for _, dir := range target.dirs {
		if target.explicit {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				d.log.Warn("VS Code local endpoint", "dir", dir, "err", err)
				continue
			}
		}
		removed, err := localendpoint.Prune(dir, localendpoint.Alive)
		for _, p := range removed {
			d.log.Info("removed a dead agent host's local endpoint entry", "path", p)
		}
		if err != nil {
			d.log.Warn("VS Code local endpoint: prune", "dir", dir, "err", err)
			continue
		}
		p, err := localendpoint.Publish(dir, entry)
		if err != nil {
			d.log.Warn("VS Code local endpoint: not published", "dir", dir, "err", err)
			continue
		}
		d.localEndpoints = append(d.localEndpoints, p)
		d.log.Info("published in VS Code's local endpoint registry", "path", p)
	}
}

// LocalEndpoints are the registry files this daemon wrote (until it stops).
func (d *Daemon) LocalEndpoints() []string {
	return append([]string(nil), d.localEndpoints...)
}

// RemoveLocalEndpoints removes the daemon's registry files, once: the first
// step of Shutdown and of Close (a stopping daemon is found no more), and
// what ahpd serve does before exiting at a second signal. Later calls wait
// for the first to finish and do nothing.
func (d *Daemon) RemoveLocalEndpoints() {
	d.removeLocal.Do(func() {
		for _, p := range d.localEndpoints {
			if err := localendpoint.Remove(p); err != nil {
				d.log.Warn("VS Code local endpoint", "err", err)
			}
		}
	})
}
