package pi

// Binary resolves the pi executable the next conversation would run (the
// configured binary, else PATH), for `ahpd doctor`.
func (p *Pi) Binary() (string, error) { return p.opts.binary() }
