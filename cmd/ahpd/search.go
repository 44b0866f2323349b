package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf16"

	"github.com/spf13/cobra"

	"github.com/ahpd/ahpd/internal/host"
)

// newSearch is `ahpd search QUERY`: a client verb that finds a word in
// every session's titles and turn text (x-ahpd/search; the token needs
// session:list, and chat:turns for turn text).
func newSearch() *cobra.Command {
	var f clientFlags
	var limit int
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Find a word in every session's titles and turns",
		Long: "search asks the running daemon's full-text index (every finished turn's message and answer, every\n" +
			"chat's and session's title) and prints the best hits: where (session, chat, turn) and the text around\n" +
			"the match. QUERY is FTS5 syntax: words (all must occur), \"a phrase\", prefix*, OR, NOT, NEAR(a b).\n" +
			"ahpd export SESSION --chat CHAT prints a hit's whole chat.",
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			params := map[string]any{"query": a[0]}
			if cmd.Flags().Changed("limit") {
				params["limit"] = limit
			}
			var res host.SearchResult
			if err := botCall(cmd.Context(), &f, host.MethodSearch, params, &res); err != nil {
				return err
			}
			return printHits(cmd.OutOrStdout(), f.asJSON, isTerminal(cmd.OutOrStdout()), res.Items)
		},
	}
	f.add(cmd, "print the hits as a JSON array")
	cmd.Flags().IntVar(&limit, "limit", 20, "at most this many hits (1-100)")
	return cmd
}

func printHits(w io.Writer, asJSON, color bool, hits []host.SearchHit) error {
	if asJSON {
		if hits == nil {
			hits = []host.SearchHit{}
		}
		return json.NewEncoder(w).Encode(hits)
	}
	if len(hits) == 0 {
		_, err := fmt.Fprintln(w, "no hits")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tCHAT\tTURN\tTITLE\tTEXT")
	for _, h := range hits {
		turn := h.TurnID
		if turn == "" {
			turn = "(title)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", h.Session, h.Chat, turn, oneLine(h.Title), markMatches(h.Snippet, h.Matches, color))
	}
	return tw.Flush()
}

// markMatches puts the matched words of a snippet in bold on a terminal
// (between * otherwise), on one line.
func markMatches(snippet string, matches [][2]int, color bool) string {
	open, closing := "*", "*"
	if color {
		open, closing = "\x1b[1m", "\x1b[0m"
	}
	units := utf16.Encode([]rune(snippet))
	var b strings.Builder
	at := 0
	for _, m := range matches {
		if m[0] < at || m[1] > len(units) || m[0] >= m[1] {
			continue
		}
		b.WriteString(string(utf16.Decode(units[at:m[0]])))
		b.WriteString(open + string(utf16.Decode(units[m[0]:m[1]])) + closing)
		at = m[1]
	}
	b.WriteString(string(utf16.Decode(units[at:])))
	return oneLine(b.String())
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
