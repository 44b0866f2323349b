package cofold

import (
	"encoding/json"
	"strings"
	"testing"
)

func roles(msgs []Message) string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Role+":"+m.Text)
	}
	return strings.Join(out, " ")
}

// TestContextFor: the model is sent the latest summary and what it kept,
// then everything after it; calls a stop left without results are answered
// as cancelled.
func TestContextFor(t *testing.T) {
	u := func(s string) Message { return Message{Role: "user", Text: s} }
	a := func(s string) Message { return Message{Role: "assistant", Text: s} }
	call := Message{Role: "assistant", Calls: []Call{{ID: "c1", Name: "bash", Input: "{}"}}}
	cases := []struct {
		name string
		msgs []Message
		want string
	}{
		{"plain", []Message{u("1"), a("2")}, "user:1 assistant:2"},
		{"dangling call", []Message{u("1"), call, u("2")}, "user:1 assistant: tool: user:2"},
		{"summary keeps one", []Message{u("1"), a("2"), u("3"), {Role: "summary", Text: "S", Keep: 1}, a("4")},
			"user:Summary of the earlier conversation:\n\nS user:3 assistant:4"},
		{"latest summary wins", []Message{u("1"), {Role: "summary", Text: "old"}, u("2"), {Role: "summary", Text: "new", Keep: 1}, a("3")},
			"user:Summary of the earlier conversation:\n\nnew user:2 assistant:3"},
	}
	for _, c := range cases {
		if got := roles(contextFor(c.msgs)); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestKeepFrom: compaction keeps the latest prompt and what follows it.
func TestKeepFrom(t *testing.T) {
	cases := []struct {
		roles string
		want  int
	}{
		{"user", 0},
		{"user assistant", 0},
		{"user assistant user", 2},
		{"user assistant tool assistant user assistant tool", 4},
	}
	for _, c := range cases {
		var msgs []Message
		for _, r := range strings.Fields(c.roles) {
			msgs = append(msgs, Message{Role: r})
		}
		if got := keepFrom(msgs); got != c.want {
			t.Errorf("%s: %d, want %d", c.roles, got, c.want)
		}
	}
}

// TestResolveModel: a turn's model, else the default, else the first
// configured; none configured names where to configure one.
func TestResolveModel(t *testing.T) {
	raw := json.RawMessage(`{"providers":[
		{"name":"a","api":"openai","baseUrl":"http://127.0.0.1:1","models":[{"id":"m1","contextWindow":1000,"maxTokens":100},{"id":"m2"}]},
		{"name":"b","api":"anthropic","baseUrl":"http://127.0.0.1:2","models":[{"id":"m3"}]}],
		"defaultModel":"b/m3"}`)
	s, err := ParseSettings(raw)
	if err != nil {
		t.Fatal(err)
	}
	ag := New(s)
	cases := []struct{ want, prov, model string }{
		{"a/m1", "a", "m1"},
		{"m2", "a", "m2"},
		{"", "b", "m3"},
		{"zz/none", "b", "m3"},
	}
	for _, c := range cases {
		tg, err := ag.resolve(c.want)
		if err != nil || tg.provider.Name != c.prov || tg.model != c.model {
			t.Errorf("resolve(%q) = %s/%s, %v; want %s/%s", c.want, tg.provider.Name, tg.model, err, c.prov, c.model)
		}
	}
	if tg, _ := ag.resolve("a/m1"); tg.window != 1000 || tg.maxOut != 100 {
		t.Errorf("a/m1 limits %d/%d", tg.window, tg.maxOut)
	}
	if _, err := New(Settings{}).resolve(""); err == nil || !strings.Contains(err.Error(), `"providers"`) {
		t.Errorf("no provider: %v", err)
	}
}

// TestResumableErrors: what may succeed later is offered as resumable.
func TestResumableErrors(t *testing.T) {
	cases := []struct {
		err  modelError
		want bool
	}{
		{modelError{Status: 500}, true},
		{modelError{Status: 529, Type: "overloaded_error"}, true},
		{modelError{Status: 503, Type: "overloaded_error"}, true},
		{modelError{Status: 429}, true},
		{modelError{Status: 0}, true}, // a dropped stream
		{modelError{Status: 400, Type: "invalid_request_error"}, false},
		{modelError{Status: 401}, false},
	}
	for _, c := range cases {
		if got := c.err.resumable(); got != c.want {
			t.Errorf("%+v: resumable %v", c.err, got)
		}
	}
	for _, p := range []string{"", "-1", "x"} {
		if _, err := parsePoint(p); err == nil {
			t.Errorf("point %q accepted", p)
		}
	}
}
