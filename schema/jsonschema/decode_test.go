package jsonschema

import (
	"reflect"
	"testing"
)

// FuzzDecode: what the decoder reads, encoding/json reads the same; it
// refuses more (invalid UTF-8, lone surrogates), never less.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e3,"x\u00e9\n",true,false,null],"b":{},"a":0}`, `"\ud83d\ude00"`, `[]`, `1 2`, "\"\xff\"", `{"x":` + "\n", `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		var d decoder
		got, err := d.decode(text)
		if err != nil {
			return
		}
		want, err := unmarshal(text)
		if err != nil {
			t.Fatalf("decoded %q, which encoding/json refuses: %v", text, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: decoded %#v, encoding/json %#v", text, got, want)
		}
	})
}

func TestDecodeRefuses(t *testing.T) {
	for _, s := range []string{``, ` `, `{`, `1 2`, "\"\xff\"", `"\ud800"`, `{"a" 1}`, `[1,]`} {
		var d decoder
		if v, err := d.decode([]byte(s)); err == nil {
			t.Errorf("%q decoded as %#v", s, v)
		}
	}
}
