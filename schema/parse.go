package schema

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pqsink/pqsink/meta"
)

// Parse reads a schema in the message syntax of parquet-java:
//
//	message event {
//	  required int64 id;
//	  optional binary name (STRING) = 2;
//	  optional group tags (LIST) {
//	    repeated group list {
//	      optional binary element (STRING);
//	    }
//	  }
//	}
//
// Keywords, physical types and annotations are case-insensitive; names are
// not. Both the logical annotations (STRING, INTEGER(8,true),
// TIMESTAMP(MICROS,true), DECIMAL(18,4), VARIANT(1), ...) and the legacy
// ones (UTF8, INT_8, TIMESTAMP_MILLIS, MAP_KEY_VALUE, ...) are read; a
// legacy one becomes the logical type it implies. `//` and `/* */` comments
// are skipped. A name may also be written as a Go-quoted string.
//
// The legacy LIST and MAP shapes of LogicalTypes.md are accepted, so that
// the schema of any readable file can be written down.
func Parse(text string) (*Schema, error) {
	p := parser{lex: lexer{src: text, line: 1, col: 1}}
	name, fields, err := p.message()
	if err != nil {
		return nil, err
	}
	if err := nonEmpty(nil, fields); err != nil {
		return nil, err
	}
	return build(name, fields, false)
}

// nonEmpty refuses a message or group without fields: Parquet has no
// column for it, and no reader accepts the file it would make.
func nonEmpty(parent *Node, fields []*Node) error {
	if len(fields) == 0 {
		if parent == nil {
			return errors.New("schema: the message has no fields")
		}
		return fmt.Errorf("schema: group %s has no fields", quoteName(parent.Name))
	}
	for _, f := range fields {
		if f.isGroup() {
			if err := nonEmpty(f, f.Fields); err != nil {
				return err
			}
		}
	}
	return nil
}

// MustParse is Parse that panics on error, for schemas fixed in code.
func MustParse(text string) *Schema {
	s, err := Parse(text)
	if err != nil {
		panic(err)
	}
	return s
}

type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokWord
	tokQuoted
	tokPunct
)

type token struct {
	kind      tokenKind
	text      string // a word, an unquoted string, or one punctuation byte
	line, col int
}

func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "end of input"
	case tokQuoted:
		return strconv.Quote(t.text)
	}
	return "'" + t.text + "'"
}

// lexer splits message syntax into tokens, tracking line and byte column.
type lexer struct {
	src       string
	pos       int
	line, col int
	peeked    *token
}

func (l *lexer) errorf(line, col int, format string, args ...any) error {
	return fmt.Errorf("schema: %d:%d: %s", line, col, fmt.Sprintf(format, args...))
}

func (l *lexer) advance(n int) {
	for _, c := range []byte(l.src[l.pos : l.pos+n]) {
		if c == '\n' {
			l.line++
			l.col = 1
		} else {
			l.col++
		}
	}
	l.pos += n
}

// skipSpace skips white space and comments.
func (l *lexer) skipSpace() error {
	for l.pos < len(l.src) {
		rest := l.src[l.pos:]
		switch {
		case rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n' || rest[0] == '\r':
			l.advance(1)
		case strings.HasPrefix(rest, "//"):
			end := strings.IndexByte(rest, '\n')
			if end < 0 {
				end = len(rest)
			}
			l.advance(end)
		case strings.HasPrefix(rest, "/*"):
			end := strings.Index(rest[2:], "*/")
			if end < 0 {
				return l.errorf(l.line, l.col, "comment not closed")
			}
			l.advance(end + 4)
		default:
			return nil
		}
	}
	return nil
}

func (l *lexer) peek() (token, error) {
	if l.peeked != nil {
		return *l.peeked, nil
	}
	t, err := l.scan()
	if err != nil {
		return t, err
	}
	l.peeked = &t
	return t, nil
}

func (l *lexer) next() (token, error) {
	t, err := l.peek()
	l.peeked = nil
	return t, err
}

func (l *lexer) scan() (token, error) {
	if err := l.skipSpace(); err != nil {
		return token{}, err
	}
	t := token{line: l.line, col: l.col}
	if l.pos == len(l.src) {
		return t, nil
	}
	rest := l.src[l.pos:]
	c := rest[0]
	switch {
	case strings.IndexByte("{}();=,", c) >= 0:
		t.kind, t.text = tokPunct, rest[:1]
		l.advance(1)
	case c == '"':
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return t, l.errorf(t.line, t.col, "malformed quoted string")
		}
		t.kind = tokQuoted
		t.text, _ = strconv.Unquote(q) // QuotedPrefix vouched for q
		l.advance(len(q))
	case isWordByte(c):
		n := 1
		for n < len(rest) && isWordByte(rest[n]) {
			n++
		}
		t.kind, t.text = tokWord, rest[:n]
		l.advance(n)
	default:
		// Name the character as the text has it: a UTF-8 sequence as the
		// character it encodes, anything else escaped.
		r, _ := utf8.DecodeRuneInString(rest)
		if r == utf8.RuneError {
			return t, l.errorf(t.line, t.col, "unexpected byte %q", rest[:1])
		}
		return t, l.errorf(t.line, t.col, "unexpected character %q", r)
	}
	return t, nil
}

type parser struct {
	lex lexer
}

// expect reads one token and checks that it is the punctuation want.
func (p *parser) expect(want string, context string) error {
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	if t.kind != tokPunct || t.text != want {
		return p.lex.errorf(t.line, t.col, "expected '%s' %s, found %s", want, context, t)
	}
	return nil
}

// accept consumes the punctuation want if it comes next.
func (p *parser) accept(want string) (bool, error) {
	t, err := p.lex.peek()
	if err != nil {
		return false, err
	}
	if t.kind == tokPunct && t.text == want {
		p.lex.next()
		return true, nil
	}
	return false, nil
}

// word reads a bare word and returns it.
func (p *parser) word(what string) (token, error) {
	t, err := p.lex.next()
	if err != nil {
		return t, err
	}
	if t.kind != tokWord {
		return t, p.lex.errorf(t.line, t.col, "expected %s, found %s", what, t)
	}
	return t, nil
}

// name reads a bare word or a quoted string.
func (p *parser) name(what string) (string, error) {
	t, err := p.lex.next()
	if err != nil {
		return "", err
	}
	if t.kind != tokWord && t.kind != tokQuoted {
		return "", p.lex.errorf(t.line, t.col, "expected %s, found %s", what, t)
	}
	return t.text, nil
}

func (p *parser) message() (string, []*Node, error) {
	t, err := p.word("'message'")
	if err != nil {
		return "", nil, err
	}
	if !strings.EqualFold(t.text, "message") {
		return "", nil, p.lex.errorf(t.line, t.col, "expected 'message', found %s", t)
	}
	name, err := p.name("message name")
	if err != nil {
		return "", nil, err
	}
	if err := p.expect("{", "after the message name"); err != nil {
		return "", nil, err
	}
	fields, err := p.fields(0)
	if err != nil {
		return "", nil, err
	}
	if _, err := p.accept(";"); err != nil {
		return "", nil, err
	}
	t, err = p.lex.next()
	if err != nil {
		return "", nil, err
	}
	if t.kind != tokEOF {
		return "", nil, p.lex.errorf(t.line, t.col, "expected end of input after the message, found %s", t)
	}
	return name, fields, nil
}

// fields reads field declarations up to and including the closing '}'.
func (p *parser) fields(depth int) ([]*Node, error) {
	var fields []*Node
	for {
		t, err := p.lex.peek()
		if err != nil {
			return nil, err
		}
		if t.kind == tokPunct && t.text == "}" {
			p.lex.next()
			return fields, nil
		}
		f, err := p.field(depth)
		if err != nil {
			return nil, err
		}
		fields = append(fields, f)
	}
}

var repetitions = map[string]Repetition{"required": Required, "optional": Optional, "repeated": Repeated}

var physicalByWord = map[string]meta.Type{
	"boolean": meta.TypeBoolean,
	"int32":   meta.TypeInt32,
	"int64":   meta.TypeInt64,
	"int96":   meta.TypeInt96,
	"float":   meta.TypeFloat,
	"double":  meta.TypeDouble,
	"binary":  meta.TypeByteArray,
}

func (p *parser) field(depth int) (*Node, error) {
	t, err := p.word("'required', 'optional', 'repeated' or '}'")
	if err != nil {
		return nil, err
	}
	rep, ok := repetitions[strings.ToLower(t.text)]
	if !ok {
		return nil, p.lex.errorf(t.line, t.col, "expected 'required', 'optional', 'repeated' or '}', found %s", t)
	}
	n := &Node{Repetition: rep}
	if t, err = p.word("a physical type or 'group'"); err != nil {
		return nil, err
	}
	typ := strings.ToLower(t.text)
	switch typ {
	case "group":
		if depth+1 >= maxDepth {
			return nil, p.lex.errorf(t.line, t.col, "groups nested more than %d deep", maxDepth)
		}
		n.group = true
	case "fixed_len_byte_array":
		n.Physical = meta.TypeFixedLenByteArray
		if err := p.expect("(", "after fixed_len_byte_array"); err != nil {
			return nil, err
		}
		if n.Length, err = p.int32("the byte length"); err != nil {
			return nil, err
		}
		if err := p.expect(")", "after the byte length"); err != nil {
			return nil, err
		}
	default:
		if n.Physical, ok = physicalByWord[typ]; !ok {
			return nil, p.lex.errorf(t.line, t.col, "expected a physical type or 'group', found %s", t)
		}
	}
	if n.Name, err = p.name("a field name"); err != nil {
		return nil, err
	}
	if ok, err := p.accept("("); err != nil {
		return nil, err
	} else if ok {
		if err := p.annotation(n); err != nil {
			return nil, err
		}
	}
	if ok, err := p.accept("="); err != nil {
		return nil, err
	} else if ok {
		if n.FieldID, err = p.int32("a field id"); err != nil {
			return nil, err
		}
		n.HasFieldID = true
	}
	if !n.group {
		return n, p.expect(";", "after field "+strconv.Quote(n.Name))
	}
	if err := p.expect("{", "to open group "+strconv.Quote(n.Name)); err != nil {
		return nil, err
	}
	if n.Fields, err = p.fields(depth + 1); err != nil {
		return nil, err
	}
	_, err = p.accept(";") // parquet-java does not write one, some people do
	return n, err
}

func (p *parser) int32(what string) (int32, error) {
	t, err := p.word(what)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(t.text, 10, 32)
	if err != nil {
		return 0, p.lex.errorf(t.line, t.col, "expected %s (a 32-bit integer), found %s", what, t)
	}
	return int32(v), nil
}

// annotation reads what follows the '(' of an annotation, up to and
// including its ')'.
func (p *parser) annotation(n *Node) error {
	t, err := p.word("an annotation")
	if err != nil {
		return err
	}
	var params []token
	if ok, err := p.accept("("); err != nil {
		return err
	} else if ok {
		if params, err = p.params(); err != nil {
			return err
		}
	}
	if err := p.expect(")", "to close the annotation"); err != nil {
		return err
	}
	return p.apply(n, t, params)
}

// params reads comma-separated words or quoted strings up to and including ')'.
func (p *parser) params() ([]token, error) {
	var params []token
	for {
		t, err := p.lex.next()
		if err != nil {
			return nil, err
		}
		if t.kind != tokWord && t.kind != tokQuoted {
			return nil, p.lex.errorf(t.line, t.col, "expected an annotation parameter, found %s", t)
		}
		params = append(params, t)
		if t, err = p.lex.next(); err != nil {
			return nil, err
		}
		if t.kind == tokPunct && t.text == ")" {
			return params, nil
		}
		if t.kind != tokPunct || t.text != "," {
			return nil, p.lex.errorf(t.line, t.col, "expected ',' or ')' in annotation parameters, found %s", t)
		}
	}
}

// legacyByName maps the names of parameterless annotations, logical and
// legacy, to the ConvertedType they stand for or imply.
var legacyByName = func() map[string]meta.ConvertedType {
	m := make(map[string]meta.ConvertedType, len(convertedNames))
	for c, s := range convertedNames {
		if c != meta.ConvertedDecimal {
			m[s] = c
		}
	}
	return m
}()

// apply sets n's annotation from its name and parameters.
func (p *parser) apply(n *Node, name token, params []token) error {
	word := strings.ToUpper(name.text)
	bad := func(want string) error {
		return p.lex.errorf(name.line, name.col, "annotation %s takes %s", word, want)
	}
	var l Logical
	switch word {
	case "STRING", "UUID", "FLOAT16", "UNKNOWN", "FILE":
		if len(params) != 0 {
			return bad("no parameters")
		}
		l.Kind = map[string]Kind{"STRING": String, "UUID": UUID, "FLOAT16": Float16, "UNKNOWN": Unknown, "FILE": File}[word]
	case "INTEGER", "INT":
		if len(params) != 2 {
			return bad("(bit width, signed)")
		}
		bits, err := strconv.ParseInt(params[0].text, 10, 8)
		if err != nil {
			return bad("a bit width of 8, 16, 32 or 64")
		}
		signed, err := strconv.ParseBool(strings.ToLower(params[1].text))
		if err != nil {
			return bad("signed as true or false")
		}
		l = Logical{Kind: Int, BitWidth: int8(bits), Signed: signed}
	case "DECIMAL":
		if len(params) < 1 || len(params) > 2 {
			return bad("(precision, scale)")
		}
		prec, err := strconv.ParseInt(params[0].text, 10, 32)
		if err != nil {
			return bad("an integer precision")
		}
		var scale int64
		if len(params) == 2 {
			if scale, err = strconv.ParseInt(params[1].text, 10, 32); err != nil {
				return bad("an integer scale")
			}
		}
		l = Logical{Kind: Decimal, Precision: int32(prec), Scale: int32(scale)}
	case "TIME", "TIMESTAMP":
		if len(params) != 2 {
			return bad("(unit, adjusted to UTC)")
		}
		var unit TimeUnit
		switch strings.ToUpper(params[0].text) {
		case "MILLIS":
			unit = Millis
		case "MICROS":
			unit = Micros
		case "NANOS":
			unit = Nanos
		default:
			return bad("a unit of MILLIS, MICROS or NANOS")
		}
		utc, err := strconv.ParseBool(strings.ToLower(params[1].text))
		if err != nil {
			return bad("adjusted to UTC as true or false")
		}
		l = Logical{Kind: Time, Unit: unit, UTC: utc}
		if word == "TIMESTAMP" {
			l.Kind = Timestamp
		}
	case "VARIANT":
		l.Kind = Variant
		if len(params) > 1 {
			return bad("at most a specification version")
		}
		if len(params) == 1 {
			v, err := strconv.ParseInt(params[0].text, 10, 8)
			if err != nil || v < 1 {
				return bad("a specification version from 1 to 127")
			}
			l.SpecVersion = int8(v)
		}
	case "GEOMETRY", "GEOGRAPHY":
		l.Kind = Geometry
		most := 1
		if word == "GEOGRAPHY" {
			l.Kind, most = Geography, 2
		}
		if len(params) > most {
			return bad("fewer parameters")
		}
		if len(params) > 0 {
			l.CRS = params[0].text
		}
		if len(params) > 1 {
			l.Algorithm = strings.ToUpper(params[1].text)
		}
	default:
		c, ok := legacyByName[word]
		if !ok {
			return p.lex.errorf(name.line, name.col, "unknown annotation %s", name)
		}
		if len(params) != 0 {
			return bad("no parameters")
		}
		if c == meta.ConvertedMapKeyValue {
			n.Legacy, n.HasLegacy = c, true
			return nil
		}
		l, _ = fromConverted(c, 0, 0)
	}
	n.Logical = l
	return nil
}
