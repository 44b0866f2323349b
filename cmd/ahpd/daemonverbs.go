package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ahpd/ahpd/internal/daemon"
)

func newServe() *cobra.Command {
	var src configSource
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon in the foreground",
		Long: "serve starts the daemon on 127.0.0.1:9187 (or --host/--port) with its SQLite store in --data-dir,\n" +
			"and prints `listening ws://HOST:PORT` once it accepts connections.\n" +
			"SIGTERM or SIGINT (Ctrl-C) stop it gracefully: no new connections, every running turn ends cancelled with\n" +
			"a notice that the host is stopping, the store is flushed, exit 0 within shutdownGraceSeconds.\n" +
			"A second signal exits at once (exit 1).",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := loadConfig(cmd, &src)
			if err != nil {
				return err
			}
			l.Config.ConfigFile = l.File
			return attributeAgents(l, runServe(cmd, l.Config))
		},
	}
	addConfigFlags(cmd.Flags(), &src)
	return cmd
}

// newLogger builds the daemon's slog logger from logLevel and logFormat.
func newLogger(w io.Writer, cfg daemon.Config) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel)) // validated by Load
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func runServe(cmd *cobra.Command, cfg daemon.Config) error {
	log := newLogger(cmd.ErrOrStderr(), cfg)
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	d, err := daemon.Start(context.Background(), cfg, daemon.Options{Logger: log, VSCodeUserData: daemon.VSCodeUserDataFound()})
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "listening %s\n", d.URL())
	// The first two lines are read by scripts and tests: the URL, then the
	// VS Code entry; anything else goes after them.
	fmt.Fprintf(cmd.OutOrStdout(), "vscode settings: \"chat.remoteAgentHosts\": [%s]\n", d.VSCodeEntry())
	fmt.Fprintf(cmd.OutOrStdout(), "web console: open %s/ in a browser\n", "http"+strings.TrimPrefix(d.URL(), "ws"))
	for _, p := range d.LocalEndpoints() {
		fmt.Fprintf(cmd.OutOrStdout(), "vscode local endpoint: %s\n", p)
	}
	grace := time.Duration(cfg.ShutdownGraceSeconds) * time.Second
	if grace <= 0 {
		grace = 10 * time.Second
	}
	var failed error
	select {
	case sig := <-signals:
		log.Info("shutting down", "signal", sig.String(), "grace", grace)
	case failed = <-d.Failed():
		log.Error("shutting down: the daemon cannot go on", "err", failed)
	}
	go func() {
		// A second signal: the operator will not wait.
		s := <-signals
		log.Warn("second signal: exiting at once", "signal", s.String())
		// The one step the shortcut keeps: no entry of a dead pid is left
		// for VS Code to find.
		d.RemoveLocalEndpoints()
		os.Exit(exitError)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := d.Shutdown(ctx); err != nil {
		return errors.Join(failed, fmt.Errorf("shutdown: %w", err))
	}
	if failed != nil {
		return failed
	}
	log.Info("stopped")
	return nil
}

func newStart() *cobra.Command {
	var src configSource
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Start the daemon in the background",
		Long: "start runs `ahpd serve` with the same flags as a detached process (its own session, no terminal),\n" +
			"logging to <data-dir>/ahpd.log, and returns once it listens. Its pid is in <data-dir>/ahpd.pid.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := loadConfig(cmd, &src)
			if err != nil {
				return err
			}
			info, err := startDetached(l.Config, flagArgs(cmd, &src))
			if err != nil {
				return err
			}
			return printRunInfo(cmd.OutOrStdout(), info, l.Config, asJSON, "started")
		},
	}
	addConfigFlags(cmd.Flags(), &src)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {pid, url, log} as JSON")
	return cmd
}

func printRunInfo(w io.Writer, info daemon.RunInfo, cfg daemon.Config, asJSON bool, verb string) error {
	logFile := filepath.Join(cfg.DataDir, "ahpd.log")
	if asJSON {
		return json.NewEncoder(w).Encode(map[string]any{"pid": info.PID, "url": info.URL, "log": logFile})
	}
	fmt.Fprintf(w, "%s pid %d, listening %s, log %s\n", verb, info.PID, info.URL, logFile)
	return nil
}

// startDetached runs this binary's serve with flags in a session of its
// own, its output appended to <data dir>/ahpd.log, and waits until it
// has written its run info (it listens) or has exited.
func startDetached(cfg daemon.Config, flags []string) (daemon.RunInfo, error) {
	if info, alive := running(cfg.DataDir); alive {
		return info, &exitErr{code: exitError, msg: fmt.Sprintf("already running: pid %d at %s", info.PID, info.URL)}
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return daemon.RunInfo{}, fmt.Errorf("create data dir: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return daemon.RunInfo{}, fmt.Errorf("find ahpd's own binary: %w", err)
	}
	logPath := filepath.Join(cfg.DataDir, "ahpd.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return daemon.RunInfo{}, fmt.Errorf("open log file: %w", err)
	}
	defer logFile.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return daemon.RunInfo{}, err
	}
	defer devnull.Close()
	_ = os.Remove(daemon.InfoFile(cfg.DataDir))
	// The data dir is passed explicitly: the child must use the one whose
	// pid file this command watches.
	argv := append([]string{"serve"}, flags...)
	argv = append(argv, "--data-dir="+cfg.DataDir)
	c := exec.Command(self, argv...)
	c.Stdin, c.Stdout, c.Stderr = devnull, logFile, logFile
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		return daemon.RunInfo{}, fmt.Errorf("start ahpd serve: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case err := <-exited:
			return daemon.RunInfo{}, fmt.Errorf("ahpd serve exited at start (%v); its log %s ends:\n%s", err, logPath, tail(logPath, 5))
		case <-deadline:
			return daemon.RunInfo{}, fmt.Errorf("ahpd serve (pid %d) did not listen within 30s; see %s", c.Process.Pid, logPath)
		case <-time.After(50 * time.Millisecond):
		}
		if info, ok := readRunInfo(cfg.DataDir); ok && info.PID == c.Process.Pid {
			_ = c.Process.Release()
			return info, nil
		}
	}
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func readRunInfo(dataDir string) (daemon.RunInfo, bool) {
	var info daemon.RunInfo
	b, err := os.ReadFile(daemon.InfoFile(dataDir))
	if err != nil || json.Unmarshal(b, &info) != nil || info.PID <= 0 {
		return info, false
	}
	return info, true
}

// running returns the run info of the daemon on dataDir and whether its
// process is alive.
func running(dataDir string) (daemon.RunInfo, bool) {
	info, ok := readRunInfo(dataDir)
	if !ok {
		if b, err := os.ReadFile(daemon.PIDFile(dataDir)); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				info.PID, ok = pid, true
			}
		}
	}
	if !ok {
		return info, false
	}
	// A pid alone may have been reused since; the data dir's lock is held
	// only while its daemon lives.
	return info, alive(info.PID) && daemon.DataDirHeld(dataDir)
}

func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
}

func newStop() *cobra.Command {
	var src configSource
	var force bool
	cmd := &cobra.Command{
		Use:   "stop",
		Short: "Stop the daemon running on the data dir",
		Long: "stop sends SIGTERM to the daemon named by <data-dir>/ahpd.pid (the graceful shutdown of serve) and\n" +
			"waits until it has exited. With --force, a daemon still running after shutdownGraceSeconds + 5s gets SIGKILL.\n" +
			"Exit 0 once stopped, 3 when no daemon was running.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := loadConfig(cmd, &src)
			if err != nil {
				return err
			}
			pid, err := stopDaemon(l.Config, force)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stopped pid %d\n", pid)
			return nil
		},
	}
	addConfigFlags(cmd.Flags(), &src)
	cmd.Flags().BoolVar(&force, "force", false, "SIGKILL the daemon if it outlives its grace period")
	return cmd
}

func stopDaemon(cfg daemon.Config, force bool) (int, error) {
	info, isAlive := running(cfg.DataDir)
	if !isAlive {
		return 0, &exitErr{code: exitNotRunning, msg: "not running (no live pid in " + daemon.PIDFile(cfg.DataDir) + ")"}
	}
	p, _ := os.FindProcess(info.PID)
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return 0, fmt.Errorf("signal pid %d: %w", info.PID, err)
	}
	wait := time.Duration(cfg.ShutdownGraceSeconds)*time.Second + 5*time.Second
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if !alive(info.PID) {
			return info.PID, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !force {
		return 0, fmt.Errorf("pid %d still running after %s (use --force to kill it)", info.PID, wait)
	}
	_ = p.Signal(syscall.SIGKILL)
	for range 100 {
		if !alive(info.PID) {
			return info.PID, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return 0, fmt.Errorf("pid %d survived SIGKILL", info.PID)
}

func newRestart() *cobra.Command {
	var src configSource
	var asJSON, force bool
	cmd := &cobra.Command{
		Use:   "restart",
		Short: "Stop the daemon (if running) and start it again in the background",
		Long:  "restart is stop (graceful: running turns end cancelled) followed by start with the given flags.",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := loadConfig(cmd, &src)
			if err != nil {
				return err
			}
			if _, err := stopDaemon(l.Config, force); err != nil {
				var ee *exitErr
				if !errors.As(err, &ee) || ee.code != exitNotRunning {
					return err
				}
			}
			info, err := startDetached(l.Config, flagArgs(cmd, &src))
			if err != nil {
				return err
			}
			return printRunInfo(cmd.OutOrStdout(), info, l.Config, asJSON, "restarted")
		},
	}
	addConfigFlags(cmd.Flags(), &src)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {pid, url, log} as JSON")
	cmd.Flags().BoolVar(&force, "force", false, "SIGKILL the old daemon if it outlives its grace period")
	return cmd
}

func newStatus() *cobra.Command {
	var src configSource
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Report the daemon running on the data dir",
		Long: "status reads <data-dir>/ahpd.json and asks that daemon (GET /status, with the configured token) for its\n" +
			"pid, address, version, uptime, sessions, open chats, running turns and agents.\n" +
			"Exit 0 when running, 3 when not.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := loadConfig(cmd, &src)
			if err != nil {
				return err
			}
			info, isAlive := running(l.Config.DataDir)
			if !isAlive {
				if asJSON {
					_ = json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{"running": false})
				} else {
					fmt.Fprintln(cmd.OutOrStdout(), "not running")
				}
				return &exitErr{code: exitNotRunning}
			}
			st, err := fetchStatus(info.URL, l.Config.ClientToken())
			if err != nil {
				return fmt.Errorf("pid %d is running but did not answer: %w", info.PID, err)
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(st)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "running   pid %d, %s\n", st.PID, st.URL)
			fmt.Fprintf(w, "version   %s\n", st.Version)
			fmt.Fprintf(w, "uptime    %s (since %s)\n", (time.Duration(st.UptimeSeconds) * time.Second).String(), st.StartedAt.Format(time.RFC3339))
			fmt.Fprintf(w, "sessions  %d, open chats %d, running turns %d, connections %d\n", st.Sessions, st.OpenChats, st.RunningTurns, st.Connections)
			for _, a := range st.Agents {
				state := "available"
				if !a.Available {
					state = "unavailable: " + a.Unavailable
				}
				fmt.Fprintf(w, "agent     %-10s %s\n", a.Provider, state)
			}
			return nil
		},
	}
	addConfigFlags(cmd.Flags(), &src)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

// httpURL turns the daemon's ws:// URL into its http:// one.
func httpURL(wsURL string) string {
	return "http" + strings.TrimPrefix(wsURL, "ws")
}

func fetchStatus(wsURL, token string) (daemon.StatusInfo, error) {
	var st daemon.StatusInfo
	req, err := http.NewRequest(http.MethodGet, httpURL(wsURL)+"/status", nil)
	if err != nil {
		return st, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return st, fmt.Errorf("GET /status: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

func newVersion() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the daemon's version",
		Long:  "version prints ahpd's version, the commit and build date stamped by the Go toolchain, and the protocol versions it speaks.",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{
					"version": daemon.Version, "full": daemon.VersionString(), "protocols": []string{"1.0.0", "0.10.0", "0.9.0"},
				})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ahpd %s (AHP 1.0.0; also 0.10.0, 0.9.0)\n", daemon.VersionString())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {version, full, protocols} as JSON")
	return cmd
}

func newCompletion(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script",
		Long: "completion prints the completion script for bash, zsh or fish. For example:\n" +
			"  bash: source <(ahpd completion bash)   or   ahpd completion bash > /etc/bash_completion.d/ahpd\n" +
			"  zsh:  ahpd completion zsh > \"${fpath[1]}/_ahpd\"\n" +
			"  fish: ahpd completion fish > ~/.config/fish/completions/ahpd.fish",
		Args:      args(cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs)),
		ValidArgs: []string{"bash", "zsh", "fish"},
		RunE: func(cmd *cobra.Command, a []string) error {
			w := cmd.OutOrStdout()
			switch a[0] {
			case "bash":
				return root.GenBashCompletionV2(w, true)
			case "zsh":
				return root.GenZshCompletion(w)
			default:
				return root.GenFishCompletion(w, true)
			}
		},
	}
}
