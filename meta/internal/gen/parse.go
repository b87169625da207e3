package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// idl is the subset of a thrift file that the generator understands:
// enums, structs and unions, in declaration order.
type idl struct {
	enums   []*enumDecl
	structs []*structDecl
	kinds   map[string]declKind
}

type declKind int

const (
	kindEnum declKind = iota + 1
	kindStruct
)

type enumDecl struct {
	name   string
	values []enumValue
}

type enumValue struct {
	name  string
	value int32
}

type structDecl struct {
	name   string
	union  bool
	fields []*fieldDecl
}

type fieldDecl struct {
	id       int16
	name     string
	required bool
	typ      *typeRef
	def      string // default value as written, or ""
}

// typeRef is a field type: a base type, a named enum or struct, or a list.
type typeRef struct {
	base string   // bool, byte, i8, i16, i32, i64, double, string, binary
	name string   // enum or struct name
	elem *typeRef // element type of a list
}

func (t *typeRef) String() string {
	switch {
	case t.elem != nil:
		return "list<" + t.elem.String() + ">"
	case t.name != "":
		return t.name
	}
	return t.base
}

// parser is a recursive-descent parser over the tokens of a thrift file.
type parser struct {
	toks []token
	pos  int
}

type token struct {
	text string
	line int
}

func parseIDL(src []byte) (*idl, error) {
	toks, err := tokenize(string(src))
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	f := &idl{kinds: map[string]declKind{}}
	for !p.done() {
		t := p.next()
		switch t.text {
		case "namespace":
			p.next()
			p.next()
		case "enum":
			e, err := p.enum()
			if err != nil {
				return nil, err
			}
			f.enums = append(f.enums, e)
			f.kinds[e.name] = kindEnum
		case "struct", "union":
			s, err := p.structure(t.text == "union")
			if err != nil {
				return nil, err
			}
			f.structs = append(f.structs, s)
			f.kinds[s.name] = kindStruct
		default:
			return nil, fmt.Errorf("line %d: unsupported declaration %q", t.line, t.text)
		}
	}
	for _, s := range f.structs {
		for _, fd := range s.fields {
			if err := f.check(fd.typ); err != nil {
				return nil, fmt.Errorf("%s.%s: %w", s.name, fd.name, err)
			}
		}
	}
	return f, nil
}

// check verifies that named types are declared and that lists nest only
// one level, which is all the emitter supports.
func (f *idl) check(t *typeRef) error {
	switch {
	case t.elem != nil:
		if t.elem.elem != nil {
			return fmt.Errorf("nested list %s is not supported", t)
		}
		return f.check(t.elem)
	case t.name != "":
		if f.kinds[t.name] == 0 {
			return fmt.Errorf("undeclared type %s", t.name)
		}
	}
	return nil
}

func (p *parser) done() bool { return p.pos >= len(p.toks) }

func (p *parser) next() token {
	if p.done() {
		return token{line: -1}
	}
	t := p.toks[p.pos]
	p.pos++
	return t
}

func (p *parser) peek() string {
	if p.done() {
		return ""
	}
	return p.toks[p.pos].text
}

func (p *parser) expect(text string) error {
	t := p.next()
	if t.text != text {
		return fmt.Errorf("line %d: got %q, want %q", t.line, t.text, text)
	}
	return nil
}

// skipSeparator consumes an optional ',' or ';' after a field or value.
func (p *parser) skipSeparator() {
	if s := p.peek(); s == "," || s == ";" {
		p.pos++
	}
}

func (p *parser) enum() (*enumDecl, error) {
	e := &enumDecl{name: p.next().text}
	if err := p.expect("{"); err != nil {
		return nil, err
	}
	for p.peek() != "}" {
		name := p.next()
		if err := p.expect("="); err != nil {
			return nil, fmt.Errorf("enum %s: %w", e.name, err)
		}
		v := p.next()
		n, err := strconv.ParseInt(v.text, 0, 32)
		if err != nil {
			return nil, fmt.Errorf("line %d: enum %s.%s: %w", v.line, e.name, name.text, err)
		}
		e.values = append(e.values, enumValue{name: name.text, value: int32(n)})
		p.skipSeparator()
	}
	p.next()
	return e, nil
}

func (p *parser) structure(union bool) (*structDecl, error) {
	s := &structDecl{name: p.next().text, union: union}
	if err := p.expect("{"); err != nil {
		return nil, err
	}
	for p.peek() != "}" {
		if p.done() {
			return nil, fmt.Errorf("struct %s: unexpected end of file", s.name)
		}
		fd, err := p.field()
		if err != nil {
			return nil, fmt.Errorf("struct %s: %w", s.name, err)
		}
		for _, prev := range s.fields {
			if prev.id == fd.id {
				return nil, fmt.Errorf("struct %s: duplicate field id %d", s.name, fd.id)
			}
		}
		s.fields = append(s.fields, fd)
	}
	p.next()
	return s, nil
}

func (p *parser) field() (*fieldDecl, error) {
	idTok := p.next()
	id, err := strconv.ParseInt(idTok.text, 10, 16)
	if err != nil || id <= 0 {
		return nil, fmt.Errorf("line %d: bad field id %q", idTok.line, idTok.text)
	}
	if err := p.expect(":"); err != nil {
		return nil, err
	}
	fd := &fieldDecl{id: int16(id)}
	switch p.peek() {
	case "required":
		fd.required = true
		p.pos++
	case "optional":
		p.pos++
	}
	if fd.typ, err = p.typ(); err != nil {
		return nil, err
	}
	fd.name = p.next().text
	if p.peek() == "=" {
		p.pos++
		fd.def = p.next().text
	}
	p.skipSeparator()
	return fd, nil
}

var baseTypes = map[string]bool{
	"bool": true, "byte": true, "i8": true, "i16": true, "i32": true,
	"i64": true, "double": true, "string": true, "binary": true,
}

func (p *parser) typ() (*typeRef, error) {
	t := p.next()
	switch {
	case t.text == "list":
		if err := p.expect("<"); err != nil {
			return nil, err
		}
		elem, err := p.typ()
		if err != nil {
			return nil, err
		}
		if err := p.expect(">"); err != nil {
			return nil, err
		}
		return &typeRef{elem: elem}, nil
	case t.text == "set" || t.text == "map":
		return nil, fmt.Errorf("line %d: %s fields are not supported", t.line, t.text)
	case baseTypes[t.text]:
		if t.text == "byte" {
			return &typeRef{base: "i8"}, nil
		}
		return &typeRef{base: t.text}, nil
	case isIdent(t.text):
		return &typeRef{name: t.text}, nil
	}
	return nil, fmt.Errorf("line %d: bad type %q", t.line, t.text)
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && r != '.' && !unicode.IsLetter(r) && (i == 0 || !unicode.IsDigit(r)) {
			return false
		}
	}
	return true
}

// tokenize splits thrift source into identifiers, numbers, string
// literals and single-character punctuation, dropping all comments.
func tokenize(src string) ([]token, error) {
	var toks []token
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '#' || strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("line %d: unterminated comment", line)
			}
			line += strings.Count(src[i:i+2+end], "\n")
			i += end + 4
		case c == '"' || c == '\'':
			end := strings.IndexByte(src[i+1:], c)
			if end < 0 {
				return nil, fmt.Errorf("line %d: unterminated string", line)
			}
			toks = append(toks, token{src[i : i+end+2], line})
			i += end + 2
		case strings.IndexByte("{}:;,<>=()", c) >= 0:
			toks = append(toks, token{src[i : i+1], line})
			i++
		default:
			j := i
			for j < len(src) && (src[j] == '_' || src[j] == '.' || src[j] == '-' || src[j] == '+' ||
				unicode.IsLetter(rune(src[j])) || unicode.IsDigit(rune(src[j]))) {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("line %d: unexpected character %q", line, c)
			}
			toks = append(toks, token{src[i:j], line})
			i = j
		}
	}
	return toks, nil
}
