// Package watch reports changes under a folder, for the protocol's
// resource watches (createResourceWatch). It listens to the kernel through
// fsnotify, never polls, and hands on batches of changes: created,
// written, removed. A watch ends when it is closed and when its folder
// goes; a recursive one follows folders created under it.
package watch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/fsnotify/fsnotify"
)

// Change types, as the protocol names them (ResourceChangeType).
const (
	Added   = "added"
	Updated = "updated"
	Deleted = "deleted"
)

const (
	// settle is how long changes gather before a batch is handed on, so a
	// burst of writes is one report, not hundreds.
	settle = 50 * time.Millisecond
	// MaxFolders bounds the folders a recursive watch follows: each is a
	// kernel watch, and the kernel's are few (fs.inotify.max_user_watches).
	MaxFolders = 4096
	// maxBatch bounds one batch's changes; the rest go in the next one.
	maxBatch = 1024
)

// Change is one changed path.
type Change struct {
	Path string
	Type string
}

// Options say what a watch reports.
type Options struct {
	Recursive bool
	// Excludes and Includes are doublestar globs relative to the root.
	Excludes, Includes []string
}

// Watch is one running watch.
type Watch struct {
	root string
	opts Options
	w    *fsnotify.Watcher
	// report gets each batch; gone is called once when the watch ends on
	// its own (its folder went or the kernel failed it).
	report func([]Change)
	gone   func()

	closeOnce sync.Once
	done      chan struct{}
	folders   int // followed folders (owned by run)
}

// Start watches root, an existing directory or file (resolved, confined by
// the caller). report and gone are called on the watch's own goroutine.
func Start(root string, opts Options, report func([]Change), gone func()) (*Watch, error) {
	for _, g := range append(append([]string{}, opts.Excludes...), opts.Includes...) {
		if !doublestar.ValidatePattern(g) {
			return nil, fmt.Errorf("watch %s: %q is not a valid glob", root, g)
		}
	}
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", root, err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", root, err)
	}
	wt := &Watch{root: root, opts: opts, w: w, report: report, gone: gone, done: make(chan struct{})}
	if st.IsDir() {
		err = wt.follow(root)
	} else {
		// A file is watched through its folder, filtered to it.
		err = w.Add(filepath.Dir(root))
	}
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("watch %s: %w", root, err)
	}
	go wt.run(st.IsDir())
	return wt, nil
}

// follow adds dir (and, recursively, its folders) to the kernel watch.
func (wt *Watch) follow(dir string) error {
	if wt.folders >= MaxFolders {
		return fmt.Errorf("more than %d folders to follow", MaxFolders)
	}
	if err := wt.w.Add(dir); err != nil {
		return err
	}
	wt.folders++
	if !wt.opts.Recursive {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // it went meanwhile; its removal is reported
	}
	for _, e := range entries {
		if e.IsDir() && e.Type()&fs.ModeSymlink == 0 {
			if err := wt.follow(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close stops the watch; no report follows it.
func (wt *Watch) Close() {
	wt.closeOnce.Do(func() {
		close(wt.done)
		wt.w.Close()
	})
}

func (wt *Watch) run(isDir bool) {
	var batch []Change
	var timer <-chan time.Time
	flush := func() {
		if len(batch) > 0 {
			select {
			case <-wt.done:
			default:
				wt.report(batch)
			}
			batch = nil
		}
		timer = nil
	}
	for {
		select {
		case <-wt.done:
			return
		case ev, ok := <-wt.w.Events:
			if !ok {
				return
			}
			c, keep := wt.change(ev, isDir)
			if !keep {
				continue
			}
			batch = append(batch, c)
			if c.Type == Deleted && c.Path == wt.root {
				// The folder went: the watch goes with it.
				flush()
				wt.Close()
				wt.gone()
				return
			}
			if len(batch) >= maxBatch {
				flush()
			} else if timer == nil {
				timer = time.After(settle)
			}
		case <-timer:
			flush()
		case err, ok := <-wt.w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				continue // changes were lost; the next ones still come
			}
			flush()
			wt.Close()
			wt.gone()
			return
		}
	}
}

// change is what ev says, and whether the watch reports it.
func (wt *Watch) change(ev fsnotify.Event, isDir bool) (Change, bool) {
	path := filepath.Clean(ev.Name)
	var typ string
	switch {
	case ev.Has(fsnotify.Create):
		typ = Added
		if wt.opts.Recursive && isDir {
			if st, err := os.Lstat(path); err == nil && st.IsDir() {
				_ = wt.follow(path) // past MaxFolders it is reported, not followed
			}
		}
	case ev.Has(fsnotify.Write):
		typ = Updated
	case ev.Has(fsnotify.Remove), ev.Has(fsnotify.Rename):
		typ = Deleted
	default:
		return Change{}, false // a mode change alone is not a change of content
	}
	if !isDir {
		return Change{Path: path, Type: typ}, path == wt.root
	}
	if path == wt.root {
		return Change{Path: path, Type: typ}, typ == Deleted
	}
	rel, err := filepath.Rel(wt.root, path)
	if err != nil {
		return Change{}, false
	}
	rel = filepath.ToSlash(rel)
	for _, g := range wt.opts.Excludes {
		if ok, _ := doublestar.Match(g, rel); ok {
			return Change{}, false
		}
	}
	if len(wt.opts.Includes) > 0 {
		in := false
		for _, g := range wt.opts.Includes {
			if ok, _ := doublestar.Match(g, rel); ok {
				in = true
				break
			}
		}
		if !in {
			return Change{}, false
		}
	}
	return Change{Path: path, Type: typ}, true
}
