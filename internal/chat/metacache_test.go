package chat

import (
	"encoding/json"
	"testing"
)

// TestMetaCacheParsesEachNewMeta: the cache answers from its parse while
// the record keeps the same Meta, and parses again once the record holds
// a new one, even one of the same length.
func TestMetaCacheParsesEachNewMeta(t *testing.T) {
	var mc metaCache
	first := RecordMeta{FirstPromptContext: "aaaa"}.Raw()
	if got := mc.of(first); got.FirstPromptContext != "aaaa" {
		t.Fatalf("first parse = %+v", got)
	}
	// The same slice: no parse (the cached value answers, even if the
	// bytes were not read again).
	mc.meta.FirstPromptContext = "cached"
	if got := mc.of(first); got.FirstPromptContext != "cached" {
		t.Fatalf("same Meta parsed again: %+v", got)
	}
	// A new Meta of the same length and other content.
	second := RecordMeta{FirstPromptContext: "bbbb"}.Raw()
	if len(second) != len(first) {
		t.Fatalf("test metas differ in length: %d, %d", len(first), len(second))
	}
	if got := mc.of(second); got.FirstPromptContext != "bbbb" {
		t.Fatalf("new Meta not parsed: %+v", got)
	}
	// No Meta at all.
	if got := mc.of(nil); got.FirstPromptContext != "" || got.BackendStarted {
		t.Fatalf("empty Meta = %+v", got)
	}
	if got := mc.of(json.RawMessage(`{"backendStarted":true}`)); !got.BackendStarted {
		t.Fatalf("after an empty Meta: %+v", got)
	}
}
