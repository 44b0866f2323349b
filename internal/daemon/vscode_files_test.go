package daemon_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/google/uuid"
)

// clientFilesystemCases is how many conformanceTest cases the newest stored
// microsoft/vscode src/vs/platform/agentHost/test/node/e2e/suites/
// clientFilesystemSuite.ts holds. The index gives that version (56273
// characters, index id 57623683055) without its commit; it supersedes the
// versions it names, 305c3472 (5 cases) and 01adc1ba (28574 characters,
// the one ported before). It is the one with the append/insert/truncate
// "beyond EOF" cases and the watch case that writes again until the kernel
// watch attaches.
// TestVSCodeClientFilesystem has one subtest for each, under its name.
const clientFilesystemCases = 76

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

// etag resolves uri and returns its etag, failing when there is none (the
// suite skips then; ahpd always gives one).
func (f *filesEnv) etag(t *testing.T, uri string) string {
	t.Helper()
	r := decode[resolved](t, f.must(t, "resourceResolve", map[string]any{"uri": uri}))
	if r.etag() == "" {
		t.Fatal("resolve gave no etag")
	}
	return r.etag()
}

func writeParams(uri, data string, opts map[string]any) map[string]any {
	p := map[string]any{"channel": ahp.RootURI, "uri": uri, "data": data, "encoding": "utf-8"}
	for k, v := range opts {
		p[k] = v
	}
	return p
}

func (f *filesEnv) writeText(t *testing.T, uri, data string, opts map[string]any) *ahptest.RPCError {
	t.Helper()
	_, err := f.c.Call("resourceWrite", writeParams(uri, data, opts))
	return err
}

// concurrently sends every request before awaiting any (the suite's
// Promise.all) and returns the answers in order.
func (f *filesEnv) concurrently(method string, params ...map[string]any) []ahptest.Frame {
	ids := make([]string, len(params))
	for i, p := range params {
		p["channel"] = ahp.RootURI
		ids[i] = f.c.Request(method, p)
	}
	out := make([]ahptest.Frame, len(ids))
	for i, id := range ids {
		out[i] = f.c.Await(id)
	}
	return out
}

// oneWinner checks two racing answers: one taken, one refused with code.
func oneWinner(t *testing.T, answers []ahptest.Frame, code int) {
	t.Helper()
	var ok, refused []ahptest.Frame
	for _, a := range answers {
		if a.Error == nil {
			ok = append(ok, a)
		} else {
			refused = append(refused, a)
		}
	}
	if len(ok) != 1 || len(refused) != 1 || refused[0].Error.Code != code {
		t.Fatalf("%d taken, %d refused (%v), want one each, the refusal %d", len(ok), len(refused), refused, code)
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool { _, err := os.Lstat(path); return err == nil }

type resolved struct {
	URI   string  `json:"uri"`
	Type  string  `json:"type"`
	Size  *int64  `json:"size"`
	MTime *string `json:"mtime"`
	CTime *string `json:"ctime"`
	ETag  *string `json:"etag"`
}

func (r resolved) etag() string {
	if r.ETag == nil {
		return ""
	}
	return *r.ETag
}

// isISOTime: s is a time as Date.toISOString writes it, so that
// new Date(s).toISOString() === s holds.
func isISOTime(s *string) bool {
	if s == nil {
		return false
	}
	const layout = "2006-01-02T15:04:05.000Z"
	tm, err := time.Parse(layout, *s)
	return err == nil && tm.Format(layout) == *s
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

type readAnswer struct {
	Data        string `json:"data"`
	Encoding    string `json:"encoding"`
	ContentType string `json:"contentType,omitempty"`
}

type watchAnswer struct {
	Channel string `json:"channel"`
}

type subscribeAnswer struct {
	Snapshot *struct {
		Resource string          `json:"resource"`
		State    json.RawMessage `json:"state"`
		FromSeq  json.RawMessage `json:"fromSeq"`
	} `json:"snapshot"`
}

// TestVSCodeClientFilesystem ports clientFilesystemSuite: the resource*
// commands against the host's files, inside the served path, every
// conformanceTest of the newest stored suite as a subtest of its name.
func TestVSCodeClientFilesystem(t *testing.T) {
	t.Parallel()
	f := &filesEnv{vscodeEnv: newVSCodeEnv(t)}
	notFound, exists32010, conflict := ahp.CodeNotFound, ahp.CodeAlreadyExists, ahp.CodeConflict
	ran := 0
	run := func(name string, body func(t *testing.T)) {
		ran++
		conformanceCase(t, name, body)
	}
	defer func() {
		if ran != clientFilesystemCases {
			t.Errorf("%d cases ported, the suite has %d", ran, clientFilesystemCases)
		}
	}()

	run("resource commands round-trip a file through the host filesystem", func(t *testing.T) {
		root := f.workspace("ahp-resource-rw-")
		dir, file := fileURI(root, "nested", "inner"), fileURI(root, "nested", "inner", "note.txt")
		f.must(t, "resourceRequest", map[string]any{"uri": ahp.FileURI(root), "read": true, "write": true})
		f.must(t, "resourceMkdir", map[string]any{"uri": dir})
		f.must(t, "resourceMkdir", map[string]any{"uri": dir}) // idempotent
		f.must(t, "resourceWrite", map[string]any{"uri": file, "data": "RESOURCE_ROUNDTRIP", "encoding": "utf-8"})
		read := decode[readAnswer](t, f.must(t, "resourceRead", map[string]any{"uri": file, "encoding": "utf-8"}))
		rd := decode[resolved](t, f.must(t, "resourceResolve", map[string]any{"uri": dir}))
		rf := decode[resolved](t, f.must(t, "resourceResolve", map[string]any{"uri": file}))
		if read.Data != "RESOURCE_ROUNDTRIP" || read.Encoding != "utf-8" || rd.Type != "directory" || rf.Type != "file" ||
			rf.Size == nil || *rf.Size != int64(len("RESOURCE_ROUNDTRIP")) {
			t.Fatalf("read %+v, resolved dir %+v, file %+v", read, rd, rf)
		}
	})
	run("resourceRequest accepts independent read and write access requests", func(t *testing.T) {
		uri := ahp.FileURI(f.workspace("ahp-resource-request-modes-"))
		answers := f.concurrently("resourceRequest", map[string]any{"uri": uri, "read": true}, map[string]any{"uri": uri, "write": true})
		for i, a := range answers {
			if a.Error != nil || string(a.Result) != "{}" {
				t.Fatalf("request %d: %s %v, want {}", i, a.Result, a.Error)
			}
		}
	})
	run("resourceList reports directory entries and their types", func(t *testing.T) {
		root := f.workspace("ahp-resource-list-")
		mkdir(t, filepath.Join(root, "child-dir"))
		writeFile(t, filepath.Join(root, "child-file.txt"), "CHILD")
		l := decode[listed](t, f.must(t, "resourceList", map[string]any{"uri": ahp.FileURI(root)}))
		sort.Slice(l.Entries, func(i, j int) bool { return l.Entries[i].Name < l.Entries[j].Name })
		sameJSON(t, "entries", l.Entries, []map[string]string{{"name": "child-dir", "type": "directory"}, {"name": "child-file.txt", "type": "file"}})
	})
	run("resourceList returns an empty collection for an empty directory", func(t *testing.T) {
		res := f.must(t, "resourceList", map[string]any{"uri": ahp.FileURI(f.workspace("ahp-resource-list-empty-"))})
		if got := decode[map[string]json.RawMessage](t, res)["entries"]; string(got) != "[]" {
			t.Fatalf("entries %s, want []", got)
		}
	})
	run("resourceRead preserves UTF-8 text and reports its content type", func(t *testing.T) {
		root := f.workspace("ahp-resource-read-unicode-")
		text := "snowman \u2603 and smile \U0001F600"
		writeFile(t, filepath.Join(root, "unicode.txt"), text)
		res := f.must(t, "resourceRead", map[string]any{"uri": fileURI(root, "unicode.txt"), "encoding": "utf-8"})
		sameJSON(t, "read", decode[map[string]any](t, res), map[string]any{"contentType": "text/plain", "data": text, "encoding": "utf-8"})
	})
	run("resourceWrite truncates an existing file by default", func(t *testing.T) {
		root := f.workspace("ahp-resource-write-default-truncate-")
		writeFile(t, filepath.Join(root, "replace.txt"), "LONGER_ORIGINAL")
		if err := f.writeText(t, fileURI(root, "replace.txt"), "short", nil); err != nil {
			t.Fatal(err)
		}
		if got := readText(t, filepath.Join(root, "replace.txt")); got != "short" {
			t.Fatalf("file holds %q", got)
		}
	})
	run("resourceWrite creates an empty file from empty content", func(t *testing.T) {
		root := f.workspace("ahp-resource-write-empty-")
		if err := f.writeText(t, fileURI(root, "empty.txt"), "", nil); err != nil {
			t.Fatal(err)
		}
		if !exists(filepath.Join(root, "empty.txt")) || readText(t, filepath.Join(root, "empty.txt")) != "" {
			t.Fatal("no empty file")
		}
	})
	run("resourceWrite preserves arbitrary base64 bytes", func(t *testing.T) {
		root := f.workspace("ahp-resource-write-binary-")
		b := []byte{0, 1, 2, 127, 128, 254, 255}
		f.must(t, "resourceWrite", map[string]any{"uri": fileURI(root, "bytes.bin"), "data": base64.StdEncoding.EncodeToString(b), "encoding": "base64"})
		if got := readText(t, filepath.Join(root, "bytes.bin")); got != string(b) {
			t.Fatalf("file holds %v, want %v", []byte(got), b)
		}
	})
	run("resourceDelete removes an empty directory without recursive mode", func(t *testing.T) {
		dir := filepath.Join(f.workspace("ahp-resource-delete-empty-directory-"), "empty")
		mkdir(t, dir)
		f.must(t, "resourceDelete", map[string]any{"uri": ahp.FileURI(dir)})
		if exists(dir) {
			t.Fatal("the directory is still there")
		}
	})
	run("resourceCopy, resourceMove, and resourceDelete mutate the tree", func(t *testing.T) {
		root := f.workspace("ahp-resource-mutate-")
		writeFile(t, filepath.Join(root, "origin.txt"), "MUTATE")
		f.must(t, "resourceCopy", map[string]any{"source": fileURI(root, "origin.txt"), "destination": fileURI(root, "copy.txt")})
		f.must(t, "resourceMove", map[string]any{"source": fileURI(root, "copy.txt"), "destination": fileURI(root, "moved.txt")})
		f.must(t, "resourceDelete", map[string]any{"uri": fileURI(root, "origin.txt")})
		l := decode[listed](t, f.must(t, "resourceList", map[string]any{"uri": ahp.FileURI(root)}))
		moved := decode[readAnswer](t, f.must(t, "resourceRead", map[string]any{"uri": fileURI(root, "moved.txt"), "encoding": "utf-8"}))
		if len(l.Entries) != 1 || l.Entries[0].Name != "moved.txt" || moved.Data != "MUTATE" {
			t.Fatalf("entries %+v, moved %q", l.Entries, moved.Data)
		}
	})
	run("resource watch reports changes on its subscribed channel", func(t *testing.T) {
		root := f.workspace("ahp-resource-watch-")
		rootURI, watched := ahp.FileURI(root), fileURI(root, "watched.txt")
		w := decode[watchAnswer](t, f.must(t, "createResourceWatch", map[string]any{"uri": rootURI, "recursive": false}))
		state, _ := f.c.Subscribe(w.Channel)
		defer f.c.Notify("unsubscribe", map[string]any{"channel": w.Channel})
		// The kernel watch may attach after the answer, so the suite writes
		// again each second until a change is seen (30 tries).
		isChange := func(e ahptest.Envelope) bool {
			return e.Channel == w.Channel && e.Type() == "resourceWatch/changed" && hasChange(e, watched, "added", "updated")
		}
		var change *ahptest.Envelope
		for try := 1; try <= 30 && change == nil; try++ {
			f.must(t, "resourceWrite", map[string]any{"uri": watched, "data": fmt.Sprintf("WATCHED-%d", try), "encoding": "utf-8"})
			for end := time.Now().Add(time.Second); change == nil && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				for _, e := range f.c.Envelopes() {
					if isChange(e) {
						change = &e
						break
					}
				}
			}
		}
		if change == nil {
			t.Fatal("no change of watched.txt in 30 writes")
		}
		if u, _ := urlScheme(w.Channel); u != "ahp-resource-watch" || string(state) != `{"root":"`+rootURI+`","recursive":false}` {
			t.Fatalf("channel %s, descriptor %s, change %s", w.Channel, state, change.Raw)
		}
	})
	run("resource watch subscription preserves its descriptor", func(t *testing.T) {
		rootURI := ahp.FileURI(f.workspace("ahp-resource-watch-descriptor-"))
		w := decode[watchAnswer](t, f.must(t, "createResourceWatch", map[string]any{"uri": rootURI, "recursive": true,
			"excludes": map[string]any{"items": []string{"**/*.tmp"}}, "includes": map[string]any{"items": []string{"**/*.txt"}}}))
		state, _ := f.c.Subscribe(w.Channel)
		sameJSON(t, "descriptor", decode[map[string]any](t, state), map[string]any{"root": rootURI, "recursive": true,
			"excludes": map[string]any{"items": []string{"**/*.tmp"}}, "includes": map[string]any{"items": []string{"**/*.txt"}}})
	})
	run("equivalent resource watch descriptors produce equivalent snapshots", func(t *testing.T) {
		rootURI := ahp.FileURI(f.workspace("ahp-resource-watch-stable-channel-"))
		params := func() map[string]any {
			return map[string]any{"uri": rootURI, "recursive": true, "excludes": map[string]any{"items": []string{"**/*.tmp"}}}
		}
		first := decode[watchAnswer](t, f.must(t, "createResourceWatch", params()))
		second := decode[watchAnswer](t, f.must(t, "createResourceWatch", params()))
		a, _ := f.c.Subscribe(first.Channel)
		b := a
		if second.Channel != first.Channel {
			b, _ = f.c.Subscribe(second.Channel)
		}
		sameJSON(t, "second snapshot", decode[map[string]any](t, b), decode[map[string]any](t, a))
	})
	run("different resource watch descriptors produce different channels", func(t *testing.T) {
		rootURI := ahp.FileURI(f.workspace("ahp-resource-watch-distinct-channel-"))
		shallow := decode[watchAnswer](t, f.must(t, "createResourceWatch", map[string]any{"uri": rootURI, "recursive": false}))
		deep := decode[watchAnswer](t, f.must(t, "createResourceWatch", map[string]any{"uri": rootURI, "recursive": true}))
		if shallow.Channel == deep.Channel {
			t.Fatalf("both watches are %s", deep.Channel)
		}
	})
	run("multiple clients can subscribe to the same resource watch", func(t *testing.T) {
		w := decode[watchAnswer](t, f.must(t, "createResourceWatch", map[string]any{"uri": ahp.FileURI(f.workspace("ahp-resource-watch-multi-client-")), "recursive": true}))
		other := f.client("resource-watch-multi-client-extra")
		defer other.Close()
		sub := map[string]any{"channel": w.Channel}
		ids := []string{f.c.Request("subscribe", sub), other.Request("subscribe", sub)}
		first, second := f.c.Await(ids[0]), other.Await(ids[1])
		if first.Error != nil || second.Error != nil {
			t.Fatalf("subscribe: %v, %v", first.Error, second.Error)
		}
		a, b := decode[subscribeAnswer](t, first.Result), decode[subscribeAnswer](t, second.Result)
		if a.Snapshot == nil || b.Snapshot == nil {
			t.Fatalf("snapshots %s, %s", first.Result, second.Result)
		}
		sameJSON(t, "second client's state", decode[map[string]any](t, b.Snapshot.State), decode[map[string]any](t, a.Snapshot.State))
	})
	run("resource watch subscribe snapshot identifies its channel and sequence", func(t *testing.T) {
		w := decode[watchAnswer](t, f.must(t, "createResourceWatch", map[string]any{"uri": ahp.FileURI(f.workspace("ahp-resource-watch-snapshot-identity-")), "recursive": false}))
		raw, err := f.c.Call("subscribe", map[string]any{"channel": w.Channel})
		if err != nil {
			t.Fatal(err)
		}
		s := decode[subscribeAnswer](t, raw)
		var seq float64
		if s.Snapshot == nil || s.Snapshot.Resource != w.Channel || json.Unmarshal(s.Snapshot.FromSeq, &seq) != nil {
			t.Fatalf("snapshot %s, want resource %s and a numeric fromSeq", raw, w.Channel)
		}
	})
	run("resource watch can target a regular file", func(t *testing.T) {
		file := filepath.Join(f.workspace("ahp-resource-watch-file-"), "watched.txt")
		writeFile(t, file, "watched")
		w := decode[watchAnswer](t, f.must(t, "createResourceWatch", map[string]any{"uri": ahp.FileURI(file)}))
		state, _ := f.c.Subscribe(w.Channel)
		sameJSON(t, "descriptor", decode[map[string]any](t, state), map[string]any{"root": ahp.FileURI(file), "recursive": false})
	})
	run("resource watch defaults recursive mode to false", func(t *testing.T) {
		rootURI := ahp.FileURI(f.workspace("ahp-resource-watch-default-recursive-"))
		w := decode[watchAnswer](t, f.must(t, "createResourceWatch", map[string]any{"uri": rootURI}))
		state, _ := f.c.Subscribe(w.Channel)
		sameJSON(t, "descriptor", decode[map[string]any](t, state), map[string]any{"root": rootURI, "recursive": false})
	})
	run("subscribing to a malformed resource watch channel is rejected", func(t *testing.T) {
		if _, err := f.c.Call("subscribe", map[string]any{"channel": "ahp-resource-watch:/not-a-valid-descriptor"}); err == nil {
			t.Fatal("a malformed watch channel was subscribed")
		}
	})
	run("creating a resource watch for a missing root is rejected", func(t *testing.T) {
		root := f.workspace("ahp-resource-watch-missing-")
		_, err := f.call("createResourceWatch", map[string]any{"uri": fileURI(root, "missing"), "recursive": true})
		wantCode(t, err, notFound, "")
	})

	// writeCase writes data into a file that held before, with opts, and
	// checks the file then holds want.
	writeCase := func(name, prefix, file, before, data string, opts map[string]any, want string) {
		run(name, func(t *testing.T) {
			root := f.workspace(prefix)
			if before != "" {
				writeFile(t, filepath.Join(root, file), before)
			}
			if err := f.writeText(t, fileURI(root, file), data, opts); err != nil {
				t.Fatal(err)
			}
			if got := readText(t, filepath.Join(root, file)); got != want {
				t.Fatalf("file holds %q, want %q", got, want)
			}
		})
	}
	writeCase("resourceWrite appends at the end of a file", "ahp-resource-append-", "append.txt", "BEGIN", "-END",
		map[string]any{"mode": "append"}, "BEGIN-END")
	writeCase("resourceWrite append position counts backwards from EOF", "ahp-resource-append-offset-", "append-offset.txt", "BEGIN-END", "-MIDDLE",
		map[string]any{"mode": "append", "position": 4}, "BEGIN-MIDDLE-END")
	writeCase("resourceWrite inserts without replacing existing bytes", "ahp-resource-insert-", "insert.txt", "ABCD", "12",
		map[string]any{"mode": "insert", "position": 2}, "AB12CD")
	writeCase("resourceWrite truncates from the requested position", "ahp-resource-truncate-", "truncate.txt", "PREFIX-OLD-SUFFIX", "NEW",
		map[string]any{"mode": "truncate", "position": 7}, "PREFIX-NEW")
	// U+1F600 is four bytes: positions count bytes.
	writeCase("resourceWrite insert positions count UTF-8 bytes", "ahp-resource-insert-utf8-", "insert-utf8.txt", "A\U0001F600B", "Z",
		map[string]any{"mode": "insert", "position": 5}, "A\U0001F600ZB")
	writeCase("resourceWrite append positions count UTF-8 bytes from EOF", "ahp-resource-append-utf8-", "append-utf8.txt", "A\U0001F600B", "Z",
		map[string]any{"mode": "append", "position": 1}, "A\U0001F600ZB")
	writeCase("resourceWrite truncate positions count UTF-8 bytes", "ahp-resource-truncate-utf8-", "truncate-utf8.txt", "A\U0001F600B", "Z",
		map[string]any{"mode": "truncate", "position": 5}, "A\U0001F600Z")

	run("resourceWrite createOnly rejects an existing file", func(t *testing.T) {
		root := f.workspace("ahp-resource-create-only-")
		writeFile(t, filepath.Join(root, "existing.txt"), "original")
		wantCode(t, f.writeText(t, fileURI(root, "existing.txt"), "replacement", map[string]any{"createOnly": true}), exists32010, "")
		if got := readText(t, filepath.Join(root, "existing.txt")); got != "original" {
			t.Fatalf("file holds %q", got)
		}
	})
	run("concurrent resourceWrite createOnly calls have a single winner", func(t *testing.T) {
		root := f.workspace("ahp-resource-create-only-concurrent-")
		uri := fileURI(root, "winner.txt")
		answers := f.concurrently("resourceWrite", writeParams(uri, "first", map[string]any{"createOnly": true}),
			writeParams(uri, "second", map[string]any{"createOnly": true}))
		oneWinner(t, answers, exists32010)
		if got := readText(t, filepath.Join(root, "winner.txt")); got != "first" && got != "second" {
			t.Fatalf("file holds %q", got)
		}
	})
	run("resourceList preserves Unicode entry names", func(t *testing.T) {
		root := f.workspace("ahp-resource-list-unicode-")
		name := "smile-\U0001F600.txt"
		writeFile(t, filepath.Join(root, name), "unicode")
		l := decode[listed](t, f.must(t, "resourceList", map[string]any{"uri": ahp.FileURI(root)}))
		sameJSON(t, "entries", l.Entries, []map[string]string{{"name": name, "type": "file"}})
	})
	run("resourceWrite ifMatch rejects a stale etag", func(t *testing.T) {
		root := f.workspace("ahp-resource-if-match-")
		writeFile(t, filepath.Join(root, "etag.txt"), "before")
		etag := f.etag(t, fileURI(root, "etag.txt"))
		if err := f.writeText(t, fileURI(root, "etag.txt"), "first", map[string]any{"ifMatch": etag}); err != nil {
			t.Fatal(err.Message)
		}
		wantCode(t, f.writeText(t, fileURI(root, "etag.txt"), "stale", map[string]any{"ifMatch": etag}), conflict, "")
		if got := readText(t, filepath.Join(root, "etag.txt")); got != "first" {
			t.Fatalf("file holds %q", got)
		}
	})
	run("resourceResolve returns a stable etag without mutation", func(t *testing.T) {
		root := f.workspace("ahp-resource-etag-stable-")
		writeFile(t, filepath.Join(root, "stable.txt"), "stable")
		first := decode[resolved](t, f.must(t, "resourceResolve", map[string]any{"uri": fileURI(root, "stable.txt")}))
		second := decode[resolved](t, f.must(t, "resourceResolve", map[string]any{"uri": fileURI(root, "stable.txt")}))
		if first.ETag == nil || second.etag() != first.etag() {
			t.Fatalf("etags %v then %v", first.ETag, second.ETag)
		}
	})
	run("resourceResolve changes the etag after content changes", func(t *testing.T) {
		root := f.workspace("ahp-resource-etag-change-")
		writeFile(t, filepath.Join(root, "changing.txt"), "before")
		before := decode[resolved](t, f.must(t, "resourceResolve", map[string]any{"uri": fileURI(root, "changing.txt")}))
		if err := f.writeText(t, fileURI(root, "changing.txt"), "after-with-a-different-size", nil); err != nil {
			t.Fatal(err)
		}
		after := decode[resolved](t, f.must(t, "resourceResolve", map[string]any{"uri": fileURI(root, "changing.txt")}))
		if before.ETag == nil || after.ETag == nil || before.etag() == after.etag() {
			t.Fatalf("etags %v then %v", before.ETag, after.ETag)
		}
	})
	run("resourceWrite enforces ifMatch in append mode", func(t *testing.T) {
		root := f.workspace("ahp-resource-if-match-append-")
		writeFile(t, filepath.Join(root, "append.txt"), "before")
		etag := f.etag(t, fileURI(root, "append.txt"))
		if err := f.writeText(t, fileURI(root, "append.txt"), "changed", nil); err != nil {
			t.Fatal(err)
		}
		wantCode(t, f.writeText(t, fileURI(root, "append.txt"), "-after", map[string]any{"mode": "append", "ifMatch": etag}), conflict, "")
		if got := readText(t, filepath.Join(root, "append.txt")); got != "changed" {
			t.Fatalf("file holds %q", got)
		}
	})
	run("concurrent ifMatch writes allow only one winner", func(t *testing.T) {
		root := f.workspace("ahp-resource-if-match-concurrent-")
		writeFile(t, filepath.Join(root, "concurrent.txt"), "seed")
		uri := fileURI(root, "concurrent.txt")
		etag := f.etag(t, uri)
		answers := f.concurrently("resourceWrite", writeParams(uri, "first-winner", map[string]any{"ifMatch": etag}),
			writeParams(uri, "second-winner", map[string]any{"ifMatch": etag}))
		oneWinner(t, answers, conflict)
		if got := readText(t, filepath.Join(root, "concurrent.txt")); got != "first-winner" && got != "second-winner" {
			t.Fatalf("file holds %q", got)
		}
	})
	run("resourceCopy failIfExists preserves the destination", func(t *testing.T) {
		root := f.workspace("ahp-resource-copy-conflict-")
		writeFile(t, filepath.Join(root, "source.txt"), "source")
		writeFile(t, filepath.Join(root, "destination.txt"), "destination")
		_, err := f.call("resourceCopy", map[string]any{"source": fileURI(root, "source.txt"), "destination": fileURI(root, "destination.txt"), "failIfExists": true})
		wantCode(t, err, exists32010, "")
		if got := readText(t, filepath.Join(root, "destination.txt")); got != "destination" {
			t.Fatalf("destination holds %q", got)
		}
	})
	// treeConflict: a copy or move of one folder onto another with
	// failIfExists is AlreadyExists, and both trees stay as they were.
	treeConflict := func(name, method, prefix string) {
		run(name, func(t *testing.T) {
			root := f.workspace(prefix)
			writeFile(t, filepath.Join(root, "source", "source.txt"), "source")
			writeFile(t, filepath.Join(root, "destination", "destination.txt"), "destination")
			_, err := f.call(method, map[string]any{"source": fileURI(root, "source"), "destination": fileURI(root, "destination"), "failIfExists": true})
			wantCode(t, err, exists32010, "")
			s, d := readText(t, filepath.Join(root, "source", "source.txt")), readText(t, filepath.Join(root, "destination", "destination.txt"))
			if s != "source" || d != "destination" {
				t.Fatalf("source %q, destination %q", s, d)
			}
		})
	}
	treeConflict("resourceCopy failIfExists preserves both directory trees", "resourceCopy", "ahp-resource-copy-directory-conflict-")
	run("resourceMove failIfExists preserves both files", func(t *testing.T) {
		root := f.workspace("ahp-resource-move-conflict-")
		writeFile(t, filepath.Join(root, "source.txt"), "source")
		writeFile(t, filepath.Join(root, "destination.txt"), "destination")
		_, err := f.call("resourceMove", map[string]any{"source": fileURI(root, "source.txt"), "destination": fileURI(root, "destination.txt"), "failIfExists": true})
		wantCode(t, err, exists32010, "")
		if s, d := readText(t, filepath.Join(root, "source.txt")), readText(t, filepath.Join(root, "destination.txt")); s != "source" || d != "destination" {
			t.Fatalf("source %q, destination %q", s, d)
		}
	})
	treeConflict("resourceMove failIfExists preserves both directory trees", "resourceMove", "ahp-resource-move-directory-conflict-")
	run("resourceMkdir rejects a path occupied by a file", func(t *testing.T) {
		root := f.workspace("ahp-resource-mkdir-file-")
		writeFile(t, filepath.Join(root, "occupied"), "file")
		_, err := f.call("resourceMkdir", map[string]any{"uri": fileURI(root, "occupied")})
		wantCode(t, err, exists32010, "")
	})
	run("resourceMkdir creates missing parent directories", func(t *testing.T) {
		nested := filepath.Join(f.workspace("ahp-resource-mkdir-parents-"), "one", "two", "three")
		f.must(t, "resourceMkdir", map[string]any{"uri": ahp.FileURI(nested)})
		if st, err := os.Stat(nested); err != nil || !st.IsDir() {
			t.Fatalf("no directory: %v", err)
		}
	})
	run("resourceResolve reports directory metadata", func(t *testing.T) {
		nested := filepath.Join(f.workspace("ahp-resource-resolve-directory-"), "directory")
		mkdir(t, nested)
		r := decode[resolved](t, f.must(t, "resourceResolve", map[string]any{"uri": ahp.FileURI(nested)}))
		if r.URI != ahp.FileURI(nested) || r.Type != "directory" || r.MTime == nil || r.CTime == nil {
			t.Fatalf("resolved %+v, want uri, type directory, mtime and ctime", r)
		}
	})
	run("resourceResolve reports binary size in bytes", func(t *testing.T) {
		root := f.workspace("ahp-resource-resolve-binary-size-")
		b := []byte{0, 255, 1, 254, 2}
		writeBytes(t, filepath.Join(root, "size.bin"), b)
		r := decode[resolved](t, f.must(t, "resourceResolve", map[string]any{"uri": fileURI(root, "size.bin")}))
		if r.Size == nil || *r.Size != int64(len(b)) {
			t.Fatalf("size %v, want %d", r.Size, len(b))
		}
	})
	run("resourceDelete recursively removes a directory tree", func(t *testing.T) {
		tree := filepath.Join(f.workspace("ahp-resource-delete-tree-"), "tree")
		writeFile(t, filepath.Join(tree, "nested", "file.txt"), "delete")
		f.must(t, "resourceDelete", map[string]any{"uri": ahp.FileURI(tree), "recursive": true})
		if exists(tree) {
			t.Fatal("the tree is still there")
		}
	})
	run("resourceDelete removes a regular file without recursive mode", func(t *testing.T) {
		file := filepath.Join(f.workspace("ahp-resource-delete-file-"), "delete.txt")
		writeFile(t, file, "delete")
		f.must(t, "resourceDelete", map[string]any{"uri": ahp.FileURI(file)})
		if exists(file) {
			t.Fatal("the file is still there")
		}
	})
	run("resourceWrite decodes base64 content", func(t *testing.T) {
		root := f.workspace("ahp-resource-base64-")
		f.must(t, "resourceWrite", map[string]any{"uri": fileURI(root, "base64.txt"), "data": base64.StdEncoding.EncodeToString([]byte("BASE64_CONTENT")), "encoding": "base64"})
		if got := readText(t, filepath.Join(root, "base64.txt")); got != "BASE64_CONTENT" {
			t.Fatalf("file holds %q", got)
		}
	})
	writeCase("resourceWrite append creates a missing file", "ahp-resource-append-create-", "created.txt", "", "created",
		map[string]any{"mode": "append"}, "created")
	writeCase("resourceWrite insert creates a missing file", "ahp-resource-insert-create-", "created.txt", "", "created",
		map[string]any{"mode": "insert", "position": 0}, "created")
	// Upstream runs this one only with runHostOnlyKnownIssueTests (VS Code's
	// host ignores the encoding asked for); ahpd honours it, so it runs.
	run("resourceRead returns requested base64 content without byte loss", func(t *testing.T) {
		root := f.workspace("ahp-resource-read-base64-")
		b := []byte{0, 1, 127, 128, 254, 255}
		writeBytes(t, filepath.Join(root, "bytes.bin"), b)
		r := decode[readAnswer](t, f.must(t, "resourceRead", map[string]any{"uri": fileURI(root, "bytes.bin"), "encoding": "base64"}))
		got, err := base64.StdEncoding.DecodeString(r.Data)
		if r.Encoding != "base64" || err != nil || !bytes.Equal(got, b) {
			t.Fatalf("read %+v (%v), want %v in base64", r, err, b)
		}
	})
	run("resourceResolve returns versioned file metadata", func(t *testing.T) {
		root := f.workspace("ahp-resource-resolve-metadata-")
		writeFile(t, filepath.Join(root, "metadata.txt"), "metadata")
		uri := fileURI(root, "metadata.txt")
		r := decode[resolved](t, f.must(t, "resourceResolve", map[string]any{"uri": uri, "followSymlinks": false}))
		if r.URI != uri || r.Type != "file" || r.Size == nil || *r.Size != int64(len("metadata")) ||
			!isISOTime(r.MTime) || !isISOTime(r.CTime) || r.etag() == "" {
			t.Fatalf("resolved %+v (mtime %v, ctime %v), want the file's metadata with ISO times and an etag", r, r.MTime, r.CTime)
		}
	})
	writeCase("resourceWrite createOnly atomically creates a missing file", "ahp-resource-create-only-new-", "created.txt", "", "created",
		map[string]any{"createOnly": true}, "created")
	writeCase("resourceWrite createOnly supports append creation mode", "ahp-resource-create-only-append-", "created.txt", "", "created",
		map[string]any{"createOnly": true, "mode": "append"}, "created")
	// Past either end is that end: append prepends, insert and truncate
	// append, and nothing is padded.
	writeCase("resourceWrite append position beyond EOF prepends content", "ahp-resource-append-before-start-", "append.txt", "TAIL", "HEAD-",
		map[string]any{"mode": "append", "position": 100}, "HEAD-TAIL")
	writeCase("resourceWrite insert position beyond EOF appends content", "ahp-resource-insert-after-end-", "insert.txt", "HEAD", "-TAIL",
		map[string]any{"mode": "insert", "position": 100}, "HEAD-TAIL")
	writeCase("resourceWrite truncate position beyond EOF appends without padding", "ahp-resource-truncate-after-end-", "truncate.txt", "HEAD", "-TAIL",
		map[string]any{"mode": "truncate", "position": 100}, "HEAD-TAIL")
	run("concurrent resourceWrite appends preserve every write", func(t *testing.T) {
		root := f.workspace("ahp-resource-append-concurrent-")
		writeFile(t, filepath.Join(root, "append.txt"), "")
		pieces := []string{"A", "B", "C", "D", "E", "F", "G", "H"}
		var params []map[string]any
		for _, p := range pieces {
			params = append(params, writeParams(fileURI(root, "append.txt"), p, map[string]any{"mode": "append"}))
		}
		for i, a := range f.concurrently("resourceWrite", params...) {
			if a.Error != nil {
				t.Fatalf("append %s: %v", pieces[i], a.Error)
			}
		}
		got := strings.Split(readText(t, filepath.Join(root, "append.txt")), "")
		sort.Strings(got)
		if !slices.Equal(got, pieces) {
			t.Fatalf("file holds %v, want every one of %v", got, pieces)
		}
	})
	run("resourceWrite accepts the current etag", func(t *testing.T) {
		root := f.workspace("ahp-resource-if-match-current-")
		writeFile(t, filepath.Join(root, "etag.txt"), "before")
		etag := f.etag(t, fileURI(root, "etag.txt"))
		if err := f.writeText(t, fileURI(root, "etag.txt"), "after", map[string]any{"ifMatch": etag}); err != nil {
			t.Fatal(err.Message)
		}
		if got := readText(t, filepath.Join(root, "etag.txt")); got != "after" {
			t.Fatalf("file holds %q", got)
		}
	})
	run("resourceWrite ifMatch rejects a missing file", func(t *testing.T) {
		root := f.workspace("ahp-resource-if-match-missing-")
		wantCode(t, f.writeText(t, fileURI(root, "missing.txt"), "content", map[string]any{"ifMatch": "missing-etag"}), conflict, "")
		if exists(filepath.Join(root, "missing.txt")) {
			t.Fatal("the refused write created the file")
		}
	})
	run("resourceCopy recursively copies a directory", func(t *testing.T) {
		root := f.workspace("ahp-resource-copy-directory-")
		writeFile(t, filepath.Join(root, "source", "nested", "file.txt"), "copied")
		f.must(t, "resourceCopy", map[string]any{"source": fileURI(root, "source"), "destination": fileURI(root, "destination")})
		if got := readText(t, filepath.Join(root, "destination", "nested", "file.txt")); got != "copied" {
			t.Fatalf("copy holds %q", got)
		}
	})
	run("resourceCopy preserves binary file bytes", func(t *testing.T) {
		root := f.workspace("ahp-resource-copy-binary-")
		b := []byte{0, 255, 32, 128, 64}
		writeBytes(t, filepath.Join(root, "source.bin"), b)
		f.must(t, "resourceCopy", map[string]any{"source": fileURI(root, "source.bin"), "destination": fileURI(root, "copy.bin")})
		if got := readText(t, filepath.Join(root, "copy.bin")); got != string(b) {
			t.Fatalf("copy holds %v, want %v", []byte(got), b)
		}
	})
	run("resourceCopy overwrites an existing destination by default", func(t *testing.T) {
		root := f.workspace("ahp-resource-copy-overwrite-")
		writeFile(t, filepath.Join(root, "source.txt"), "source")
		writeFile(t, filepath.Join(root, "destination.txt"), "destination")
		f.must(t, "resourceCopy", map[string]any{"source": fileURI(root, "source.txt"), "destination": fileURI(root, "destination.txt")})
		if got := readText(t, filepath.Join(root, "destination.txt")); got != "source" {
			t.Fatalf("destination holds %q", got)
		}
	})
	// treeReplaced: a copy or move of one folder onto another replaces the
	// destination's tree (nothing of it stays), and a move leaves no source.
	treeReplaced := func(name, method, prefix string) {
		run(name, func(t *testing.T) {
			root := f.workspace(prefix)
			writeFile(t, filepath.Join(root, "source", "source.txt"), "source")
			writeFile(t, filepath.Join(root, "destination", "stale.txt"), "stale")
			f.must(t, method, map[string]any{"source": fileURI(root, "source"), "destination": fileURI(root, "destination")})
			if got := readText(t, filepath.Join(root, "destination", "source.txt")); got != "source" || exists(filepath.Join(root, "destination", "stale.txt")) {
				t.Fatalf("destination holds %q, stale.txt there: %v", got, exists(filepath.Join(root, "destination", "stale.txt")))
			}
			if method == "resourceMove" && exists(filepath.Join(root, "source")) {
				t.Fatal("the source is still there")
			}
		})
	}
	treeReplaced("resourceCopy replaces an existing destination directory tree", "resourceCopy", "ahp-resource-copy-directory-overwrite-")
	run("resourceCopy reports a missing source", func(t *testing.T) {
		root := f.workspace("ahp-resource-copy-missing-")
		_, err := f.call("resourceCopy", map[string]any{"source": fileURI(root, "missing.txt"), "destination": fileURI(root, "destination.txt")})
		wantCode(t, err, notFound, "")
	})
	run("resourceMove relocates a directory tree", func(t *testing.T) {
		root := f.workspace("ahp-resource-move-directory-")
		writeFile(t, filepath.Join(root, "source", "nested", "file.txt"), "moved")
		f.must(t, "resourceMove", map[string]any{"source": fileURI(root, "source"), "destination": fileURI(root, "destination")})
		if exists(filepath.Join(root, "source")) || readText(t, filepath.Join(root, "destination", "nested", "file.txt")) != "moved" {
			t.Fatal("the tree did not move")
		}
	})
	run("resourceMove preserves binary file bytes", func(t *testing.T) {
		root := f.workspace("ahp-resource-move-binary-")
		b := []byte{0, 255, 32, 128, 64}
		writeBytes(t, filepath.Join(root, "source.bin"), b)
		f.must(t, "resourceMove", map[string]any{"source": fileURI(root, "source.bin"), "destination": fileURI(root, "moved.bin")})
		if exists(filepath.Join(root, "source.bin")) || readText(t, filepath.Join(root, "moved.bin")) != string(b) {
			t.Fatal("the bytes did not move whole")
		}
	})
	run("resourceMove overwrites an existing destination by default", func(t *testing.T) {
		root := f.workspace("ahp-resource-move-overwrite-")
		writeFile(t, filepath.Join(root, "source.txt"), "source")
		writeFile(t, filepath.Join(root, "destination.txt"), "destination")
		f.must(t, "resourceMove", map[string]any{"source": fileURI(root, "source.txt"), "destination": fileURI(root, "destination.txt")})
		if exists(filepath.Join(root, "source.txt")) || readText(t, filepath.Join(root, "destination.txt")) != "source" {
			t.Fatal("the file did not replace the destination")
		}
	})
	treeReplaced("resourceMove replaces an existing destination directory tree", "resourceMove", "ahp-resource-move-directory-overwrite-")
	run("resourceMove reports a missing source", func(t *testing.T) {
		root := f.workspace("ahp-resource-move-missing-")
		_, err := f.call("resourceMove", map[string]any{"source": fileURI(root, "missing.txt"), "destination": fileURI(root, "destination.txt")})
		wantCode(t, err, notFound, "")
	})
	run("resourceDelete requires recursive mode for a non-empty directory", func(t *testing.T) {
		dir := filepath.Join(f.workspace("ahp-resource-delete-non-recursive-"), "directory")
		writeFile(t, filepath.Join(dir, "file.txt"), "preserved")
		if _, err := f.call("resourceDelete", map[string]any{"uri": ahp.FileURI(dir)}); err == nil {
			t.Fatal("a non-empty directory was deleted without recursive")
		}
		if got := readText(t, filepath.Join(dir, "file.txt")); got != "preserved" {
			t.Fatalf("file holds %q", got)
		}
	})
	run("resourceDelete reports a missing resource", func(t *testing.T) {
		_, err := f.call("resourceDelete", map[string]any{"uri": fileURI(f.workspace("ahp-resource-delete-missing-"), "missing.txt")})
		wantCode(t, err, notFound, "")
	})
	run("resourceRead reports a missing file", func(t *testing.T) {
		_, err := f.call("resourceRead", map[string]any{"uri": fileURI(f.workspace("ahp-resource-read-missing-"), "missing.txt")})
		wantCode(t, err, notFound, "")
	})
	run("resourceList reports a missing directory", func(t *testing.T) {
		_, err := f.call("resourceList", map[string]any{"uri": fileURI(f.workspace("ahp-resource-list-missing-"), "missing")})
		wantCode(t, err, notFound, "")
	})
	run("resourceList rejects a file resource", func(t *testing.T) {
		root := f.workspace("ahp-resource-list-file-")
		writeFile(t, filepath.Join(root, "file.txt"), "content")
		if _, err := f.call("resourceList", map[string]any{"uri": fileURI(root, "file.txt")}); err == nil {
			t.Fatal("a file was listed")
		}
	})
	run("resourceWrite reports a missing parent directory", func(t *testing.T) {
		root := f.workspace("ahp-resource-write-missing-parent-")
		wantCode(t, f.writeText(t, fileURI(root, "missing", "file.txt"), "content", nil), notFound, "")
	})
	run("resourceResolve reports a missing resource", func(t *testing.T) {
		_, err := f.call("resourceResolve", map[string]any{"uri": fileURI(f.workspace("ahp-resource-resolve-missing-"), "missing")})
		wantCode(t, err, notFound, "")
	})
	// Not applicable. The suite publishes a plugin as the client's in
	// session/activeClientSet and wants the host to load it, fetching its
	// files back from the client (the vscode-agent-client scheme, a reverse
	// resourceRead). No backend of ours loads client plugins, so the host
	// never asks for one: it keeps the active client and its customization
	// in the session's state, runs a turn, and sends no reverse request.
	// (TestVSCodeNotApplicable holds the same case under the same name.)
	run("host reads a client-hosted plugin through reverse resource requests", func(t *testing.T) {
		pluginRoot := f.workspace("ahp-client-plugin-")
		writeFile(t, filepath.Join(pluginRoot, "plugin.json"), `{"name":"e2e-client-plugin","version":"1.0.0"}`)
		var reverse atomic.Int32
		f.c.OnRequest(func(method string, _ json.RawMessage) (any, *ahptest.RPCError) {
			reverse.Add(1)
			return nil, &ahptest.RPCError{Code: -32601, Message: "not served by this test client: " + method}
		})
		defer f.c.OnRequest(nil)
		sess, chat := f.session()
		f.c.Subscribe(sess)
		plugin := map[string]any{"id": uuid.NewString(), "uri": ahp.FileURI(pluginRoot), "name": "e2e-client-plugin", "type": "plugin", "nonce": "nonce-1"}
		f.dispatchOK(sess, map[string]any{"type": "session/activeClientSet", "activeClient": map[string]any{
			"clientId": f.c.ID, "displayName": "Test Client", "tools": []any{}, "customizations": []any{plugin}}})
		f.completedTurn(sess, chat, "client-plugin-t1", "hello")
		st := sessionState(t, f.c, sess)
		kept := slices.ContainsFunc(st.ActiveClients, func(c ahp.ActiveClient) bool {
			return c.ClientID == f.c.ID && len(c.Customizations) == 1
		})
		if !kept || reverse.Load() != 0 {
			t.Fatalf("active clients %+v (the plugin kept: %v), %d reverse requests", st.ActiveClients, kept, reverse.Load())
		}
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
