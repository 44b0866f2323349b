package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// killChat is what the test told one chat and what it was shown back.
type killChat struct {
	session, chat string
	texts         map[string]string        // turn id → the message sent
	order         []string                 // turn ids in the order shown started
	ended         map[string]ahp.TurnState // turn id → the ending shown
	active        string                   // the turn the test waits on, "" if none
	next          int

	titles    []string // session titles dispatched, in order
	seenTitle int      // index in titles of the last one shown, -1 if none
	drafts    []string
	seenDraft int
}

// TestKillNineLosesNothingShown: twenty chats stream turns back to back
// while their titles and drafts change, and the daemon is killed with
// SIGKILL ten times (forty under AHPD_KILL_CYCLES=40): at a turn's ending
// (0–20 ms after it was shown), at the echo of a title or draft (they come
// in bursts of one to four), and at a random moment. After each restart
// every turn a client saw end is there, whole and ended the same way, every
// turn it saw start is there and ended, and the title and draft are the
// ones last shown or ones dispatched after them (stored, not yet said). The
// database passes PRAGMA integrity_check at the end. (Issue 8 §3; C-TURN-10,
// C-TURN-12.)
func TestKillNineLosesNothingShown(t *testing.T) {
	testutil.RequireCheck(t, "kill -9 loop")
	const nChats = 20
	cycles := 10
	if n, err := strconv.Atoi(os.Getenv("AHPD_KILL_CYCLES")); err == nil && n > 0 {
		cycles = n
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 8))
	data, work := t.TempDir(), t.TempDir()

	chats := make([]*killChat, nChats)
	for cycle := range cycles {
		cmd, url := serve(t, data, work)
		c := ahptest.Dial(t, url, "")
		c.Initialize(fmt.Sprintf("kill-%d", cycle), ahp.RootURI)
		if cycle == 0 {
			for i := range chats {
				sess := fmt.Sprintf("ahp-session:/99999999-0000-4000-8000-%012d", i+1)
				c.MustCall("createSession", map[string]any{"channel": sess, "provider": "script"})
				chats[i] = &killChat{session: sess, texts: map[string]string{}, ended: map[string]ahp.TurnState{}, seenTitle: -1, seenDraft: -1}
			}
		}
		for _, k := range chats {
			st, _ := c.Subscribe(k.session)
			var ss ahp.SessionState
			if err := json.Unmarshal(st, &ss); err != nil {
				t.Fatal(err)
			}
			k.chat = ss.DefaultChat
			if cycle > 0 {
				k.checkTitle(t, cycle, ss.Title)
			}
			cst, _ := c.Subscribe(k.chat)
			var cs ahp.ChatState
			if err := json.Unmarshal(cst, &cs); err != nil {
				t.Fatal(err)
			}
			if cycle > 0 {
				k.checkChat(t, cycle, &cs)
			}
			k.active = ""
		}

		mode := cycle % 3
		killAt := time.Now().Add(time.Duration(100+rng.IntN(1400)) * time.Millisecond)
		endingsLeft, echoesLeft := 5+rng.IntN(40), 1+rng.IntN(10)
		mine := map[int64]bool{} // clientSeqs of title and draft changes
		start := func(k *killChat) {
			id := fmt.Sprintf("c%d-t%d", cycle, k.next)
			k.next++
			text := "turn " + id
			if rng.IntN(3) == 0 {
				text = "[slow] " + text
			}
			k.texts[id] = text
			k.active = id
			c.Dispatch(k.chat, map[string]any{"type": "chat/turnStarted", "turnId": id, "startedAt": time.Now().UTC().Format(time.RFC3339Nano),
				"message": map[string]any{"text": text, "origin": map[string]any{"kind": "user"}}})
		}
		changeOne := func(k *killChat) {
			switch rng.IntN(4) {
			case 0:
				title := fmt.Sprintf("title %d/%d", cycle, len(k.titles))
				k.titles = append(k.titles, title)
				mine[c.Dispatch(k.session, map[string]any{"type": "session/titleChanged", "title": title})] = true
			case 1:
				draft := fmt.Sprintf("draft %d/%d", cycle, len(k.drafts))
				k.drafts = append(k.drafts, draft)
				mine[c.Dispatch(k.chat, map[string]any{"type": "chat/draftChanged", "draft": map[string]any{"text": draft, "origin": map[string]any{"kind": "user"}}})] = true
			}
		}
		// change is a burst: up to four changes back to back, so a kill can
		// land between the echoes of one burst.
		change := func(k *killChat) {
			for range 1 + rng.IntN(4) {
				changeOne(k)
			}
		}
		for _, k := range chats {
			start(k)
		}
		bySession, byChat := map[string]*killChat{}, map[string]*killChat{}
		for _, k := range chats {
			bySession[k.session], byChat[k.chat] = k, k
		}

		killed := false
		kill := func(after time.Duration) {
			time.Sleep(after) // deliberate: the kill lands 0-20 ms after what it follows, or at a random moment
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			killed = true
		}
		for n := 0; ; {
			envs, closed := c.Since(n, 20*time.Millisecond)
			n += len(envs)
			for _, e := range envs {
				if k := bySession[e.Channel]; k != nil && e.Type() == "session/titleChanged" && e.RejectionReason == "" {
					var title string
					_ = e.Field("title", &title)
					if i := slices.Index(k.titles, title); i >= 0 {
						k.seenTitle = i
					}
				}
				k := byChat[e.Channel]
				if k == nil || e.RejectionReason != "" {
					continue
				}
				var id string
				_ = e.Field("turnId", &id)
				switch e.Type() {
				case "chat/turnStarted":
					if !slices.Contains(k.order, id) {
						k.order = append(k.order, id)
					}
				case "chat/turnComplete", "chat/turnCancelled", "chat/error":
					k.ended[id] = map[string]ahp.TurnState{"chat/turnComplete": ahp.TurnComplete, "chat/turnCancelled": ahp.TurnCancelled, "chat/error": ahp.TurnError}[e.Type()]
					if id == k.active && !killed {
						k.active = ""
						endingsLeft--
						if mode == 0 && endingsLeft == 0 {
							kill(time.Duration(rng.IntN(21)) * time.Millisecond)
							break
						}
						change(k)
						start(k)
					}
				case "chat/draftChanged":
					var d *ahp.Message
					_ = e.Field("draft", &d)
					if d != nil {
						if i := slices.Index(k.drafts, d.Text); i >= 0 {
							k.seenDraft = i
						}
					}
				}
				if e.Origin != nil && e.Origin.ClientID == c.ID && mine[e.Origin.ClientSeq] && !killed {
					delete(mine, e.Origin.ClientSeq)
					echoesLeft--
					if mode == 1 && echoesLeft == 0 {
						kill(0)
					}
				}
			}
			if closed != nil {
				if !killed {
					t.Fatalf("cycle %d: the daemon went away before it was killed: %v", cycle, closed)
				}
				break
			}
			if !killed && (mode == 2 && time.Now().After(killAt) || time.Now().After(killAt.Add(20*time.Second))) {
				kill(0)
			}
		}
		shown := 0
		for _, k := range chats {
			shown += len(k.ended)
		}
		t.Logf("cycle %d (mode %d): killed; %d turn endings shown so far", cycle, mode, shown)
	}

	// One more start for the last kill's check, then the file itself.
	_, url := serve(t, data, work)
	c := ahptest.Dial(t, url, "")
	c.Initialize("kill-check", ahp.RootURI)
	for _, k := range chats {
		st, _ := c.Subscribe(k.session)
		var ss ahp.SessionState
		if err := json.Unmarshal(st, &ss); err != nil {
			t.Fatal(err)
		}
		k.checkTitle(t, cycles, ss.Title)
		cst, _ := c.Subscribe(k.chat)
		var cs ahp.ChatState
		if err := json.Unmarshal(cst, &cs); err != nil {
			t.Fatal(err)
		}
		k.checkChat(t, cycles, &cs)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "ahpd.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ok string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check: %q %v", ok, err)
	}
}

// checkTitle: the stored title is the last one shown, or one dispatched
// after it.
func (k *killChat) checkTitle(t *testing.T, cycle int, got string) {
	t.Helper()
	if k.seenTitle < 0 {
		return // the chat's first message names it; no title of ours was shown
	}
	if i := slices.Index(k.titles, got); i < k.seenTitle {
		t.Errorf("cycle %d: %s title %q, but %q was shown", cycle, k.session, got, k.titles[k.seenTitle])
	}
}

// checkChat: every turn shown ended is whole and ended the same way; every
// turn shown started is there, in order, and ended; the draft is the last
// shown or a later one.
func (k *killChat) checkChat(t *testing.T, cycle int, cs *ahp.ChatState) {
	t.Helper()
	stored := map[string]ahp.Turn{}
	var ids []string
	for _, tu := range cs.Turns {
		stored[tu.ID] = tu
		ids = append(ids, tu.ID)
	}
	if cs.ActiveTurn != nil {
		t.Errorf("cycle %d: %s has an active turn %s right after a restart", cycle, k.chat, cs.ActiveTurn.ID)
	}
	last := -1
	for _, id := range k.order {
		tu, ok := stored[id]
		if !ok {
			t.Errorf("cycle %d: %s lost turn %s, which a client saw start", cycle, k.chat, id)
			continue
		}
		if i := slices.Index(ids, id); i < last {
			t.Errorf("cycle %d: %s turn %s is out of order: %v", cycle, k.chat, id, ids)
		} else {
			last = i
		}
		want, shownEnded := k.ended[id]
		switch {
		case shownEnded && tu.State != want:
			t.Errorf("cycle %d: %s turn %s ended %s, but a client saw it end %s", cycle, k.chat, id, tu.State, want)
		case shownEnded && want == ahp.TurnComplete:
			var answer strings.Builder
			for _, p := range tu.ResponseParts {
				if p.Kind == ahp.PartMarkdown {
					answer.WriteString(p.Content)
				}
			}
			if w := "echo: " + k.texts[id]; answer.String() != w {
				t.Errorf("cycle %d: %s turn %s answer %q, a client saw %q", cycle, k.chat, id, answer.String(), w)
			}
		case !shownEnded && tu.State != ahp.TurnError && tu.State != ahp.TurnComplete && tu.State != ahp.TurnCancelled:
			t.Errorf("cycle %d: %s turn %s is %q after the restart, want it ended", cycle, k.chat, id, tu.State)
		}
		// What the next process says about it is what the next check holds.
		k.ended[id] = tu.State
	}
	// Turns stored but never shown started (committed, then killed before
	// the echo) are kept too: they join the record.
	for _, id := range ids {
		if !slices.Contains(k.order, id) {
			k.order = append(k.order, id)
			k.ended[id] = stored[id].State
		}
	}
	if k.seenDraft >= 0 {
		got := ""
		if cs.Draft != nil {
			got = cs.Draft.Text
		}
		if i := slices.Index(k.drafts, got); i < k.seenDraft {
			t.Errorf("cycle %d: %s draft %q, but %q was shown", cycle, k.chat, got, k.drafts[k.seenDraft])
		}
	}
}

// TestKillNineKeepsWhatWaitsAndTheCatalogue: a queued message, a new chat
// and a closed chat a client was shown survive a SIGKILL right after the
// echo (issue 8 §3: "a new or closed chat, and a pending message are
// committed before any client is sent the action").
func TestKillNineKeepsWhatWaitsAndTheCatalogue(t *testing.T) {
	data, work := t.TempDir(), t.TempDir()
	cmd, url := serve(t, data, work)
	c := ahptest.Dial(t, url, "")
	c.Initialize("k", ahp.RootURI)
	sess := "ahp-session:/99999999-0000-4000-8000-0000000000c1"
	c.MustCall("createSession", map[string]any{"channel": sess, "provider": "script"})
	st, _ := c.Subscribe(sess)
	var ss ahp.SessionState
	if err := json.Unmarshal(st, &ss); err != nil {
		t.Fatal(err)
	}
	def := ss.DefaultChat
	kept, closed := "ahp-chat:/99999999-0000-4000-8000-0000000000c2", "ahp-chat:/99999999-0000-4000-8000-0000000000c3"
	c.MustCall("createChat", map[string]any{"channel": sess, "chat": kept})
	c.MustCall("createChat", map[string]any{"channel": sess, "chat": closed})
	c.MustCall("disposeChat", map[string]any{"channel": closed})
	c.Subscribe(def)
	c.Dispatch(def, map[string]any{"type": "chat/turnStarted", "turnId": "t1", "startedAt": time.Now().UTC().Format(time.RFC3339Nano),
		"message": map[string]any{"text": "[hold] busy", "origin": map[string]any{"kind": "user"}}})
	c.AwaitAction(def, "chat/responsePart")
	c.AwaitEcho(c.Dispatch(def, map[string]any{"type": "chat/pendingMessageSet", "kind": "queued", "id": "q1",
		"message": map[string]any{"text": "after the busy one", "origin": map[string]any{"kind": "user"}}}))
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	_, url2 := serve(t, data, work)
	c2 := ahptest.Dial(t, url2, "")
	c2.Initialize("k2", ahp.RootURI)
	st2, _ := c2.Subscribe(sess)
	var ss2 ahp.SessionState
	if err := json.Unmarshal(st2, &ss2); err != nil {
		t.Fatal(err)
	}
	var chats []string
	for _, ch := range ss2.Chats {
		chats = append(chats, string(ch.Resource))
	}
	if !slices.Contains(chats, kept) || slices.Contains(chats, closed) {
		t.Errorf("after kill -9 the session holds %v: want %s kept and %s gone", chats, kept, closed)
	}
	cst, _ := c2.Subscribe(def)
	var cs ahp.ChatState
	if err := json.Unmarshal(cst, &cs); err != nil {
		t.Fatal(err)
	}
	queued := slices.ContainsFunc(cs.QueuedMessages, func(m ahp.PendingMessage) bool { return m.ID == "q1" })
	ran := slices.ContainsFunc(cs.Turns, func(tu ahp.Turn) bool { return tu.Message.Text == "after the busy one" })
	if !queued && !ran {
		t.Errorf("after kill -9 the queued message is gone: %s", cst)
	}
}
