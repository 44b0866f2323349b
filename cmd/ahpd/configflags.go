package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ahpd/ahpd/internal/daemon"
)

// configFlag binds one flag to its config key. Every flag of the daemon
// verbs has a key; the flag's value is laid over the file and the
// environment by daemon.Load, never copied field by field.
type configFlag struct {
	name, key, usage string
	kind             flagKind
}

type flagKind int

const (
	flagString flagKind = iota
	flagList
	flagBool
)

// configFlags are the daemon's flags. Values are taken as strings and
// parsed by daemon.Load, so `--port abc` is refused (exit 2) naming the
// key, the flag and the reason, exactly as AHPD_PORT=abc is.
var configFlags = []configFlag{
	{"host", "host", "address to listen on (a non-loopback host needs a token choice)", flagString},
	{"port", "port", "port to listen on; 0 picks a free one (default 9187)", flagString},
	{"data-dir", "dataDir", "directory holding ahpd.db, the pid file and the log of `ahpd start`", flagString},
	{"path", "paths", "served directory (repeatable); default the working directory", flagList},
	{"connection-token", "connectionToken", "token clients must present (?tkn= or Authorization: Bearer)", flagString},
	{"connection-token-file", "connectionTokenFile", "file holding the token (created with a fresh one, mode 0600, when absent)", flagString},
	{"without-connection-token", "withoutConnectionToken", "accept connections without a token, also on a non-loopback host", flagBool},
	{"closed-chats", "closedChats", "what closing a chat does to its agent conversation: hidden or delete", flagString},
	{"log-level", "logLevel", "debug, info, warn or error", flagString},
	{"log-format", "logFormat", "text or json", flagString},
	{"no-local-endpoint", "noLocalEndpoint", "do not publish ahpd in VS Code's local agent-host endpoint registry", flagBool},
	{"vscode-user-data", "vscodeUserData", "VS Code user-data directory to publish the local endpoint in (repeatable); default every existing one of Code, Code - Insiders, ...", flagList},
	{"shutdown-grace-seconds", "shutdownGraceSeconds", "how long a graceful stop may take before it cuts (default 10)", flagString},
}

// configSource holds the --config flag.
type configSource struct {
	file string
}

// addConfigFlags registers the daemon flags and --config on fs.
func addConfigFlags(fs *pflag.FlagSet, src *configSource) {
	for _, f := range configFlags {
		switch f.kind {
		case flagString:
			fs.String(f.name, "", f.usage+" [key "+f.key+"]")
		case flagList:
			fs.StringArray(f.name, nil, f.usage+" [key "+f.key+"]")
		case flagBool:
			fs.Bool(f.name, false, f.usage+" [key "+f.key+"]")
		}
	}
	fs.StringVar(&src.file, "config", "", "config file (JSON); default $AHPD_CONFIG, else "+daemon.DefaultConfigFile()+" when it exists")
}

// loadConfig layers defaults, the config file, AHPD_* and the flags the
// user set on cmd.
func loadConfig(cmd *cobra.Command, src *configSource) (daemon.Loaded, error) {
	in := daemon.LoadInput{File: src.file, Env: os.Environ()}
	if in.File == "" {
		if env := os.Getenv("AHPD_CONFIG"); env != "" {
			in.File = env
		} else {
			in.File, in.FileOptional = daemon.DefaultConfigFile(), true
		}
	}
	fs := cmd.Flags()
	for _, f := range configFlags {
		fl := fs.Lookup(f.name)
		if fl == nil || !fl.Changed {
			continue
		}
		s := daemon.Setting{Key: f.key, Source: "flag --" + f.name}
		switch f.kind {
		case flagList:
			s.Values, _ = fs.GetStringArray(f.name)
		default:
			s.Values = []string{fl.Value.String()}
		}
		in.Flags = append(in.Flags, s)
	}
	return daemon.Load(in)
}

// flagArgs spells the config flags the user set on cmd, and --config, as
// arguments for another ahpd process (start runs serve with them).
func flagArgs(cmd *cobra.Command, src *configSource) []string {
	var out []string
	fs := cmd.Flags()
	for _, f := range configFlags {
		fl := fs.Lookup(f.name)
		if fl == nil || !fl.Changed {
			continue
		}
		if f.kind == flagList {
			vals, _ := fs.GetStringArray(f.name)
			for _, v := range vals {
				out = append(out, "--"+f.name+"="+v)
			}
			continue
		}
		out = append(out, "--"+f.name+"="+fl.Value.String())
	}
	if src.file != "" {
		out = append(out, "--config="+src.file)
	}
	return out
}

func newConfig() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Inspect the configuration",
		Long: "config works with ahpd's configuration without starting the daemon. The configuration is layered:\n" +
			"embedded defaults, then the config file, then AHPD_* environment variables, then flags.",
		Args: args(cobra.NoArgs),
	}
	cmd.AddCommand(newConfigCheck(), newConfigShow())
	return cmd
}

func newConfigCheck() *cobra.Command {
	var src configSource
	check := &cobra.Command{
		Use:   "check",
		Short: "Validate the configuration without starting",
		Long: "check layers and validates the configuration, every backend's settings included, and exits 0 when\n" +
			"the daemon would start with it, 2 otherwise (one line naming the key, where its value came from, and why).\n" +
			"It has no side effects: a connection token file that does not exist yet is not created.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := loadConfig(cmd, &src)
			if err != nil {
				return err
			}
			if _, err := daemon.BuiltinAgents(l.Config); err != nil {
				return attributeAgents(l, err)
			}
			file := l.File
			if file == "" {
				file = "none"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "config ok (file: %s)\n", file)
			return nil
		},
	}
	addConfigFlags(check.Flags(), &src)
	return check
}

// attributeAgents names where agents.<name> came from in a backend's
// refusal of its settings.
func attributeAgents(l daemon.Loaded, err error) error {
	if err == nil || !errors.Is(err, daemon.ErrUsage) {
		return err
	}
	msg := err.Error()
	for _, name := range sortedAgentKeys(l.Config) {
		if strings.Contains(msg, "agents."+name) {
			return fmt.Errorf("%w (from %s)", err, l.SourceOf("agents."+name))
		}
	}
	return err
}

func sortedAgentKeys(c daemon.Config) []string {
	out := make([]string, 0, len(c.Agents))
	for k := range c.Agents {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func newConfigShow() *cobra.Command {
	var src configSource
	var asJSON bool
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the resolved configuration and where each value came from",
		Long: "show prints every key of the resolved configuration with its value and its source: default,\n" +
			"file PATH, env AHPD_X or flag --x. Secrets (tokens, API keys) are printed as <set>.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := loadConfig(cmd, &src)
			if err != nil {
				return err
			}
			return printConfig(cmd.OutOrStdout(), l, asJSON)
		},
	}
	addConfigFlags(show.Flags(), &src)
	show.Flags().BoolVar(&asJSON, "json", false, "print {config, sources, file} as JSON")
	return show
}

func printConfig(w io.Writer, l daemon.Loaded, asJSON bool) error {
	red := daemon.Redacted(l.Config)
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(map[string]any{"config": red, "sources": l.Sources, "file": l.File})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(red); err != nil {
		return err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(buf.Bytes(), &top); err != nil {
		return err
	}
	keys := daemon.ConfigKeys()
	for _, k := range keys {
		v, ok := top[k]
		if !ok {
			continue
		}
		var one bytes.Buffer
		e := json.NewEncoder(&one)
		e.SetEscapeHTML(false)
		var x any
		_ = json.Unmarshal(v, &x)
		_ = e.Encode(x)
		fmt.Fprintf(w, "%-26s %-40s %s\n", k, strings.TrimSpace(one.String()), l.SourceOf(k))
	}
	return nil
}
