// Package filefind finds the files an @ or # completion offers: it lists a
// working directory's files and folders the way a user's editor would (the
// root's .gitignore and .ignore honoured, .git left out, bounded), and
// matches a typed query against them: a path when the query names a
// folder, else the base name, case-insensitively and fuzzily.
//
// Walk reads the disk; Match is pure and table-tested. Matching uses
// github.com/sahilm/fuzzy (the ranking fzf-style pickers use, with no
// dependencies of its own) and ignore files github.com/sabhiram/go-gitignore
// (gitignore's pattern rules: negation, anchoring, directory-only, **).
package filefind

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	ignore "github.com/sabhiram/go-gitignore"
	"github.com/sahilm/fuzzy"
)

// Entry is one file or folder under a root.
type Entry struct {
	// Root is the working directory it was found under (a local path).
	Root string
	// Rel is its path under Root, slash-separated.
	Rel string
	Dir bool
}

// Abs is the entry's local path.
func (e Entry) Abs() string { return filepath.Join(e.Root, filepath.FromSlash(e.Rel)) }

// Base is the entry's name.
func (e Entry) Base() string { return path.Base(e.Rel) }

// hidden reports whether any part of the entry's path starts with a dot.
func (e Entry) hidden() bool {
	for _, part := range strings.Split(e.Rel, "/") {
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}

// Walk lists what lies under root, at most limit entries, leaving out .git
// and what the root's .gitignore and .ignore name. A folder it may not read
// is skipped.
func Walk(root string, limit int) []Entry {
	var rules []*ignore.GitIgnore
	for _, name := range []string{".gitignore", ".ignore"} {
		if gi, err := ignore.CompileIgnoreFile(filepath.Join(root, name)); err == nil {
			rules = append(rules, gi)
		}
	}
	ignored := func(rel string, dir bool) bool {
		if dir {
			rel += "/"
		}
		for _, gi := range rules {
			if gi.MatchesPath(rel) {
				return true
			}
		}
		return false
	}
	var out []Entry
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && p != root {
				return fs.SkipDir
			}
			return nil
		}
		if p == root {
			return nil
		}
		if len(out) >= limit {
			return fs.SkipAll
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		isDir := d.IsDir()
		if d.Type()&os.ModeSymlink != 0 {
			// A link is offered as what it is; it is never followed, so a
			// walk cannot leave the root through one.
			isDir = false
		}
		if d.Name() == ".git" || ignored(rel, isDir) {
			if isDir {
				return fs.SkipDir
			}
			return nil
		}
		out = append(out, Entry{Root: root, Rel: rel, Dir: isDir})
		return nil
	})
	return out
}

// Match returns the entries query names, best first, at most max. A query
// with a slash matches paths (what starts with it first, then fuzzily); any
// other matches base names fuzzily. Hidden entries (outside .git, which
// Walk never lists) match any query that names them, dot typed or not, as
// VS Code's host offers them; only the empty query, a bare listing, leaves
// them out. An empty query takes every root in turn, so one root cannot
// fill the list alone.
func Match(entries []Entry, query string, max int) []Entry {
	showHidden := query != ""
	var pool []Entry
	for _, e := range entries {
		if showHidden || !e.hidden() {
			pool = append(pool, e)
		}
	}
	if query == "" {
		return interleave(pool, max)
	}
	var out []Entry
	if strings.Contains(query, "/") {
		lower := strings.ToLower(query)
		var rest []Entry
		for _, e := range pool {
			if strings.HasPrefix(strings.ToLower(e.Rel), lower) {
				out = append(out, e)
			} else {
				rest = append(rest, e)
			}
		}
		sortByRel(out)
		out = append(out, fuzzyOn(rest, query, func(e Entry) string { return e.Rel })...)
	} else {
		out = fuzzyOn(pool, query, Entry.Base)
	}
	if len(out) > max {
		out = out[:max]
	}
	return out
}

// fuzzyOn ranks entries by how well key matches query, case-insensitively.
func fuzzyOn(entries []Entry, query string, key func(Entry) string) []Entry {
	keys := make([]string, len(entries))
	for i, e := range entries {
		keys[i] = strings.ToLower(key(e))
	}
	matches := fuzzy.Find(strings.ToLower(query), keys)
	out := make([]Entry, 0, len(matches))
	for _, m := range matches {
		out = append(out, entries[m.Index])
	}
	return out
}

func sortByRel(es []Entry) {
	slices.SortStableFunc(es, func(a, b Entry) int { return strings.Compare(a.Rel, b.Rel) })
}

// interleave takes the roots' entries in turn, each root's in path order.
func interleave(pool []Entry, max int) []Entry {
	var roots []string
	byRoot := map[string][]Entry{}
	for _, e := range pool {
		if _, ok := byRoot[e.Root]; !ok {
			roots = append(roots, e.Root)
		}
		byRoot[e.Root] = append(byRoot[e.Root], e)
	}
	for _, r := range roots {
		sortByRel(byRoot[r])
	}
	var out []Entry
	for i := 0; len(out) < max; i++ {
		took := false
		for _, r := range roots {
			if i < len(byRoot[r]) && len(out) < max {
				out = append(out, byRoot[r][i])
				took = true
			}
		}
		if !took {
			break
		}
	}
	return out
}

// Labels names each entry for a completion: its base name, or, where two
// entries share one, "<root name> • <path>" so the two can be told apart.
func Labels(es []Entry) []string {
	count := map[string]int{}
	for _, e := range es {
		count[e.Base()]++
	}
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Base()
		if count[e.Base()] > 1 {
			out[i] = filepath.Base(e.Root) + " \u2022 " + e.Rel
		}
	}
	return out
}
