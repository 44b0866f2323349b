package cofold

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// Settings are cofold's part of the daemon config, "agents": {"cofold": ...}.
type Settings struct {
	Providers []ProviderConfig `json:"providers,omitempty"`
	// DefaultModel is "<provider>/<model>"; empty means the first model of
	// the first provider.
	DefaultModel string `json:"defaultModel,omitempty"`
	// PermissionMode is default, acceptEdits, plan or bypassPermissions.
	PermissionMode string `json:"permissionMode,omitempty"`
	// Instructions are laid into every system prompt.
	Instructions string `json:"instructions,omitempty"`
	// MaxRetries bounds the SDKs' own retries of a failed model call;
	// nil means 2.
	MaxRetries *int `json:"maxRetries,omitempty"`
	// BashTimeoutSeconds bounds one bash call; 0 means 120.
	BashTimeoutSeconds int `json:"bashTimeoutSeconds,omitempty"`
	// MaxSteps bounds the model calls of one turn; 0 means 50.
	MaxSteps int `json:"maxSteps,omitempty"`
	// ReasoningEffort is sent to models that take it (low, medium, high).
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
}

// ProviderConfig is one model endpoint.
type ProviderConfig struct {
	Name string `json:"name"`
	// API is "openai" (chat completions) or "anthropic" (messages).
	API     string `json:"api"`
	BaseURL string `json:"baseUrl"`
	APIKey  string `json:"apiKey,omitempty"`
	// APIKeyEnv names the environment variable holding the key.
	APIKeyEnv string            `json:"apiKeyEnv,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	Models    []ModelConfig     `json:"models,omitempty"`
}

// ModelConfig is one model of a provider.
type ModelConfig struct {
	ID            string `json:"id"`
	ContextWindow int    `json:"contextWindow,omitempty"`
	MaxTokens     int    `json:"maxTokens,omitempty"`
}

// Permission modes.
const (
	ModeDefault     = "default"
	ModeAcceptEdits = "acceptEdits"
	ModePlan        = "plan"
	ModeBypass      = "bypassPermissions"
)

// Defaults for what Settings leaves unsaid.
const (
	defaultMaxRetries    = 2
	defaultBashTimeout   = 120 * time.Second
	defaultMaxSteps      = 50
	defaultContextWindow = 128000
	defaultMaxTokens     = 8192
)

// ErrSettings marks settings cofold cannot run with; the daemon reports it
// as a usage error.
var ErrSettings = errors.New("cofold settings")

// ParseSettings reads and checks cofold's settings. Empty raw is no
// providers at all, which is valid: turns then fail saying where to
// configure one.
func ParseSettings(raw json.RawMessage) (Settings, error) {
	var s Settings
	if len(raw) == 0 || string(raw) == "null" {
		return s, nil
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("%w: %v", ErrSettings, err)
	}
	return s, s.check()
}

func (s Settings) check() error {
	seen := map[string]bool{}
	for i, p := range s.Providers {
		switch {
		case p.Name == "":
			return fmt.Errorf("%w: providers[%d]: empty name", ErrSettings, i)
		case strings.Contains(p.Name, "/"):
			return fmt.Errorf("%w: provider %q: a name cannot hold '/'", ErrSettings, p.Name)
		case seen[p.Name]:
			return fmt.Errorf("%w: provider %q is named twice", ErrSettings, p.Name)
		case p.API != "openai" && p.API != "anthropic":
			return fmt.Errorf("%w: provider %q: api must be openai or anthropic, not %q", ErrSettings, p.Name, p.API)
		case p.BaseURL == "":
			return fmt.Errorf("%w: provider %q: baseUrl is missing", ErrSettings, p.Name)
		}
		for j, m := range p.Models {
			if m.ID == "" {
				return fmt.Errorf("%w: provider %q: models[%d]: empty id", ErrSettings, p.Name, j)
			}
		}
		seen[p.Name] = true
	}
	if s.DefaultModel != "" {
		prov, _, ok := strings.Cut(s.DefaultModel, "/")
		if !ok || !seen[prov] {
			return fmt.Errorf("%w: defaultModel %q names no configured provider (want <provider>/<model>)", ErrSettings, s.DefaultModel)
		}
	}
	switch s.PermissionMode {
	case "", ModeDefault, ModeAcceptEdits, ModePlan, ModeBypass:
	default:
		return fmt.Errorf("%w: permissionMode must be default, acceptEdits, plan or bypassPermissions, not %q", ErrSettings, s.PermissionMode)
	}
	if s.MaxRetries != nil && (*s.MaxRetries < 0 || *s.MaxRetries > 10) {
		return fmt.Errorf("%w: maxRetries must be 0..10, not %d", ErrSettings, *s.MaxRetries)
	}
	return nil
}

func (s Settings) maxRetries() int {
	if s.MaxRetries == nil {
		return defaultMaxRetries
	}
	return *s.MaxRetries
}

func (s Settings) bashTimeout() time.Duration {
	if s.BashTimeoutSeconds > 0 {
		return time.Duration(s.BashTimeoutSeconds) * time.Second
	}
	return defaultBashTimeout
}

func (s Settings) maxSteps() int {
	if s.MaxSteps > 0 {
		return s.MaxSteps
	}
	return defaultMaxSteps
}

func (s Settings) mode() string {
	if s.PermissionMode == "" {
		return ModeDefault
	}
	return s.PermissionMode
}

func (p ProviderConfig) apiKey() string {
	if p.APIKey != "" {
		return p.APIKey
	}
	if p.APIKeyEnv != "" {
		return os.Getenv(p.APIKeyEnv)
	}
	return ""
}

// provider finds a provider by name.
func (s Settings) provider(name string) (ProviderConfig, bool) {
	for _, p := range s.Providers {
		if p.Name == name {
			return p, true
		}
	}
	return ProviderConfig{}, false
}
