// Package jsonscan is a strict (RFC 8259) JSON tokenizer that does not
// allocate in the steady state.
//
// A Scanner walks one JSON document and returns its tokens one at a time.
// Separators (',' and ':') are checked internally and never returned;
// object member names come back as Key tokens so that callers never have
// to track whether a string is a name or a value. Strings are returned
// unescaped and are guaranteed to be valid UTF-8 (lone surrogates written
// as \u escapes are rejected), which makes the scanner stricter than
// encoding/json.Valid.
//
// The scanner is meant for hot paths such as one Kafka record per call:
// Reset keeps the buffers of the previous document, and strings without
// escapes are returned as sub-slices of the input.
package jsonscan

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"strings"
	"unicode/utf8"
)

// Kind identifies a JSON token.
type Kind uint8

// Token kinds returned by Scanner.Next.
const (
	Invalid Kind = iota
	Null
	True
	False
	Number
	String
	Key
	BeginObject
	EndObject
	BeginArray
	EndArray
)

var kindNames = [...]string{
	Invalid:     "Invalid",
	Null:        "Null",
	True:        "True",
	False:       "False",
	Number:      "Number",
	String:      "String",
	Key:         "Key",
	BeginObject: "BeginObject",
	EndObject:   "EndObject",
	BeginArray:  "BeginArray",
	EndArray:    "EndArray",
}

// String returns the name of the kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// DefaultMaxDepth is the nesting limit of a Scanner unless SetMaxDepth
// changes it. Consumers of the tokens (the Variant encoder, the record
// shredders, the Variant decoder) recurse or keep per-level state, so an
// unbounded depth would let a few kilobytes of "[[[[..." cost megabytes of
// stack. 1000 levels is far beyond any real event payload and matches the
// bound of the Variant decoder, so whatever scans also encodes.
const DefaultMaxDepth = 1000

// SyntaxError describes malformed input: what is wrong and at which byte.
type SyntaxError struct {
	Offset int    // byte offset in the input where the problem was found
	Msg    string // full description, including the offset
}

// Error returns the description, which already names the byte offset.
func (e *SyntaxError) Error() string { return e.Msg }

// parser states: what may come next.
const (
	stateValue      uint8 = iota // a value (document start, after ':' or after ',' in an array)
	stateValueOrEnd              // after '[': a value or ']'
	stateKeyOrEnd                // after '{': a name or '}'
	stateKey                     // after ',' in an object: a name
	stateCommaOrEnd              // after a value inside a container
	stateDone                    // after the top-level value
)

// Scanner tokenizes one JSON document. The zero value is ready for Reset.
// A Scanner must not be used by several goroutines at once.
type Scanner struct {
	data     []byte
	pos      int    // next byte to read
	start    int    // offset of the current token
	end      int    // end of the current number token
	kind     Kind   // current token
	state    uint8  // what may come next
	stack    []byte // '{' or '[' per open container
	maxDepth int
	// The current String or Key: data[strLo:strHi], or buf[:strHi] when
	// it had escapes. Offsets rather than a slice, so that setting them
	// for every token stores no pointer.
	strLo, strHi int
	strEsc       bool
	buf          []byte // unescaped string storage, reused
	err          error  // sticky error
}

// Reset prepares s to scan data, keeping its buffers. data must hold a
// single JSON value surrounded by optional whitespace.
func (s *Scanner) Reset(data []byte) {
	s.data = data
	s.pos = 0
	s.start = 0
	s.end = 0
	s.kind = Invalid
	s.state = stateValue
	s.stack = s.stack[:0]
	s.strLo, s.strHi, s.strEsc = 0, 0, false
	s.err = nil
	if s.maxDepth <= 0 {
		s.maxDepth = DefaultMaxDepth
	}
}

// SetMaxDepth sets the maximum nesting depth of objects and arrays;
// n <= 0 restores DefaultMaxDepth. The setting survives Reset.
func (s *Scanner) SetMaxDepth(n int) {
	if n <= 0 {
		n = DefaultMaxDepth
	}
	s.maxDepth = n
}

// Depth returns the number of objects and arrays open after the current
// token: 1 after the top-level BeginObject, 0 after its EndObject.
func (s *Scanner) Depth() int { return len(s.stack) }

// Offset returns the byte offset of the current token in the input.
func (s *Scanner) Offset() int { return s.start }

// Bytes returns the raw literal of a Number token, or the unescaped UTF-8
// bytes of a String or Key token. The slice is valid until the next call
// to Next, Skip or Reset and must not be modified; when the string has no
// escapes it aliases the input.
func (s *Scanner) Bytes() []byte {
	switch s.kind {
	case Number:
		return s.data[s.start:s.end]
	case String, Key:
		if s.strEsc {
			return s.buf[:s.strHi]
		}
		return s.data[s.strLo:s.strHi]
	}
	return nil
}

// Next returns the next token. After the top-level value it returns
// io.EOF if only whitespace remains, and a *SyntaxError otherwise. Once
// Next has returned an error it keeps returning it.
func (s *Scanner) Next() (Kind, error) {
	// Small enough to be inlined: the token functions record the kind and
	// any error themselves, so the hot path is one call.
	if s.err == nil {
		s.next()
	}
	return s.kind, s.err
}

// Skip skips the rest of the object or array whose BeginObject or
// BeginArray token was just returned, up to and including its end token.
func (s *Scanner) Skip() error {
	if s.err != nil {
		return s.err
	}
	if s.kind != BeginObject && s.kind != BeginArray {
		return fmt.Errorf("jsonscan: Skip after %v, want BeginObject or BeginArray", s.kind)
	}
	depth := len(s.stack) - 1
	for {
		k, err := s.Next()
		if err != nil {
			return err
		}
		if (k == EndObject || k == EndArray) && len(s.stack) == depth {
			return nil
		}
	}
}

// MemberName is an object member name prepared for Scanner.NextIs.
type MemberName struct {
	quoted  string  // the name in quotes, or "" if it cannot be written without escapes
	compact Literal // `"name":`, its compact spelling
}

// Literal is a short text expected at a position in JSON text, prepared
// for comparing it a word at a time.
type Literal struct {
	s string
	// s as two little-endian words and the masks of its bytes in them,
	// when it is at most 16 bytes long.
	w0, w1, m0, m1 uint64
}

// NewLiteral prepares s for At.
func NewLiteral(s string) Literal {
	l := Literal{s: s}
	if len(s) <= 16 {
		var w, m [16]byte
		copy(w[:], s)
		for i := range s {
			m[i] = 0xff
		}
		l.w0, l.w1 = binary.LittleEndian.Uint64(w[:]), binary.LittleEndian.Uint64(w[8:])
		l.m0, l.m1 = binary.LittleEndian.Uint64(m[:]), binary.LittleEndian.Uint64(m[8:])
	}
	return l
}

// At reports whether d[i:] begins with the literal: in two compares when
// it is at most 16 bytes long and d holds 16 bytes from i.
func (l *Literal) At(d []byte, i int) bool {
	if len(d)-i >= 16 && len(l.s) <= 16 {
		w := d[i : i+16] // of known length: no bounds checks below
		return binary.LittleEndian.Uint64(w)&l.m0 == l.w0 && binary.LittleEndian.Uint64(w[8:])&l.m1 == l.w1
	}
	return len(d)-i >= len(l.s) && string(d[i:i+len(l.s)]) == l.s
}

// String returns the literal's text.
func (l *Literal) String() string { return l.s }

// NewMemberName prepares name for NextIs. A name that JSON text can only
// spell with escapes (one holding '"', '\\', control characters or
// invalid UTF-8) is never matched by NextIs, which leaves it to Next.
func NewMemberName(name string) MemberName {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c == '"' || c == '\\' || c < 0x20 {
			return MemberName{}
		}
	}
	if !utf8.ValidString(name) {
		return MemberName{}
	}
	quoted := `"` + name + `"`
	return MemberName{quoted: quoted, compact: NewLiteral(quoted + ":")}
}

// NextIs reports whether the next token is the member name n, written
// without escapes, and if so consumes it as Next would, leaving a Key
// token whose Bytes alias the input. Otherwise it consumes nothing and the
// caller goes on with Next. A caller that expects members in a known
// order, as a schema-driven decoder does, saves scanning, unescaping and
// comparing the name.
func (s *Scanner) NextIs(n *MemberName) bool {
	d, i := s.data, s.pos
	if n.quoted != "" && s.state == stateCommaOrEnd && i < len(d) && d[i] == ',' && s.err == nil &&
		n.compact.At(d, i+1) && s.stack[len(s.stack)-1] == '{' {
		// `,"name":` right after the previous member, the compact spelling
		// of all but the first member: what the general path below finds,
		// in fewer steps.
		i++
		j := i + len(n.quoted) // the ':'
		s.start = i
		s.strLo, s.strHi, s.strEsc = i+1, j-1, false
		s.pos = j + 1
		s.state = stateValue
		s.kind = Key
		return true
	}
	if s.err != nil || n.quoted == "" {
		return false
	}
	switch s.state {
	case stateCommaOrEnd:
		if s.stack[len(s.stack)-1] != '{' {
			return false
		}
		i = skipSpace(d, i)
		if i == len(d) || d[i] != ',' {
			return false
		}
		i = skipSpace(d, i+1)
	case stateKeyOrEnd, stateKey:
		i = skipSpace(d, i)
	default:
		return false
	}
	q := n.quoted
	j := i + len(q) // after the closing quote
	if n.compact.At(d, i) {
		// `"name":`, the compact spelling, in two compares when short.
	} else {
		if len(d)-i < len(q) || string(d[i:j]) != q {
			return false
		}
		if j = skipSpace(d, j); j == len(d) || d[j] != ':' {
			return false // Next reports the error
		}
	}
	// The bytes are a string free of escapes and invalid UTF-8 (NewMemberName
	// checked the name), so scanning it would give the same token.
	s.start = i
	s.strLo, s.strHi, s.strEsc = i+1, i+len(q)-1, false
	s.pos = j + 1
	s.state = stateValue
	s.kind = Key
	return true
}

// skipSpace returns the index of the first byte at or after i that is not
// whitespace.
func skipSpace(d []byte, i int) int {
	for i < len(d) && d[i] <= ' ' && isSpace(d[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// skipSpace advances past whitespace. Compact JSON has none, so the first
// test usually ends it.
func (s *Scanner) skipSpace() {
	for s.pos < len(s.data) && s.data[s.pos] <= ' ' && isSpace(s.data[s.pos]) {
		s.pos++
	}
}

// next reads one token into s.kind, or sets s.err and s.kind = Invalid.
func (s *Scanner) next() {
	s.skipSpace()
	s.start = s.pos
	switch s.state {
	case stateCommaOrEnd:
		if s.pos == len(s.data) {
			s.fail(s.pos, "unexpected end of input, expected ',' or '%c'", closer(s.top()))
			return
		}
		c := s.data[s.pos]
		if c == ',' {
			s.pos++
			s.skipSpace()
			s.start = s.pos
			if s.top() == '{' {
				s.key()
			} else {
				s.value()
			}
			return
		}
		if c == closer(s.top()) {
			s.pop()
			return
		}
		s.fail(s.pos, "unexpected %s, expected ',' or '%c'", s.quote(s.pos), closer(s.top()))
	case stateValue:
		if s.pos < len(s.data) { // the most common values, one call sooner
			switch c := s.data[s.pos]; {
			case c == '"':
				if s.scanString() {
					s.afterValue()
					s.kind = String
				}
				return
			case isDigit(c) || c == '-':
				if s.scanNumber() {
					s.afterValue()
					s.kind = Number
				}
				return
			}
		}
		s.value()
	case stateKeyOrEnd:
		if s.pos < len(s.data) && s.data[s.pos] == '}' {
			s.pop()
			return
		}
		s.key()
	case stateKey:
		s.key()
	case stateValueOrEnd:
		if s.pos < len(s.data) && s.data[s.pos] == ']' {
			s.pop()
			return
		}
		s.value()
	default: // stateDone
		if s.pos == len(s.data) {
			s.kind, s.err = Invalid, io.EOF
			return
		}
		s.fail(s.pos, "unexpected %s after top-level value", s.quote(s.pos))
	}
}

func closer(open byte) byte {
	if open == '{' {
		return '}'
	}
	return ']'
}

func (s *Scanner) top() byte { return s.stack[len(s.stack)-1] }

// pop closes the innermost container at s.pos.
func (s *Scanner) pop() {
	open := s.top()
	s.stack = s.stack[:len(s.stack)-1]
	s.pos++
	s.afterValue()
	s.kind = EndArray
	if open == '{' {
		s.kind = EndObject
	}
}

func (s *Scanner) afterValue() {
	if len(s.stack) == 0 {
		s.state = stateDone
	} else {
		s.state = stateCommaOrEnd
	}
}

// key reads an object member name and the ':' after it.
func (s *Scanner) key() {
	if s.pos == len(s.data) {
		s.fail(s.pos, "unexpected end of input, expected object member name")
		return
	}
	if s.data[s.pos] != '"' {
		s.fail(s.pos, "unexpected %s, expected '\"' to begin object member name", s.quote(s.pos))
		return
	}
	if !s.scanString() {
		return
	}
	s.skipSpace()
	if s.pos == len(s.data) {
		s.fail(s.pos, "unexpected end of input, expected ':' after object member name")
		return
	}
	if s.data[s.pos] != ':' {
		s.fail(s.pos, "unexpected %s, expected ':' after object member name", s.quote(s.pos))
		return
	}
	s.pos++
	s.state = stateValue
	s.kind = Key
}

func (s *Scanner) value() {
	if s.pos == len(s.data) {
		s.fail(s.pos, "unexpected end of input, expected value")
		return
	}
	switch c := s.data[s.pos]; c {
	case '"':
		if s.scanString() {
			s.afterValue()
			s.kind = String
		}
	case '{', '[':
		if len(s.stack) >= s.maxDepth {
			s.fail(s.pos, "nesting deeper than %d levels", s.maxDepth)
			return
		}
		s.stack = append(s.stack, c)
		s.pos++
		if c == '{' {
			s.state = stateKeyOrEnd
			s.kind = BeginObject
			return
		}
		s.state = stateValueOrEnd
		s.kind = BeginArray
	case 't':
		s.literal("true", True)
	case 'f':
		s.literal("false", False)
	case 'n':
		s.literal("null", Null)
	default:
		if c == '-' || isDigit(c) {
			if s.scanNumber() {
				s.afterValue()
				s.kind = Number
			}
			return
		}
		s.fail(s.pos, "unexpected %s, expected value", s.quote(s.pos))
	}
}

func (s *Scanner) literal(lit string, k Kind) {
	rest := s.data[s.pos:]
	if len(rest) < len(lit) || string(rest[:len(lit)]) != lit {
		s.fail(s.pos, "invalid literal, expected %q", lit)
		return
	}
	s.pos += len(lit)
	s.afterValue()
	s.kind = k
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanNumber checks the RFC 8259 number grammar:
// -? (0 | [1-9][0-9]*) (\.[0-9]+)? ([eE][+-]?[0-9]+)?
func (s *Scanner) scanNumber() bool {
	d := s.data
	i := s.pos
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && isDigit(d[i]):
		i = digitsEnd(d, i+1)
	default:
		return s.fail(i, "invalid number, expected digit")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i == len(d) || !isDigit(d[i]) {
			return s.fail(i, "invalid number, expected digit after '.'")
		}
		i = digitsEnd(d, i+1)
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i == len(d) || !isDigit(d[i]) {
			return s.fail(i, "invalid number, expected digit in exponent")
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	s.end = i
	s.pos = i
	return true
}

// digitStops flags the bytes of x that are not ASCII digits, with the
// same exactness as stringStops: the lowest flagged byte is exact. A byte
// below '0' borrows in x-lsbs·'0', one above '9' carries into the high bit
// in x+lsbs·0x46, and a non-ASCII byte has it already; carries and borrows
// only start at flagged bytes.
func digitStops(x uint64) uint64 {
	return ((x - lsbs*'0') | (x + lsbs*0x46) | x) & msbs
}

// digitsEnd returns the index of the first byte at or after i that is not
// an ASCII digit, or len(d): numbers with many digits, such as shortest
// float64 spellings, take a word at a time.
func digitsEnd(d []byte, i int) int {
	for ; i+8 <= len(d); i += 8 {
		if m := digitStops(binary.LittleEndian.Uint64(d[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(d) && isDigit(d[i]) {
		i++
	}
	return i
}

// Word-at-a-time string scanning: eight bytes are loaded into a uint64
// (byte j in bits 8j..8j+7, whatever the machine's byte order) and every
// byte that ends a run of plain string text is flagged in its high bit.
const (
	lsbs = 0x0101010101010101
	msbs = 0x8080808080808080
)

// stringStops flags the bytes of x that a string scan must stop at: '"',
// '\\', control characters (< 0x20) and non-ASCII bytes (>= 0x80).
//
// Byte j of x-lsbs·c has its high bit set when x_j < c, or x_j >= 0x80+c,
// or a borrow came from byte j-1; a borrow only leaves a byte below c. So
// the lowest flagged byte is always exact (higher ones may be false
// positives), which is all a scan needs.
func stringStops(x uint64) uint64 {
	q := x ^ (lsbs * '"')  // zero where x has '"'
	b := x ^ (lsbs * '\\') // zero where x has '\\'
	return ((q - lsbs) | (b - lsbs) | (x - lsbs*0x20) | x) & msbs
}

// stringStop returns the index of the first byte at or after i that is
// '"', '\\', a control character or non-ASCII, or len(d) if there is none.
func stringStop(d []byte, i int) int {
	for ; i+8 <= len(d); i += 8 {
		if m := stringStops(binary.LittleEndian.Uint64(d[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	if n := len(d) - i; n > 0 && len(d) >= 8 {
		// Fewer than 8 bytes remain: load the last word and shift the ones
		// already seen out. The zero bytes shifted in look like control
		// characters, which is right, as they stand for the end of input.
		m := stringStops(binary.LittleEndian.Uint64(d[len(d)-8:]) >> (8 * (8 - n)))
		return i + min(bits.TrailingZeros64(m)>>3, n)
	}
	for ; i < len(d); i++ {
		if c := d[i]; c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return i
		}
	}
	return i
}

// validUTF8 checks the run of non-ASCII bytes at d[i:] and returns the
// index of the first ASCII byte after it, or reports invalid UTF-8.
func (s *Scanner) validUTF8(i int) (int, bool) {
	d := s.data
	for i < len(d) && d[i] >= utf8.RuneSelf {
		r, size := utf8.DecodeRune(d[i:])
		if r == utf8.RuneError && size <= 1 {
			return i, s.fail(i, "invalid UTF-8 in string")
		}
		i += size
	}
	return i, true
}

// scanString reads the string starting at s.pos (an opening quote) and sets
// the string's bounds. Strings without escapes alias the input.
func (s *Scanner) scanString() bool {
	d := s.data
	begin := s.pos + 1
	i := begin
	for {
		// stringStop, inlined by hand for the common case of a short key
		// or value that ends in the first word or two.
		for i+8 <= len(d) {
			m := stringStops(binary.LittleEndian.Uint64(d[i:]))
			if m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto stop
			}
			i += 8
		}
		i = stringStop(d, i)
	stop:
		if i == len(d) {
			return s.fail(s.pos, "unterminated string")
		}
		switch c := d[i]; {
		case c == '"':
			s.strLo, s.strHi, s.strEsc = begin, i, false
			s.pos = i + 1
			return true
		case c == '\\':
			return s.scanEscaped(begin, i)
		case c < 0x20:
			return s.fail(i, "invalid control character %#02x in string", c)
		}
		var ok bool
		if i, ok = s.validUTF8(i); !ok {
			return false
		}
	}
}

// scanEscaped continues scanString from the first backslash at i, copying
// the unescaped string into s.buf.
func (s *Scanner) scanEscaped(begin, i int) bool {
	d := s.data
	buf := append(s.buf[:0], d[begin:i]...)
	defer func() { s.buf = buf }() // keep the grown buffer, on errors too
	for {
		switch c := d[i]; {
		case c == '"':
			s.strLo, s.strHi, s.strEsc = 0, len(buf), true
			s.pos = i + 1
			return true
		case c == '\\':
			if i+1 == len(d) {
				return s.fail(len(d), "unexpected end of input in escape sequence")
			}
			switch e := d[i+1]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, n, ok := s.unicodeEscape(i)
				if !ok {
					return false
				}
				buf = utf8.AppendRune(buf, r)
				i += n - 2
			default:
				return s.fail(i, "invalid escape sequence %s in string", s.quoteBytes(d[i:i+2]))
			}
			i += 2
		case c < 0x20:
			return s.fail(i, "invalid control character %#02x in string", c)
		default: // non-ASCII
			end, ok := s.validUTF8(i)
			if !ok {
				return false
			}
			buf = append(buf, d[i:end]...)
			i = end
		}
		run := i
		i = stringStop(d, i)
		buf = append(buf, d[run:i]...)
		if i == len(d) {
			return s.fail(s.pos, "unterminated string")
		}
	}
}

// unicodeEscape decodes the \uXXXX escape at i, and the low surrogate
// escape that must follow a high surrogate. It returns the rune and the
// number of input bytes consumed.
func (s *Scanner) unicodeEscape(i int) (rune, int, bool) {
	r, ok := hex4(s.data, i+2)
	if !ok {
		return 0, 0, s.fail(i, "invalid \\u escape in string, expected 4 hex digits")
	}
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		return 0, 0, s.fail(i, "lone low surrogate \\u%04X in string", r)
	case r >= 0xD800 && r <= 0xDBFF:
		j := i + 6
		if j+1 >= len(s.data) || s.data[j] != '\\' || s.data[j+1] != 'u' {
			return 0, 0, s.fail(i, "high surrogate \\u%04X not followed by a low surrogate in string", r)
		}
		lo, ok := hex4(s.data, j+2)
		if !ok {
			return 0, 0, s.fail(j, "invalid \\u escape in string, expected 4 hex digits")
		}
		if lo < 0xDC00 || lo > 0xDFFF {
			return 0, 0, s.fail(i, "high surrogate \\u%04X not followed by a low surrogate in string", r)
		}
		return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), 12, true
	}
	return r, 6, true
}

func hex4(d []byte, i int) (rune, bool) {
	if i+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// fail records a *SyntaxError at byte off as the sticky error and
// returns false, for the token functions to return.
func (s *Scanner) fail(off int, format string, args ...any) bool {
	s.kind = Invalid
	s.err = s.errorf(off, format, args...)
	return false
}

func (s *Scanner) errorf(off int, format string, args ...any) error {
	// The location goes right after what is wrong, before what was expected:
	// "unexpected ']' at byte 4, expected value".
	what, expected, found := strings.Cut(fmt.Sprintf(format, args...), ", expected")
	msg := fmt.Sprintf("%s at byte %d", what, off)
	if found {
		msg += ", expected" + expected
	}
	return &SyntaxError{Offset: off, Msg: msg}
}

// quote describes the byte at i for an error message.
func (s *Scanner) quote(i int) string {
	if i >= len(s.data) {
		return "end of input"
	}
	c := s.data[i]
	if c >= 0x20 && c < 0x7f && c != '\'' {
		return "'" + string(rune(c)) + "'"
	}
	return fmt.Sprintf("byte %#02x", c)
}

func (s *Scanner) quoteBytes(b []byte) string { return fmt.Sprintf("%q", b) }
