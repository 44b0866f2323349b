// Package sessionconfig describes what a session of a provider can be set
// up with: the JSON Schema resolveSessionConfig answers with, the values a
// session starts from, and the allowed values of its dynamic properties
// (sessionConfigCompletions). The schema comes from what each backend
// declares (agent.Info: its models and settings) and from the working
// directory (a git repository offers its branches).
package sessionconfig

import (
	"slices"
	"strings"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/sandbox"
)

// Property keys the host itself defines.
const (
	// KeyModel picks the backend's model.
	KeyModel = "model"
	// KeyIsolation says where the session works: in the folder it was
	// given ("folder"), or, in a git repository, in a worktree of its own
	// on a new branch ("worktree").
	KeyIsolation = "isolation"
	// KeyBranch is the git branch of the working directory a session
	// starts from; its values are dynamic (sessionConfigCompletions).
	KeyBranch = "branch"
	// KeySandbox is how the session's processes are confined
	// (internal/sandbox: off, workspace, strict).
	KeySandbox = "sandbox"
)

// The isolations: the session works in its working directory itself
// (IsolationFolder), or in a git worktree the host makes for it on a new
// branch from KeyBranch (IsolationWorktree, offered in a repository).
const (
	IsolationFolder   = "folder"
	IsolationWorktree = "worktree"
)

// Schema is a session configuration schema: a JSON Schema object whose
// properties are strings, as AHP's SessionConfigSchema.
type Schema struct {
	Type       string              `json:"type"`
	Properties map[string]Property `json:"properties"`
	Required   []string            `json:"required,omitempty"`
}

// Property is one property of a Schema.
type Property struct {
	Type        string   `json:"type"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	Enum        []string `json:"enum,omitempty"`
	EnumLabels  []string `json:"enumLabels,omitempty"`
	// EnumDescriptions say what each value does (VS Code's settings
	// schemas use the same key).
	EnumDescriptions []string `json:"enumDescriptions,omitempty"`
	// EnumDynamic: the values come from sessionConfigCompletions.
	EnumDynamic bool   `json:"enumDynamic,omitempty"`
	Default     string `json:"default,omitempty"`
}

// Context is what a schema depends on beside the backend.
type Context struct {
	// Repository: the working directory is inside a git work tree.
	Repository bool
	// Sandbox offers the sandbox property when set.
	Sandbox *SandboxChoice
}

// SandboxChoice is what the sandbox property offers here: the daemon's
// default mode and, by mode, why a mode cannot run on this host.
type SandboxChoice struct {
	Default     sandbox.Mode
	Unavailable map[sandbox.Mode]string
}

// sandboxProperty lists every mode; one that cannot run here says so in
// its label and description, with the reason, and createSession refuses
// it (it is not dropped from the enum: a client shows why).
func sandboxProperty(c SandboxChoice) Property {
	p := Property{Type: "string", Title: "Sandbox", Default: string(c.Default),
		Description: "How the kernel confines the session's agent, its tools, ! commands and terminals (Landlock)."}
	for _, m := range sandbox.Modes {
		label, desc := m.Title(), m.Description()
		if why := c.Unavailable[m]; why != "" {
			label += " (unavailable)"
			desc = "Unavailable here: " + why + ". " + desc
		}
		p.Enum = append(p.Enum, string(m))
		p.EnumLabels = append(p.EnumLabels, label)
		p.EnumDescriptions = append(p.EnumDescriptions, desc)
	}
	return p
}

// For returns the schema of a session of the backend info describes.
func For(info agent.Info, ctx Context) Schema {
	s := Schema{Type: "object", Properties: map[string]Property{
		KeyIsolation: {Type: "string", Title: "Isolation", Description: "Where the session works: its working directory itself.",
			Enum: []string{IsolationFolder}, EnumLabels: []string{"Folder"}, Default: IsolationFolder},
	}}
	if models := modelChoices(info); len(models) > 0 {
		// The backend's configured default wins over the order of a list
		// (a learned list, or a provider's /models, names its own first).
		p := Property{Type: "string", Title: "Model", Default: models[0].ID}
		for _, m := range models {
			label := m.Name
			if label == "" {
				label = m.ID
			}
			p.Enum = append(p.Enum, m.ID)
			p.EnumLabels = append(p.EnumLabels, label)
		}
		s.Properties[KeyModel] = p
	}
	for _, c := range info.Config {
		s.Properties[c.Key] = Property{Type: "string", Title: c.Title, Description: c.Description,
			Enum: slices.Clone(c.Enum), EnumLabels: slices.Clone(c.EnumLabels), Default: c.Default}
	}
	if ctx.Sandbox != nil {
		s.Properties[KeySandbox] = sandboxProperty(*ctx.Sandbox)
	}
	if ctx.Repository {
		s.Properties[KeyIsolation] = Property{Type: "string", Title: "Isolation",
			Description: "Where the session works: its working directory itself, or a git worktree of its own on a new branch.",
			Enum:        []string{IsolationFolder, IsolationWorktree}, EnumLabels: []string{"Folder", "Worktree"}, Default: IsolationFolder}
		s.Properties[KeyBranch] = Property{Type: "string", Title: "Branch",
			Description: "The git branch of the working directory; a worktree session branches from it.", EnumDynamic: true}
	}
	return s
}

// modelChoices are the models a session of info may name, the default
// first: the configured DefaultModel (offered even when the list leaves it
// out), then the backend's list in its order.
func modelChoices(info agent.Info) []agent.Model {
	d := info.DefaultModel
	if d == "" {
		return info.Models
	}
	out := []agent.Model{{ID: d, Name: d}}
	for _, m := range info.Models {
		if m.ID == d {
			out[0] = m
			continue
		}
		out = append(out, m)
	}
	return out
}

// Resolve returns the values a session with the given client values
// starts from: each property's default, overlaid with what the client
// chose. A value outside a property's enum is replaced by its default; a
// key the schema does not name is kept as the client sent it (a client's
// own settings travel with the session).
func Resolve(s Schema, values map[string]any) map[string]any {
	out := make(map[string]any, len(s.Properties)+len(values))
	for k, v := range values {
		out[k] = v
	}
	for k, p := range s.Properties {
		v, given := out[k].(string)
		switch {
		case given && (len(p.Enum) == 0 || slices.Contains(p.Enum, v)):
		case p.Default != "":
			out[k] = p.Default
		default:
			delete(out, k)
		}
	}
	return out
}

// Backend returns the values of the settings the backend declared, to
// hand it when a conversation opens (agent.OpenParams.Config).
func Backend(info agent.Info, values map[string]any) map[string]string {
	out := map[string]string{}
	for _, c := range info.Config {
		if v, ok := values[c.Key].(string); ok && v != "" {
			out[c.Key] = v
		}
	}
	return out
}

// Model is the session's model, "" when it names none.
func Model(values map[string]any) string {
	m, _ := values[KeyModel].(string)
	return m
}

// Item is one allowed value of a dynamic property.
type Item struct {
	Value       string `json:"value"`
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// BranchLimit is how many branches a completion lists.
const BranchLimit = 25

// RankBranches orders a repository's branches for a completion: the
// current branch first, then the default branch, then the rest by name;
// only those whose name holds query (case-insensitive), at most
// BranchLimit.
func RankBranches(branches []string, current, defaultBranch, query string) []Item {
	q := strings.ToLower(query)
	rank := func(b string) int {
		switch b {
		case current:
			return 0
		case defaultBranch:
			return 1
		}
		return 2
	}
	sorted := slices.Clone(branches)
	slices.SortStableFunc(sorted, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	items := []Item{}
	for _, b := range slices.Compact(sorted) {
		if !strings.Contains(strings.ToLower(b), q) {
			continue
		}
		items = append(items, Item{Value: b, Label: b})
		if len(items) == BranchLimit {
			break
		}
	}
	return items
}

// Isolation is the isolation values name ("" when none).
func Isolation(values map[string]any) string {
	v, _ := values[KeyIsolation].(string)
	return v
}

// Branch is the branch values name ("" when none).
func Branch(values map[string]any) string {
	v, _ := values[KeyBranch].(string)
	return v
}
