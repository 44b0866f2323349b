package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/ahpd/ahpd/internal/agent/acp"
	"github.com/ahpd/ahpd/internal/agent/claude"
	"github.com/ahpd/ahpd/internal/agent/cofold"
	"github.com/ahpd/ahpd/internal/agent/pi"
)

// The configuration is layered defaults → file → AHPD_* environment →
// flags. Each layer is a JSON tree checked on its own against Config's
// shape (so an error names the layer it came from), then merged into the
// one below it key by key; the merged tree is decoded once into Config.
// No field is copied by hand, so a key the file sets survives whatever the
// flags leave alone.

// agentSettings is the shape of each backend's "agents.<name>" settings,
// so an unknown key anywhere under "agents" is refused with its full path
// before any backend decodes its part. A new backend adds its row here.
var agentSettings = map[string]reflect.Type{
	claude.Provider: reflect.TypeFor[claude.Options](),
	pi.Provider:     reflect.TypeFor[pi.Options](),
	cofold.Provider: reflect.TypeFor[cofold.Settings](),
	"acp":           reflect.TypeFor[[]acp.Options](),
}

// KeyError is a configuration value the daemon refuses: the key's full
// path, where the value came from, and why.
type KeyError struct {
	Key    string
	Source string
	Reason string
}

func (e *KeyError) Error() string {
	if e.Source == "" {
		return fmt.Sprintf("config key %s: %s", e.Key, e.Reason)
	}
	return fmt.Sprintf("config key %s (from %s): %s", e.Key, e.Source, e.Reason)
}

// Unwrap makes every KeyError an ErrUsage (exit 2).
func (e *KeyError) Unwrap() error { return ErrUsage }

func keyErr(key, format string, args ...any) error {
	return &KeyError{Key: key, Reason: fmt.Sprintf(format, args...)}
}

// Setting is one value given outside the file: an environment variable or
// a flag, already bound to its config key.
type Setting struct {
	// Key is the top-level config key ("port").
	Key string
	// Source names where the value came from ("env AHPD_PORT", "flag --port").
	Source string
	// Values are the raw strings: one for a scalar; a list's items (a flag
	// given several times, or one comma-separated variable).
	Values []string
}

// LoadInput is what Load layers.
type LoadInput struct {
	// File is the config file; FileOptional makes a missing one no error
	// (the default file).
	File         string
	FileOptional bool
	// Env is the environment (os.Environ()) read for AHPD_* keys.
	Env []string
	// Flags are the flags the user set, in order.
	Flags []Setting
}

// Loaded is the resolved configuration and, for every leaf key path, the
// layer its value came from ("default", "file PATH", "env AHPD_X",
// "flag --x").
type Loaded struct {
	Config  Config
	Sources map[string]string
	// File is the config file read, "" when none was.
	File string
}

// Load layers the configuration and validates it. It has no side effects:
// a token file that does not exist yet is not created (Start does that).
// Every error wraps ErrUsage and names the key, its source and the reason.
func Load(in LoadInput) (Loaded, error) {
	out := Loaded{Sources: map[string]string{}}
	tree := map[string]any{}
	def, err := toTree(Defaults())
	if err != nil {
		return out, err
	}
	mergeLayer(tree, def, "", "default", out.Sources)

	if in.File != "" {
		layer, err := readFileLayer(in.File, in.FileOptional)
		if err != nil {
			return out, err
		}
		if layer != nil {
			out.File = in.File
			mergeLayer(tree, layer, "", "file "+in.File, out.Sources)
		}
	}
	for _, set := range [][]Setting{EnvSettings(in.Env), in.Flags} {
		for _, s := range set {
			v, err := settingValue(s)
			if err != nil {
				return out, err
			}
			mergeLayer(tree, map[string]any{s.Key: v}, "", s.Source, out.Sources)
		}
	}
	raw, err := json.Marshal(tree)
	if err != nil {
		return out, fmt.Errorf("config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out.Config); err != nil {
		return out, fmt.Errorf("%w: config: %v", ErrUsage, err)
	}
	if err := out.Config.Validate(); err != nil {
		return out, out.attribute(err)
	}
	return out, nil
}

// attribute adds the source of a KeyError's key (or of the nearest key
// above it that has one).
func (l Loaded) attribute(err error) error {
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Source != "" {
		return err
	}
	ke.Source = l.SourceOf(ke.Key)
	return ke
}

// SourceOf is the layer a key's value came from: the key's own, or the
// one of the first leaf under it, or of the nearest key above it.
func (l Loaded) SourceOf(key string) string {
	if s, ok := l.Sources[key]; ok {
		return s
	}
	keys := make([]string, 0, len(l.Sources))
	for k := range l.Sources {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasPrefix(k, key+".") || strings.HasPrefix(k, key+"[") {
			return l.Sources[k]
		}
	}
	for k := key; k != ""; {
		i := strings.LastIndexAny(k, ".[")
		if i < 0 {
			break
		}
		k = k[:i]
		if s, ok := l.Sources[k]; ok {
			return s
		}
	}
	return "default"
}

// readFileLayer reads and checks the JSON config file; nil when an
// optional file is missing.
func readFileLayer(path string, optional bool) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if optional && errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: read config %s: %v", ErrUsage, path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: config %s: not JSON: %v", ErrUsage, path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: config %s: text after the JSON object", ErrUsage, path)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: config %s: want a JSON object", ErrUsage, path)
	}
	if err := checkShape(obj, reflect.TypeFor[Config](), ""); err != nil {
		var ke *KeyError
		if errors.As(err, &ke) {
			ke.Source = "file " + path
		}
		return nil, err
	}
	return obj, nil
}

// checkShape walks a decoded JSON value against the Go type it will be
// decoded into: an unknown key or a value of the wrong kind is a KeyError
// naming its full path ("agents.claude.stopEnds", "tokens[1].grants").
func checkShape(v any, t reflect.Type, path string) error {
	if v == nil {
		return nil
	}
	if path == "agents" && t == reflect.TypeFor[map[string]json.RawMessage]() {
		return checkAgents(v)
	}
	if t == reflect.TypeFor[json.RawMessage]() {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return keyErr(orTop(path), "want an object, got %s", jsonKind(v))
		}
		fields := jsonFields(t)
		for k, sub := range obj {
			ft, ok := fields[k]
			if !ok {
				return keyErr(join(path, k), "unknown key (known: %s)", strings.Join(sortedKeys(fields), ", "))
			}
			if err := checkShape(sub, ft, join(path, k)); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return keyErr(path, "want an object, got %s", jsonKind(v))
		}
		for k, sub := range obj {
			if err := checkShape(sub, t.Elem(), join(path, k)); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			return keyErr(path, "want a list, got %s", jsonKind(v))
		}
		for i, sub := range arr {
			if err := checkShape(sub, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			return keyErr(path, "want a string, got %s", jsonKind(v))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return keyErr(path, "want true or false, got %s", jsonKind(v))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return keyErr(path, "want a whole number, got %s", jsonKind(v))
		}
		if _, err := strconv.ParseInt(n.String(), 10, t.Bits()); err != nil {
			return keyErr(path, "want a whole number of %d bits, got %s", t.Bits(), n)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			return keyErr(path, "want a whole number, got %s", jsonKind(v))
		}
		if _, err := strconv.ParseUint(n.String(), 10, t.Bits()); err != nil {
			return keyErr(path, "want a whole number 0 or more, got %s", n)
		}
	case reflect.Float32, reflect.Float64:
		if _, ok := v.(json.Number); !ok {
			return keyErr(path, "want a number, got %s", jsonKind(v))
		}
	}
	return nil
}

// checkAgents checks "agents": each name must be a known backend, and its
// settings are walked against that backend's type.
func checkAgents(v any) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return keyErr("agents", "want an object keyed by agent, got %s", jsonKind(v))
	}
	for name, sub := range obj {
		t, ok := agentSettings[name]
		if !ok {
			return keyErr("agents."+name, "unknown agent (known: %s)", strings.Join(sortedKeys(agentSettings), ", "))
		}
		if err := checkShape(sub, t, "agents."+name); err != nil {
			return err
		}
	}
	return nil
}

// jsonFields maps a struct's JSON names to field types, flattening
// embedded structs the way encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orTop(path string) string {
	if path == "" {
		return "(top level)"
	}
	return path
}

func jsonKind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", x)
	case bool:
		return fmt.Sprintf("%v", x)
	case json.Number:
		return "the number " + x.String()
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// toTree is v as a JSON tree (numbers as json.Number).
func toTree(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return out, nil
}

// mergeLayer lays layer over tree: objects merge key by key, anything else
// (a scalar, a list) replaces what was there. Each leaf it sets records
// source, and what it replaced loses its record.
func mergeLayer(tree, layer map[string]any, path, source string, sources map[string]string) {
	for k, v := range layer {
		p := join(path, k)
		sub, isObj := v.(map[string]any)
		old, oldObj := tree[k].(map[string]any)
		if isObj && oldObj {
			mergeLayer(old, sub, p, source, sources)
			continue
		}
		forget(sources, p)
		if isObj {
			fresh := map[string]any{}
			tree[k] = fresh
			mergeLayer(fresh, sub, p, source, sources)
			if len(sub) == 0 {
				sources[p] = source
			}
			continue
		}
		tree[k] = v
		sources[p] = source
	}
}

func forget(sources map[string]string, p string) {
	for k := range sources {
		if k == p || strings.HasPrefix(k, p+".") || strings.HasPrefix(k, p+"[") {
			delete(sources, k)
		}
	}
}

// EnvName is the environment variable of a top-level key: AHPD_ and the
// key in upper snake case (dataDir → AHPD_DATA_DIR).
func EnvName(key string) string {
	var b strings.Builder
	b.WriteString("AHPD_")
	for i, r := range key {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// EnvSettings picks the AHPD_* variables that name a config key out of
// env. A list key takes comma-separated items; an object or a list of
// objects (tokens, agents) takes JSON.
func EnvSettings(env []string) []Setting {
	byName := map[string]string{}
	for _, k := range sortedKeys(jsonFields(reflect.TypeFor[Config]())) {
		byName[EnvName(k)] = k
	}
	var out []Setting
	for _, kv := range env {
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		key, ok := byName[name]
		if !ok {
			continue
		}
		vals := []string{val}
		if t := jsonFields(reflect.TypeFor[Config]())[key]; t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String {
			vals = nil
			for _, item := range strings.Split(val, ",") {
				if item = strings.TrimSpace(item); item != "" {
					vals = append(vals, item)
				}
			}
		}
		out = append(out, Setting{Key: key, Source: "env " + name, Values: vals})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// ConfigKeys are the top-level keys of the configuration file, sorted.
func ConfigKeys() []string { return sortedKeys(jsonFields(reflect.TypeFor[Config]())) }

// settingValue parses a raw flag or environment value by the kind of its
// key, and checks it as the file's values are checked.
func settingValue(s Setting) (any, error) {
	t, ok := jsonFields(reflect.TypeFor[Config]())[s.Key]
	if !ok {
		return nil, &KeyError{Key: s.Key, Source: s.Source, Reason: "unknown key"}
	}
	bad := func(format string, args ...any) error {
		return &KeyError{Key: s.Key, Source: s.Source, Reason: fmt.Sprintf(format, args...)}
	}
	one := ""
	if len(s.Values) > 0 {
		one = s.Values[len(s.Values)-1]
	}
	var v any
	switch {
	case t.Kind() == reflect.String:
		v = one
	case t.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(one)
		if err != nil {
			return nil, bad("%q is not true or false", one)
		}
		v = b
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		if _, err := strconv.ParseInt(one, 10, t.Bits()); err != nil {
			return nil, bad("%q is not a whole number", one)
		}
		v = json.Number(one)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		items := make([]any, len(s.Values))
		for i, x := range s.Values {
			items[i] = x
		}
		v = items
	default:
		// Objects and lists of objects (tokens, agents) are given as JSON.
		dec := json.NewDecoder(strings.NewReader(one))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, bad("want JSON: %v", err)
		}
	}
	if err := checkShape(map[string]any{s.Key: v}, reflect.TypeFor[Config](), ""); err != nil {
		var ke *KeyError
		if errors.As(err, &ke) {
			ke.Source = s.Source
		}
		return nil, err
	}
	return v, nil
}

// Redacted is the configuration as config show prints it: secrets
// (connection tokens, API keys) replaced by "<set>".
func Redacted(c Config) Config {
	if c.ConnectionToken != "" {
		c.ConnectionToken = "<set>"
	}
	toks := make([]TokenConfig, len(c.Tokens))
	for i, t := range c.Tokens {
		t.Token = "<set>"
		toks[i] = t
	}
	c.Tokens = toks
	if len(c.Agents) > 0 {
		agents := make(map[string]json.RawMessage, len(c.Agents))
		for k, v := range c.Agents {
			agents[k] = redactKeys(v)
		}
		c.Agents = agents
	}
	return c
}

// redactKeys replaces every "apiKey" value in an agent's settings.
func redactKeys(raw json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case map[string]any:
			for k, sub := range t {
				if strings.EqualFold(k, "apiKey") {
					if s, ok := sub.(string); ok && s != "" {
						t[k] = "<set>"
					}
					continue
				}
				t[k] = walk(sub)
			}
		case []any:
			for i := range t {
				t[i] = walk(t[i])
			}
		}
		return x
	}
	out, err := json.Marshal(walk(v))
	if err != nil {
		return raw
	}
	return out
}
