package daemon_test

import (
	"encoding/json"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/google/uuid"
)

// TestVSCodeChangesets ports changesetSuite's 43 conformanceTests
// (microsoft/vscode src/vs/platform/agentHost/test/node/e2e/suites/
// changesetSuite.ts @ d3a53254ff946589e79677ba3117a7adb9d6491d, the newest
// stored version; the older 0417f366 names the same cases): a git
// session's changesets on channels under the session
// (<session>/changeset/{branch|uncommitted|session|turn/<id>|
// compare/<a>/<b>}), computed from git, so a file a ! command writes is in
// them; their review marks, and the operations commit, discard-changes and
// sync. The suite's parity-only provider case is not a conformanceTest.
func TestVSCodeChangesets(t *testing.T) {
	// Slow and self-contained (its own daemon): it waits beside the other
	// slow ones rather than in line (make test stays under four minutes).
	t.Parallel()
	needGitBinary(t)
	v := newVSCodeEnv(t)
	seen := map[string]bool{}
	cs := func(name string, fn func(t *testing.T, c *csCase)) {
		conformance(t, v, seen, name, func(t *testing.T, v *vscodeEnv) { fn(t, &csCase{t: t, v: v}) })
	}

	cs("subscribing to a changeset reaches ready status", func(t *testing.T, c *csCase) {
		sess := c.sessionIn(c.gitWorkspace())
		branch := sess + "/changeset/branch"
		mark := c.mark()
		raw, _ := c.v.c.Subscribe(branch)
		c.await("statusChanged ready", func(e ahptest.Envelope) bool {
			return e.ServerSeq > mark && e.Channel == branch && e.Type() == "changeset/statusChanged" && actionField[string](e, "status") == "ready"
		})
		if st := decodeState(t, raw); len(st.Files) != 0 {
			t.Fatalf("a new session's branch changeset: %+v", st)
		}
	})

	cs("a file written during a turn appears in the branch changeset", func(t *testing.T, c *csCase) {
		sess := c.sessionIn(c.gitWorkspace())
		branch := sess + "/changeset/branch"
		c.v.c.Subscribe(branch)
		mark := c.mark()
		c.turn(sess, "turn-changeset-add", writeFileCommand("added.txt", "ADDED"))
		f := c.fileInContentChanged(branch, "added.txt", mark)
		e := edit(t, f)
		if e.Before != nil || e.After == nil || e.Diff == nil || *e.Diff != (diffCount{1, 0}) || f.Reviewed == nil || *f.Reviewed {
			t.Fatalf("added.txt: %+v reviewed %v", e, f.Reviewed)
		}
	})

	cs("editing a committed file reports both sides of the change", func(t *testing.T, c *csCase) {
		sess := c.sessionIn(c.gitWorkspace())
		branch := sess + "/changeset/branch"
		c.v.c.Subscribe(branch)
		mark := c.mark()
		c.turn(sess, "turn-changeset-edit", writeFileCommand("seed.txt", "edited"))
		if e := edit(t, c.fileInContentChanged(branch, "seed.txt", mark)); e.Before == nil || e.After == nil {
			t.Fatalf("seed.txt: %+v", e)
		}
	})

	cs("committed changeset content can be read through its git blob reference", func(t *testing.T, c *csCase) {
		sess := c.sessionIn(c.gitWorkspace())
		branch := sess + "/changeset/branch"
		c.v.c.Subscribe(branch)
		c.turn(sess, "turn-changeset-git-blob", writeFileCommand("seed.txt", "edited"))
		e := edit(t, c.files(branch, "seed.txt")[0])
		if e.Before == nil || e.Before.Content.URI == "" {
			t.Fatalf("seed.txt has no before content: %+v", e)
		}
		var res struct{ Data string }
		if err := json.Unmarshal(c.v.c.MustCall("resourceRead", map[string]any{"channel": ahp.RootURI, "uri": e.Before.Content.URI, "encoding": "utf-8"}), &res); err != nil {
			t.Fatal(err)
		}
		if res.Data != "seed\n" {
			t.Fatalf("the before content reads %q", res.Data)
		}
	})

	cs("deleting a committed file reports only the before side", func(t *testing.T, c *csCase) {
		sess := c.sessionIn(c.gitWorkspace())
		branch := sess + "/changeset/branch"
		c.v.c.Subscribe(branch)
		c.turn(sess, "turn-changeset-delete", deleteFileCommand("seed.txt"))
		if e := edit(t, c.files(branch, "seed.txt")[0]); e.Before == nil || e.After != nil || e.Diff == nil || *e.Diff != (diffCount{0, 1}) {
			t.Fatalf("seed.txt: %+v", e)
		}
	})

	cs("renaming a committed file reports the destination change", func(t *testing.T, c *csCase) {
		ws := c.gitWorkspace()
		sess := c.sessionIn(ws)
		branch := sess + "/changeset/branch"
		c.v.c.Subscribe(branch)
		c.turn(sess, "turn-changeset-rename", `!node -e "require('fs').renameSync(process.argv[1],process.argv[2])" seed.txt renamed.txt`)
		e := edit(t, c.files(branch, "renamed.txt")[0])
		if e.After == nil || !strings.HasSuffix(e.After.URI, "/renamed.txt") || fileExists(filepath.Join(ws, "seed.txt")) || !fileExists(filepath.Join(ws, "renamed.txt")) {
			t.Fatalf("renamed.txt: %+v", e)
		}
	})

	cs("one turn reports mixed create edit and delete changes", func(t *testing.T, c *csCase) {
		ws := c.gitWorkspace()
		writeTestFile(t, filepath.Join(ws, "delete.txt"), "delete\n")
		gitIn(t, ws, "add", ".")
		gitIn(t, ws, "commit", "-q", "-m", "second seed")
		sess := c.sessionIn(ws)
		branch := sess + "/changeset/branch"
		c.v.c.Subscribe(branch)
		c.turn(sess, "turn-changeset-mixed", `!node -e "const fs=require('fs');fs.writeFileSync('seed.txt','edited');fs.writeFileSync('added.txt','added');fs.unlinkSync('delete.txt')"`)
		files := c.files(branch, "seed.txt", "added.txt", "delete.txt")
		var got []string
		for _, f := range files {
			e := edit(t, f)
			got = append(got, basename(f)+" "+sides(e))
		}
		if want := []string{"seed.txt before+after", "added.txt after", "delete.txt before"}; !slices.Equal(got, want) {
			t.Fatalf("files %v, want %v", got, want)
		}
	})

	cs("ignored files do not appear in a branch changeset", func(t *testing.T, c *csCase) {
		ws := c.gitWorkspace()
		writeTestFile(t, filepath.Join(ws, ".gitignore"), "ignored.log\n")
		gitIn(t, ws, "add", ".gitignore")
		gitIn(t, ws, "commit", "-q", "-m", "ignore generated log")
		c.emptyAfterTurn(ws, "turn-changeset-ignored", writeFileCommand("ignored.log", "ignored"))
	})

	cs("a file created and deleted in one turn leaves no branch change", func(t *testing.T, c *csCase) {
		c.emptyAfterTurn(c.gitWorkspace(), "turn-changeset-create-delete",
			`!node -e "const fs=require('fs');fs.writeFileSync('temporary.txt','temporary');fs.unlinkSync('temporary.txt')"`)
	})

	cs("an edit restored in the same turn leaves no branch change", func(t *testing.T, c *csCase) {
		c.emptyAfterTurn(c.gitWorkspace(), "turn-changeset-edit-restore",
			`!node -e "const fs=require('fs');fs.writeFileSync('seed.txt','changed');fs.writeFileSync('seed.txt','seed\n')"`)
	})

	cs("an added multiline file reports every added line", func(t *testing.T, c *csCase) {
		sess := c.sessionIn(c.gitWorkspace())
		branch := sess + "/changeset/branch"
		c.v.c.Subscribe(branch)
		c.turn(sess, "turn-changeset-multiline-add", `!node -e "require('fs').writeFileSync('lines.txt','one\ntwo\nthree\n')"`)
		if e := edit(t, c.files(branch, "lines.txt")[0]); e.Diff == nil || *e.Diff != (diffCount{3, 0}) {
			t.Fatalf("lines.txt: %+v", e)
		}
	})

	cs("deleting a multiline tracked file reports every removed line", func(t *testing.T, c *csCase) {
		ws := c.gitWorkspace()
		writeTestFile(t, filepath.Join(ws, "lines.txt"), "one\ntwo\nthree\n")
		gitIn(t, ws, "add", "lines.txt")
		gitIn(t, ws, "commit", "-q", "-m", "add multiline file")
		sess := c.sessionIn(ws)
		branch := sess + "/changeset/branch"
		c.v.c.Subscribe(branch)
		c.turn(sess, "turn-changeset-multiline-delete", deleteFileCommand("lines.txt"))
		if e := edit(t, c.files(branch, "lines.txt")[0]); e.Diff == nil || *e.Diff != (diffCount{0, 3}) {
			t.Fatalf("lines.txt: %+v", e)
		}
	})

	cs("a changed filename containing spaces remains addressable", func(t *testing.T, c *csCase) {
		ws := c.gitWorkspace()
		sess := c.sessionIn(ws)
		branch := sess + "/changeset/branch"
		c.v.c.Subscribe(branch)
		c.turn(sess, "turn-changeset-spaced-file", `!node -e "require('fs').writeFileSync('spaced file.txt','content\n')"`)
		f := c.files(branch, "spaced file.txt")[0]
		e := edit(t, f)
		if !strings.HasSuffix(uriPath(t, f.ID), "/spaced file.txt") || e.After == nil ||
			!(strings.HasSuffix(e.After.URI, "/spaced%20file.txt") || strings.HasSuffix(e.After.URI, "/spaced file.txt")) ||
			!fileExists(filepath.Join(ws, "spaced file.txt")) {
			t.Fatalf("spaced file.txt: id %s, %+v", f.ID, e)
		}
	})

	cs("an empty repository reports an untracked file as added", func(t *testing.T, c *csCase) {
		ws := c.emptyRepo()
		sess := c.sessionIn(ws)
		branch := sess + "/changeset/branch"
		c.v.c.Subscribe(branch)
		c.turn(sess, "turn-changeset-empty-repo", writeFileCommand("first.txt", "first"))
		if e := edit(t, c.files(branch, "first.txt")[0]); e.Before != nil || e.After == nil || e.Diff == nil || *e.Diff != (diffCount{1, 0}) {
			t.Fatalf("first.txt: %+v", e)
		}
	})

	cs("a client can mark a changeset file reviewed", func(t *testing.T, c *csCase) {
		sess := c.sessionIn(c.gitWorkspace())
		branch := sess + "/changeset/branch"
		c.v.c.Subscribe(branch)
		mark := c.mark()
		c.turn(sess, "turn-changeset-review", writeFileCommand("reviewme.txt", "REVIEW"))
		f := c.fileInContentChanged(branch, "reviewme.txt", mark)
		mark = c.mark()
		c.v.c.Dispatch(branch, map[string]any{"type": "changeset/filesReviewChanged", "files": []string{f.ID}, "reviewed": true})
		echo := c.await("filesReviewChanged", func(e ahptest.Envelope) bool {
			return e.ServerSeq > mark && e.Channel == branch && e.Type() == "changeset/filesReviewChanged"
		})
		sameWire(t, "the echoed action", echo.Action, map[string]any{"type": "changeset/filesReviewChanged", "files": []any{f.ID}, "reviewed": true})
		if got := c.state(branch).file(f.ID); got == nil || got.Reviewed == nil || !*got.Reviewed {
			t.Fatalf("after review: %+v", got)
		}
	})

	cs("uncommitted changes advertise the operations that act on them", func(t *testing.T, c *csCase) {
		sess := c.sessionIn(c.gitWorkspace())
		uncommitted := sess + "/changeset/uncommitted"
		c.v.c.Subscribe(uncommitted)
		mark := c.mark()
		c.turn(sess, "turn-changeset-ops", writeFileCommand("operate.txt", "OPERATE"))
		env := c.await("contentChanged with operations", func(e ahptest.Envelope) bool {
			return e.ServerSeq > mark && e.Channel == uncommitted && e.Type() == "changeset/contentChanged" && len(actionField[[]ahp.ChangesetOperation](e, "operations")) > 0
		})
		var got []string
		for _, o := range actionField[[]ahp.ChangesetOperation](env, "operations") {
			got = append(got, o.ID+" "+strings.Join(o.Scopes, ","))
		}
		if want := []string{"commit changeset", "discard-changes resource"}; !slices.Equal(got, want) {
			t.Fatalf("operations %v, want %v", got, want)
		}
	})

	cs("a branch with an upstream and no outgoing commits omits sync", func(t *testing.T, c *csCase) {
		ws, _ := c.remoteWorkspace()
		sess := c.sessionIn(ws)
		c.gitStateWhere(sess, func(git map[string]any) bool {
			return git["upstreamBranchName"] != nil && git["outgoingChanges"] == 0.0
		})
		if c.state(sess + "/changeset/uncommitted").offers("sync") {
			t.Fatal("an up-to-date branch offers sync")
		}
	})

	cs("an outgoing commit advertises a changeset-scoped sync operation", func(t *testing.T, c *csCase) {
		ws, _ := c.remoteWorkspace()
		commitFile(t, ws, "outgoing.txt", "outgoing\n", "add outgoing")
		sess := c.sessionIn(ws)
		op := c.operation(sess+"/changeset/uncommitted", "sync")
		if op.ID != "sync" || !slices.Equal(op.Scopes, []string{"changeset"}) || op.Status != "idle" {
			t.Fatalf("sync: %+v", op)
		}
	})

	cs("sync pushes an outgoing commit and clears the operation", func(t *testing.T, c *csCase) {
		ws, remote := c.remoteWorkspace()
		commitFile(t, ws, "outgoing.txt", "outgoing\n", "add outgoing")
		sess := c.sessionIn(ws)
		uncommitted := sess + "/changeset/uncommitted"
		c.operation(uncommitted, "sync")
		msg, statuses := c.invoke(uncommitted, "sync", nil)
		c.until(uncommitted, "sync withdrawn", func(st gitCS) bool { return !st.offers("sync") })
		if msg != "Synced changes." || !slices.Equal(statuses, []string{"running", "idle"}) ||
			gitIn(t, ws, "rev-parse", "HEAD") != gitIn(t, ws, "--git-dir", remote, "rev-parse", "HEAD") {
			t.Fatalf("sync answered %q with %v", msg, statuses)
		}
	})

	cs("sync pulls a non-conflicting remote commit before pushing", func(t *testing.T, c *csCase) {
		ws, remote := c.remoteWorkspace()
		commitFile(t, ws, "outgoing.txt", "outgoing\n", "add outgoing")
		c.pushFromClone(remote, "incoming.txt", "incoming\n")
		sess := c.sessionIn(ws)
		uncommitted := sess + "/changeset/uncommitted"
		c.operation(uncommitted, "sync")
		c.invoke(uncommitted, "sync", nil)
		if readTestFile(t, filepath.Join(ws, "incoming.txt")) != "incoming\n" || readTestFile(t, filepath.Join(ws, "outgoing.txt")) != "outgoing\n" ||
			gitIn(t, ws, "rev-parse", "HEAD") != gitIn(t, ws, "--git-dir", remote, "rev-parse", "HEAD") {
			t.Fatal("sync did not bring the branch and its upstream together")
		}
	})

	cs("sync reports an error when its upstream becomes unreachable", func(t *testing.T, c *csCase) {
		ws, _ := c.remoteWorkspace()
		commitFile(t, ws, "outgoing.txt", "outgoing\n", "add outgoing")
		sess := c.sessionIn(ws)
		uncommitted := sess + "/changeset/uncommitted"
		c.operation(uncommitted, "sync")
		gitIn(t, ws, "remote", "set-url", "origin", filepath.Join(ws, "missing-remote"))
		mark := c.mark()
		_, err := c.v.c.Call("invokeChangesetOperation", map[string]any{"channel": uncommitted, "operationId": "sync"})
		if err == nil || !strings.Contains(err.Message, "Failed to sync changes") {
			t.Fatalf("sync to an unreachable upstream answered %v", err)
		}
		c.await("sync error status", func(e ahptest.Envelope) bool {
			return e.ServerSeq > mark && e.Channel == uncommitted && e.Type() == "changeset/operationStatusChanged" && actionField[string](e, "status") == "error"
		})
		if got := c.statuses(uncommitted, "sync", mark); !slices.Equal(got, []string{"running", "error"}) || readTestFile(t, filepath.Join(ws, "outgoing.txt")) != "outgoing\n" {
			t.Fatalf("statuses %v", got)
		}
	})

	cs("discarding a tracked change restores the file and reports operation status", func(t *testing.T, c *csCase) {
		ws, uncommitted, f := c.modifiedUncommitted()
		_, statuses := c.invoke(uncommitted, "discard-changes", edit(t, f).After.URI)
		if readTestFile(t, filepath.Join(ws, "seed.txt")) != "seed\n" || !slices.Equal(statuses, []string{"running", "idle"}) {
			t.Fatalf("statuses %v", statuses)
		}
	})

	cs("discarding an untracked file removes it from disk", func(t *testing.T, c *csCase) {
		ws := c.gitWorkspace()
		sess := c.sessionIn(ws)
		uncommitted := sess + "/changeset/uncommitted"
		c.v.c.Subscribe(uncommitted)
		c.turn(sess, "turn-changeset-discard-added", writeFileCommand("untracked.txt", "untracked"))
		f := c.files(uncommitted, "untracked.txt")[0]
		c.operation(uncommitted, "discard-changes")
		_, statuses := c.invoke(uncommitted, "discard-changes", fileURIOf(t, f))
		if fileExists(filepath.Join(ws, "untracked.txt")) || !slices.Equal(statuses, []string{"running", "idle"}) {
			t.Fatalf("statuses %v", statuses)
		}
	})

	cs("discarding a deleted tracked file restores its contents", func(t *testing.T, c *csCase) {
		ws := c.gitWorkspace()
		sess := c.sessionIn(ws)
		uncommitted := sess + "/changeset/uncommitted"
		c.v.c.Subscribe(uncommitted)
		c.turn(sess, "turn-changeset-discard-deleted", deleteFileCommand("seed.txt"))
		f := c.files(uncommitted, "seed.txt")[0]
		c.operation(uncommitted, "discard-changes")
		_, statuses := c.invoke(uncommitted, "discard-changes", fileURIOf(t, f))
		if readTestFile(t, filepath.Join(ws, "seed.txt")) != "seed\n" || !slices.Equal(statuses, []string{"running", "idle"}) {
			t.Fatalf("statuses %v", statuses)
		}
	})

	cs("discarding one file preserves sibling changes", func(t *testing.T, c *csCase) {
		ws := c.gitWorkspace()
		writeTestFile(t, filepath.Join(ws, "first.txt"), "original first\n")
		writeTestFile(t, filepath.Join(ws, "second.txt"), "original second\n")
		gitIn(t, ws, "add", ".")
		gitIn(t, ws, "commit", "-q", "-m", "sibling seed")
		sess := c.sessionIn(ws)
		uncommitted := sess + "/changeset/uncommitted"
		c.v.c.Subscribe(uncommitted)
		c.turn(sess, "turn-changeset-discard-one", `!node -e "const fs=require('fs');fs.writeFileSync('first.txt','changed first');fs.writeFileSync('second.txt','changed second')"`)
		first := c.files(uncommitted, "first.txt", "second.txt")[0]
		c.operation(uncommitted, "discard-changes")
		c.invoke(uncommitted, "discard-changes", fileURIOf(t, first))
		st := c.until(uncommitted, "first.txt discarded", func(st gitCS) bool {
			return st.named("first.txt") == nil && st.named("second.txt") != nil
		})
		if len(st.Files) != 1 || !fileExists(filepath.Join(ws, "second.txt")) || readTestFile(t, filepath.Join(ws, "first.txt")) != "original first\n" {
			t.Fatalf("after discarding first.txt: %+v", st.Files)
		}
	})

	cs("review state can be applied to multiple changed files", func(t *testing.T, c *csCase) {
		sess := c.sessionIn(c.gitWorkspace())
		branch := sess + "/changeset/branch"
		c.v.c.Subscribe(branch)
		c.turn(sess, "turn-changeset-review-multiple", `!node -e "const fs=require('fs');fs.writeFileSync('first.txt','first');fs.writeFileSync('second.txt','second')"`)
		files := c.files(branch, "first.txt", "second.txt")
		mark := c.mark()
		c.v.c.Dispatch(branch, map[string]any{"type": "changeset/filesReviewChanged", "files": []string{files[0].ID, files[1].ID}, "reviewed": true})
		c.await("filesReviewChanged", func(e ahptest.Envelope) bool {
			return e.ServerSeq > mark && e.Channel == branch && e.Type() == "changeset/filesReviewChanged"
		})
		c.await("statusChanged ready", func(e ahptest.Envelope) bool {
			return e.ServerSeq > mark && e.Channel == branch && e.Type() == "changeset/statusChanged" && actionField[string](e, "status") == "ready"
		})
		for _, f := range c.state(branch).Files {
			if f.Reviewed == nil || !*f.Reviewed {
				t.Fatalf("%s is not reviewed", f.ID)
			}
		}
	})

	cs("a client can clear review state from a changed file", func(t *testing.T, c *csCase) {
		sess := c.sessionIn(c.gitWorkspace())
		branch := sess + "/changeset/branch"
		c.v.c.Subscribe(branch)
		c.turn(sess, "turn-changeset-review-unset", writeFileCommand("seed.txt", "edited"))
		f := c.files(branch, "seed.txt")[0]
		for _, reviewed := range []bool{true, false} {
			mark := c.mark()
			c.v.c.Dispatch(branch, map[string]any{"type": "changeset/filesReviewChanged", "files": []string{f.ID}, "reviewed": reviewed})
			c.await("filesReviewChanged", func(e ahptest.Envelope) bool {
				return e.ServerSeq > mark && e.Channel == branch && e.Type() == "changeset/filesReviewChanged"
			})
		}
		if got := c.state(branch).file(f.ID); got == nil || got.Reviewed == nil || *got.Reviewed {
			t.Fatalf("after clearing: %+v", got)
		}
	})

	cs("a second edit updates one changeset entry in place", func(t *testing.T, c *csCase) {
		sess := c.sessionIn(c.gitWorkspace())
		branch := sess + "/changeset/branch"
		c.v.c.Subscribe(branch)
		c.turn(sess, "turn-changeset-second-edit-first", `!node -e "require('fs').writeFileSync('seed.txt','first\nsecond\n')"`)
		first := c.files(branch, "seed.txt")[0]
		c.turn(sess, "turn-changeset-second-edit-second", `!node -e "require('fs').writeFileSync('seed.txt','first\nsecond\nthird\n')"`)
		st := c.until(branch, "the second edit", func(st gitCS) bool {
			f := st.named("seed.txt")
			return f != nil && edit(t, *f).Diff != nil && edit(t, *f).Diff.Added == 3
		})
		second := st.named("seed.txt")
		if len(st.Files) != 1 || second.ID != first.ID || *edit(t, *second).Diff != (diffCount{3, 1}) {
			t.Fatalf("after the second edit: %+v", st.Files)
		}
	})

	cs("a nested untracked file retains its workspace-relative identity", func(t *testing.T, c *csCase) {
		sess := c.sessionIn(c.gitWorkspace())
		branch := sess + "/changeset/branch"
		c.v.c.Subscribe(branch)
		c.turn(sess, "turn-changeset-nested", `!node -e "const fs=require('fs');fs.mkdirSync('nested',{recursive:true});fs.writeFileSync('nested/added.txt','nested')"`)
		e := edit(t, c.files(branch, "added.txt")[0])
		if e.After == nil || !strings.HasSuffix(uriPath(t, e.After.URI), "/nested/added.txt") || e.Before != nil || e.Diff == nil || *e.Diff != (diffCount{1, 0}) {
			t.Fatalf("nested/added.txt: %+v", e)
		}
	})

	cs("discarding the last tracked change clears changeset and list summaries", func(t *testing.T, c *csCase) {
		sess := c.sessionIn(c.gitWorkspace())
		branch, uncommitted := sess+"/changeset/branch", sess+"/changeset/uncommitted"
		c.v.c.Subscribe(branch)
		c.v.c.Subscribe(uncommitted)
		c.turn(sess, "turn-changeset-discard-last", writeFileCommand("seed.txt", "edited"))
		c.files(branch, "seed.txt")
		f := c.files(uncommitted, "seed.txt")[0]
		c.operation(uncommitted, "discard-changes")
		c.invoke(uncommitted, "discard-changes", fileURIOf(t, f))
		c.until(branch, "an empty branch changeset", func(st gitCS) bool { return len(st.Files) == 0 })
		c.until(uncommitted, "an empty uncommitted changeset", func(st gitCS) bool { return len(st.Files) == 0 })
		c.summaryWhere(sess, func(sum *ahp.ChangesSummary) bool { return changesAre(sum, 0, 0, 0) })
	})

	cs("listSessions reports the aggregate file change summary", func(t *testing.T, c *csCase) {
		sess := c.sessionIn(c.gitWorkspace())
		branch := sess + "/changeset/branch"
		c.v.c.Subscribe(branch)
		c.turn(sess, "turn-changeset-list-summary", `!node -e "const fs=require('fs');fs.writeFileSync('seed.txt','edited');fs.writeFileSync('added.txt','added')"`)
		c.files(branch, "seed.txt", "added.txt")
		sum := c.summaryWhere(sess, func(sum *ahp.ChangesSummary) bool { return sum != nil && sum.Files != nil && *sum.Files == 2 })
		if !changesAre(sum, 2, 1, 2) {
			t.Fatalf("summary %+v", sum)
		}
	})

	cs("invoking an unknown changeset operation is rejected", func(t *testing.T, c *csCase) {
		_, uncommitted, _ := c.modifiedUncommitted()
		if _, err := c.v.c.Call("invokeChangesetOperation", map[string]any{"channel": uncommitted, "operationId": "unknown-operation"}); err == nil {
			t.Fatal("an unknown operation was run")
		}
	})

	cs("changeset operation rejects a target outside its advertised scopes", func(t *testing.T, c *csCase) {
		_, uncommitted, _ := c.modifiedUncommitted()
		if _, err := c.v.c.Call("invokeChangesetOperation", map[string]any{"channel": uncommitted, "operationId": "discard-changes"}); err == nil {
			t.Fatal("discard-changes ran on the whole changeset")
		}
	})

	cs("a new session advertises its initial changeset catalog on a separate channel", func(t *testing.T, c *csCase) {
		sess := c.sessionIn(c.gitWorkspace())
		raw, _ := c.v.c.Subscribe(sess)
		var st ahp.SessionState
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatal(err)
		}
		var catalog []string
		var channels []string
		for _, cs := range st.Changesets {
			catalog = append(catalog, cs.ChangeKind+" "+cs.URITemplate+" "+boolWord(cs.Capabilities["review"] != nil))
			if !strings.Contains(cs.URITemplate, "{") {
				channels = append(channels, cs.URITemplate)
			}
		}
		if want := []string{"uncommitted " + sess + "/changeset/uncommitted false"}; !slices.Equal(catalog, want) {
			t.Fatalf("catalog %v, want %v", catalog, want)
		}
		for _, ch := range channels {
			var res struct {
				Snapshot struct{ Resource string } `json:"snapshot"`
			}
			if err := json.Unmarshal(c.v.c.MustCall("subscribe", map[string]any{"channel": ch}), &res); err != nil || res.Snapshot.Resource != ch {
				t.Fatalf("subscribe %s: %+v %v", ch, res, err)
			}
		}
	})

	cs("a per-turn changeset reports a file created in that turn", func(t *testing.T, c *csCase) {
		sess := c.worktreeSessionIn(c.gitWorkspace())
		c.turn(sess, "turn-add", writeFileCommand("turn-added.txt", "ADDED"))
		st := c.state(sess + "/changeset/turn/turn-add")
		f := st.named("turn-added.txt")
		if st.Status != "ready" || f == nil || sides(edit(t, *f)) != "after" || *edit(t, *f).Diff != (diffCount{1, 0}) {
			t.Fatalf("turn-add: %+v", st)
		}
	})

	cs("a per-turn changeset reports an edit to a committed file", func(t *testing.T, c *csCase) {
		sess := c.worktreeSessionIn(c.gitWorkspace())
		c.turn(sess, "turn-edit", writeFileCommand("seed.txt", "edited"))
		st := c.state(sess + "/changeset/turn/turn-edit")
		if f := st.named("seed.txt"); st.Status != "ready" || f == nil || sides(edit(t, *f)) != "before+after" {
			t.Fatalf("turn-edit: %+v", st)
		}
	})

	cs("a per-turn changeset reports a file deleted in that turn", func(t *testing.T, c *csCase) {
		sess := c.worktreeSessionIn(c.gitWorkspace())
		c.turn(sess, "turn-delete", deleteFileCommand("seed.txt"))
		st := c.state(sess + "/changeset/turn/turn-delete")
		if f := st.named("seed.txt"); st.Status != "ready" || f == nil || sides(edit(t, *f)) != "before" {
			t.Fatalf("turn-delete: %+v", st)
		}
	})

	cs("a per-turn changeset for a no-op turn is empty and ready", func(t *testing.T, c *csCase) {
		sess := c.worktreeSessionIn(c.gitWorkspace())
		c.turn(sess, "turn-noop", "/rename No File Changes")
		if st := c.state(sess + "/changeset/turn/turn-noop"); st.Status != "ready" || len(st.Files) != 0 {
			t.Fatalf("turn-noop: %+v", st)
		}
	})

	cs("a per-turn changeset for an unknown turn reports an error", func(t *testing.T, c *csCase) {
		sess := c.worktreeSessionIn(c.gitWorkspace())
		c.turn(sess, "turn-known", "/rename Known Turn")
		if st := c.state(sess + "/changeset/turn/missing-turn"); st.Status != "error" {
			t.Fatalf("missing-turn: %+v", st)
		}
	})

	cs("comparing a turn with itself produces an empty ready changeset", func(t *testing.T, c *csCase) {
		sess := c.worktreeSessionIn(c.gitWorkspace())
		c.turn(sess, "turn-same", writeFileCommand("same.txt", "SAME"))
		if st := c.state(sess + "/changeset/compare/turn-same/turn-same"); st.Status != "ready" || len(st.Files) != 0 {
			t.Fatalf("compare turn-same: %+v", st)
		}
	})

	cs("comparing two turns reports the changes between their checkpoints", func(t *testing.T, c *csCase) {
		sess := c.worktreeSessionIn(c.gitWorkspace())
		c.turn(sess, "turn-first", writeFileCommand("between.txt", "FIRST"))
		c.turn(sess, "turn-second", writeFileCommand("between.txt", "SECOND"))
		st := c.state(sess + "/changeset/compare/turn-first/turn-second")
		if f := st.named("between.txt"); st.Status != "ready" || f == nil || sides(edit(t, *f)) != "before+after" {
			t.Fatalf("compare: %+v", st)
		}
	})

	cs("comparing with an unknown turn reports an error", func(t *testing.T, c *csCase) {
		sess := c.worktreeSessionIn(c.gitWorkspace())
		c.turn(sess, "turn-known", writeFileCommand("known.txt", "KNOWN"))
		if st := c.state(sess + "/changeset/compare/missing-turn/turn-known"); st.Status != "error" {
			t.Fatalf("compare with a missing turn: %+v", st)
		}
	})

	cs("a materialized git session advertises turn and compare changeset templates", func(t *testing.T, c *csCase) {
		sess := c.worktreeSessionIn(c.gitWorkspace())
		c.turn(sess, "turn-materialize", "/rename Materialized")
		raw, _ := c.v.c.Subscribe(sess)
		var st ahp.SessionState
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatal(err)
		}
		kinds := map[string]bool{}
		for _, cs := range st.Changesets {
			kinds[cs.ChangeKind] = true
		}
		if !kinds["turn"] || !kinds["compare-turns"] {
			t.Fatalf("catalog kinds %v", kinds)
		}
	})

	if len(seen) != 43 {
		t.Errorf("ported %d cases of changesetSuite, want 43", len(seen))
	}
}

// csCase is one ported case: its own client (c.v.c) and git workspaces
// under the served folder.
type csCase struct {
	t *testing.T
	v *vscodeEnv
}

// newDir is a fresh folder under the served one.
func (c *csCase) newDir(prefix string) string {
	dir := filepath.Join(c.v.dir, prefix+"-"+uuid.NewString()[:8])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		c.t.Fatal(err)
	}
	return real
}

// emptyRepo is the suite's initTestGitRepo: a repository with an identity
// and no commit.
func (c *csCase) emptyRepo() string {
	dir := c.newDir("ahp-changeset")
	gitIn(c.t, dir, "init", "-q")
	gitIn(c.t, dir, "config", "user.email", "test@example.com")
	gitIn(c.t, dir, "config", "user.name", "Agent Host E2E")
	gitIn(c.t, dir, "config", "commit.gpgsign", "false")
	return dir
}

// gitWorkspace is the suite's createGitWorkspace: seed.txt committed.
func (c *csCase) gitWorkspace() string {
	dir := c.emptyRepo()
	writeTestFile(c.t, filepath.Join(dir, "seed.txt"), "seed\n")
	gitIn(c.t, dir, "add", ".")
	gitIn(c.t, dir, "commit", "-q", "-m", "seed")
	return dir
}

// remoteWorkspace is createRemoteGitWorkspace: a workspace pushed to a
// bare repository, its upstream.
func (c *csCase) remoteWorkspace() (workspace, remote string) {
	workspace = c.gitWorkspace()
	remote = c.newDir("ahp-remote")
	gitIn(c.t, remote, "init", "--bare", "-q")
	gitIn(c.t, workspace, "remote", "add", "origin", remote)
	gitIn(c.t, workspace, "push", "-q", "-u", "origin", "HEAD")
	gitIn(c.t, workspace, "config", "pull.rebase", "false")
	return workspace, remote
}

// pushFromClone is pushRemoteCommit: another clone pushes a commit.
func (c *csCase) pushFromClone(remote, file, contents string) {
	clone := c.newDir("ahp-clone")
	gitIn(c.t, clone, "clone", "-q", remote, ".")
	gitIn(c.t, clone, "config", "user.email", "test@example.com")
	gitIn(c.t, clone, "config", "user.name", "Agent Host E2E")
	commitFile(c.t, clone, file, contents, "add "+file)
	gitIn(c.t, clone, "push", "-q")
}

func commitFile(t *testing.T, dir, file, contents, message string) {
	t.Helper()
	writeTestFile(t, filepath.Join(dir, file), contents)
	gitIn(t, dir, "add", file)
	gitIn(t, dir, "commit", "-q", "-m", message)
}

func readTestFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "\r\n", "\n")
}

// sessionIn creates a session working in workspace (createSessionIn) and
// subscribes it and its default chat.
func (c *csCase) sessionIn(workspace string) string {
	sess := "script:/" + uuid.NewString()
	c.v.c.MustCall("createSession", map[string]any{"channel": sess, "provider": "script", "workingDirectories": []string{ahp.FileURI(workspace)}})
	c.v.c.Subscribe(sess)
	c.v.c.Subscribe(ahp.DefaultChatURI(sess))
	return sess
}

// worktreeSessionIn is createWorktreeSessionIn: isolation worktree from
// the workspace's current branch.
func (c *csCase) worktreeSessionIn(workspace string) string {
	sess := "script:/" + uuid.NewString()
	branch := gitIn(c.t, workspace, "branch", "--show-current")
	c.v.c.MustCall("createSession", map[string]any{"channel": sess, "provider": "script",
		"workingDirectories": []string{ahp.FileURI(workspace)}, "config": map[string]any{"isolation": "worktree", "branch": branch}})
	c.v.c.Subscribe(sess)
	c.v.c.Subscribe(ahp.DefaultChatURI(sess))
	return sess
}

// turn dispatches a turn on the session and waits for it to complete
// (runBangTurn).
func (c *csCase) turn(sess, id, text string) {
	c.t.Helper()
	c.v.c.Dispatch(sess, turnStarted(id, text))
	if end := awaitEnd(c.t, c.v.c, ahp.DefaultChatURI(sess), id); end.Type() != "chat/turnComplete" {
		c.t.Fatalf("turn %s ended %s: %s", id, end.Type(), end.Raw)
	}
}

// mark is the newest serverSeq the client has seen: a wait for what comes
// after it is the suite's clearReceived.
func (c *csCase) mark() int64 {
	var seq int64
	for _, e := range c.v.c.Envelopes() {
		seq = max(seq, e.ServerSeq)
	}
	return seq
}

func (c *csCase) await(what string, match func(ahptest.Envelope) bool) ahptest.Envelope {
	c.t.Helper()
	return c.v.c.AwaitEnvelope(what, match)
}

// fileInContentChanged waits for a contentChanged on channel after mark
// listing a file named name (waitForFileInChangeset).
func (c *csCase) fileInContentChanged(channel, name string, mark int64) ahp.ChangesetFile {
	c.t.Helper()
	env := c.await("contentChanged with "+name, func(e ahptest.Envelope) bool {
		return e.ServerSeq > mark && e.Channel == channel && e.Type() == "changeset/contentChanged" &&
			gitCS{Files: actionField[[]ahp.ChangesetFile](e, "files")}.named(name) != nil
	})
	return *gitCS{Files: actionField[[]ahp.ChangesetFile](env, "files")}.named(name)
}

// gitCS is a changeset channel's state as the suite reads it.
type gitCS ahp.ChangesetState

func (s gitCS) named(name string) *ahp.ChangesetFile {
	for i := range s.Files {
		if basename(s.Files[i]) == name {
			return &s.Files[i]
		}
	}
	return nil
}

func (s gitCS) file(id string) *ahp.ChangesetFile {
	for i := range s.Files {
		if s.Files[i].ID == id {
			return &s.Files[i]
		}
	}
	return nil
}

func (s gitCS) offers(op string) bool {
	return slices.ContainsFunc(s.Operations, func(o ahp.ChangesetOperation) bool { return o.ID == op })
}

// state subscribes to channel and returns its state (changesetState).
func (c *csCase) state(channel string) gitCS {
	c.t.Helper()
	raw, _ := c.v.c.Subscribe(channel)
	return gitCS(decodeState(c.t, raw))
}

// until reads channel's state until ok holds, again after each change the
// channel announces (the suite's retry), within the client's deadline.
func (c *csCase) until(channel, what string, ok func(gitCS) bool) gitCS {
	c.t.Helper()
	for {
		mark := c.mark()
		if st := c.state(channel); st.Status != "computing" && ok(st) {
			return st
		}
		c.await(what+" on "+channel, func(e ahptest.Envelope) bool {
			return e.ServerSeq > mark && e.Channel == channel && e.Type() == "changeset/statusChanged"
		})
	}
}

// files waits until channel is ready and lists a file of each name, and
// returns them in that order (waitForChangesetFiles).
func (c *csCase) files(channel string, names ...string) []ahp.ChangesetFile {
	c.t.Helper()
	st := c.until(channel, strings.Join(names, ", "), func(st gitCS) bool {
		if st.Status != "ready" {
			return false
		}
		for _, n := range names {
			if st.named(n) == nil {
				return false
			}
		}
		return true
	})
	var out []ahp.ChangesetFile
	for _, n := range names {
		out = append(out, *st.named(n))
	}
	return out
}

// operation waits until channel offers op, idle (waitForOperation).
func (c *csCase) operation(channel, op string) ahp.ChangesetOperation {
	c.t.Helper()
	st := c.until(channel, op+" offered", func(st gitCS) bool {
		return slices.ContainsFunc(st.Operations, func(o ahp.ChangesetOperation) bool { return o.ID == op && o.Status == "idle" })
	})
	i := slices.IndexFunc(st.Operations, func(o ahp.ChangesetOperation) bool { return o.ID == op })
	return st.Operations[i]
}

// invoke runs op (on resource, "" for the whole changeset) and returns its
// answer's message and the statuses the channel said of it.
func (c *csCase) invoke(channel, op string, resource any) (string, []string) {
	c.t.Helper()
	mark := c.mark()
	params := map[string]any{"channel": channel, "operationId": op}
	if r, ok := resource.(string); ok && r != "" {
		params["target"] = map[string]any{"kind": "resource", "resource": r}
	}
	var res struct{ Message string }
	if err := json.Unmarshal(c.v.c.MustCall("invokeChangesetOperation", params), &res); err != nil {
		c.t.Fatal(err)
	}
	c.await(op+" idle", func(e ahptest.Envelope) bool {
		return e.ServerSeq > mark && e.Channel == channel && e.Type() == "changeset/operationStatusChanged" &&
			actionField[string](e, "operationId") == op && actionField[string](e, "status") == "idle"
	})
	return res.Message, c.statuses(channel, op, mark)
}

// statuses are the statuses channel said of op after mark.
func (c *csCase) statuses(channel, op string, mark int64) []string {
	var out []string
	for _, e := range c.v.c.Envelopes() {
		if e.ServerSeq > mark && e.Channel == channel && e.Type() == "changeset/operationStatusChanged" && actionField[string](e, "operationId") == op {
			out = append(out, actionField[string](e, "status"))
		}
	}
	return out
}

// modifiedUncommitted is createModifiedUncommittedChangeset: a session
// whose turn edited seed.txt, its uncommitted changeset offering the
// resource-scoped discard.
func (c *csCase) modifiedUncommitted() (workspace, channel string, file ahp.ChangesetFile) {
	c.t.Helper()
	workspace = c.gitWorkspace()
	sess := c.sessionIn(workspace)
	channel = sess + "/changeset/uncommitted"
	c.v.c.Subscribe(channel)
	mark := c.mark()
	c.v.c.Dispatch(sess, turnStarted("turn-modified", writeFileCommand("seed.txt", "edited")))
	file = c.fileInContentChanged(channel, "seed.txt", mark)
	op := c.operation(channel, "discard-changes")
	if !slices.Equal(op.Scopes, []string{"resource"}) {
		c.t.Fatalf("discard-changes scopes %v", op.Scopes)
	}
	awaitEnd(c.t, c.v.c, ahp.DefaultChatURI(sess), "turn-modified")
	return workspace, channel, file
}

// emptyAfterTurn runs a turn in a session of workspace and checks that
// its branch changeset, after the change it announces, is empty.
func (c *csCase) emptyAfterTurn(workspace, turn, command string) {
	c.t.Helper()
	sess := c.sessionIn(workspace)
	branch := sess + "/changeset/branch"
	c.state(branch)
	mark := c.mark()
	c.turn(sess, turn, command)
	c.await("contentChanged", func(e ahptest.Envelope) bool {
		return e.ServerSeq > mark && e.Channel == branch && e.Type() == "changeset/contentChanged"
	})
	if st := c.state(branch); len(st.Files) != 0 {
		c.t.Fatalf("the branch changeset lists %+v", st.Files)
	}
}

// gitStateWhere waits until the session's _meta.git satisfies ok.
func (c *csCase) gitStateWhere(sess string, ok func(map[string]any) bool) {
	c.t.Helper()
	for {
		mark := c.mark()
		raw, _ := c.v.c.Subscribe(sess)
		var st struct {
			Meta map[string]map[string]any `json:"_meta"`
		}
		_ = json.Unmarshal(raw, &st)
		if ok(st.Meta["git"]) {
			return
		}
		c.await("the session's git state", func(e ahptest.Envelope) bool {
			return e.ServerSeq > mark && e.Channel == sess && e.Type() == "session/metaChanged"
		})
	}
}

// summaryWhere waits until listSessions gives the session a changes
// summary that satisfies ok, and returns it.
func (c *csCase) summaryWhere(sess string, ok func(*ahp.ChangesSummary) bool) *ahp.ChangesSummary {
	c.t.Helper()
	var got *ahp.ChangesSummary
	c.v.c.Subscribe(ahp.RootURI)
	for {
		n := len(c.v.c.Frames())
		for _, s := range sessionList(c.t, c.v.c) {
			if s.Resource == sess {
				got = s.Changes
			}
		}
		if ok(got) {
			return got
		}
		c.v.c.AwaitFrame("a summary change of "+sess, n, func(f ahptest.Frame) bool {
			return strings.Contains(string(f.Raw), "root/sessionSummaryChanged") && strings.Contains(string(f.Raw), sess)
		})
	}
}

func changesAre(s *ahp.ChangesSummary, add, del, files int64) bool {
	return s != nil && s.Additions != nil && s.Deletions != nil && s.Files != nil &&
		*s.Additions == add && *s.Deletions == del && *s.Files == files
}

// writeFileCommand and deleteFileCommand are the suite's ! commands.
func writeFileCommand(file, contents string) string {
	return `!node -e "require('fs').writeFileSync(process.argv[1],process.argv[2])" ` + file + " " + contents
}

func deleteFileCommand(file string) string {
	return `!node -e "require('fs').unlinkSync(process.argv[1])" ` + file
}

// The parts of a changeset file's edit the suite reads.
type (
	diffCount struct{ Added, Removed int }
	editSide  struct {
		URI     string `json:"uri"`
		Content struct {
			URI string `json:"uri"`
		} `json:"content"`
	}
	fileEdit struct {
		Before *editSide  `json:"before"`
		After  *editSide  `json:"after"`
		Diff   *diffCount `json:"diff"`
	}
)

func edit(t *testing.T, f ahp.ChangesetFile) fileEdit {
	t.Helper()
	var e fileEdit
	if err := json.Unmarshal(f.Edit, &e); err != nil {
		t.Fatalf("edit of %s: %v", f.ID, err)
	}
	return e
}

func sides(e fileEdit) string {
	switch {
	case e.Before != nil && e.After != nil:
		return "before+after"
	case e.Before != nil:
		return "before"
	case e.After != nil:
		return "after"
	}
	return "none"
}

// fileURIOf is the suite's fileUri: the after side's URI, else the
// before side's.
func fileURIOf(t *testing.T, f ahp.ChangesetFile) string {
	e := edit(t, f)
	if e.After != nil {
		return e.After.URI
	}
	if e.Before != nil {
		return e.Before.URI
	}
	return ""
}

// basename is the last segment of a file's URI path, decoded.
func basename(f ahp.ChangesetFile) string {
	var e fileEdit
	_ = json.Unmarshal(f.Edit, &e)
	uri := f.ID
	if e.After != nil {
		uri = e.After.URI
	} else if e.Before != nil {
		uri = e.Before.URI
	}
	u, err := url.Parse(uri)
	if err != nil {
		return ""
	}
	return path.Base(u.Path)
}

func uriPath(t *testing.T, uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatalf("%s: %v", uri, err)
	}
	return u.Path
}

func decodeState(t *testing.T, raw json.RawMessage) ahp.ChangesetState {
	t.Helper()
	var st ahp.ChangesetState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("changeset state: %v\n%s", err, raw)
	}
	return st
}

// field decodes an envelope's action field as T (its zero value when
// absent or of another shape).
func actionField[T any](e ahptest.Envelope, name string) T {
	var v T
	_ = e.Field(name, &v)
	return v
}

func boolWord(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
