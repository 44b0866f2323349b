package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/env"
	"github.com/ahpd/ahpd/internal/sandbox"
	"github.com/ahpd/ahpd/internal/session"
	"github.com/ahpd/ahpd/internal/sessionconfig"
)

// sandboxChoice is what the sandbox property offers on this host: the
// default mode and each mode the kernel cannot run, with the reason.
func sandboxChoice(site *sandbox.Site) *sessionconfig.SandboxChoice {
	c := &sessionconfig.SandboxChoice{Default: sandbox.Off, Unavailable: map[sandbox.Mode]string{}}
	if site != nil {
		c.Default = site.Default
	}
	for _, m := range sandbox.Modes {
		if !m.Confines() {
			continue
		}
		if site == nil {
			c.Unavailable[m] = "this daemon confines no session"
		} else if ok, why := site.Available(m); !ok {
			c.Unavailable[m] = why
		}
	}
	return c
}

// checkSandbox refuses a new session (issue 36 §4) whose sandbox mode
// cannot run here, or whose folders cannot be confined (one holds the
// daemon's data dir, config or tokens): never a session that would run
// unconfined, or confined less than it asked.
func (d *configDesk) checkSandbox(ctx context.Context, session, provider string, dirs []string, values map[string]any) error {
	v, _ := values[sessionconfig.KeySandbox].(string)
	mode, err := sandbox.ParseMode(v)
	if err != nil {
		return ahp.Errorf(ahp.ErrInvalidParams, "params.config.sandbox: %v", err)
	}
	if !mode.Confines() {
		return nil
	}
	if d.sandbox == nil {
		return ahp.Errorf(ahp.ErrInvalidParams, "params.config.sandbox: %s is unavailable: this daemon confines no session", mode)
	}
	if ok, why := d.sandbox.Available(mode); !ok {
		return ahp.Errorf(ahp.ErrInvalidParams, "params.config.sandbox: %s is unavailable here: %s", mode, why)
	}
	folders := make([]string, 0, len(dirs))
	for _, dir := range dirs {
		if p, err := ahp.LocalPath(dir); err == nil {
			folders = append(folders, p)
		}
	}
	var backend sandbox.Paths
	if a, ok := d.agents.Get(provider); ok {
		info := a.Info(ctx)
		backend = sandbox.Paths{ReadWrite: info.SandboxWrite, ReadOnly: info.SandboxRead}
	}
	if err := d.sandbox.Check(mode, session, provider, folders, backend); err != nil {
		return ahp.Errorf(ahp.ErrInvalidParams, "params.config.sandbox: %s: %v", mode, err)
	}
	return nil
}

// sessionSandbox is what a terminal of session (a URI; "" for none)
// starts through: the session's sandbox over its working directories,
// nil when it is not sandboxed. The session's stored config names the
// mode (the daemon's default when it names none).
func sessionSandbox(ctx context.Context, e *env.Env, session string) (func(*exec.Cmd) error, error) {
	if session == "" {
		return nil, nil
	}
	rec, ok, err := e.Store.Session(ctx, session)
	if err != nil || !ok {
		return nil, fmt.Errorf("session %s: %v", session, err)
	}
	mode := sandbox.Off
	if e.Sandbox != nil {
		mode = e.Sandbox.Default
	}
	var meta struct {
		Sandbox string `json:"sandbox"`
	}
	var cfg ahp.SessionConfig
	named := ""
	if len(rec.Meta) > 0 && json.Unmarshal(rec.Meta, &meta) == nil && meta.Sandbox != "" {
		named = meta.Sandbox
	} else if len(rec.Config) > 0 && json.Unmarshal(rec.Config, &cfg) == nil {
		named, _ = cfg.Values[sessionconfig.KeySandbox].(string)
	}
	if named != "" {
		if mode, err = sandbox.ParseMode(named); err != nil {
			return nil, err
		}
	}
	if !mode.Confines() {
		return nil, nil
	}
	var folders []string
	for _, dir := range rec.WorkingDirectories {
		if p, err := ahp.LocalPath(dir); err == nil {
			folders = append(folders, p)
		}
	}
	p, err := e.Sandbox.Policy(mode, session, "", folders, sandbox.Paths{})
	if err != nil {
		return nil, err
	}
	e.Logger.Info("sandbox applied", "to", "a terminal", "session", session, "mode", string(p.Mode), "write", p.ReadWrite, "read", p.ReadOnly)
	return e.Sandbox.Wrapper(p), nil
}

// recordMeta is a new session's record meta: the sandbox mode it was
// created with (what confines it from then on, whatever its config later
// says), the repositories it was created from (kept exactly, for its
// state and summaries) and, for a delegated session, where it came from.
func recordMeta(values map[string]any, repos []ahp.RepositorySource, by *session.CreatedBy) json.RawMessage {
	mode, _ := values[sessionconfig.KeySandbox].(string)
	if mode == "" && len(repos) == 0 && by == nil {
		return nil
	}
	raw, _ := json.Marshal(session.RecordMeta{Sandbox: mode, Repositories: repos, CreatedBy: by})
	return raw
}
