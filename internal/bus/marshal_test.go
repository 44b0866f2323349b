package bus

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// TestMarshalActionIsJSONMarshal: the envelope's action bytes are
// json.Marshal's for every known action type, filled with text that
// json.Marshal escapes (HTML, U+2028) and raw JSON it compacts, and for an
// unknown action carrying a client's spaced bytes.
func TestMarshalActionIsJSONMarshal(t *testing.T) {
	for _, typ := range ahp.KnownActionTypes() {
		zero, err := ahp.DecodeAction(json.RawMessage(`{"type":"` + typ + `"}`))
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		v := reflect.New(reflect.TypeOf(zero)).Elem()
		fill(v, 0)
		a := v.Interface().(ahp.Action)
		want, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("%s: json.Marshal: %v", typ, err)
		}
		got, err := marshalAction(a)
		if err != nil {
			t.Fatalf("%s: marshalAction: %v", typ, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", typ, got, want)
		}
	}
	unknown := ahp.UnknownAction{Type: "x/future", Raw: json.RawMessage(`{ "type" : "x/future", "text": "<b>" }`)}
	want, _ := json.Marshal(unknown)
	got, err := marshalAction(unknown)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("unknown action: got %s (%v), want %s", got, err, want)
	}
}

// fill sets every exported field v holds, to depth 4.
func fill(v reflect.Value, depth int) {
	if depth > 4 || !v.CanSet() {
		return
	}
	if v.Type() == reflect.TypeOf(json.RawMessage(nil)) {
		v.SetBytes([]byte(`{ "k" : [1, 2], "h": "<&>" }`))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("a<b>&c\u2028d é \"q\"")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return
		}
		m := reflect.MakeMap(v.Type())
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, depth+1)
		m.SetMapIndex(reflect.ValueOf("k<>").Convert(v.Type().Key()), e)
		v.Set(m)
	case reflect.Interface:
		if v.NumMethod() == 0 {
			v.Set(reflect.ValueOf("x<y>"))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	}
}
