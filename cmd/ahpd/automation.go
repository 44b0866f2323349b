package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/ahpclient"
	"github.com/ahpd/ahpd/internal/automation"
)

// newAutomation is `ahpd automation enable|create|list|run|remove`: client
// verbs over the daemon's automation catalogue (ahp-automations://), the
// same actions and commands VS Code sends (docs/DAEMON.md "Automations").
func newAutomation() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "automation",
		Short: "Manage the automations of a running daemon",
		Long: "An automation is a message the daemon sends, on a schedule or by hand, as the first turn of a fresh\n" +
			"session it makes from a template. enable opens the automation gates once per data dir; create, list,\n" +
			"run and remove manage the automations.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newAutomationEnable(), newAutomationCreate(), newAutomationList(), newAutomationRun(), newAutomationRemove())
	return cmd
}

// automationName is the last part of an automation's URI as the verbs
// name it.
var automationName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

func automationURI(name string) (string, error) {
	if strings.HasPrefix(name, ahp.AutomationScheme+":") {
		return name, nil
	}
	if !automationName.MatchString(name) {
		return "", usageErr("automation name %q: use lower-case letters, digits and dashes", name)
	}
	return ahp.AutomationScheme + ":/" + name, nil
}

// awaitEnvelope reads c's frames until match takes an envelope.
func awaitEnvelope(ctx context.Context, c *ahpclient.Client, what string, match func(ahpclient.Envelope) bool) (ahpclient.Envelope, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return ahpclient.Envelope{}, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-c.Done():
			return ahpclient.Envelope{}, fmt.Errorf("waiting for %s: %w", what, c.Err())
		case f := <-c.Events():
			if f.Method != "action" {
				continue
			}
			var e ahpclient.Envelope
			if json.Unmarshal(f.Params, &e) == nil && match(e) {
				return e, nil
			}
		}
	}
}

// dispatchRootConfig sets one root config key and waits for its echo.
func dispatchRootConfig(ctx context.Context, c *ahpclient.Client, key string, value any) error {
	seq, err := c.Dispatch(ahp.RootURI, map[string]any{"type": "root/configChanged", "config": map[string]any{key: value}})
	if err != nil {
		return err
	}
	e, err := awaitEnvelope(ctx, c, "root/configChanged", func(e ahpclient.Envelope) bool {
		return e.Origin != nil && e.Origin.ClientID == c.ClientID() && e.Origin.ClientSeq == seq
	})
	if err != nil {
		return err
	}
	if e.RejectionReason != "" {
		return fmt.Errorf("%s refused: %s", key, e.RejectionReason)
	}
	return nil
}

func newAutomationEnable() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "enable",
		Short: "Open the automation gates (automationsEnabled, then the migration record)",
		Long: "enable sets the root config key automationsEnabled and records the automation migration complete\n" +
			"(VS Code's vscode.automationMigration), once per data dir: both are stored. Needs root:configure.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := f.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			raw, err := c.Subscribe(ctx, ahp.RootURI)
			if err != nil {
				return err
			}
			var root struct {
				Config *struct {
					Values map[string]any `json:"values"`
				} `json:"config"`
			}
			if err := json.Unmarshal(raw, &root); err != nil {
				return fmt.Errorf("root state: %w", err)
			}
			values := map[string]any{}
			if root.Config != nil && root.Config.Values != nil {
				values = root.Config.Values
			}
			if values[automation.EnabledKey] != true {
				if err := dispatchRootConfig(ctx, c, automation.EnabledKey, true); err != nil {
					return err
				}
			}
			// A record VS Code left, with its own list, is kept.
			if !automation.ValidMigration(values[automation.MigrationKey]) {
				done := map[string]any{"version": 1, "status": "complete", "resources": []any{}}
				if err := dispatchRootConfig(ctx, c, automation.MigrationKey, done); err != nil {
					return err
				}
			}
			fmt.Fprintln(cmd.OutOrStdout(), "automations enabled")
			return nil
		},
	}
	f.addConnection(cmd)
	return cmd
}

func newAutomationCreate() *cobra.Command {
	var f clientFlags
	var cron, tz, provider, dir, misfire, title string
	var disabled bool
	cmd := &cobra.Command{
		Use:   "create NAME [--cron EXPR --tz ZONE] [--provider P] [--dir PATH] MESSAGE|-",
		Short: "Create an automation that sends MESSAGE by hand or on a schedule",
		Long: "create stores ahp-automation:/NAME: each run makes a session on --provider (default the daemon's) in\n" +
			"--dir (default the first served path) and sends MESSAGE (-: stdin) as its first turn. --cron is a\n" +
			"five-field cron expression (minute hour day-of-month month day-of-week) read in --tz (an IANA zone,\n" +
			"default UTC); without it the automation runs only by hand (ahpd automation run NAME).",
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			resource, err := automationURI(a[0])
			if err != nil {
				return err
			}
			text := a[1]
			if text == "-" {
				b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), automation.MaxDefinitionBytes+1))
				if err != nil {
					return fmt.Errorf("read the message from stdin: %w", err)
				}
				text = string(b)
			}
			if title == "" {
				title = a[0]
			}
			session := map[string]any{}
			if provider != "" {
				session["provider"] = provider
			}
			if dir != "" {
				abs, err := filepath.Abs(dir)
				if err != nil {
					return usageErr("--dir %s: %v", dir, err)
				}
				session["workingDirectories"] = []string{ahp.FileURI(abs)}
			}
			triggers := []any{}
			if cron != "" {
				if _, err := automation.ParseSchedule(cron, tz); err != nil {
					return usageErr("--cron: %v", err)
				}
				t := map[string]any{"id": "schedule", "kind": ahp.TriggerSchedule, "schedule": map[string]any{"expression": cron, "timeZone": tz}}
				if misfire != "" {
					t["misfirePolicy"] = misfire
				}
				triggers = append(triggers, t)
			}
			def := map[string]any{"title": title, "enabled": !disabled, "session": session, "triggers": triggers,
				"message": map[string]any{"text": text, "origin": map[string]any{"kind": ahp.MessageFromAutomation}}}
			ctx := cmd.Context()
			c, err := f.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			if _, err := c.Subscribe(ctx, ahp.AutomationsURI); err != nil {
				return err
			}
			seq, err := c.Dispatch(ahp.AutomationsURI, map[string]any{"type": ahp.ActionAutomationCreateRequested, "resource": resource, "definition": def})
			if err != nil {
				return err
			}
			e, err := awaitEnvelope(ctx, c, "the automation", func(e ahpclient.Envelope) bool {
				if e.Origin != nil && e.Origin.ClientID == c.ClientID() && e.Origin.ClientSeq == seq {
					return true // the refusal
				}
				var set ahp.AutomationSet
				return e.Channel == ahp.AutomationsURI && e.Type() == ahp.ActionAutomationSet &&
					json.Unmarshal(e.Action, &set) == nil && set.Automation.Resource == resource
			})
			if err != nil {
				return err
			}
			if e.RejectionReason != "" {
				return errors.New(e.RejectionReason)
			}
			var set ahp.AutomationSet
			if err := json.Unmarshal(e.Action, &set); err != nil {
				return err
			}
			if f.asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(set.Automation)
			}
			next := set.Automation.NextRunAt
			if next == "" {
				next = "by hand only"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s next run: %s\n", resource, next)
			return nil
		},
	}
	cmd.Flags().StringVar(&cron, "cron", "", "five-field cron expression, e.g. \"30 7 * * 1-5\"")
	cmd.Flags().StringVar(&tz, "tz", "UTC", "IANA time zone the cron expression is read in")
	cmd.Flags().StringVar(&provider, "provider", "", "agent of the runs' sessions (default: the daemon's)")
	cmd.Flags().StringVar(&dir, "dir", "", "working directory of the runs' sessions, under a served path")
	cmd.Flags().StringVar(&misfire, "misfire", "", "missed occurrences: runOnce (default: one catch-up run) or skip")
	cmd.Flags().StringVar(&title, "title", "", "title (default: NAME)")
	cmd.Flags().BoolVar(&disabled, "disabled", false, "store it without running on its schedule")
	f.add(cmd, "print the stored entry as JSON")
	return cmd
}

func catalogue(ctx context.Context, f *clientFlags) (ahp.AutomationState, error) {
	c, err := f.dial(ctx)
	if err != nil {
		return ahp.AutomationState{}, err
	}
	defer c.Close()
	drain(c)
	raw, err := c.Subscribe(ctx, ahp.AutomationsURI)
	if err != nil {
		return ahp.AutomationState{}, err
	}
	var st ahp.AutomationState
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("automation catalogue: %w", err)
	}
	return st, nil
}

func newAutomationList() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the automations with their next and last runs",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := catalogue(cmd.Context(), &f)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if f.asJSON {
				if st.Entries == nil {
					st.Entries = []ahp.AutomationEntry{}
				}
				return json.NewEncoder(w).Encode(st.Entries)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AUTOMATION\tENABLED\tNEXT RUN\tLAST RUN\tTITLE")
			for _, e := range st.Entries {
				last := "-"
				if len(e.Runs) > 0 {
					last = e.Runs[0].Lifecycle.Status + " " + e.Runs[0].Lifecycle.CreatedAt
				}
				next := e.NextRunAt
				if next == "" {
					next = "-"
				}
				fmt.Fprintf(tw, "%s\t%v\t%s\t%s\t%s\n", e.Resource, e.Definition.Enabled, next, last, e.Definition.Title)
			}
			return tw.Flush()
		},
	}
	f.add(cmd, "print the catalogue's entries as a JSON array")
	return cmd
}

func newAutomationRun() *cobra.Command {
	var f clientFlags
	var wait bool
	cmd := &cobra.Command{
		Use:   "run NAME [--wait]",
		Short: "Run an automation now",
		Long: "run starts a run of the automation and prints its URI; --wait follows it to its end and prints its\n" +
			"status and session (exit 1 when it failed or was cancelled).",
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			resource, err := automationURI(a[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			c, err := f.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			var res ahp.RunAutomationResult
			if err := c.Call(ctx, ahp.MethodRunAutomation, map[string]any{"channel": ahp.AutomationsURI, "automation": resource,
				"requestId": uuid.NewString()}, &res); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !wait {
				fmt.Fprintln(out, res.Resource)
				return nil
			}
			raw, err := c.Subscribe(ctx, res.Resource)
			if err != nil {
				return err
			}
			var st ahp.AutomationRunState
			if err := json.Unmarshal(raw, &st); err != nil {
				return err
			}
			for !st.Lifecycle.Terminal() {
				e, err := awaitEnvelope(ctx, c, "the run's end", func(e ahpclient.Envelope) bool { return e.Channel == res.Resource })
				if err != nil {
					return err
				}
				var act struct {
					Lifecycle      *ahp.AutomationRunLifecycle `json:"lifecycle"`
					PrimarySession string                      `json:"primarySession"`
				}
				_ = json.Unmarshal(e.Action, &act)
				if act.Lifecycle != nil {
					st.Lifecycle = *act.Lifecycle
				}
				if act.PrimarySession != "" {
					st.PrimarySession = act.PrimarySession
				}
			}
			fmt.Fprintf(out, "%s %s session %s\n", res.Resource, st.Lifecycle.Status, st.PrimarySession)
			if st.Lifecycle.Status != ahp.RunCompleted {
				if st.Lifecycle.Error != nil {
					fmt.Fprintln(os.Stderr, st.Lifecycle.Error.Message)
				}
				return fmt.Errorf("the run ended %s", st.Lifecycle.Status)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the run to end")
	f.addConnection(cmd)
	return cmd
}

func newAutomationRemove() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove an automation and its run history",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			resource, err := automationURI(a[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			c, err := f.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			if _, err := c.Subscribe(ctx, ahp.AutomationsURI); err != nil {
				return err
			}
			seq, err := c.Dispatch(ahp.AutomationsURI, map[string]any{"type": ahp.ActionAutomationRemoved, "resource": resource})
			if err != nil {
				return err
			}
			e, err := awaitEnvelope(ctx, c, "the removal", func(e ahpclient.Envelope) bool {
				return e.Origin != nil && e.Origin.ClientID == c.ClientID() && e.Origin.ClientSeq == seq
			})
			if err != nil {
				return err
			}
			if e.RejectionReason != "" {
				return errors.New(e.RejectionReason)
			}
			fmt.Fprintln(cmd.OutOrStdout(), "removed", resource)
			return nil
		},
	}
	f.addConnection(cmd)
	return cmd
}

// addConnection adds --url and --token only, for a verb with no JSON to
// print.
func (f *clientFlags) addConnection(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.url, "url", "", "daemon websocket URL (default $AHPD_URL, else ws://127.0.0.1:9187)")
	cmd.Flags().StringVar(&f.token, "token", "", "connection token (default $AHPD_TOKEN)")
}
