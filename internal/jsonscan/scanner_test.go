package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// tokens renders the token stream of doc compactly, or returns the error.
func tokens(doc []byte) (string, error) {
	var s Scanner
	s.Reset(doc)
	var out []string
	for {
		k, err := s.Next()
		if err == io.EOF {
			return strings.Join(out, " "), nil
		}
		if err != nil {
			return strings.Join(out, " "), err
		}
		switch k {
		case BeginObject:
			out = append(out, "{")
		case EndObject:
			out = append(out, "}")
		case BeginArray:
			out = append(out, "[")
		case EndArray:
			out = append(out, "]")
		case Null:
			out = append(out, "null")
		case True:
			out = append(out, "true")
		case False:
			out = append(out, "false")
		case Number:
			out = append(out, "n"+string(s.Bytes()))
		case String:
			out = append(out, "s"+strconv.Quote(string(s.Bytes())))
		case Key:
			out = append(out, "k"+strconv.Quote(string(s.Bytes())))
		default:
			return "", errors.New("unexpected kind " + k.String())
		}
	}
}

func TestValid(t *testing.T) {
	tests := []struct {
		doc  string
		want string
	}{
		{`null`, `null`},
		{` true `, `true`},
		{"\t\r\nfalse\n", `false`},
		{`0`, `n0`},
		{`-0`, `n-0`},
		{`-12.5e+3`, `n-12.5e+3`},
		{`1E-7`, `n1E-7`},
		{`123456789012345678901234567890`, `n123456789012345678901234567890`},
		{`""`, `s""`},
		{`"abc"`, `s"abc"`},
		{`[]`, `[ ]`},
		{`{}`, `{ }`},
		{`[1,"a",null,true,false,[],{}]`, `[ n1 s"a" null true false [ ] { } ]`},
		{`{"a":1,"b":[2,{"c":null}]}`, `{ k"a" n1 k"b" [ n2 { k"c" null } ] }`},
		{` { "a" : 1 , "b" : [ ] } `, `{ k"a" n1 k"b" [ ] }`},
		{`{"":""}`, `{ k"" s"" }`},
		{`{"a":1,"a":2}`, `{ k"a" n1 k"a" n2 }`}, // duplicates are the caller's business
		// escapes
		{`"\"\\\/\b\f\n\r\t"`, `s"\"\\/\b\f\n\r\t"`},
		{`"a\u0041b"`, `s"aAb"`},
		{`"\u00e9\u00E9"`, `s"éé"`},
		{`"\u2665"`, `s"♥"`},
		{`"\ud83d\udc22"`, `s"🐢"`},
		{`"\uD83D\uDC22x"`, `s"🐢x"`},
		{`"\u0000"`, `s"\x00"`},
		{`{"k\nk":"v"}`, `{ k"k\nk" s"v" }`},
		// raw UTF-8
		{`"é♥🐢"`, `s"é♥🐢"`},
		{"\"\u007f\"", `s"\x7f"`},
		{"\"\uFFFF\"", `s"\uffff"`},
	}
	for _, tt := range tests {
		got, err := tokens([]byte(tt.doc))
		if err != nil {
			t.Errorf("%q: unexpected error %v", tt.doc, err)
			continue
		}
		if got != tt.want {
			t.Errorf("%q: tokens\n got %s\nwant %s", tt.doc, got, tt.want)
		}
		if !json.Valid([]byte(tt.doc)) {
			t.Errorf("%q: encoding/json disagrees: invalid", tt.doc)
		}
	}
}

func TestInvalid(t *testing.T) {
	tests := []struct {
		doc    string
		offset int
		msg    string
	}{
		{``, 0, "unexpected end of input at byte 0, expected value"},
		{`   `, 3, "unexpected end of input at byte 3, expected value"},
		{`[1,]`, 3, "unexpected ']' at byte 3, expected value"},
		{`[1 2]`, 3, "unexpected '2' at byte 3, expected ',' or ']'"},
		{`{"a" 1}`, 5, "unexpected '1' at byte 5, expected ':' after object member name"},
		{`{"a":1,}`, 7, "unexpected '}' at byte 7, expected '\"' to begin object member name"},
		{`{1:2}`, 1, "unexpected '1' at byte 1, expected '\"' to begin object member name"},
		{`{"a":1]`, 6, "unexpected ']' at byte 6, expected ',' or '}'"},
		{`[1}`, 2, "unexpected '}' at byte 2, expected ',' or ']'"},
		{`[`, 1, "unexpected end of input at byte 1, expected value"},
		{`{`, 1, "unexpected end of input at byte 1, expected object member name"},
		{`{"a":`, 5, "unexpected end of input at byte 5, expected value"},
		{`[1`, 2, "unexpected end of input at byte 2, expected ',' or ']'"},
		{`1 2`, 2, "unexpected '2' after top-level value at byte 2"},
		{`{}}`, 2, "unexpected '}' after top-level value at byte 2"},
		{`01`, 1, "unexpected '1' after top-level value at byte 1"},
		{`-`, 1, "invalid number at byte 1, expected digit"},
		{`-a`, 1, "invalid number at byte 1, expected digit"},
		{`+1`, 0, "unexpected '+' at byte 0, expected value"},
		{`.5`, 0, "unexpected '.' at byte 0, expected value"},
		{`1.`, 2, "invalid number at byte 2, expected digit after '.'"},
		{`1.e5`, 2, "invalid number at byte 2, expected digit after '.'"},
		{`1e`, 2, "invalid number at byte 2, expected digit in exponent"},
		{`1e+`, 3, "invalid number at byte 3, expected digit in exponent"},
		{`0x10`, 1, "unexpected 'x' after top-level value at byte 1"},
		{`NaN`, 0, "unexpected 'N' at byte 0, expected value"},
		{`tru`, 0, "invalid literal at byte 0, expected \"true\""},
		{`nul1`, 0, "invalid literal at byte 0, expected \"null\""},
		{`truex`, 4, "unexpected 'x' after top-level value at byte 4"},
		{`"abc`, 0, "unterminated string at byte 0"},
		{`["a\`, 4, "unexpected end of input in escape sequence at byte 4"},
		{`"a\"`, 0, "unterminated string at byte 0"},
		{"\"a\x01\"", 2, "invalid control character 0x01 in string at byte 2"},
		{"\"a\tb\"", 2, "invalid control character 0x09 in string at byte 2"},
		{`"\x"`, 1, "invalid escape sequence \"\\\\x\" in string at byte 1"},
		{`"\u12"`, 1, "invalid \\u escape in string at byte 1, expected 4 hex digits"},
		{`"\u12G4"`, 1, "invalid \\u escape in string at byte 1, expected 4 hex digits"},
		{`"\ud83d"`, 1, "high surrogate \\uD83D not followed by a low surrogate in string at byte 1"},
		{`"\ud83dx"`, 1, "high surrogate \\uD83D not followed by a low surrogate in string at byte 1"},
		{`"\ud83d\u0041"`, 1, "high surrogate \\uD83D not followed by a low surrogate in string at byte 1"},
		{`"\ud83d\ud83d"`, 1, "high surrogate \\uD83D not followed by a low surrogate in string at byte 1"},
		{`"\udc22"`, 1, "lone low surrogate \\uDC22 in string at byte 1"},
		{"\"ab\xff\"", 3, "invalid UTF-8 in string at byte 3"},
		{"\"\xc3\"", 1, "invalid UTF-8 in string at byte 1"},
		{"\"\xed\xa0\x80\"", 1, "invalid UTF-8 in string at byte 1"}, // surrogate encoded as UTF-8
		{"\"\xc0\x80\"", 1, "invalid UTF-8 in string at byte 1"},     // overlong NUL
		{"\"\\n\xff\"", 3, "invalid UTF-8 in string at byte 3"},      // after an escape
		{"{\"\xff\":1}", 2, "invalid UTF-8 in string at byte 2"},
		{"\xef\xbb\xbf1", 0, "unexpected byte 0xef at byte 0, expected value"}, // no BOM
	}
	for _, tt := range tests {
		_, err := tokens([]byte(tt.doc))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: got error %v, want *SyntaxError", tt.doc, err)
			continue
		}
		if se.Offset != tt.offset || se.Msg != tt.msg {
			t.Errorf("%q: got (%d, %q), want (%d, %q)", tt.doc, se.Offset, se.Msg, tt.offset, tt.msg)
		}
	}
}

func TestErrorIsSticky(t *testing.T) {
	var s Scanner
	s.Reset([]byte(`[1,,2]`))
	var first error
	for i := 0; i < 5; i++ {
		_, err := s.Next()
		if err != nil && first == nil {
			first = err
		}
		if first != nil && err != first {
			t.Fatalf("call %d: error %v, want sticky %v", i, err, first)
		}
	}
	if first == nil {
		t.Fatal("no error")
	}
}

func TestDepth(t *testing.T) {
	deep := func(n int) []byte {
		return []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
	}
	if _, err := tokens(deep(DefaultMaxDepth)); err != nil {
		t.Fatalf("depth %d: %v", DefaultMaxDepth, err)
	}
	_, err := tokens(deep(DefaultMaxDepth + 1))
	var se *SyntaxError
	if !errors.As(err, &se) || se.Offset != DefaultMaxDepth {
		t.Fatalf("depth %d: got %v, want error at byte %d", DefaultMaxDepth+1, err, DefaultMaxDepth)
	}

	var s Scanner
	s.SetMaxDepth(2)
	s.Reset([]byte(`{"a":[{"b":1}]}`))
	var depths []int
	for {
		_, err := s.Next()
		if err == io.EOF {
			t.Fatal("depth 3 accepted with SetMaxDepth(2)")
		}
		if err != nil {
			break
		}
		depths = append(depths, s.Depth())
	}
	if want := []int{1, 1, 2}; !equalInts(depths, want) {
		t.Fatalf("depths %v, want %v", depths, want)
	}
	// The limit survives Reset.
	s.Reset([]byte(`[[[]]]`))
	if err := drain(&s); err == nil {
		t.Fatal("SetMaxDepth lost on Reset")
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func drain(s *Scanner) error {
	for {
		_, err := s.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func TestOffsetAndDepth(t *testing.T) {
	doc := []byte(` {"ab" : [ 12 , "x\n" ] } `)
	type tok struct {
		kind   Kind
		offset int
		depth  int
	}
	want := []tok{
		{BeginObject, 1, 1},
		{Key, 2, 1},
		{BeginArray, 9, 2},
		{Number, 11, 2},
		{String, 16, 2},
		{EndArray, 22, 1},
		{EndObject, 24, 0},
	}
	var s Scanner
	s.Reset(doc)
	for i, w := range want {
		k, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if got := (tok{k, s.Offset(), s.Depth()}); got != w {
			t.Errorf("token %d: got %+v, want %+v", i, got, w)
		}
	}
	if _, err := s.Next(); err != io.EOF {
		t.Fatalf("got %v, want io.EOF", err)
	}
}

func TestSkip(t *testing.T) {
	doc := []byte(`{"a":{"x":[1,{"y":"\u0041"}],"z":{}},"b":[[],[2]],"c":3}`)
	var s Scanner
	s.Reset(doc)
	var keys []string
	for {
		k, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if k == Key {
			keys = append(keys, string(s.Bytes()))
			continue
		}
		if (k == BeginObject || k == BeginArray) && s.Depth() == 2 {
			if err := s.Skip(); err != nil {
				t.Fatal(err)
			}
			if s.Depth() != 1 {
				t.Fatalf("depth %d after Skip, want 1", s.Depth())
			}
		}
	}
	if got := strings.Join(keys, ","); got != "a,b,c" {
		t.Fatalf("keys %s, want a,b,c", got)
	}

	s.Reset([]byte(`[1]`))
	s.Next()
	s.Next()
	if err := s.Skip(); err == nil {
		t.Fatal("Skip after Number succeeded")
	}
	s.Reset([]byte(`[[1,}]`))
	s.Next()
	s.Next()
	if err := s.Skip(); err == nil {
		t.Fatal("Skip over malformed array succeeded")
	}
}

func TestBytesAliasInput(t *testing.T) {
	doc := []byte(`{"key":"value"}`)
	var s Scanner
	s.Reset(doc)
	s.Next()
	s.Next()
	if b := s.Bytes(); &b[0] != &doc[2] {
		t.Fatal("unescaped key does not alias the input")
	}
}

var typicalLine = []byte(`{"id":123456,"ts":"2025-04-16T12:34:56.789Z","user":{"name":"Zoë \"Z\" Doe","email":"zoe@example.com","tags":["a","b","c"]},"amount":-12.50,"ok":true,"ref":null,"geo":{"lat":52.52,"lon":13.405},"items":[{"sku":"X-1","qty":2,"price":9.99},{"sku":"Y-2","qty":1,"price":1e3}],"note":"caf\u00e9 \ud83d\udc22"}`)

func TestZeroAllocs(t *testing.T) {
	var s Scanner
	s.Reset(typicalLine)
	if err := drain(&s); err != nil { // warm the buffers
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		s.Reset(typicalLine)
		if err := drain(&s); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per document, want 0", allocs)
	}
}

// compareWithStdlib checks the scanner against encoding/json: it must
// accept exactly what json.Valid accepts, except for the inputs this
// package rejects on purpose (invalid UTF-8, lone surrogates, depth), and
// produce the same tokens as json.Decoder.
func compareWithStdlib(t *testing.T, doc []byte) {
	got, err := tokens(doc)
	valid := json.Valid(doc)
	if err == nil && !valid {
		t.Fatalf("%q: accepted, but encoding/json rejects it", doc)
	}
	if err != nil {
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("%q: error %v is not a *SyntaxError", doc, err)
		}
		if se.Offset < 0 || se.Offset > len(doc) {
			t.Fatalf("%q: offset %d out of range", doc, se.Offset)
		}
		if valid {
			strict := strings.Contains(se.Msg, "UTF-8") || strings.Contains(se.Msg, "surrogate") || strings.Contains(se.Msg, "nesting")
			if !strict {
				t.Fatalf("%q: rejected (%v), but encoding/json accepts it", doc, err)
			}
		}
		return
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var want []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%q: encoding/json: %v", doc, err)
		}
		switch v := tok.(type) {
		case json.Delim:
			want = append(want, v.String())
		case nil:
			want = append(want, "null")
		case bool:
			want = append(want, strconv.FormatBool(v))
		case json.Number:
			want = append(want, "n"+v.String())
		case string:
			want = append(want, "s"+strconv.Quote(v))
		}
	}
	// encoding/json does not tell names from values.
	got = strings.ReplaceAll(got, ` k"`, ` s"`)
	if g, w := got, strings.Join(want, " "); g != w {
		t.Fatalf("%q: tokens\n got %s\nwant %s", doc, g, w)
	}
}

func TestCompareWithStdlib(t *testing.T) {
	for _, seed := range fuzzSeeds {
		compareWithStdlib(t, []byte(seed))
	}
}

var fuzzSeeds = []string{
	`null`, `true`, `false`, `0`, `-1.5e10`, `""`, `"\u00e9\ud83d\udc22"`,
	`[]`, `{}`, `[1,[2,[3]]]`, `{"a":{"b":{"c":[null,true]}}}`,
	`{"a":1,}`, `[1 2]`, `"\ud800"`, "\"\xff\"", `01`, `1.`, `-`, ` `,
	string(typicalLine),
}

func FuzzScanner(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		compareWithStdlib(t, doc)
		// Every string the scanner returns is valid UTF-8.
		var s Scanner
		s.Reset(doc)
		for {
			k, err := s.Next()
			if err != nil {
				break
			}
			if (k == String || k == Key) && !utf8.Valid(s.Bytes()) {
				t.Fatalf("%q: invalid UTF-8 returned at byte %d", doc, s.Offset())
			}
		}
	})
}

func BenchmarkScan(b *testing.B) {
	var s Scanner
	b.SetBytes(int64(len(typicalLine)))
	b.ReportAllocs()
	for b.Loop() {
		s.Reset(typicalLine)
		if err := drain(&s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStdlibValid(b *testing.B) {
	b.SetBytes(int64(len(typicalLine)))
	b.ReportAllocs()
	for b.Loop() {
		if !json.Valid(typicalLine) {
			b.Fatal("invalid")
		}
	}
}
