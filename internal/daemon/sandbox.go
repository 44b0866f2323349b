package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/ahpd/ahpd/internal/sandbox"
)

// sandboxSite is how this daemon confines its sessions' processes
// (issue 36): the launcher is this very executable (ahpd sandbox-exec,
// or a test binary whose TestMain runs sandbox.RunIfLauncher), each
// session's temp dir is under <data dir>/tmp, and the data dir, the
// config file and the token file are what no sandboxed process may read.
func sandboxSite(cfg Config, log *slog.Logger) (*sandbox.Site, error) {
	mode, err := sandbox.ParseMode(cfg.Sandbox.Default)
	if err != nil {
		return nil, fmt.Errorf("%w: sandbox.default: %v", ErrUsage, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: find the launcher (this executable): %w", err)
	}
	home, _ := os.UserHomeDir()
	secrets := []string{cfg.DataDir, cfg.ConnectionTokenFile, cfg.ConfigFile, DefaultConfigFile()}
	site := sandbox.NewSite(sandbox.Site{
		Exe:      exe,
		TempRoot: filepath.Join(cfg.DataDir, "tmp"),
		Secrets:  secrets,
		Home:     home,
		Default:  mode,
		Backends: cfg.Sandbox.Backends,
	})
	abi, why := site.ABI()
	if ok, reason := site.Available(mode); !ok {
		// Not a silent downgrade: every session that takes the default is
		// refused at createSession with this reason.
		log.Warn("sandbox.default cannot run here; sessions that take it are refused", "mode", string(mode), "reason", reason)
	} else {
		log.Info("sandbox", "default", string(mode), "landlockABI", abi, "missing", why)
	}
	return site, nil
}
