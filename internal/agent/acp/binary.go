package acp

// Binary resolves the agent's command the next process would run, for
// `ahpd doctor`.
func (a *Agent) Binary() (string, error) { return a.binary() }
