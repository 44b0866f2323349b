package host

import (
	"context"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/env"
	"github.com/ahpd/ahpd/internal/store"
)

// MethodSearch finds a word in every session's titles and turn text (ahpd
// search, the console's search box): the store's FTS5 index, which the
// store brings up to date with every commit before it searches
// (store/search.go, store/searchindex.go).
// It needs session:list, as listSessions does; hits in turn text need
// chat:turns as well, as reading the chat does, and without it only
// titles are searched.
const MethodSearch = "x-ahpd/search"

// searchQueryMax bounds a query's length in bytes.
const searchQueryMax = 1024

// SearchParams are x-ahpd/search's params.
type SearchParams struct {
	Channel string `json:"channel"`
	// Query is FTS5 query syntax: words (all must occur), "a phrase",
	// prefix*, OR, NOT, NEAR(a b).
	Query string `json:"query"`
	// Limit bounds the hits: 1..100, 20 when absent.
	Limit *int `json:"limit,omitempty"`
}

// SearchHit is one place the query matched: a turn's text, a chat's
// title or a session's title.
type SearchHit struct {
	Kind    string `json:"kind"` // "turn", "chatTitle" or "sessionTitle"
	Session string `json:"session"`
	Chat    string `json:"chat,omitempty"`
	TurnID  string `json:"turnId,omitempty"`
	// Title is the chat's title (the session's for a sessionTitle hit).
	Title        string `json:"title"`
	SessionTitle string `json:"sessionTitle"`
	// Snippet is the text around the match; Matches mark the matched
	// words in it, [start, end) in UTF-16 code units.
	Snippet string   `json:"snippet"`
	Matches [][2]int `json:"matches"`
}

// SearchResult is x-ahpd/search's answer, best hit first.
type SearchResult struct {
	Items []SearchHit `json:"items"`
}

// searchDesk answers x-ahpd/search on the caller's connection lane.
type searchDesk struct {
	env *env.Env
	cat *catalogue
}

// request answers x-ahpd/search; handled is false for any other method.
func (d *searchDesk) request(ctx context.Context, cl *client, method string, params json.RawMessage) (any, bool, error) {
	if method != MethodSearch {
		return nil, false, nil
	}
	res, err := d.search(ctx, cl, params)
	return res, true, err
}

func (d *searchDesk) search(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
	var p SearchParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := requireChannel(p.Channel, true); err != nil {
		return nil, err
	}
	if err := needGrant(cl, MethodSearch, auth.SessionList); err != nil {
		return nil, err
	}
	switch {
	case p.Query == "":
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.query: required")
	case len(p.Query) > searchQueryMax || !utf8.ValidString(p.Query):
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.query: at most %d bytes of UTF-8", searchQueryMax)
	}
	limit := 20
	if p.Limit != nil {
		if *p.Limit < 1 || *p.Limit > store.SearchMaxLimit {
			return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.limit: must be 1..%d, not %d", store.SearchMaxLimit, *p.Limit)
		}
		limit = *p.Limit
	}
	hits, err := d.env.Store.Search(ctx, store.SearchQuery{
		Text: p.Query, Limit: limit,
		Turns:   cl.principal.Can(auth.ChatTurns),
		Visible: d.cat.known, // the sessions listSessions lists
	})
	if errors.Is(err, store.ErrBadQuery) {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.query: %v", err)
	}
	if err != nil {
		return nil, err
	}
	res := SearchResult{Items: make([]SearchHit, 0, len(hits))}
	for _, h := range hits {
		matches := h.Matches
		if matches == nil {
			matches = [][2]int{}
		}
		res.Items = append(res.Items, SearchHit{Kind: h.Kind, Session: h.Session, Chat: h.Chat, TurnID: h.Turn,
			Title: h.Title, SessionTitle: h.SessionTitle, Snippet: h.Snippet, Matches: matches})
	}
	return res, nil
}
