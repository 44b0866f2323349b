package claude

// Binary resolves the claude executable the next conversation would run
// (the configured binary, else PATH), for `ahpd doctor`.
// It looks again on every call, so a CLI installed after start is found.
func (c *Claude) Binary() (string, error) { return c.opts.binary() }
