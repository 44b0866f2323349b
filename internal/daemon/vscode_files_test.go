package daemon_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// filesEnv is a daemon for the resource commands, with a workspace per
// case under its served path (the suite's createWorkspace).
type filesEnv struct {
	*vscodeEnv
	n int
}

func (f *filesEnv) workspace(prefix string) string {
	f.t.Helper()
	f.n++
	dir := filepath.Join(f.dir, fmt.Sprintf("%s%d", prefix, f.n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.t.Fatal(err)
	}
	return dir
}

func fileURI(root string, segments ...string) string {
	return ahp.FileURI(filepath.Join(append([]string{root}, segments...)...))
}

func (f *filesEnv) call(method string, params map[string]any) (json.RawMessage, *ahptest.RPCError) {
	params["channel"] = ahp.RootURI
	return f.c.Call(method, params)
}

func (f *filesEnv) must(t *testing.T, method string, params map[string]any) json.RawMessage {
	t.Helper()
	res, err := f.call(method, params)
	if err != nil {
		t.Fatalf("%s: %d %s", method, err.Code, err.Message)
	}
	return res
}

func (f *filesEnv) writeText(t *testing.T, uri, data string, opts map[string]any) *ahptest.RPCError {
	t.Helper()
	p := map[string]any{"uri": uri, "data": data, "encoding": "utf-8"}
	for k, v := range opts {
		p[k] = v
	}
	_, err := f.call("resourceWrite", p)
	return err
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(path string) bool { _, err := os.Lstat(path); return err == nil }

type resolved struct {
	URI  string `json:"uri"`
	Type string `json:"type"`
	Size *int64 `json:"size"`
	ETag string `json:"etag"`
}

func decode[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

type listed struct {
	Entries []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"entries"`
}

// TestVSCodeClientFilesystem ports clientFilesystemSuite: the resource*
// commands against the host's files, inside the served path.
func TestVSCodeClientFilesystem(t *testing.T) {
	f := &filesEnv{vscodeEnv: newVSCodeEnv(t)}
	notFound, exists32010, conflict := ahp.CodeNotFound, ahp.CodeAlreadyExists, ahp.CodeConflict

	t.Run("resource commands round-trip a file through the host filesystem", func(t *testing.T) {
		root := f.workspace("ahp-resource-rw-")
		dir, file := fileURI(root, "nested", "inner"), fileURI(root, "nested", "inner", "note.txt")
		f.must(t, "resourceRequest", map[string]any{"uri": ahp.FileURI(root), "read": true, "write": true})
		f.must(t, "resourceMkdir", map[string]any{"uri": dir})
		f.must(t, "resourceMkdir", map[string]any{"uri": dir}) // idempotent
		f.must(t, "resourceWrite", map[string]any{"uri": file, "data": "RESOURCE_ROUNDTRIP", "encoding": "utf-8"})
		read := decode[struct{ Data, Encoding string }](t, f.must(t, "resourceRead", map[string]any{"uri": file, "encoding": "utf-8"}))
		rd := decode[resolved](t, f.must(t, "resourceResolve", map[string]any{"uri": dir}))
		rf := decode[resolved](t, f.must(t, "resourceResolve", map[string]any{"uri": file}))
		if read.Data != "RESOURCE_ROUNDTRIP" || read.Encoding != "utf-8" || rd.Type != "directory" || rf.Type != "file" ||
			rf.Size == nil || *rf.Size != int64(len("RESOURCE_ROUNDTRIP")) {
			t.Fatalf("read %+v, resolved dir %+v, file %+v", read, rd, rf)
		}
	})
	t.Run("resourceList reports directory entries and their types", func(t *testing.T) {
		root := f.workspace("ahp-resource-list-")
		if err := os.Mkdir(filepath.Join(root, "child-dir"), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(root, "child-file.txt"), "CHILD")
		l := decode[listed](t, f.must(t, "resourceList", map[string]any{"uri": ahp.FileURI(root)}))
		got, _ := json.Marshal(l.Entries)
		if string(got) != `[{"name":"child-dir","type":"directory"},{"name":"child-file.txt","type":"file"}]` {
			t.Fatalf("entries %s", got)
		}
	})
	t.Run("resourceCopy, resourceMove, and resourceDelete mutate the tree", func(t *testing.T) {
		root := f.workspace("ahp-resource-mutate-")
		writeFile(t, filepath.Join(root, "origin.txt"), "MUTATE")
		f.must(t, "resourceCopy", map[string]any{"source": fileURI(root, "origin.txt"), "destination": fileURI(root, "copy.txt")})
		f.must(t, "resourceMove", map[string]any{"source": fileURI(root, "copy.txt"), "destination": fileURI(root, "moved.txt")})
		f.must(t, "resourceDelete", map[string]any{"uri": fileURI(root, "origin.txt")})
		l := decode[listed](t, f.must(t, "resourceList", map[string]any{"uri": ahp.FileURI(root)}))
		moved := decode[struct{ Data string }](t, f.must(t, "resourceRead", map[string]any{"uri": fileURI(root, "moved.txt"), "encoding": "utf-8"}))
		if len(l.Entries) != 1 || l.Entries[0].Name != "moved.txt" || moved.Data != "MUTATE" {
			t.Fatalf("entries %+v, moved %q", l.Entries, moved.Data)
		}
	})
	t.Run("resource watch reports changes on its subscribed channel", func(t *testing.T) {
		root := f.workspace("ahp-resource-watch-")
		rootURI, watched := ahp.FileURI(root), fileURI(root, "watched.txt")
		w := decode[struct{ Channel string }](t, f.must(t, "createResourceWatch", map[string]any{"uri": rootURI, "recursive": false}))
		state, _ := f.c.Subscribe(w.Channel)
		defer f.c.Notify("unsubscribe", map[string]any{"channel": w.Channel})
		f.must(t, "resourceWrite", map[string]any{"uri": watched, "data": "WATCHED", "encoding": "utf-8"})
		env := f.c.AwaitEnvelope("a change of watched.txt", func(e ahptest.Envelope) bool {
			return e.Channel == w.Channel && e.Type() == "resourceWatch/changed" && hasChange(e, watched, "added", "updated")
		})
		if u, _ := urlScheme(w.Channel); u != "ahp-resource-watch" || string(state) != `{"root":"`+rootURI+`","recursive":false}` {
			t.Fatalf("channel %s, descriptor %s, change %s", w.Channel, state, env.Raw)
		}
	})
	t.Run("resource watch subscription preserves its descriptor", func(t *testing.T) {
		rootURI := ahp.FileURI(f.workspace("ahp-resource-watch-descriptor-"))
		w := decode[struct{ Channel string }](t, f.must(t, "createResourceWatch", map[string]any{"uri": rootURI, "recursive": true,
			"excludes": map[string]any{"items": []string{"**/*.tmp"}}, "includes": map[string]any{"items": []string{"**/*.txt"}}}))
		state, _ := f.c.Subscribe(w.Channel)
		sameJSON(t, "descriptor", decode[map[string]any](t, state), map[string]any{"root": rootURI, "recursive": true,
			"excludes": map[string]any{"items": []string{"**/*.tmp"}}, "includes": map[string]any{"items": []string{"**/*.txt"}}})
	})
	t.Run("creating a resource watch for a missing root is rejected", func(t *testing.T) {
		root := f.workspace("ahp-resource-watch-missing-")
		_, err := f.call("createResourceWatch", map[string]any{"uri": fileURI(root, "missing"), "recursive": true})
		wantCode(t, err, notFound, "")
	})
	t.Run("resourceWrite appends at the end of a file", func(t *testing.T) {
		root := f.workspace("ahp-resource-append-")
		writeFile(t, filepath.Join(root, "append.txt"), "BEGIN")
		if err := f.writeText(t, fileURI(root, "append.txt"), "-END", map[string]any{"mode": "append"}); err != nil {
			t.Fatal(err.Message)
		}
		if got := readText(t, filepath.Join(root, "append.txt")); got != "BEGIN-END" {
			t.Fatalf("file holds %q", got)
		}
	})
	t.Run("resourceWrite append position counts backwards from EOF", func(t *testing.T) {
		root := f.workspace("ahp-resource-append-offset-")
		writeFile(t, filepath.Join(root, "append-offset.txt"), "BEGIN-END")
		if err := f.writeText(t, fileURI(root, "append-offset.txt"), "-MIDDLE", map[string]any{"mode": "append", "position": 4}); err != nil {
			t.Fatal(err.Message)
		}
		if got := readText(t, filepath.Join(root, "append-offset.txt")); got != "BEGIN-MIDDLE-END" {
			t.Fatalf("file holds %q", got)
		}
	})
	t.Run("resourceWrite inserts without replacing existing bytes", func(t *testing.T) {
		root := f.workspace("ahp-resource-insert-")
		writeFile(t, filepath.Join(root, "insert.txt"), "ABCD")
		if err := f.writeText(t, fileURI(root, "insert.txt"), "12", map[string]any{"mode": "insert", "position": 2}); err != nil {
			t.Fatal(err.Message)
		}
		if got := readText(t, filepath.Join(root, "insert.txt")); got != "AB12CD" {
			t.Fatalf("file holds %q", got)
		}
	})
	t.Run("resourceWrite truncates from the requested position", func(t *testing.T) {
		root := f.workspace("ahp-resource-truncate-")
		writeFile(t, filepath.Join(root, "truncate.txt"), "PREFIX-OLD-SUFFIX")
		if err := f.writeText(t, fileURI(root, "truncate.txt"), "NEW", map[string]any{"mode": "truncate", "position": 7}); err != nil {
			t.Fatal(err.Message)
		}
		if got := readText(t, filepath.Join(root, "truncate.txt")); got != "PREFIX-NEW" {
			t.Fatalf("file holds %q", got)
		}
	})
	t.Run("resourceWrite createOnly rejects an existing file", func(t *testing.T) {
		root := f.workspace("ahp-resource-create-only-")
		writeFile(t, filepath.Join(root, "existing.txt"), "original")
		wantCode(t, f.writeText(t, fileURI(root, "existing.txt"), "replacement", map[string]any{"createOnly": true}), exists32010, "")
		if got := readText(t, filepath.Join(root, "existing.txt")); got != "original" {
			t.Fatalf("file holds %q", got)
		}
	})
	t.Run("resourceWrite ifMatch rejects a stale etag", func(t *testing.T) {
		root := f.workspace("ahp-resource-if-match-")
		writeFile(t, filepath.Join(root, "etag.txt"), "before")
		r := decode[resolved](t, f.must(t, "resourceResolve", map[string]any{"uri": fileURI(root, "etag.txt")}))
		if r.ETag == "" {
			t.Fatal("resolve gave no etag") // the suite skips then; ahpd always gives one
		}
		if err := f.writeText(t, fileURI(root, "etag.txt"), "first", map[string]any{"ifMatch": r.ETag}); err != nil {
			t.Fatal(err.Message)
		}
		wantCode(t, f.writeText(t, fileURI(root, "etag.txt"), "stale", map[string]any{"ifMatch": r.ETag}), conflict, "")
		if got := readText(t, filepath.Join(root, "etag.txt")); got != "first" {
			t.Fatalf("file holds %q", got)
		}
	})
	t.Run("resourceCopy failIfExists preserves the destination", func(t *testing.T) {
		root := f.workspace("ahp-resource-copy-conflict-")
		writeFile(t, filepath.Join(root, "source.txt"), "source")
		writeFile(t, filepath.Join(root, "destination.txt"), "destination")
		_, err := f.call("resourceCopy", map[string]any{"source": fileURI(root, "source.txt"), "destination": fileURI(root, "destination.txt"), "failIfExists": true})
		wantCode(t, err, exists32010, "")
		if got := readText(t, filepath.Join(root, "destination.txt")); got != "destination" {
			t.Fatalf("destination holds %q", got)
		}
	})
	t.Run("resourceMove failIfExists preserves both files", func(t *testing.T) {
		root := f.workspace("ahp-resource-move-conflict-")
		writeFile(t, filepath.Join(root, "source.txt"), "source")
		writeFile(t, filepath.Join(root, "destination.txt"), "destination")
		_, err := f.call("resourceMove", map[string]any{"source": fileURI(root, "source.txt"), "destination": fileURI(root, "destination.txt"), "failIfExists": true})
		wantCode(t, err, exists32010, "")
		if s, d := readText(t, filepath.Join(root, "source.txt")), readText(t, filepath.Join(root, "destination.txt")); s != "source" || d != "destination" {
			t.Fatalf("source %q, destination %q", s, d)
		}
	})
	t.Run("resourceMkdir rejects a path occupied by a file", func(t *testing.T) {
		root := f.workspace("ahp-resource-mkdir-file-")
		writeFile(t, filepath.Join(root, "occupied"), "file")
		_, err := f.call("resourceMkdir", map[string]any{"uri": fileURI(root, "occupied")})
		wantCode(t, err, exists32010, "")
	})
	t.Run("resourceDelete recursively removes a directory tree", func(t *testing.T) {
		root := f.workspace("ahp-resource-delete-tree-")
		tree := filepath.Join(root, "tree")
		writeFile(t, filepath.Join(tree, "nested", "file.txt"), "delete")
		f.must(t, "resourceDelete", map[string]any{"uri": ahp.FileURI(tree), "recursive": true})
		if exists(tree) {
			t.Fatal("the tree is still there")
		}
	})
	t.Run("resourceWrite decodes base64 content", func(t *testing.T) {
		root := f.workspace("ahp-resource-base64-")
		f.must(t, "resourceWrite", map[string]any{"uri": fileURI(root, "base64.txt"), "data": base64.StdEncoding.EncodeToString([]byte("BASE64_CONTENT")), "encoding": "base64"})
		if got := readText(t, filepath.Join(root, "base64.txt")); got != "BASE64_CONTENT" {
			t.Fatalf("file holds %q", got)
		}
	})
	t.Run("resourceWrite append creates a missing file", func(t *testing.T) {
		root := f.workspace("ahp-resource-append-create-")
		if err := f.writeText(t, fileURI(root, "created.txt"), "created", map[string]any{"mode": "append"}); err != nil {
			t.Fatal(err.Message)
		}
		if got := readText(t, filepath.Join(root, "created.txt")); got != "created" {
			t.Fatalf("file holds %q", got)
		}
	})
	t.Run("resourceWrite insert creates a missing file", func(t *testing.T) {
		root := f.workspace("ahp-resource-insert-create-")
		if err := f.writeText(t, fileURI(root, "created.txt"), "created", map[string]any{"mode": "insert", "position": 0}); err != nil {
			t.Fatal(err.Message)
		}
		if got := readText(t, filepath.Join(root, "created.txt")); got != "created" {
			t.Fatalf("file holds %q", got)
		}
	})
	t.Run("resourceWrite accepts the current etag", func(t *testing.T) {
		root := f.workspace("ahp-resource-if-match-current-")
		writeFile(t, filepath.Join(root, "etag.txt"), "before")
		r := decode[resolved](t, f.must(t, "resourceResolve", map[string]any{"uri": fileURI(root, "etag.txt")}))
		if err := f.writeText(t, fileURI(root, "etag.txt"), "after", map[string]any{"ifMatch": r.ETag}); err != nil {
			t.Fatal(err.Message)
		}
		if got := readText(t, filepath.Join(root, "etag.txt")); got != "after" {
			t.Fatalf("file holds %q", got)
		}
	})
	t.Run("resourceWrite ifMatch rejects a missing file", func(t *testing.T) {
		root := f.workspace("ahp-resource-if-match-missing-")
		wantCode(t, f.writeText(t, fileURI(root, "missing.txt"), "content", map[string]any{"ifMatch": "missing-etag"}), conflict, "")
		if exists(filepath.Join(root, "missing.txt")) {
			t.Fatal("the refused write created the file")
		}
	})
	t.Run("resourceCopy recursively copies a directory", func(t *testing.T) {
		root := f.workspace("ahp-resource-copy-directory-")
		writeFile(t, filepath.Join(root, "source", "nested", "file.txt"), "copied")
		f.must(t, "resourceCopy", map[string]any{"source": fileURI(root, "source"), "destination": fileURI(root, "destination")})
		if got := readText(t, filepath.Join(root, "destination", "nested", "file.txt")); got != "copied" {
			t.Fatalf("copy holds %q", got)
		}
	})
	t.Run("resourceCopy overwrites an existing destination by default", func(t *testing.T) {
		root := f.workspace("ahp-resource-copy-overwrite-")
		writeFile(t, filepath.Join(root, "source.txt"), "source")
		writeFile(t, filepath.Join(root, "destination.txt"), "destination")
		f.must(t, "resourceCopy", map[string]any{"source": fileURI(root, "source.txt"), "destination": fileURI(root, "destination.txt")})
		if got := readText(t, filepath.Join(root, "destination.txt")); got != "source" {
			t.Fatalf("destination holds %q", got)
		}
	})
	t.Run("resourceCopy reports a missing source", func(t *testing.T) {
		root := f.workspace("ahp-resource-copy-missing-")
		_, err := f.call("resourceCopy", map[string]any{"source": fileURI(root, "missing.txt"), "destination": fileURI(root, "destination.txt")})
		wantCode(t, err, notFound, "")
	})
	t.Run("resourceMove relocates a directory tree", func(t *testing.T) {
		root := f.workspace("ahp-resource-move-directory-")
		writeFile(t, filepath.Join(root, "source", "nested", "file.txt"), "moved")
		f.must(t, "resourceMove", map[string]any{"source": fileURI(root, "source"), "destination": fileURI(root, "destination")})
		if exists(filepath.Join(root, "source")) || readText(t, filepath.Join(root, "destination", "nested", "file.txt")) != "moved" {
			t.Fatal("the tree did not move")
		}
	})
	t.Run("resourceMove overwrites an existing destination by default", func(t *testing.T) {
		root := f.workspace("ahp-resource-move-overwrite-")
		writeFile(t, filepath.Join(root, "source.txt"), "source")
		writeFile(t, filepath.Join(root, "destination.txt"), "destination")
		f.must(t, "resourceMove", map[string]any{"source": fileURI(root, "source.txt"), "destination": fileURI(root, "destination.txt")})
		if exists(filepath.Join(root, "source.txt")) || readText(t, filepath.Join(root, "destination.txt")) != "source" {
			t.Fatal("the file did not replace the destination")
		}
	})
	t.Run("resourceMove reports a missing source", func(t *testing.T) {
		root := f.workspace("ahp-resource-move-missing-")
		_, err := f.call("resourceMove", map[string]any{"source": fileURI(root, "missing.txt"), "destination": fileURI(root, "destination.txt")})
		wantCode(t, err, notFound, "")
	})
	t.Run("resourceDelete requires recursive mode for a non-empty directory", func(t *testing.T) {
		root := f.workspace("ahp-resource-delete-non-recursive-")
		dir := filepath.Join(root, "directory")
		writeFile(t, filepath.Join(dir, "file.txt"), "preserved")
		if _, err := f.call("resourceDelete", map[string]any{"uri": ahp.FileURI(dir)}); err == nil {
			t.Fatal("a non-empty directory was deleted without recursive")
		}
		if got := readText(t, filepath.Join(dir, "file.txt")); got != "preserved" {
			t.Fatalf("file holds %q", got)
		}
	})
	t.Run("resourceDelete reports a missing resource", func(t *testing.T) {
		_, err := f.call("resourceDelete", map[string]any{"uri": fileURI(f.workspace("ahp-resource-delete-missing-"), "missing.txt")})
		wantCode(t, err, notFound, "")
	})
	t.Run("resourceRead reports a missing file", func(t *testing.T) {
		_, err := f.call("resourceRead", map[string]any{"uri": fileURI(f.workspace("ahp-resource-read-missing-"), "missing.txt")})
		wantCode(t, err, notFound, "")
	})
	t.Run("resourceList reports a missing directory", func(t *testing.T) {
		_, err := f.call("resourceList", map[string]any{"uri": fileURI(f.workspace("ahp-resource-list-missing-"), "missing")})
		wantCode(t, err, notFound, "")
	})
	t.Run("resourceList rejects a file resource", func(t *testing.T) {
		root := f.workspace("ahp-resource-list-file-")
		writeFile(t, filepath.Join(root, "file.txt"), "content")
		if _, err := f.call("resourceList", map[string]any{"uri": fileURI(root, "file.txt")}); err == nil {
			t.Fatal("a file was listed")
		}
	})
	t.Run("resourceWrite reports a missing parent directory", func(t *testing.T) {
		root := f.workspace("ahp-resource-write-missing-parent-")
		wantCode(t, f.writeText(t, fileURI(root, "missing", "file.txt"), "content", nil), notFound, "")
	})
	t.Run("resourceResolve reports a missing resource", func(t *testing.T) {
		_, err := f.call("resourceResolve", map[string]any{"uri": fileURI(f.workspace("ahp-resource-resolve-missing-"), "missing")})
		wantCode(t, err, notFound, "")
	})
}

// hasChange reports whether a resourceWatch/changed envelope names uri
// with one of types.
func hasChange(e ahptest.Envelope, uri string, types ...string) bool {
	var ch ahp.ResourceChanges
	if e.Field("changes", &ch) != nil {
		return false
	}
	for _, c := range ch.Items {
		if c.URI == uri && slices.Contains(types, c.Type) {
			return true
		}
	}
	return false
}

func urlScheme(uri string) (string, bool) {
	for i, r := range uri {
		if r == ':' {
			return uri[:i], true
		}
	}
	return "", false
}
