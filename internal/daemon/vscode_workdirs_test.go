package daemon_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// TestVSCodeWorkingDirectories ports workingDirectoriesSuite's 2
// conformanceTests (microsoft/vscode 502a56d8, the newest stored version:
// createTestDirectory; the rest of the suite is parityTest): a session of
// two folders, a peer chat narrowed to one.
func TestVSCodeWorkingDirectories(t *testing.T) {
	t.Parallel()
	v := newVSCodeEnv(t)
	n := 0
	withSession := func(t *testing.T) (sess, def string, primary, secondary, replacement string) {
		n++
		root := filepath.Join(v.dir, fmt.Sprintf("working-directories-%d", n))
		for _, name := range []string{"primary", "secondary", "replacement"} {
			writeFile(t, filepath.Join(root, name, "marker.txt"), name+"\n")
		}
		primary, secondary, replacement = filepath.Join(root, "primary"), filepath.Join(root, "secondary"), filepath.Join(root, "replacement")
		sess = fmt.Sprintf("script:/3d3d3d3d-0000-4000-8000-%012d", n)
		v.c.MustCall("createSession", map[string]any{"channel": sess, "provider": "script",
			"workingDirectories": []string{ahp.FileURI(primary), ahp.FileURI(secondary)}, "config": map[string]any{"isolation": "folder"}})
		v.c.Subscribe(sess)
		def = ahp.DefaultChatURI(sess)
		v.c.Subscribe(def)
		return sess, def, primary, secondary, replacement
	}
	markers := func(dirs ...string) []string {
		out := []string{}
		for _, d := range dirs {
			out = append(out, ahp.FileURI(filepath.Join(d, "marker.txt")))
		}
		slices.Sort(out)
		return out
	}
	fileCompletions := func(chat string) []string {
		out := []string{}
		for _, it := range v.chatCompletions(chat, "@marker").Items {
			if it.Attachment.Type == ahp.AttachmentResource {
				out = append(out, it.Attachment.URI)
			}
		}
		slices.Sort(out)
		return out
	}
	conformanceCase(t, "workspace lifecycle: peer file completions use only its selected folder", func(t *testing.T) {
		sess, def, primary, secondary, _ := withSession(t)
		p := v.peer(sess, "secondary", map[string]any{"workingDirectories": []string{ahp.FileURI(secondary)}})
		var peerDirs []string
		for _, c := range sessionState(t, v.c, sess).Chats {
			if c.Resource == p {
				peerDirs = c.WorkingDirectories
			}
		}
		sameJSON(t, "default chat files", fileCompletions(def), markers(primary, secondary))
		sameJSON(t, "peer files", fileCompletions(p), markers(secondary))
		sameJSON(t, "peer directories", peerDirs, []string{ahp.FileURI(secondary)})
	})
	conformanceCase(t, "workspace lifecycle: rejecting an outside peer folder leaves the chat catalog unchanged", func(t *testing.T) {
		sess, _, _, secondary, replacement := withSession(t)
		before := chatResources(sessionState(t, v.c, sess))
		_, err := v.c.Call("createChat", map[string]any{"channel": sess, "chat": ahp.DerivedChatURI(sess, "outside"), "workingDirectories": []string{ahp.FileURI(replacement)}})
		if err == nil || !strings.Contains(strings.ToLower(err.Message), "working director") {
			t.Fatalf("outside folder: %v", err)
		}
		sameJSON(t, "catalogue", chatResources(sessionState(t, v.c, sess)), before)
		valid := v.peer(sess, "inside", map[string]any{"workingDirectories": []string{ahp.FileURI(secondary)}})
		sameJSON(t, "valid peer files", fileCompletions(valid), markers(secondary))
	})
}

// TestPeerFolderOutsideServedPaths: a peer chat cannot name a folder the
// session does not hold, however it is spelled: outside the served paths,
// through .., or through a symlink out.
func TestPeerFolderOutsideServedPaths(t *testing.T) {
	t.Parallel()
	v := newVSCodeEnv(t)
	sess, _, dir := v.workspaceSession("escape")
	outside := t.TempDir()
	link := filepath.Join(dir, "link-out")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	for i, d := range []string{ahp.FileURI(outside), ahp.FileURI(dir) + "/../..", ahp.FileURI(link), "relative/path"} {
		if _, err := v.c.Call("createChat", map[string]any{"channel": sess, "chat": ahp.DerivedChatURI(sess, fmt.Sprintf("e%d", i)), "workingDirectories": []string{d}}); err == nil || err.Code != ahp.CodeInvalidParams {
			t.Errorf("%s: %v", d, err)
		}
	}
	if got := chatResources(sessionState(t, v.c, sess)); len(got) != 1 {
		t.Fatalf("catalogue %v", got)
	}
}
