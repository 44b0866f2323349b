package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/host"
)

// newBot is `ahpd bot create|list|show|delete`: client verbs that manage a
// running daemon's bots through the x-ahpd/*Bot commands.
func newBot() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bot",
		Short: "Manage the bots of a running daemon",
		Long: "A bot is a named, standing agent: a chat whose agent is \"bot\" (a session created with\n" +
			"provider \"bot\" and config {\"bot\": <slug>}) hands each turn to the bot's work session.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newBotCreate(), newBotList(), newBotShow(), newBotDelete())
	return cmd
}

// botCall runs one bot command against the daemon and decodes its answer.
func botCall(ctx context.Context, f *clientFlags, method string, params map[string]any, result any) error {
	c, err := f.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	drain(c)
	params["channel"] = ahp.RootURI
	return c.Call(ctx, method, params, result)
}

func newBotCreate() *cobra.Command {
	var f clientFlags
	var name, instructions, instructionsFile, agent, model, folder, session, owner string
	cmd := &cobra.Command{
		Use:   "create <slug>",
		Short: "Create a bot and start its work session",
		Long: "create stores a bot and starts its work session: an ordinary session on the bot's agent, in its\n" +
			"folder (default <data dir>/bots/<slug>), owned by you, titled with its name, whose first turn is\n" +
			"the instructions. --session links an existing session of yours instead. A slug is never reused.",
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if name == "" {
				return usageErr("%s: --name is required", cmd.CommandPath())
			}
			if instructionsFile != "" {
				if instructions != "" {
					return usageErr("%s: --instructions and --instructions-file are exclusive", cmd.CommandPath())
				}
				b, err := os.ReadFile(instructionsFile)
				if err != nil {
					return usageErr("%s: --instructions-file: %v", cmd.CommandPath(), err)
				}
				instructions = string(b)
			}
			p := map[string]any{"slug": a[0], "name": name}
			for k, v := range map[string]string{"instructions": instructions, "agent": agent, "model": model, "folder": folder, "session": session, "owner": owner} {
				if v != "" {
					p[k] = v
				}
			}
			var b host.BotInfo
			if err := botCall(cmd.Context(), &f, host.MethodCreateBot, p, &b); err != nil {
				return err
			}
			return printBot(cmd.OutOrStdout(), f.asJSON, b)
		},
	}
	f.add(cmd, "print the bot as JSON")
	cmd.Flags().StringVar(&name, "name", "", "the bot's name (required); its work session's title")
	cmd.Flags().StringVar(&instructions, "instructions", "", "the work session's first turn")
	cmd.Flags().StringVar(&instructionsFile, "instructions-file", "", "read the instructions from this file")
	cmd.Flags().StringVar(&agent, "agent", "", "the agent the work session runs on (default: the daemon's default)")
	cmd.Flags().StringVar(&model, "model", "", "the work session's model")
	cmd.Flags().StringVar(&folder, "folder", "", "where the bot works: an absolute path inside the served paths")
	cmd.Flags().StringVar(&session, "session", "", "link an existing session of yours instead of starting one")
	cmd.Flags().StringVar(&owner, "owner", "", "whose bot it is (root only; default: you)")
	return cmd
}

func newBotList() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List your bots (root: every bot)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var res struct {
				Items []host.BotInfo `json:"items"`
			}
			if err := botCall(cmd.Context(), &f, host.MethodListBots, map[string]any{}, &res); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if f.asJSON {
				if res.Items == nil {
					res.Items = []host.BotInfo{}
				}
				return json.NewEncoder(w).Encode(res.Items)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SLUG\tNAME\tAGENT\tOWNER\tSESSION")
			for _, b := range res.Items {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", b.Slug, b.Name, b.Agent, b.Owner, b.Session)
			}
			return tw.Flush()
		},
	}
	f.add(cmd, "print the bots as a JSON array")
	return cmd
}

func newBotShow() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "show <slug>",
		Short: "Show one bot",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			var b host.BotInfo
			if err := botCall(cmd.Context(), &f, host.MethodGetBot, map[string]any{"slug": a[0]}, &b); err != nil {
				return err
			}
			return printBot(cmd.OutOrStdout(), f.asJSON, b)
		},
	}
	f.add(cmd, "print the bot as JSON")
	return cmd
}

func newBotDelete() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "delete <slug>",
		Short: "Delete a bot (its slug stays taken; its work session stays)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			var res json.RawMessage
			if err := botCall(cmd.Context(), &f, host.MethodDeleteBot, map[string]any{"slug": a[0]}, &res); err != nil {
				return err
			}
			if !f.asJSON {
				fmt.Fprintf(cmd.OutOrStdout(), "deleted bot %s\n", a[0])
				return nil
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]string{"deleted": a[0]})
		},
	}
	f.add(cmd, "print the result as JSON")
	return cmd
}

func printBot(w io.Writer, asJSON bool, b host.BotInfo) error {
	if asJSON {
		return json.NewEncoder(w).Encode(b)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, row := range [][2]string{
		{"slug", b.Slug}, {"name", b.Name}, {"agent", b.Agent}, {"model", b.Model}, {"folder", b.Folder},
		{"owner", b.Owner}, {"session", b.Session}, {"created", b.CreatedAt}, {"instructions", b.Instructions},
	} {
		if row[1] != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", row[0], row[1])
		}
	}
	return tw.Flush()
}
