package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/ahpclient"
)

// clientFlags pick the daemon a client verb talks to.
type clientFlags struct {
	url, token string
	asJSON     bool
}

func (f *clientFlags) add(cmd *cobra.Command, jsonHelp string) {
	f.addDaemon(cmd)
	cmd.Flags().BoolVar(&f.asJSON, "json", false, jsonHelp)
}

// addDaemon adds --url and --token alone, for a verb without --json.
func (f *clientFlags) addDaemon(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.url, "url", "", "daemon websocket URL (default $AHPD_URL, else ws://127.0.0.1:9187)")
	cmd.Flags().StringVar(&f.token, "token", "", "connection token (default $AHPD_TOKEN)")
}

func (f *clientFlags) dial(ctx context.Context) (*ahpclient.Client, error) {
	url, token := f.url, f.token
	if url == "" {
		url = os.Getenv("AHPD_URL")
	}
	if url == "" {
		url = "ws://127.0.0.1:9187"
	}
	if token == "" {
		token = os.Getenv("AHPD_TOKEN")
	}
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return ahpclient.Dial(dctx, url, token)
}

// drain discards pushed frames a verb does not follow, so the connection
// keeps reading while the verb waits on a call.
func drain(c *ahpclient.Client) {
	go func() {
		for range c.Events() {
		}
	}()
}

func newSessions() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List the sessions of a running daemon",
		Long:  "sessions prints a table of the daemon's sessions (URI, provider, status, modified, title), or --json.",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := f.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			drain(c)
			list, err := c.ListSessions(ctx)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if f.asJSON {
				if list == nil {
					list = []ahpclient.Session{}
				}
				return json.NewEncoder(w).Encode(list)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SESSION\tPROVIDER\tSTATUS\tMODIFIED\tTITLE")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Resource, s.Provider, statusWord(s.Status), s.ModifiedAt, s.Title)
			}
			return tw.Flush()
		},
	}
	f.add(cmd, "print the sessions as a JSON array")
	return cmd
}

// statusWord names a session status bitset (AHP: Idle 1, Error 2,
// InProgress 8, InputNeeded 24).
func statusWord(s int) string {
	switch {
	case s&24 == 24:
		return "input-needed"
	case s&8 != 0:
		return "in-progress"
	case s&2 != 0:
		return "error"
	default:
		return "idle"
	}
}

func newSend() *cobra.Command {
	var f clientFlags
	var session, newProvider, chat string
	var queue, steer bool
	cmd := &cobra.Command{
		Use:   "send [--session URI | --new PROVIDER] [--chat URI] [--queue|--steer] MESSAGE|-",
		Short: "Send a message to a chat and stream the answer",
		Long: "send hands MESSAGE (or stdin with -) to a chat and streams the answer to stdout as plain text, or\n" +
			"with --json as action envelopes, one per line. The chat is --chat, else the default chat of --session,\n" +
			"else of a new session of --new PROVIDER, else of a new session of the daemon's default agent (script).\n" +
			"Without --queue or --steer the message starts a turn (behind the running one, if any).\n" +
			"Exit 0 when the turn completes, 1 on an error, 130 when cancelled; Ctrl-C cancels the turn\n" +
			"(chat/turnCancelled) and waits for its ending. On a terminal a spinner shows until the first output.",
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if queue && steer {
				return usageErr("--queue and --steer exclude each other")
			}
			if session != "" && newProvider != "" {
				return usageErr("--session and --new exclude each other")
			}
			text := a[0]
			if text == "-" {
				b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 16<<20))
				if err != nil {
					return fmt.Errorf("read stdin: %w", err)
				}
				text = strings.TrimRight(string(b), "\n")
			}
			if strings.TrimSpace(text) == "" {
				return usageErr("empty message")
			}
			mode := ahpclient.ModeTurn
			if queue {
				mode = ahpclient.ModeQueue
			} else if steer {
				mode = ahpclient.ModeSteer
			}
			return runSend(cmd, &f, session, newProvider, chat, text, mode)
		},
	}
	f.add(cmd, "print the turn's action envelopes as JSON, one per line")
	cmd.Flags().StringVar(&session, "session", "", "send to this session's default chat")
	cmd.Flags().StringVar(&newProvider, "new", "", "create a session of this provider and send to its default chat")
	cmd.Flags().StringVar(&chat, "chat", "", "send to this chat")
	cmd.Flags().BoolVar(&queue, "queue", false, "queue the message behind the running turn")
	cmd.Flags().BoolVar(&steer, "steer", false, "steer the running turn with the message")
	return cmd
}

func runSend(cmd *cobra.Command, f *clientFlags, session, newProvider, chat, text string, mode ahpclient.Mode) error {
	ctx := context.Background()
	interrupt := make(chan os.Signal, 1)
	signal.Notify(interrupt, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(interrupt)
	c, err := f.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if chat == "" {
		// Until Send follows the chat, frames pushed meanwhile are not ours.
		if session == "" {
			provider := newProvider
			if provider == "" {
				provider = "script"
			}
			session, chat, err = createSession(ctx, c, provider)
		} else {
			chat, err = c.DefaultChat(ctx, session)
		}
		if err != nil {
			return err
		}
	}
	out := cmd.OutOrStdout()
	spin := newSpinner(cmd.ErrOrStderr(), !f.asJSON && isTerminal(cmd.ErrOrStderr()) && isTerminal(out))
	defer spin.stop()
	cancel := make(chan struct{})
	go func() {
		if _, ok := <-interrupt; ok {
			close(cancel)
		}
	}()
	enc := json.NewEncoder(out)
	wrote := false
	opts := ahpclient.SendOptions{Mode: mode, Cancel: cancel}
	if f.asJSON {
		opts.OnEnvelope = func(e ahpclient.Envelope) { _ = enc.Encode(e) }
	} else {
		opts.OnText = func(s string) {
			spin.stop()
			wrote = wrote || s != ""
			fmt.Fprint(out, s)
		}
	}
	res, err := c.Send(ctx, chat, text, opts)
	spin.stop()
	if wrote && !strings.HasSuffix(text, "\n") {
		fmt.Fprintln(out)
	}
	if err != nil {
		return err
	}
	switch res.Ending {
	case ahpclient.EndComplete:
		return nil
	case ahpclient.EndCancelled:
		return &exitErr{code: exitCancelled, msg: "cancelled"}
	default:
		return &exitErr{code: exitError, msg: "turn failed: " + res.Error}
	}
}

// createSession creates a session of provider while discarding what the
// daemon pushes before Send follows the chat.
func createSession(ctx context.Context, c *ahpclient.Client, provider string) (string, string, error) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case _, ok := <-c.Events():
				if !ok {
					return
				}
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	return c.CreateSession(ctx, provider, nil)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	// A character device is a terminal (or /dev/null, where a spinner
	// is as harmless as it is invisible).
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// spinner draws on a terminal until stopped; off, it does nothing.
type spinner struct {
	once sync.Once
	done chan struct{}
	wg   sync.WaitGroup
}

func newSpinner(w io.Writer, on bool) *spinner {
	s := &spinner{done: make(chan struct{})}
	if !on {
		s.once.Do(func() {})
		return s
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		frames := `|/-\`
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-s.done:
				fmt.Fprint(w, "\r \r")
				return
			case <-t.C:
				fmt.Fprintf(w, "\r%c", frames[i%len(frames)])
			}
		}
	}()
	return s
}

func (s *spinner) stop() {
	s.once.Do(func() { close(s.done) })
	s.wg.Wait()
}

func newWatch() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "watch URI",
		Short: "Follow a chat or a session live",
		Long: "watch subscribes to URI (a chat, a session, or ahp-root://) and prints what happens until Ctrl-C or\n" +
			"the daemon closes the connection: a chat's answers as text and each turn's start and ending, or with --json\n" +
			"every frame (action envelopes and notifications) one per line.",
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			ctx := context.Background()
			interrupt := make(chan os.Signal, 1)
			signal.Notify(interrupt, os.Interrupt, syscall.SIGTERM)
			defer signal.Stop(interrupt)
			c, err := f.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			uri := a[0]
			subscribed := make(chan error, 1)
			go func() {
				_, err := c.Subscribe(ctx, uri)
				subscribed <- err
			}()
			out := cmd.OutOrStdout()
			enc := json.NewEncoder(out)
			for {
				select {
				case err := <-subscribed:
					if err != nil {
						return err
					}
				case <-interrupt:
					return nil
				case fr, ok := <-c.Events():
					if !ok {
						if err := c.Err(); err != nil && !errors.Is(err, context.Canceled) {
							return err
						}
						return nil
					}
					if f.asJSON {
						_ = enc.Encode(map[string]any{"method": fr.Method, "params": fr.Params})
						continue
					}
					printFrame(out, uri, fr)
				}
			}
		},
	}
	f.add(cmd, "print every frame as JSON, one per line")
	return cmd
}

// printFrame prints one pushed frame for a person reading watch.
func printFrame(w io.Writer, uri string, fr ahpclient.Frame) {
	if fr.Method != "action" {
		fmt.Fprintf(w, "[%s]\n", fr.Method)
		return
	}
	var env ahpclient.Envelope
	if json.Unmarshal(fr.Params, &env) != nil || env.RejectionReason != "" {
		return
	}
	switch env.Type() {
	case ahp.ActionChatDelta:
		var a ahp.ChatDelta
		if json.Unmarshal(env.Action, &a) == nil {
			fmt.Fprint(w, a.Content)
		}
	case ahp.ActionChatResponsePart:
		var a ahp.ChatResponsePart
		if json.Unmarshal(env.Action, &a) == nil {
			switch a.Part.Kind {
			case ahp.PartMarkdown:
				fmt.Fprint(w, a.Part.Content)
			case ahp.PartSystemNotification:
				fmt.Fprintf(w, "\n[notice] %s\n", a.Part.Content)
			}
		}
	case ahp.ActionChatTurnStarted:
		var a ahp.ChatTurnStarted
		if json.Unmarshal(env.Action, &a) == nil {
			fmt.Fprintf(w, "\n[turn %s] > %s\n", a.TurnID, a.Message.Text)
		}
	case ahp.ActionChatTurnComplete, ahp.ActionChatTurnCancelled, ahp.ActionChatError:
		var a struct {
			TurnID string `json:"turnId"`
		}
		_ = json.Unmarshal(env.Action, &a)
		fmt.Fprintf(w, "\n[turn %s %s]\n", a.TurnID, strings.TrimPrefix(env.Type(), "chat/"))
	default:
		if env.Channel != uri || !ahpclient.IsChatURI(uri) {
			fmt.Fprintf(w, "[%s %s]\n", env.Channel, env.Type())
		}
	}
}
