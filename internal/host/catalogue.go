package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/confine"
	"github.com/ahpd/ahpd/internal/lockorder"
	"github.com/ahpd/ahpd/internal/session"
	"github.com/ahpd/ahpd/internal/store"
)

// catalogue is the sessions catalogue: every session the host holds, by
// its last summary, the index of their chats, and the actors of those that
// are open. A stored session is listed from its records at start and opens
// when something needs its actor (live). It holds no
// session state, only which actor owns what; and it says who is
// registering a session found in a backend's catalogue, so two clients
// naming one at once register it once.
type catalogue struct {
	// mu (rank lockorder.HostSessions) guards every field below. It is held
	// for the maps only: never across a store, actor or backend call, and
	// no other lock is taken inside it.
	mu        lockorder.Mutex
	sessions  map[string]*session.Session
	summaries summaryIndex
	chats     map[string]string // chat URI → session URI
	// registering are the session URIs being registered from a backend's
	// catalogue now, each with a channel closed when that registration
	// ends (register). It replaces a mutex held across the whole
	// registration (a store read, the backend's lookup, the session's
	// start): the claim is taken and given back under mu, and what runs
	// between holds no lock, so the catalogue stays readable meanwhile.
	registering map[string]chan struct{}
	// unannounced are the sessions being made, not yet told to root
	// watchers in root/sessionAdded: their summary changes are kept and
	// not told, so no client hears of a change to a session before the
	// session itself (announce).
	unannounced map[string]bool
	// load opens a stored session that is not open (sessionDesk.load),
	// set once at construction.
	load func(ctx context.Context, uri string) (*session.Session, bool)
}

func newCatalogue() *catalogue {
	return &catalogue{
		mu:          lockorder.Mutex{Rank: lockorder.HostSessions},
		sessions:    make(map[string]*session.Session),
		summaries:   newSummaryIndex(),
		chats:       make(map[string]string),
		registering: make(map[string]chan struct{}),
		unannounced: make(map[string]bool),
	}
}

// session returns the live session of uri. An actor that is ending
// (unloading, closing) is not handed out: the catalogue forgets it only
// once it ended, and whoever asked it something would be answered "session
// closed" as often as it tried (live opens the session anew instead).
func (c *catalogue) session(uri string) (*session.Session, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.liveLocked(uri)
}

// liveLocked is session's answer; c.mu must be held.
func (c *catalogue) liveLocked(uri string) (*session.Session, bool) {
	s, ok := c.sessions[uri]
	if !ok || s.Ending() {
		return nil, false
	}
	return s, true
}

// all is every live session, in no order.
func (c *catalogue) all() []*session.Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*session.Session, 0, len(c.sessions))
	for _, s := range c.sessions {
		out = append(out, s)
	}
	return out
}

// count is how many sessions the host holds, open or not.
func (c *catalogue) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.summaries.byURI)
}

// known reports whether the host holds session uri, open or not.
func (c *catalogue) known(uri string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.sessions[uri]; ok {
		return true
	}
	_, ok := c.summaries.get(uri)
	return ok
}

// live returns the actor of session uri, opening the stored session when
// it is not open; ok is false when the host holds no such session. It may
// read the store: never call it from a connection's read loop.
func (c *catalogue) live(ctx context.Context, uri string) (*session.Session, bool) {
	if s, ok := c.session(uri); ok {
		return s, true
	}
	if !c.known(uri) || c.load == nil {
		return nil, false
	}
	return c.load(ctx, uri)
}

// unloaded forgets the actor s of session uri, which ended because the
// session had nothing to do; the session stays listed (live opens it
// again).
func (c *catalogue) unloaded(uri string, s *session.Session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessions[uri] == s {
		delete(c.sessions, uri)
	}
}

// onSession runs fn on session uri's actor, opening the session when it is
// not open. When the actor unloaded between being found and fn (fn failed
// with session.ErrClosed), fn runs again on the session opened anew.
// found is false when the host holds no session uri. Never from a read
// loop: it may read the store.
func (c *catalogue) onSession(ctx context.Context, uri string, fn func(*session.Session) error) (found bool, err error) {
	for attempt := 0; ; attempt++ {
		s, ok := c.live(ctx, uri)
		if !ok {
			return false, nil
		}
		err := fn(s)
		if errors.Is(err, session.ErrClosed) && attempt < 3 {
			continue
		}
		return true, err
	}
}

// addAllStored lists many stored sessions at once (restore): sums carry
// their URIs in Resource, chats are each session's open chats.
func (c *catalogue) addAllStored(sums []ahp.SessionSummary, chats map[string][]store.ChatRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.summaries.putAll(sums)
	for _, sum := range sums {
		for _, ch := range chats[sum.Resource] {
			c.chats[ch.URI] = sum.Resource
		}
	}
}

// add lists a session that has just started: its actor, its summary and
// its chats.
func (c *catalogue) add(uri string, s *session.Session, sum ahp.SessionSummary, chats []store.ChatRecord, announced bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !announced {
		c.unannounced[uri] = true
	}
	c.sessions[uri] = s
	c.summaries.put(uri, sum)
	for _, ch := range chats {
		c.chats[ch.URI] = uri
	}
}

// remove forgets a session and its chats; ok is false when the host did
// not hold it, s is nil when it was not open. The chats are those the
// index held for it.
func (c *catalogue) remove(uri string) (s *session.Session, chats []string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, open := c.sessions[uri]
	_, stored := c.summaries.get(uri)
	ok = open || stored
	delete(c.sessions, uri)
	c.summaries.drop(uri)
	for ch, su := range c.chats {
		if su == uri {
			chats = append(chats, ch)
			delete(c.chats, ch)
		}
	}
	return s, chats, ok
}

// putSummary keeps a session's summary.
func (c *catalogue) putSummary(uri string, sum ahp.SessionSummary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.summaries.put(uri, sum)
}

// announced marks uri's session as told to root watchers, and returns the
// summary it holds for it now.
func (c *catalogue) announced(uri string) (ahp.SessionSummary, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.unannounced, uri)
	return c.summaries.get(uri)
}

// updateSummary replaces the summary of a session the catalogue holds and
// returns the one before; ok is false (and nothing is kept) for any other.
// A summary a session's actor sent while it was being disposed must not
// list it again.
func (c *catalogue) updateSummary(uri string, sum ahp.SessionSummary) (old ahp.SessionSummary, ok, told bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok = c.summaries.get(uri)
	if ok {
		c.summaries.put(uri, sum)
	}
	return old, ok, !c.unannounced[uri]
}

// summary is a session's last summary.
func (c *catalogue) summary(uri string) (ahp.SessionSummary, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.summaries.get(uri)
}

// page is up to limit summaries from offset in listSessions' order, and
// whether more follow.
func (c *catalogue) page(offset, limit int) ([]ahp.SessionSummary, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.summaries.page(offset, limit)
}

// defaultChat is the chat a session's last summary names its default ("" when
// none yet).
func (c *catalogue) defaultChat(session string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	sum, _ := c.summaries.get(session)
	return sum.DefaultChat
}

// workingIn are the sessions whose working directories hold dir, of those
// keep keeps. The directories are read under mu and resolved (a
// filesystem walk of their links) after it.
func (c *catalogue) workingIn(dir string, keep func(uri string) bool) []string {
	dirs := map[string][]string{}
	c.mu.Lock()
	c.summaries.all(func(uri string, sum ahp.SessionSummary) {
		if keep(uri) {
			dirs[uri] = slices.Clone(sum.WorkingDirectories)
		}
	})
	c.mu.Unlock()
	var out []string
	for uri, wd := range dirs {
		paths, err := ahp.LocalPaths(wd)
		if err != nil {
			continue
		}
		if _, err := confine.Resolve(dir, paths); err == nil {
			out = append(out, uri)
		}
	}
	return out
}

// indexChat adds (or, added false, removes) a chat of session uri.
func (c *catalogue) indexChat(chat, uri string, added bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if added {
		c.chats[chat] = uri
	} else {
		delete(c.chats, chat)
	}
}

// chatSession is the session the index says chat belongs to: its URI, and
// its actor while it is live; ok is false when no session here holds chat.
func (c *catalogue) chatSession(chat string) (uri string, s *session.Session, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	uri, ok = c.chats[chat]
	if ok {
		s, _ = c.liveLocked(uri)
	}
	return uri, s, ok
}

// register claims the registration of session uri from a backend's
// catalogue. When uri is live already it returns its session. When another
// goroutine is registering it, register waits for that one to end (or for
// ctx) and looks again. Otherwise the claim is the caller's: it calls done
// once its registration has ended, whatever came of it.
func (c *catalogue) register(ctx context.Context, uri string) (live *session.Session, done func(), err error) {
	for {
		c.mu.Lock()
		if s, ok := c.liveLocked(uri); ok {
			c.mu.Unlock()
			return s, nil, nil
		}
		wait, busy := c.registering[uri]
		if !busy {
			ended := make(chan struct{})
			c.registering[uri] = ended
			c.mu.Unlock()
			return nil, func() {
				c.mu.Lock()
				delete(c.registering, uri)
				c.mu.Unlock()
				close(ended)
			}, nil
		}
		c.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// orCatalogue returns the live session of uri or, when the host has
// never registered it, one a backend's catalogue holds under the id the
// URI carries (C-FIRST-08, 09): it is registered now, with its first chat
// on the backend's conversation, and read back from its transcript when
// the chat opens.
func (d *sessionDesk) orCatalogue(ctx context.Context, uri string) (*session.Session, bool) {
	if s, ok := d.cat.live(ctx, uri); ok {
		return s, true
	}
	id, ok := ahp.SessionID(uri)
	if !ok {
		return nil, false
	}
	s, done, err := d.cat.register(ctx, uri)
	if err != nil {
		return nil, false
	}
	if s != nil {
		return s, true
	}
	defer done()
	if _, found, err := d.env.Store.Session(ctx, uri); err != nil || found {
		// A stored session the catalogue holds was opened by live; one it
		// does not hold is being disposed.
		return nil, false
	}
	providers := d.agents.Providers()
	if p := ahp.SessionProviderScheme(uri); p != "" {
		providers = []string{p}
	}
	for _, p := range providers {
		a, ok := d.agents.Get(p)
		if !ok {
			continue
		}
		cat, ok := a.(agent.Catalogue)
		if !ok {
			continue
		}
		info, found, err := cat.FindConversation(ctx, id)
		if err != nil {
			d.log.Warn("catalogue lookup", "provider", p, "id", id, "err", err)
			continue
		}
		if !found {
			continue
		}
		s, err := d.registerFromCatalogue(ctx, uri, p, info)
		if err != nil {
			d.log.Warn("register a catalogue session", "session", uri, "err", err)
			return nil, false
		}
		return s, true
	}
	return nil, false
}

func (d *sessionDesk) registerFromCatalogue(ctx context.Context, uri, provider string, info agent.ConversationInfo) (*session.Session, error) {
	dir := info.Directory
	if fi, err := os.Stat(dir); dir == "" || err != nil || !fi.IsDir() {
		if len(d.paths) == 0 {
			return nil, fmt.Errorf("no directory for %s", uri)
		}
		dir = d.paths[0]
	}
	title := chat.CleanTitle(info.Title)
	if title == "" {
		title = chat.DefaultTitle
	}
	rec := store.SessionRecord{
		URI: uri, Provider: provider, Title: title, CreatedAt: info.Created, ModifiedAt: info.Modified,
		WorkingDirectories: []string{ahp.FileURI(dir)},
	}
	if err := d.env.Store.PutSession(ctx, rec); err != nil {
		return nil, err
	}
	s, err := d.open(ctx, rec, false)
	if err != nil {
		return nil, err
	}
	first := store.ChatRecord{
		URI: firstChatURI(uri), Title: title, ConversationID: info.ID,
		CreatedAt: info.Created, ModifiedAt: info.Modified,
		// The backend holds this conversation: the chat resumes it.
		Meta: chat.RecordMeta{BackendStarted: true}.Raw(),
	}
	if err := s.AddChat(ctx, first); err != nil {
		return nil, err
	}
	sum, err := s.Summary(ctx)
	if err != nil {
		return nil, err
	}
	d.announce(uri, sum)
	d.log.Info("registered a session from the catalogue", "session", uri, "provider", provider, "conversation", info.ID)
	return s, nil
}

// load opens session uri, which the catalogue lists from its records and
// which is not open (catalogue.live): once, however many ask at a time
// (the catalogue's registration claim).
func (d *sessionDesk) load(ctx context.Context, uri string) (*session.Session, bool) {
	s, done, err := d.cat.register(ctx, uri)
	if err != nil {
		return nil, false
	}
	if s != nil {
		return s, true
	}
	defer done()
	rec, found, err := d.env.Store.Session(ctx, uri)
	if err != nil {
		d.log.Error("open a stored session", "session", uri, "err", err)
		return nil, false
	}
	if !found || !d.cat.known(uri) {
		return nil, false // disposed meanwhile
	}
	s, err = d.open(ctx, rec, true)
	if err != nil {
		d.log.Error("open a stored session", "session", uri, "err", err)
		return nil, false
	}
	return s, true
}

// restore lists every stored session from its records, without opening
// it, in two queries whatever the history; sessions in git open at once
// (their summary's changes come from git), and so does every session with
// a turn left running (recoverRunningTurns). Everything else opens when
// something needs it.
func (d *sessionDesk) restore(ctx context.Context) error {
	recs, err := d.env.Store.Sessions(ctx)
	if err != nil {
		return fmt.Errorf("restore sessions: %w", err)
	}
	chats, err := d.env.Store.OpenChatsBySession(ctx)
	if err != nil {
		return fmt.Errorf("restore sessions: %w", err)
	}
	inGit, err := d.env.Store.Git().Sessions(ctx)
	if err != nil {
		return fmt.Errorf("restore sessions: %w", err)
	}
	eager := make(map[string]bool, len(inGit))
	for _, uri := range inGit {
		eager[uri] = true
	}
	stored := make([]ahp.SessionSummary, 0, len(recs))
	for _, r := range recs {
		if eager[r.URI] {
			if _, err := d.open(ctx, r, true); err != nil {
				d.log.Error("restore session", "session", r.URI, "err", err)
			}
			continue
		}
		sum := session.Summarize(r, chats[r.URI])
		sum.Resource = r.URI
		stored = append(stored, sum)
	}
	d.cat.addAllStored(stored, chats)
	return nil
}
