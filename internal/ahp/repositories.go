package ahp

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// Repository-backed sessions (AHP types/channels-session, commit
// 043bc34700935951efc4528c59e9d3158f463bfc): createSession may name
// repositories to prepare instead of working directories; the host clones
// them and publishes the directories it made. resolveSessionConfig and
// sessionConfigCompletions take the same list as context and prepare
// nothing. The list is accepted only as far as the host's
// InitializeResult.repositoryPreparation says.

// RepositorySource is one repository a session is asked to work in: a
// credential-free source URI and, optionally, the branch, tag or commit to
// check out (the source's default when omitted). It is kept exactly as
// accepted, in the session's state and summaries.
type RepositorySource struct {
	Source   URI    `json:"source"`
	Revision string `json:"revision,omitempty"`
	// revisionSet is whether the JSON named a revision at all: an empty
	// one is refused, an absent one is the default.
	revisionSet bool
}

// UnmarshalJSON remembers whether a revision was named, so "" is refused
// rather than taken for the default.
func (r *RepositorySource) UnmarshalJSON(b []byte) error {
	var raw struct {
		Source   URI     `json:"source"`
		Revision *string `json:"revision"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	r.Source = raw.Source
	r.Revision, r.revisionSet = "", raw.Revision != nil
	if raw.Revision != nil {
		r.Revision = *raw.Revision
	}
	return nil
}

// RepositoryPreparationCapabilities is InitializeResult.repositoryPreparation:
// absent, the host takes no repositories; empty, one at its default
// revision.
type RepositoryPreparationCapabilities struct {
	Revision             bool `json:"revision,omitempty"`
	MultipleRepositories bool `json:"multipleRepositories,omitempty"`
}

// Bounds of a repository list.
const (
	maxRepositorySourceBytes = 2048
	maxRevisionBytes         = 256
)

// RepositorySchemes are the source schemes a host clones from: git's own
// transports, never ext:: or another helper that runs a command.
var RepositorySchemes = []string{"file", "https", "http", "ssh", "git"}

// obsoleteRepositoryKeys are the carriers of repository intent of earlier
// drafts: only the typed repositories field carries it now.
var obsoleteRepositoryKeys = []string{"repositories", "repositorySource", "repositoryRevision", "repositoryUrl"}

// CheckRepositories checks a command's repository list (field names where
// it came from, "params.repositories") against the host's capabilities
// (nil: it takes none). A nil list is no list; an empty one is refused.
// config is the command's config values, which may not carry repository
// intent. Every refusal is InvalidParams, before anything is prepared.
func CheckRepositories(field string, list []RepositorySource, caps *RepositoryPreparationCapabilities, config map[string]any) error {
	for _, k := range obsoleteRepositoryKeys {
		if _, ok := config[k]; ok {
			return Errorf(ErrInvalidParams, "params.config.%s: repository intent travels in %s only", k, field)
		}
	}
	if list == nil {
		return nil
	}
	if caps == nil {
		return Errorf(ErrInvalidParams, "%s: this host prepares no repositories (initialize: repositoryPreparation is absent)", field)
	}
	if len(list) == 0 {
		return Errorf(ErrInvalidParams, "%s: an empty list; leave it out instead", field)
	}
	if len(list) > 1 && !caps.MultipleRepositories {
		return Errorf(ErrInvalidParams, "%s: %d repositories; this host prepares one", field, len(list))
	}
	for i, r := range list {
		at := fmt.Sprintf("%s[%d]", field, i)
		if err := checkRepositorySource(r.Source); err != nil {
			return Errorf(ErrInvalidParams, "%s.source: %v", at, err)
		}
		if !r.revisionSet && r.Revision == "" {
			continue
		}
		if !caps.Revision {
			return Errorf(ErrInvalidParams, "%s.revision: this host checks out each repository's default revision only", at)
		}
		if err := checkRevision(r.Revision); err != nil {
			return Errorf(ErrInvalidParams, "%s.revision: %v", at, err)
		}
	}
	return nil
}

// checkRepositorySource refuses a source that is not an absolute URI of a
// git transport, or that carries a credential, a query or a fragment.
func checkRepositorySource(src URI) error {
	s := string(src)
	switch {
	case strings.TrimSpace(s) == "":
		return fmt.Errorf("required")
	case len(s) > maxRepositorySourceBytes:
		return fmt.Errorf("longer than %d bytes", maxRepositorySourceBytes)
	case strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return fmt.Errorf("%q holds a space or a control character", s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URI: %v", s, err)
	}
	if u.Scheme == "" || u.Opaque != "" {
		return fmt.Errorf("%q is not an absolute URI (scheme://...)", s)
	}
	known := false
	for _, sc := range RepositorySchemes {
		known = known || strings.EqualFold(u.Scheme, sc)
	}
	if !known {
		return fmt.Errorf("%q: the scheme %s is not one of %s", s, u.Scheme, strings.Join(RepositorySchemes, ", "))
	}
	if u.User != nil || strings.Contains(u.Host, "@") {
		return fmt.Errorf("%q carries a credential; authenticate instead", s)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(s, "?#") {
		return fmt.Errorf("%q has a query or a fragment", s)
	}
	if strings.EqualFold(u.Scheme, "file") {
		if u.Host != "" && u.Host != "localhost" {
			return fmt.Errorf("%q names another machine", s)
		}
	} else if u.Host == "" {
		return fmt.Errorf("%q names no host", s)
	}
	if u.Path == "" || u.Path == "/" {
		return fmt.Errorf("%q names no repository", s)
	}
	return nil
}

// checkRevision refuses a revision git could read as an option, or that is
// blank or not printable.
func checkRevision(rev string) error {
	switch {
	case strings.TrimSpace(rev) == "":
		return fmt.Errorf("blank; leave it out for the default")
	case len(rev) > maxRevisionBytes:
		return fmt.Errorf("longer than %d bytes", maxRevisionBytes)
	case strings.HasPrefix(rev, "-"):
		return fmt.Errorf("%q starts with '-'", rev)
	case strings.IndexFunc(rev, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return fmt.Errorf("%q holds a space or a control character", rev)
	case strings.Contains(rev, ".."):
		return fmt.Errorf("%q is a range, not a revision", rev)
	}
	return nil
}

// CheckCreationCarrier refuses a createSession that names both
// repositories and working directories: they are mutually exclusive.
func CheckCreationCarrier(p *CreateSessionParams) error {
	if p.Repositories != nil && len(p.Directories()) > 0 {
		return Errorf(ErrInvalidParams, "params.repositories and params.workingDirectories are mutually exclusive; name one")
	}
	return nil
}

// SameRepositories reports whether two lists are the same intent: the same
// entries in the same order, an omitted revision apart from a named one.
func SameRepositories(a, b []RepositorySource) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Source != b[i].Source || a[i].Revision != b[i].Revision {
			return false
		}
	}
	return true
}
