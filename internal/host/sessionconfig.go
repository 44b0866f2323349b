package host

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/sandbox"
	"github.com/ahpd/ahpd/internal/sessionconfig"
)

// resolveSessionConfigParams are the params of resolveSessionConfig and
// sessionConfigCompletions (AHP channels-root/commands).
type resolveSessionConfigParams struct {
	Channel          string `json:"channel"`
	Provider         string `json:"provider,omitempty"`
	WorkingDirectory string `json:"workingDirectory,omitempty"`
	// Repositories are context only: neither command clones or checks
	// out anything (AHP), so they add no property; they are checked as
	// createSession would check them.
	Repositories []ahp.RepositorySource `json:"repositories,omitempty"`
	Config       map[string]any         `json:"config,omitempty"`
	Property     string                 `json:"property,omitempty"`
	Query        string                 `json:"query,omitempty"`
}

// configDesk answers what a new session's config may hold: the schema
// and values createSession and a bot's work session start from, and the
// commands resolveSessionConfig and sessionConfigCompletions.
type configDesk struct {
	log             *slog.Logger
	agents          *agent.Registry
	defaultProvider string
	paths           servedPaths
	// sandbox is how sessions' processes are confined (sandbox.go).
	sandbox *sandbox.Site
	// repositories is the host's repositoryPreparation (gitclones.go).
	repositories func() *ahp.RepositoryPreparationCapabilities
}

// schema is the schema and values of a session of provider working in dir
// (a local path, "" for none), with the client's values.
func (d *configDesk) schema(ctx context.Context, provider, dir string, values map[string]any) (json.RawMessage, map[string]any) {
	a, ok := d.agents.Get(provider)
	if !ok {
		return json.RawMessage(`{"type":"object","properties":{}}`), values
	}
	schema := sessionconfig.For(a.Info(ctx), sessionconfig.Context{Repository: dir != "" && sessionconfig.Repository(ctx, dir),
		Sandbox: sandboxChoice(d.sandbox)})
	raw, err := json.Marshal(schema)
	if err != nil {
		raw = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return raw, sessionconfig.Resolve(schema, values)
}

// read reads the params both commands share: the provider (the
// default when none is named) and the working directory as a local path
// inside the served paths ("" when none is named).
func (d *configDesk) read(cl *client, params json.RawMessage) (resolveSessionConfigParams, string, error) {
	var p resolveSessionConfigParams
	if err := decodeParams(params, &p); err != nil {
		return p, "", err
	}
	if err := requireChannel(p.Channel, true); err != nil {
		return p, "", err
	}
	if !cl.principal.Can("session:create") {
		return p, "", ahp.Errorf(ahp.ErrPermissionDenied, "describing a new session needs the grant session:create")
	}
	if p.Provider == "" {
		p.Provider = d.defaultProvider
	}
	if _, ok := d.agents.Get(p.Provider); !ok {
		return p, "", fmt.Errorf("%w: %s", ahp.ErrProviderNotFound, p.Provider)
	}
	if err := ahp.CheckRepositories("params.repositories", p.Repositories, d.repositories(), p.Config); err != nil {
		return p, "", err
	}
	if p.WorkingDirectory == "" {
		return p, "", nil
	}
	dir, err := ahp.LocalPath(p.WorkingDirectory)
	if err != nil {
		return p, "", ahp.Errorf(ahp.ErrInvalidParams, "params.workingDirectory: %v", err)
	}
	if !d.paths.holds(dir) {
		return p, "", ahp.Errorf(ahp.ErrInvalidParams, "params.workingDirectory: %s is outside the daemon's served paths", p.WorkingDirectory)
	}
	return p, dir, nil
}

// resolveSessionConfig answers the schema of what a session of the named
// provider takes in the named directory, and the values it would start
// from. It prepares nothing (AHP: no clone, no checkout).
func (d *configDesk) resolve(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
	p, dir, err := d.read(cl, params)
	if err != nil {
		return nil, err
	}
	schema, values := d.schema(ctx, p.Provider, dir, p.Config)
	return map[string]any{"schema": schema, "values": values}, nil
}

// sessionConfigCompletions answers the allowed values of a dynamic
// property: a repository's branches for "branch".
func (d *configDesk) completions(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
	p, dir, err := d.read(cl, params)
	if err != nil {
		return nil, err
	}
	if p.Property == "" {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.property: required")
	}
	items := []sessionconfig.Item{}
	if p.Property != sessionconfig.KeyBranch || dir == "" || !sessionconfig.Repository(ctx, dir) {
		return map[string]any{"items": items}, nil
	}
	branches, current, def, err := sessionconfig.Branches(ctx, dir)
	if err != nil {
		d.log.Warn("branch completions", "dir", dir, "err", err)
		return map[string]any{"items": items}, nil
	}
	return map[string]any{"items": sessionconfig.RankBranches(branches, current, def, p.Query)}, nil
}
