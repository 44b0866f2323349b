package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/store"
)

// check is one line of doctor's report.
type check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	// Fix says how to mend a failed check.
	Fix string `json:"fix,omitempty"`
}

// binaryAgent is a backend that runs a CLI it can name.
type binaryAgent interface {
	Binary() (string, error)
}

func newDoctor() *cobra.Command {
	var src configSource
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check that the daemon can run here, and say how to fix what cannot",
		Long: "doctor checks the configuration (valid), each agent CLI (found, and its version), the data dir\n" +
			"(writable), the port (free, or held by this data dir's daemon), the store (SQLite integrity_check) and\n" +
			"the kernel's Landlock ABI with the sandbox modes it can run (sandbox.default must be one).\n" +
			"An agent configured under agents.<name> that cannot run is a problem; a built-in one that is not\n" +
			"installed is reported with its install hint. Exit 0 when nothing is wrong, 1 otherwise.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			checks := doctor(cmd, &src)
			failed := 0
			for _, c := range checks {
				if !c.OK {
					failed++
				}
			}
			w := cmd.OutOrStdout()
			if asJSON {
				_ = json.NewEncoder(w).Encode(map[string]any{"ok": failed == 0, "checks": checks})
			} else {
				for _, c := range checks {
					mark := "ok  "
					if !c.OK {
						mark = "FAIL"
					}
					fmt.Fprintf(w, "%s %-14s %s\n", mark, c.Name, c.Detail)
					if c.Fix != "" {
						fmt.Fprintf(w, "     %-14s fix: %s\n", "", c.Fix)
					}
				}
			}
			if failed > 0 {
				return &exitErr{code: exitError, msg: fmt.Sprintf("doctor: %d problem(s)", failed)}
			}
			return nil
		},
	}
	addConfigFlags(cmd.Flags(), &src)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {ok, checks} as JSON")
	return cmd
}

func doctor(cmd *cobra.Command, src *configSource) []check {
	var out []check
	l, err := loadConfig(cmd, src)
	cfg := l.Config
	if err != nil {
		out = append(out, check{Name: "config", Detail: err.Error(), Fix: "correct the key named above (see `ahpd config show` and docs/DAEMON.md)"})
		cfg = daemon.Defaults()
	} else {
		file := l.File
		if file == "" {
			file = "no file, defaults and flags"
		}
		out = append(out, check{Name: "config", OK: true, Detail: "valid (" + file + ")"})
	}
	out = append(out, agentChecks(cfg)...)
	out = append(out, dataDirCheck(cfg.DataDir), portCheck(cfg), storeCheck(cfg.DataDir), sandboxCheck(cfg))
	return out
}

func agentChecks(cfg daemon.Config) []check {
	reg, err := daemon.BuiltinAgents(cfg)
	if err != nil {
		return []check{{Name: "agents", Detail: err.Error(), Fix: "correct the agents settings named above"}}
	}
	var out []check
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, p := range reg.Providers() {
		a, _ := reg.Get(p)
		_, configured := cfg.Agents[p]
		name := "agent " + p
		ba, runsCLI := a.(binaryAgent)
		if !runsCLI {
			info := a.Info(ctx)
			if info.Unavailable != "" {
				out = append(out, check{Name: name, OK: !configured, Detail: "unavailable: " + info.Unavailable, Fix: "see docs/BACKENDS.md"})
				continue
			}
			out = append(out, check{Name: name, OK: true, Detail: "built in"})
			continue
		}
		bin, err := ba.Binary()
		if err != nil {
			c := check{Name: name, OK: !configured, Detail: "not found: " + err.Error()}
			if configured {
				c.Fix = fmt.Sprintf("install it, or set agents.%s's binary/command to its path", p)
			} else {
				c.Detail += " (optional: not configured)"
			}
			out = append(out, c)
			continue
		}
		if daemon.IsACPPreset(cfg, p) {
			// An offered preset nobody configured: found is enough; its
			// version would cost a start of the CLI in the user's home.
			out = append(out, check{Name: name, OK: true, Detail: bin + " (preset)"})
			continue
		}
		out = append(out, check{Name: name, OK: true, Detail: bin + " " + cliVersion(ctx, bin)})
	}
	return out
}

// cliVersion is the first line the CLI prints for --version.
func cliVersion(ctx context.Context, bin string) string {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, bin, "--version")
	// Agent CLIs must never reach the network from here.
	c.Env = append(os.Environ(), "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1")
	b, err := c.Output()
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if err != nil && line == "" {
		return "(version unknown: " + err.Error() + ")"
	}
	return "(" + line + ")"
}

func dataDirCheck(dir string) check {
	c := check{Name: "data dir", Detail: dir}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		c.Detail += ": " + err.Error()
		c.Fix = "create it writable by this user, or choose another with --data-dir"
		return c
	}
	f, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		c.Detail += ": not writable: " + err.Error()
		c.Fix = "make it writable by this user (chown/chmod), or choose another with --data-dir"
		return c
	}
	name := f.Name()
	f.Close()
	_ = os.Remove(name)
	c.OK = true
	c.Detail += " (writable)"
	return c
}

func portCheck(cfg daemon.Config) check {
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	c := check{Name: "port", Detail: addr}
	if cfg.Port == 0 {
		c.OK, c.Detail = true, "0 (a free port is picked at start)"
		return c
	}
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		ln.Close()
		c.OK = true
		c.Detail += " (free)"
		return c
	}
	if info, isAlive := running(cfg.DataDir); isAlive && strings.HasSuffix(info.URL, ":"+strconv.Itoa(cfg.Port)) {
		c.OK = true
		c.Detail += fmt.Sprintf(" (held by this data dir's ahpd, pid %d)", info.PID)
		return c
	}
	c.Detail += ": " + err.Error()
	c.Fix = "stop what listens there, or choose another port with --port (or port in the config)"
	return c
}

func storeCheck(dir string) check {
	path := filepath.Join(dir, "ahpd.db")
	c := check{Name: "store", Detail: path}
	if _, err := os.Stat(path); os.IsNotExist(err) {
		c.OK = true
		c.Detail += " (none yet: created on the first start)"
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := store.IntegrityCheck(ctx, path); err != nil {
		c.Detail = err.Error()
		c.Fix = "stop ahpd, keep a copy of the data dir, and restore ahpd.db from a backup (or `sqlite3 ahpd.db .recover`)"
		return c
	}
	c.OK = true
	c.Detail += " (integrity_check ok)"
	return c
}
