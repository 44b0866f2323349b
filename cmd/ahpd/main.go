// Command ahpd serves the Agent Host Protocol over a JSON-RPC websocket.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/spf13/cobra"
)

func main() {
	err := newRoot().Execute()
	switch {
	case err == nil:
	case errors.Is(err, daemon.ErrUsage):
		fmt.Fprintln(os.Stderr, "ahpd:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "ahpd:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "ahpd",
		Short:         "Serve coding agents over the Agent Host Protocol",
		Long:          "ahpd is one process that serves the Agent Host Protocol (AHP) over a JSON-RPC websocket.\nVS Code agent-host windows, operators and scripts connect to it and drive the same agent chats at once.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServe(), newVersion(), newConfig())
	return root
}

// flags binds the serve flags onto a config.
type serveFlags struct {
	configFile string
	logLevel   string
}

func newServe() *cobra.Command {
	cfg := daemon.Defaults()
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon in the foreground",
		Long: "serve starts the daemon on 127.0.0.1:9187 (or --host/--port) with its SQLite store in --data-dir,\n" +
			"and prints `listening ws://HOST:PORT` once it accepts connections. Stop it with Ctrl-C.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := loadConfig(cmd, &cfg, f.configFile); err != nil {
				return err
			}
			return runServe(cmd, cfg, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.Host, "host", cfg.Host, "address to listen on (a non-loopback host needs a token choice)")
	fl.IntVar(&cfg.Port, "port", cfg.Port, "port to listen on; 0 picks a free one")
	fl.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory holding ahpd.db")
	fl.StringArrayVar(&cfg.Paths, "path", nil, "served directory (repeatable); default the working directory")
	fl.StringVar(&cfg.ConnectionToken, "connection-token", "", "token clients must present (?tkn= or Authorization: Bearer)")
	fl.StringVar(&cfg.ConnectionTokenFile, "connection-token-file", "", "file holding the token (created with a fresh one, mode 0600, when absent)")
	fl.BoolVar(&cfg.WithoutConnectionToken, "without-connection-token", false, "accept connections without a token, also on a non-loopback host")
	fl.StringVar(&cfg.ClosedChats, "closed-chats", cfg.ClosedChats, "what closing a chat does to its agent conversation: hidden or delete")
	fl.StringVar(&f.configFile, "config", "", "config file (JSON); default "+daemon.DefaultConfigFile()+" when it exists")
	fl.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

// loadConfig lays the config file under the flags: cfg holds what the
// flags parsed; the result is the defaults, then the whole file, then each
// flag the user set. Every file key survives (the file is decoded whole,
// not copied field by field).
func loadConfig(cmd *cobra.Command, cfg *daemon.Config, path string) error {
	out := daemon.Defaults()
	optional := path == ""
	if optional {
		path = daemon.DefaultConfigFile()
	}
	if path != "" {
		if err := out.LoadFile(path, optional); err != nil {
			return fmt.Errorf("%w: %v", daemon.ErrUsage, err)
		}
	}
	fl := cmd.Flags()
	for name, copyFlag := range map[string]func(){
		"host":                     func() { out.Host = cfg.Host },
		"port":                     func() { out.Port = cfg.Port },
		"data-dir":                 func() { out.DataDir = cfg.DataDir },
		"path":                     func() { out.Paths = cfg.Paths },
		"connection-token":         func() { out.ConnectionToken = cfg.ConnectionToken },
		"connection-token-file":    func() { out.ConnectionTokenFile = cfg.ConnectionTokenFile },
		"without-connection-token": func() { out.WithoutConnectionToken = cfg.WithoutConnectionToken },
		"closed-chats":             func() { out.ClosedChats = cfg.ClosedChats },
	} {
		if fl.Lookup(name) != nil && fl.Changed(name) {
			copyFlag()
		}
	}
	*cfg = out
	return nil
}

func runServe(cmd *cobra.Command, cfg daemon.Config, f serveFlags) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("%w: --log-level %q", daemon.ErrUsage, f.logLevel)
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	d, err := daemon.Start(ctx, cfg, daemon.Options{Logger: log})
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "listening %s\n", d.URL())
	fmt.Fprintf(cmd.OutOrStdout(), "vscode settings: \"chat.remoteAgentHosts\": [%s]\n", d.VSCodeEntry())
	<-ctx.Done()
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return d.Close(sctx)
}

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the daemon's version",
		Long:  "version prints ahpd's version and the protocol versions it speaks.",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "ahpd %s (AHP 1.0.0; also 0.10.0, 0.9.0)\n", daemon.Version)
		},
	}
}

func newConfig() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Inspect the configuration",
		Long:  "config works with ahpd's configuration file without starting the daemon.",
	}
	var path string
	check := &cobra.Command{
		Use:   "check",
		Short: "Validate the configuration without starting",
		Long:  "check reads the config file (or the default one), validates it, and exits 0 when the daemon would start with it, 2 otherwise.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := daemon.Defaults()
			if err := loadConfig(cmd, &cfg, path); err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "config ok")
			return nil
		},
	}
	check.Flags().StringVar(&path, "config", "", "config file to check")
	cmd.AddCommand(check)
	return cmd
}
