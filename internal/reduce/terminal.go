package reduce

import "github.com/ahpd/ahpd/internal/ahp"

// Terminal applies a terminal-channel action to s. Output goes to the
// command that runs, else to the unclassified output at the end, else to a
// new unclassified part.
func Terminal(s *ahp.TerminalState, a ahp.Action) {
	switch a := a.(type) {
	case ahp.TerminalData:
		content := fresh(s.Content)
		n := len(content)
		switch {
		case n > 0 && content[n-1].Type == ahp.TerminalPartCommand && !content[n-1].IsComplete:
			content[n-1].Output += a.Data
		case n > 0 && content[n-1].Type == ahp.TerminalPartUnclassified:
			content[n-1].Value += a.Data
		default:
			content = append(content, ahp.TerminalContentPart{Type: ahp.TerminalPartUnclassified, Value: a.Data})
		}
		s.Content = content
	case ahp.TerminalInput:
		// Written to the pty by the host; the state does not change.
	case ahp.TerminalResized:
		cols, rows := a.Cols, a.Rows
		s.Cols, s.Rows = &cols, &rows
	case ahp.TerminalClaimed:
		s.Claim = a.Claim
	case ahp.TerminalTitleChanged:
		s.Title = a.Title
	case ahp.TerminalCwdChanged:
		s.Cwd = a.Cwd
	case ahp.TerminalExited:
		// The later protocol's lifecycle, and 1.0's exitCode beside it:
		// one exit said twice, from the action's one code.
		s.Lifecycle = &ahp.TerminalLifecycle{Status: ahp.TerminalStatusExited, ExitCode: a.ExitCode}
		s.ExitCode = a.ExitCode
	case ahp.TerminalCleared:
		s.Content = []ahp.TerminalContentPart{}
	case ahp.TerminalCommandDetectionAvailable:
		yes := true
		s.SupportsCommandDetection = &yes
	case ahp.TerminalCommandExecuted:
		content := fresh(s.Content)
		s.Content = append(content, ahp.TerminalContentPart{
			Type: ahp.TerminalPartCommand, CommandID: a.CommandID, CommandLine: a.CommandLine, Timestamp: a.Timestamp,
		})
		yes := true
		s.SupportsCommandDetection = &yes
	case ahp.TerminalCommandFinished:
		content := fresh(s.Content)
		for i := range content {
			if p := &content[i]; p.Type == ahp.TerminalPartCommand && p.CommandID == a.CommandID {
				p.IsComplete, p.ExitCode, p.DurationMs = true, a.ExitCode, a.DurationMs
			}
		}
		s.Content = content
	}
}
