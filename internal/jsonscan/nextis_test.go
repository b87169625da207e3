package jsonscan

import (
	"fmt"
	"strings"
	"testing"
)

// checkNextIs walks doc twice, once with Next only and once trying
// NextIs(name) before every Next, and requires the same tokens, offsets,
// depths and errors; NextIs must match exactly the Key tokens equal to
// name that are written without escapes.
func checkNextIs(t *testing.T, doc []byte, name string) {
	t.Helper()
	n := NewMemberName(name)
	var plain, fast Scanner
	plain.Reset(doc)
	fast.Reset(doc)
	for range len(doc) + 2 {
		k, err := plain.Next()
		want := fmt.Sprintf("%v %q off %d depth %d err %v", k, plain.Bytes(), plain.Offset(), plain.Depth(), err)
		matched := fast.NextIs(&n)
		fk, ferr := Key, error(nil)
		if !matched {
			fk, ferr = fast.Next()
		}
		got := fmt.Sprintf("%v %q off %d depth %d err %v", fk, fast.Bytes(), fast.Offset(), fast.Depth(), ferr)
		if got != want {
			t.Fatalf("%q, NextIs(%q) = %v: got %s, want %s", doc, name, matched, got, want)
		}
		raw := ""
		if k == Key {
			raw = string(doc[plain.Offset():])
		}
		shouldMatch := k == Key && string(plain.Bytes()) == name && strings.HasPrefix(raw, `"`+name+`"`) && n.quoted != ""
		if matched != shouldMatch {
			t.Fatalf("%q: NextIs(%q) = %v before %s", doc, name, matched, want)
		}
		if err != nil {
			return
		}
	}
}

func TestNextIs(t *testing.T) {
	docs := []string{
		`{"a":1,"bb":2,"a":3}`,
		` { "a" : 1 , "bb"	:	2 } `,
		`{"a":{"a":[{"a":"a"}]},"bb":["a","bb"]}`,
		`{"\u0061":1,"a\"":2,"a\\":3}`,
		`["a",{"a":1}]`,
		`{"a"`, `{"a" 1}`, `{"a":`, `{"a":1,}`, `{"a":1 "bb":2}`, `{"a":1]`, `{"ab":1}`, `{"":1}`,
		`{"é":1,"\u00e9":2}`,
		"{\"a\xff\":1}",
		`"a"`, `{}`, ``,
		`{"abcdefghijklm":1,"abcdefghijklmn":2,"abcdefghijklmno":3,"abcdefghijklmX":4}`,
		`{"abcdefghijklm" :1, "abcdefghijklmn":{"abcdefghijklm":[0,1,2,3,4,5,6,7,8,9]}}`,
		`{"abcdefghijklm"1}`, `{"abcdefghijklm":`, `{"abcdefghijklmn":`,
		// Compact members with room for a word load after the comma.
		`{"a":1,"a":2,"bb":3,"a":4,"bb":5,"zzzzzzzzzzzzzzzzzzzz":6}`,
		`[1,"a":2,"bb":3,"a":4,"bb":5,"zzzzzzzzzzzzzzzzzzzz",6]`,
		`{"a":[1,"a":2],"bb":3,"zzzzzzzzzzzzzzzzzzzz":4}`,
		`{"a":{"bb":1,"a":2,"a"}, "zzzzzzzzzzzzzzzzzzzz":3}`,
		`{"a":1,"abcdefghijklmn":2,"abcdefghijklm":3,"zzzzzzzzzzzzzzzz":4}`,
	}
	names := []string{"a", "bb", "", "é", "a\"", "a\\", "a\n", "a\xff", "ab",
		"abcdefghijklm", "abcdefghijklmn", "abcdefghijklmno", "abcdefghijkl"} // around the 16-byte `"name":` limit
	for _, doc := range docs {
		for _, name := range names {
			checkNextIs(t, []byte(doc), name)
		}
	}
	// Names that JSON can only write with escapes never match.
	for _, name := range []string{"a\"", "a\\", "a\n", "a\xff"} {
		if NewMemberName(name).quoted != "" {
			t.Errorf("NewMemberName(%q) can match", name)
		}
	}
}

func FuzzNextIs(f *testing.F) {
	f.Add([]byte(`{"a":1,"bb":{"a":[true]}}`), "a")
	f.Add([]byte(` { "bb" : null , "a":"x"}`), "bb")
	f.Add([]byte(`{"\u0061":1}`), "a")
	f.Fuzz(func(t *testing.T, doc []byte, name string) {
		checkNextIs(t, doc, name)
	})
}
