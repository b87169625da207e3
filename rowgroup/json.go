package rowgroup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"sync/atomic"

	"github.com/pqsink/pqsink/internal/jsonscan"
	"github.com/pqsink/pqsink/schema"
)

// RecordError is a record that does not fit the schema, or is not valid
// JSON. Path names the field in JSON terms, e.g. "tags[2].score" or
// `attrs["k"]`; it is empty for problems with the record as a whole.
type RecordError struct {
	Path   string // field path, with list indexes and map keys
	Offset int    // byte offset in the record where the problem was found, or -1
	Err    error  // what is wrong

	// bare makes Error the reason alone: the VARIANT payload's reasons
	// name their path and offset themselves.
	bare bool
}

// Error returns "json record: path: reason (at byte N)"; for the errors
// of a VariantShredder, whose reasons say where they are, the reason.
func (e *RecordError) Error() string {
	if e.bare {
		return e.Err.Error()
	}
	if e.Path == "" {
		return fmt.Sprintf("json record: %v (at byte %d)", e.Err, e.Offset)
	}
	return fmt.Sprintf("json record: %s: %v (at byte %d)", e.Path, e.Err, e.Offset)
}

// Unwrap returns the underlying reason, such as a *jsonscan.SyntaxError.
func (e *RecordError) Unwrap() error { return e.Err }

// JSONOption configures a JSONShredder.
type JSONOption func(*jsonOptions) error

type jsonOptions struct {
	ignoreUnknown    bool
	envelopeFromJSON bool
	lossyNumbers     bool
	units            map[string]schema.TimeUnit // JSONTimestampUnits
	counter          *atomic.Int64              // JSONCountTruncated
}

// LossyNumbers makes a number that underflows a FLOAT or DOUBLE column
// (1e-400: not zero, but below what the type holds) become the value IEEE
// 754 rounding gives, 0 or a subnormal, instead of failing the record, as
// variant.LossyNumbers does for a VARIANT. Defaults to off.
func LossyNumbers() JSONOption {
	return func(o *jsonOptions) error {
		o.lossyNumbers = true
		return nil
	}
}

// IgnoreUnknownFields makes object members that the schema does not declare
// be skipped instead of failing the record. Members of MAP fields are
// entries, never unknown. Defaults to off: an unknown member is an error.
func IgnoreUnknownFields() JSONOption {
	return func(o *jsonOptions) error {
		o.ignoreUnknown = true
		return nil
	}
}

// EnvelopeFromJSON makes a top-level EnvelopeField (_kafka) field an
// ordinary field, filled from the record's _kafka member like any other,
// whatever its shape. convert uses it: a file of JSON lines carries no
// Kafka metadata, and a schema that names a field _kafka means that field.
// Defaults to off: the _kafka group is the Kafka envelope (it must have
// the shape of EnvelopeNode), which the Builder fills from each record's
// Envelope; the shredder fills every other top-level field, and a _kafka
// member at the top of a record is an unknown field (skipped with
// IgnoreUnknownFields).
func EnvelopeFromJSON() JSONOption {
	return func(o *jsonOptions) error {
		o.envelopeFromJSON = true
		return nil
	}
}

// JSONShredder appends JSON records to a row group, one JSON object per
// call, walking the schema and the JSON tokens together. It keeps its
// buffers between records and does not allocate per value once they have
// grown. A JSONShredder is not safe for concurrent use.
//
// Mapping from JSON:
//   - groups from objects; absent members and null fill optional fields
//     with nulls; a required field absent or null is an error, and so is a
//     member twice in one object;
//   - unannotated repeated fields, LIST groups (standard and legacy shapes)
//     from arrays; an empty array gives a defined but empty list, null an
//     undefined one (for an unannotated repeated field, which cannot tell
//     the two apart, null is the empty array); a null element is an error
//     where elements are required;
//   - MAP groups from objects: a member name is converted to the key type
//     (integers, floats, booleans, dates and the like are parsed from the
//     name) and the member value fills the value; duplicate names are kept
//     in order, which readers resolve as last-wins per LogicalTypes.md; a map
//     without a value field takes null or true as member values;
//   - VARIANT groups from any value, encoded as an unshredded Variant; null
//     for an optional VARIANT is a null group, for a required one the
//     Variant null;
//   - leaves by their logical type; see Shred.
type JSONShredder struct {
	g    *RowGroup
	root *jsonPlan
	opts jsonOptions
	undo recordUndo // for Append; Shred goes through b
	b    *Builder   // Shred's rows, without an envelope

	envelope bool // the schema has a top-level _kafka field, and EnvelopeFromJSON fills it

	scan  jsonscan.Scanner
	check jsonscan.Scanner // validates JSON text held in strings
	line  []byte

	// path is where a failed record went wrong, innermost step first: the
	// walk only records it while returning an error, so records that
	// succeed pay nothing for it.
	path []pathElem

	// fast says every top-level field has a fast kind, so that records of
	// the common shape can take fastRecord. After a record that could not,
	// the next fastSkip records go straight to the walk, fastBackoff more
	// each time in a row, so that a stream of another shape pays for few
	// attempts.
	fast                  bool
	fastSkip, fastBackoff int

	buf  []byte // a converted value before it is appended
	cut  int64  // the record's nanosecond timestamps cut to microseconds (JSONCountTruncated)
	dec  decimalScratch
	vars variantEncoder
}

// pathElem is one step of the path: a field name, a list index or a map key.
type pathElem struct {
	name  string
	index int // list index, or the byte offset of a map key in the record
	kind  uint8
}

const (
	pathField uint8 = iota
	pathIndex
	pathKey
)

// at adds step e to the path of err, which a deeper part of the walk
// returned, and returns err.
func (s *JSONShredder) at(e pathElem, err error) error {
	s.path = append(s.path, e)
	return err
}

func fieldStep(name string) pathElem { return pathElem{name: name, kind: pathField} }

func indexStep(i int) pathElem { return pathElem{index: i, kind: pathIndex} }

// NewJSONShredder returns a shredder that appends to g. It fails when the
// schema has a node JSON cannot fill, or, without EnvelopeFromJSON, when
// the schema's top-level _kafka field does not have the shape of
// EnvelopeNode.
//
// The shredder is a Payload: it fills every top-level field but the
// envelope group, and a Builder over g composes rows from its Append and
// an Envelope.
func NewJSONShredder(g *RowGroup, opts ...JSONOption) (*JSONShredder, error) {
	s := &JSONShredder{g: g}
	for _, o := range opts {
		if err := o(&s.opts); err != nil {
			return nil, err
		}
	}
	root := &jsonPlan{kind: planGroup, index: make(map[string]int)}
	for _, f := range g.Schema().Fields() {
		if f.Name == EnvelopeField {
			if !s.opts.envelopeFromJSON {
				continue // the Builder's
			}
			s.envelope = true
		}
		p, err := compilePlan(f, g.Columns())
		if err != nil {
			return nil, fmt.Errorf("json shredder: %w", err)
		}
		root.index[f.Name] = len(root.fields)
		root.fields = append(root.fields, p)
		root.members = append(root.members, newPlanMember(p))
		root.cols = append(root.cols, p.cols...)
	}
	root.seen = make([]bool, len(root.fields))
	if _, err := retimePlans(root, s.opts.units); err != nil {
		return nil, fmt.Errorf("json shredder: %w", err)
	}
	root.prepareMembers()
	s.root = root
	s.fast = root.fastDepth() <= maxFastDepth
	for _, m := range root.members {
		s.fast = s.fast && m.fast != fastNone
	}
	s.undo.init(g)
	var err error
	if s.b, err = NewBuilder(g, s); err != nil {
		return nil, fmt.Errorf("json shredder: %w", err)
	}
	return s, nil
}

func (s *JSONShredder) rowGroup() *RowGroup { return s.g }

func (s *JSONShredder) fillsEnvelope() bool { return s.envelope }

// Append fills the payload part of a row from value, one JSON object, as
// Shred does, without ending the row: it makes the shredder a Payload for
// a Builder. On error the row group is as before and the error is a
// *RecordError.
func (s *JSONShredder) Append(value []byte) error {
	s.undo.begin(s.g)
	if err := s.fill(value, &s.undo); err != nil {
		s.undo.rollback(s.g)
		return err
	}
	return nil
}

// fill appends the record's columns; on error the caller undoes them. u
// has begun at the row group's state before the record: a record that
// leaves the fast path half way is rolled back to it for the walk.
func (s *JSONShredder) fill(line []byte, u *recordUndo) error {
	if s.fast {
		if s.fastSkip == 0 {
			if s.fastRecord(line) {
				s.fastBackoff = 0
				return nil
			}
			u.rollback(s.g)
			s.fastBackoff = min(2*s.fastBackoff+1, maxFastBackoff)
			s.fastSkip = s.fastBackoff
		} else {
			s.fastSkip--
		}
	}
	s.cut = 0
	s.scan.Reset(line)
	s.line = line
	if err := s.record(); err != nil {
		if e, ok := err.(*RecordError); ok {
			e.Path = s.pathString()
		}
		s.path = s.path[:0]
		return err
	}
	s.countCut()
	return nil
}

// Shred parses line, which must hold one JSON object (one line of JSON
// Lines), and appends it to the row group as one row. The record is atomic:
// on error the row group is left as it was, and the error is a
// *RecordError.
//
// Leaf values:
//   - BOOLEAN from true and false;
//   - INT32, INT64 and INTEGER(bits, signed) from numbers with an integral
//     value (1e2 and 1.0 are integers, 1.5 is not), range-checked against
//     the physical and the logical type; unsigned values are stored as
//     their bit pattern;
//   - FLOAT and DOUBLE from numbers and the strings "NaN", "Infinity" and
//     "-Infinity"; overflow is an error, and so is underflow (a number
//     that is not zero but rounds to 0, or to a subnormal it is not)
//     unless LossyNumbers;
//   - FLOAT16 likewise, rounded to nearest even from the exact decimal
//     value; a finite number beyond ±65504 after rounding is an error;
//   - STRING and ENUM from strings; JSON from a string holding JSON text
//     (stored as is) or from any other value (stored as compact JSON text);
//   - BSON, geometries, unannotated BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY from
//     standard padded base64 strings; fixed lengths must match;
//   - UUID from the canonical 8-4-4-4-12 hex string;
//   - DATE from "YYYY-MM-DD" or an integer of days since 1970-01-01;
//   - TIME from "HH:MM:SS[.fraction]" or an integer in the column's unit;
//   - TIMESTAMP from RFC 3339 strings (adjusted-to-UTC columns need an
//     offset or Z and are normalized to UTC; local columns take the time as
//     written, without an offset or with Z) or an integer in the unit
//     (JSONTimestampUnits's, when it names the column);
//   - INT96 from RFC 3339 strings (legacy Impala layout);
//   - DECIMAL(p,s) from numbers or numeric strings, exactly, without
//     floating point;
//   - INTERVAL from {"months":m,"days":d,"millis":ms}, each an unsigned
//     32-bit integer, absent members being 0;
//   - UNKNOWN from null only.
//
// Fraction digits beyond what a column keeps are an error unless they are
// zeros: no value is rounded except floating point ones.
//
// Shred is Builder.Append without an Envelope: for a schema with the
// envelope group (and without EnvelopeFromJSON) it fails on every record
// with an error wrapping ErrEnvelope.
func (s *JSONShredder) Shred(line []byte) error {
	return s.b.Append(line, nil)
}

func (s *JSONShredder) record() error {
	k, err := s.next()
	if err != nil {
		return err
	}
	if k != jsonscan.BeginObject {
		return s.errorf("expected a JSON object for the record, got %s", describe(k))
	}
	if err := s.group(s.root, 0); err != nil {
		return err
	}
	if _, err := s.scan.Next(); err != io.EOF {
		return s.syntax(err)
	}
	return nil
}

// maxFastBackoff bounds the records that skip the fast path after a miss:
// a stream of records that all miss it spends under 2% on attempts.
const maxFastBackoff = 63

// fastRecord fills the row from line when the record has the common shape:
// compact JSON whose members come in schema order (optional ones may be
// null or absent, but not the first of an object), each value of the kind
// and spelling its
// field expects (strings without escapes, numbers and timestamps that
// convert). It reads the bytes directly, without the Scanner's token by
// token state machine, and appends what the walk would. For anything else
// it returns false, leaving whatever it appended for the caller to undo
// and the record to the walk, which also finds any error: the fast path
// never decides that a record is bad.
func (s *JSONShredder) fastRecord(d []byte) bool {
	i := 0
	for i < len(d) && jsonscan.IsSpace(d[i]) {
		i++
	}
	if i == len(d) || d[i] != '{' {
		return false
	}
	i, ok := s.fastGroup(s.root, 0, d, i+1)
	if !ok {
		return false
	}
	for i < len(d) && jsonscan.IsSpace(d[i]) {
		i++
	}
	return i == len(d)
}

// fastGroup reads the members of group p after its '{', through its '}',
// and returns the index after it.
func (s *JSONShredder) fastGroup(p *jsonPlan, rep uint8, d []byte, i int) (int, bool) {
	for j := range p.members {
		m := &p.members[j]
		f := m.plan
		if !m.lit.At(d, i) {
			if f.required {
				return 0, false
			}
			// An optional member may hold null instead of the value lit
			// expects, or be absent: what the walk does for both is nulls.
			// Taking it for absent cannot accept a record the walk would
			// read differently: the record must then go on with the next
			// members in schema order and end with '}', which a member out
			// of order, twice or unknown never does.
			s.nulls(f, rep, p.def)
			lit := m.lit.String()
			if n := len(lit) - 1; m.open != 0 && len(d)-i >= n+4 && string(d[i:i+n]) == lit[:n] && string(d[i+n:i+n+4]) == "null" {
				i += n + 4
			}
			continue
		}
		i += m.litLen
		var next int
		ok := false
		// The scalars are read here rather than through readScalar: one
		// switch on the kind, and no call for the common ones.
		switch m.fast {
		case fastString:
			// The common string, plain ASCII, without readString's call.
			if k := plainEnd(d, i); k < len(d) && d[k] == '"' {
				c := f.col
				c.value(rep)
				// Strings of up to 16 bytes are copied as two words into
				// the room past the column's bytes, when there is room
				// and d holds 16 bytes from i, without a call to memmove:
				// the bytes past the new length are not the column's.
				if b, l := c.Bytes, len(c.Bytes); k-i <= 16 && len(d)-i >= 16 && cap(b)-l >= 16 {
					w, t := d[i:i+16], b[l:l+16]
					binary.LittleEndian.PutUint64(t, binary.LittleEndian.Uint64(w))
					binary.LittleEndian.PutUint64(t[8:], binary.LittleEndian.Uint64(w[8:]))
					c.Bytes = b[:l+k-i]
				} else {
					c.Bytes = append(b, d[i:k]...)
				}
				c.Offsets = append(c.Offsets, uint32(len(c.Bytes)))
				next, ok = k+1, true
			} else {
				next, ok = readString(f.col, rep, d, i)
			}
		case fastTimestamp:
			// readTimestamp's common case, without its call.
			if v, n, plain := parseTimestampText(d[i:], f.node.Logical.Unit, &f.dates); plain && i+n < len(d) && d[i+n] == '"' {
				f.col.AppendInt64(rep, v)
				next, ok = i+n+1, true
			} else {
				next, ok = readTimestamp(f, rep, d, i)
			}
		case fastGroup:
			next, ok = s.fastGroup(f, rep, d, i)
		case fastList:
			next, ok = s.fastList(f, rep, d, i)
		case fastInt64, fastInt32:
			// readInteger's common case, without its call: 1 to 18
			// digits without a sign, in range, followed by what follows
			// a value in compact JSON. readInteger reads anything else.
			um, k := shortDigits(d, i)
			v, plain := int64(um), true
			if n := k - i; uint(n-1) > 17 || um > f.rng.pos || d[i] == '0' && n > 1 || k == len(d) || d[k] != ',' && d[k]|0x20 != '}' {
				v, k, plain = readInteger(d, i, f.rng)
			}
			if plain {
				if m.fast == fastInt64 {
					f.col.AppendInt64(rep, v)
				} else {
					f.col.AppendInt32(rep, int32(v)) // the low bits, as appendInt keeps
				}
				next, ok = k, true
			}
		case fastDouble:
			// readDouble's common case, without its call: digits without
			// a sign, then a fraction, 19 digits in all, or an integer
			// of up to 15, followed by what follows a value in compact
			// JSON. readDouble reads anything else.
			var v float64
			um, k := shortDigits(d, i)
			plain := false
			if n := k - i; n > 0 && (d[i] != '0' || n == 1) && k < len(d) {
				if d[k] == '.' {
					fm, e := parseDigits(d, k+1, um)
					frac := e - k - 1
					if n == 1 && d[i] == '0' {
						n = 0 // "0.ddd": the zero is not a digit of m
					}
					if frac > 0 && n+frac <= 19 && e < len(d) && (d[e] == ',' || d[e]|0x20 == '}') {
						v, k, plain = decimalFloat64(fm, frac, false), e, true
					}
				} else if n <= 15 && (d[k] == ',' || d[k]|0x20 == '}') {
					v, plain = float64(um), true
				}
			}
			if !plain {
				v, k, plain = readDouble(d, i)
			}
			if plain {
				f.col.AppendDouble(rep, v)
				next, ok = k, true
			}
		case fastBool:
			// readScalar's, without its call, where d holds 5 bytes.
			if len(d)-i >= 5 {
				if w := d[i : i+5]; string(w[:4]) == "true" {
					f.col.AppendBool(rep, true)
					next, ok = i+4, true
				} else if string(w) == "false" {
					f.col.AppendBool(rep, false)
					next, ok = i+5, true
				}
			} else {
				next, ok = readScalar(f, m.fast, rep, d, i)
			}
		default:
			next, ok = readScalar(f, m.fast, rep, d, i)
		}
		if ok {
			i = next
			continue
		}
		// A scalar may be null; what the other kinds expect opens lit.
		if m.open != 0 || f.required || len(d)-i < 4 || string(d[i:i+4]) != "null" {
			return 0, false
		}
		s.nulls(f, rep, p.def)
		i += 4
	}
	if i == len(d) || d[i] != '}' {
		return 0, false
	}
	return i + 1, true
}

// fastList reads the elements of LIST p after its '[', through its ']'.
func (s *JSONShredder) fastList(p *jsonPlan, rep uint8, d []byte, i int) (int, bool) {
	if i < len(d) && d[i] == ']' {
		s.nulls(p, rep, p.def) // what list does for an empty array
		return i + 1, true
	}
	r := rep
	for {
		if i == len(d) {
			return 0, false
		}
		var ok bool
		switch k := p.elemFast; k {
		case fastString, fastTimestamp:
			if d[i] != '"' {
				return 0, false
			}
			if k == fastString {
				if e := plainEnd(d, i+1); e < len(d) && d[e] == '"' {
					// readString's common case, copied as fastGroup does.
					c, j := p.elem.col, i+1
					c.value(r)
					if b, l := c.Bytes, len(c.Bytes); e-j <= 16 && len(d)-j >= 16 && cap(b)-l >= 16 {
						w, t := d[j:j+16], b[l:l+16]
						binary.LittleEndian.PutUint64(t, binary.LittleEndian.Uint64(w))
						binary.LittleEndian.PutUint64(t[8:], binary.LittleEndian.Uint64(w[8:]))
						c.Bytes = b[:l+e-j]
					} else {
						c.Bytes = append(b, d[j:e]...)
					}
					c.Offsets = append(c.Offsets, uint32(len(c.Bytes)))
					i, ok = e+1, true
				} else {
					i, ok = readString(p.elem.col, r, d, i+1)
				}
			} else {
				i, ok = readTimestamp(p.elem, r, d, i+1)
			}
		default:
			i, ok = readScalar(p.elem, k, r, d, i)
		}
		if !ok || i == len(d) {
			return 0, false
		}
		switch d[i] {
		case ']':
			return i + 1, true
		case ',':
			i++
			r = p.innerRep
		default:
			return 0, false
		}
	}
}

// plainEnd returns the index of the first byte from d[i] on that ends a
// run of plain string text (see jsonscan.StringStops), or one in the
// last 8 bytes of d: the closing quote, for most strings, when d[k] is
// '"'. Small enough to be inlined, it spares the common string a call.
func plainEnd(d []byte, i int) int {
	for len(d)-i >= 8 {
		if m := jsonscan.StringStops(binary.LittleEndian.Uint64(d[i : i+8])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	return i
}

// readString appends the string whose text starts at d[i], after its
// quote, and returns the index after its closing quote. Most strings are
// plain ASCII: it looks for the quote a word at a time here, and leaves
// the rest of a string with another stop (an escape, a control character
// or non-ASCII text) to PlainString, from that stop on.
func readString(c *Column, rep uint8, d []byte, i int) (int, bool) {
	j := i
	for len(d)-j >= 8 {
		if m := jsonscan.StringStops(binary.LittleEndian.Uint64(d[j:])); m != 0 {
			j += bits.TrailingZeros64(m) >> 3
			if d[j] == '"' {
				c.appendText(rep, d[i:j])
				return j + 1, true
			}
			break
		}
		j += 8
	}
	end, ok := jsonscan.PlainString(d, j)
	if !ok {
		return 0, false
	}
	c.appendText(rep, d[i:end])
	return end + 1, true
}

// readTimestamp converts the RFC 3339 string whose text starts at d[i],
// as leaf does.
func readTimestamp(p *jsonPlan, rep uint8, d []byte, i int) (int, bool) {
	if v, n, ok := parseTimestampText(d[i:], p.node.Logical.Unit, &p.dates); ok && i+n < len(d) && d[i+n] == '"' {
		p.col.AppendInt64(rep, v)
		return i + n + 1, true
	}
	end, ok := jsonscan.PlainString(d, i)
	if !ok {
		return 0, false
	}
	v, err := parseTimestamp(d[i:end], p.node.Logical.Unit, p.node.Logical.UTC, &p.dates)
	if err != nil {
		return 0, false
	}
	p.col.AppendInt64(rep, v)
	return end + 1, true
}

// readScalar converts the number or boolean at d[i] for leaf p, as leaf
// would from its token, and returns the index after it.
func readScalar(p *jsonPlan, kind fastKind, rep uint8, d []byte, i int) (int, bool) {
	c := p.col
	switch kind {
	case fastInt64:
		v, end, ok := readInteger(d, i, p.rng)
		if !ok {
			return 0, false
		}
		c.AppendInt64(rep, v)
		return end, true
	case fastInt32:
		v, end, ok := readInteger(d, i, p.rng)
		if !ok {
			return 0, false
		}
		c.AppendInt32(rep, int32(v)) // the low bits, as appendInt keeps
		return end, true
	case fastDouble:
		v, end, ok := readDouble(d, i)
		if !ok {
			return 0, false
		}
		c.AppendDouble(rep, v)
		return end, true
	case fastUUID:
		// A quoted canonical UUID is a string without escapes: its bytes
		// are the value the walk converts.
		if len(d)-i >= 38 && d[i] == '"' && d[i+37] == '"' {
			var u [16]byte
			if b, err := appendUUID(u[:0], d[i+1:i+37]); err == nil {
				c.AppendBytes(rep, b)
				return i + 38, true
			}
		}
	case fastDecimal:
		// The walk's conversion, of the string's bytes when it has no
		// escapes or of the number's literal.
		start, end := i, 0
		if i < len(d) && d[i] == '"' {
			var ok bool
			if end, ok = jsonscan.PlainString(d, i+1); !ok {
				return 0, false
			}
			start = i + 1
		} else {
			var ok bool
			if end, ok = jsonscan.NumberEnd(d, i); !ok {
				return 0, false
			}
		}
		l := p.node.Logical
		v, err := parseDecimalInt(d[start:end], l.Precision, l.Scale)
		if err != nil {
			return 0, false
		}
		appendInt(c, rep, v)
		if start > i {
			end++ // the closing quote
		}
		return end, true
	case fastTimestampMillis:
		return readTimestampMillis(p, rep, d, i)
	case fastBool:
		if len(d)-i >= 4 && string(d[i:i+4]) == "true" {
			c.AppendBool(rep, true)
			return i + 4, true
		}
		if len(d)-i >= 5 && string(d[i:i+5]) == "false" {
			c.AppendBool(rep, false)
			return i + 5, true
		}
	}
	return 0, false
}

// readInteger converts the number at d[i] to an integer in r and returns
// the index after it: parseInteger of the number's token, read in the same
// pass that finds where the token ends for the common spelling (plainInteger's).
func readInteger(d []byte, i int, r intRange) (int64, int, bool) {
	j := i
	neg := j < len(d) && d[j] == '-'
	if neg {
		j++
	}
	m, k := shortDigits(d, j)
	if n := k - j; n == 0 || n > 19 || d[j] == '0' && n > 1 || k < len(d) && (d[k] == '.' || d[k]|0x20 == 'e') {
		end, ok := jsonscan.NumberEnd(d, i)
		if !ok {
			return 0, 0, false
		}
		v, err := parseInteger(d[i:end], r)
		return v, end, err == nil
	}
	if neg && m > r.neg || !neg && m > r.pos {
		return 0, 0, false
	}
	if neg {
		return -int64(m), k, true
	}
	return int64(m), k, true
}

// shortDigits reads the decimal digits of d from i on as parseDigits does,
// wrapping alike, a byte at a time: for the few digits of most integers
// and integer parts, inlined, that is quicker than parseDigits' word test.
func shortDigits(d []byte, i int) (uint64, int) {
	var m uint64
	for ; i < len(d); i++ {
		c := d[i] - '0'
		if c > 9 {
			break
		}
		m = m*10 + uint64(c)
	}
	return m, i
}

// readDouble converts the number at d[i] to a float64 and returns the
// index after it: parseNumber of the number's token, read in the same pass
// that finds where the token ends for the spellings exactFloat64 takes.
func readDouble(d []byte, i int) (float64, int, bool) {
	j := i
	neg := j < len(d) && d[j] == '-'
	if neg {
		j++
	}
	m, k := shortDigits(d, j)
	ni, f := k-j, 0 // integer and fraction digits
	plain := ni > 0 && (d[j] != '0' || ni == 1)
	if plain && k < len(d) && d[k] == '.' {
		var e int
		m, e = parseDigits(d, k+1, m)
		f, k = e-k-1, e
		plain = f > 0
	}
	n := ni + f // digits in m
	if ni == 1 && d[j] == '0' {
		n = f // "0.ddd": the zero is not one
	}
	if !plain || n > 19 || f > 19 || k < len(d) && d[k]|0x20 == 'e' {
		end, ok := jsonscan.NumberEnd(d, i)
		if !ok {
			return 0, 0, false
		}
		v, err := parseNumber(d[i:end], 64)
		return v, end, err == nil
	}
	return decimalFloat64(m, f, neg), k, true
}

// next reads the next token, turning a syntax error into a RecordError.
func (s *JSONShredder) next() (jsonscan.Kind, error) {
	k, err := s.scan.Next()
	if err != nil {
		return k, s.syntax(err)
	}
	return k, nil
}

// group fills the fields of p from the object whose BeginObject was just
// read.
func (s *JSONShredder) group(p *jsonPlan, rep uint8) error {
	seen := p.seen
	next := 0  // records usually list members in schema order: try that first
	found := 0 // fields seen
	// While the members come in schema order, the fields seen are those
	// before next, and seen is neither cleared nor kept: the first member
	// out of order (or a second one for a field) fills it in.
	ordered := true
	for {
		i := next
		if next >= len(p.members) || !s.scan.NextIs(&p.members[next].key) {
			k, err := s.next()
			if err != nil {
				return err
			}
			if k == jsonscan.EndObject {
				break
			}
			name := s.scan.Bytes()
			ok := next < len(p.fields) && p.fields[next].name == string(name) // spelled with escapes
			if !ok {
				i, ok = p.index[string(name)]
			}
			if !ok {
				if !s.opts.ignoreUnknown {
					return s.at(fieldStep(string(name)), s.errorf("unknown field"))
				}
				if err := s.skipValue(); err != nil {
					return err
				}
				continue
			}
		}
		m := &p.members[i]
		f := m.plan
		if ordered && i != next {
			ordered = false
			for j := range seen {
				seen[j] = j < next
			}
		}
		if !ordered {
			if seen[i] {
				return s.at(fieldStep(f.name), s.errorf("field appears twice in the object"))
			}
			seen[i] = true
		}
		found++
		next = i + 1
		k, err := s.next()
		if err != nil {
			return s.at(fieldStep(f.name), err)
		}
		if m.flat && k != jsonscan.Null { // the common case, without the detour
			if m.str && k == jsonscan.String {
				f.col.AppendBytes(rep, s.scan.Bytes()) // what leaf does for it
			} else {
				err = s.leaf(f, rep, k, s.scan.Bytes(), false)
			}
		} else {
			err = s.field(f, rep, p.def, k)
		}
		if err != nil {
			return s.at(fieldStep(f.name), err)
		}
	}
	if found == len(p.fields) {
		return nil
	}
	for i, f := range p.fields {
		if ordered && i < next || !ordered && seen[i] {
			continue
		}
		if f.required {
			return s.at(fieldStep(f.name), s.errorf("missing required field"))
		}
		s.nulls(f, rep, p.def)
	}
	return nil
}

// field fills node f from the value whose first token k was just read;
// parentDef is the definition level of f's parent.
func (s *JSONShredder) field(f *jsonPlan, rep, parentDef uint8, k jsonscan.Kind) error {
	switch {
	case k == jsonscan.Null:
		if f.required {
			if f.kind == planVariant {
				return s.variant(f, rep, k)
			}
			return s.errorf("null for a required field")
		}
		s.nulls(f, rep, parentDef)
		return nil
	case f.repeated:
		return s.repeated(f, rep, parentDef, k)
	}
	return s.instance(f, rep, k)
}

// repeated fills an unannotated repeated field from an array.
func (s *JSONShredder) repeated(f *jsonPlan, rep, parentDef uint8, k jsonscan.Kind) error {
	if k != jsonscan.BeginArray {
		return s.errorf("expected array for repeated field %s, got %s", f.name, describe(k))
	}
	n := 0
	for ; ; n++ {
		k, err := s.next()
		if err != nil {
			return err
		}
		if k == jsonscan.EndArray {
			break
		}
		r := rep
		if n > 0 {
			r = f.rep
		}
		if k == jsonscan.Null {
			return s.at(indexStep(n), s.errorf("null element in repeated field %s", f.name))
		}
		if err := s.instance(f, r, k); err != nil {
			return s.at(indexStep(n), err)
		}
	}
	if n == 0 {
		s.nulls(f, rep, parentDef)
	}
	return nil
}

// instance fills one present value of node f, ignoring f's repetition.
func (s *JSONShredder) instance(f *jsonPlan, rep uint8, k jsonscan.Kind) error {
	switch f.kind {
	case planGroup:
		if k != jsonscan.BeginObject {
			return s.errorf("expected object for group %s, got %s", f.name, describe(k))
		}
		return s.group(f, rep)
	case planList:
		return s.list(f, rep, k)
	case planMap:
		return s.mapping(f, rep, k)
	case planVariant:
		return s.variant(f, rep, k)
	}
	return s.leaf(f, rep, k, s.scan.Bytes(), false)
}

// list fills a LIST group from an array.
func (s *JSONShredder) list(p *jsonPlan, rep uint8, k jsonscan.Kind) error {
	if k != jsonscan.BeginArray {
		return s.errorf("expected array for LIST field %s, got %s", p.name, describe(k))
	}
	n := 0
	for ; ; n++ {
		k, err := s.next()
		if err != nil {
			return err
		}
		if k == jsonscan.EndArray {
			break
		}
		r := rep
		if n > 0 {
			r = p.innerRep
		}
		switch {
		case p.twoLevel:
			if k == jsonscan.Null {
				return s.at(indexStep(n), s.errorf("null element in LIST field %s, whose elements are required", p.name))
			}
			err = s.instance(p.elem, r, k)
		case p.elemFlat && k != jsonscan.Null:
			err = s.leaf(p.elem, r, k, s.scan.Bytes(), false) // what field would do, sooner
		default:
			err = s.field(p.elem, r, p.innerDef, k)
		}
		if err != nil {
			return s.at(indexStep(n), err)
		}
	}
	if n == 0 {
		s.nulls(p, rep, p.def)
	}
	return nil
}

// mapping fills a MAP group from an object, one entry per member.
func (s *JSONShredder) mapping(p *jsonPlan, rep uint8, k jsonscan.Kind) error {
	if k != jsonscan.BeginObject {
		return s.errorf("expected object for MAP field %s, got %s", p.name, describe(k))
	}
	n := 0
	for ; ; n++ {
		k, err := s.next()
		if err != nil {
			return err
		}
		if k == jsonscan.EndObject {
			break
		}
		r := rep
		if n > 0 {
			r = p.innerRep
		}
		// The key is named in the path by its offset: its bytes may not
		// outlive the next token, and copying them for every entry would
		// cost records that succeed.
		step := pathElem{index: s.scan.Offset(), kind: pathKey}
		if err := s.mapKey(p.elem, r, s.scan.Bytes()); err != nil {
			return s.at(step, err)
		}
		if k, err = s.next(); err != nil {
			return s.at(step, err)
		}
		switch {
		case p.value != nil:
			err = s.field(p.value, r, p.innerDef, k)
		case k != jsonscan.Null && k != jsonscan.True:
			err = s.errorf("MAP field %s has no values: expected null or true, got %s", p.name, describe(k))
		}
		if err != nil {
			return s.at(step, err)
		}
	}
	if n == 0 {
		s.nulls(p, rep, p.def)
	}
	return nil
}

// mapKey converts a member name to the key column's type, reading it as the
// JSON token it would be in a value position: numbers and booleans from
// their literal text, everything else from the string.
func (s *JSONShredder) mapKey(p *jsonPlan, rep uint8, name []byte) error {
	k := jsonscan.String
	switch p.conv {
	case convBool:
		switch string(name) {
		case "true":
			k = jsonscan.True
		case "false":
			k = jsonscan.False
		}
	case convInt, convFloat, convDouble, convFloat16, convDate, convTime, convTimestamp, convTimestampMillis, convTimestampNanos, convTimeMillis:
		if _, special := specialFloat(name); !special {
			if _, ok := parseDecimalLiteral(name); ok {
				k = jsonscan.Number
			}
		}
	}
	return s.leaf(p, rep, k, name, true)
}

// nulls writes a null for node p at definition level def into every column
// under it.
func (s *JSONShredder) nulls(p *jsonPlan, rep, def uint8) {
	for _, c := range p.cols {
		c.Null(rep, def)
	}
}

// skipValue skips the value after an ignored member name.
func (s *JSONShredder) skipValue() error {
	k, err := s.next()
	if err != nil {
		return err
	}
	if k == jsonscan.BeginObject || k == jsonscan.BeginArray {
		if err := s.scan.Skip(); err != nil {
			return s.syntax(err)
		}
	}
	return nil
}

// rawValue returns the JSON text of the value whose first token k was just
// read, consuming the rest of it.
func (s *JSONShredder) rawValue(k jsonscan.Kind) ([]byte, error) {
	start := s.scan.Offset()
	end := start
	switch k {
	case jsonscan.BeginObject, jsonscan.BeginArray:
		if err := s.scan.Skip(); err != nil {
			return nil, s.syntax(err)
		}
		end = s.scan.Offset() + 1 // the closing bracket
	case jsonscan.String:
		end = stringEnd(s.line, start)
	case jsonscan.Number:
		end = start + len(s.scan.Bytes())
	case jsonscan.True, jsonscan.Null:
		end = start + 4
	case jsonscan.False:
		end = start + 5
	}
	if end > len(s.line) {
		end = len(s.line)
	}
	return s.line[start:end], nil
}

// describe names a token kind the way a JSON user thinks of it.
func describe(k jsonscan.Kind) string {
	switch k {
	case jsonscan.Null:
		return "null"
	case jsonscan.True, jsonscan.False:
		return "boolean"
	case jsonscan.Number:
		return "number"
	case jsonscan.String:
		return "string"
	case jsonscan.BeginObject:
		return "object"
	case jsonscan.BeginArray:
		return "array"
	}
	return k.String()
}

// errorf returns a RecordError at the current token; Shred fills in its
// path.
func (s *JSONShredder) errorf(format string, args ...any) error {
	return &RecordError{Offset: s.scan.Offset(), Err: fmt.Errorf(format, args...)}
}

// syntax wraps a scanner error.
func (s *JSONShredder) syntax(err error) error {
	if err == nil {
		err = errors.New("unexpected data after the record")
	}
	off := s.scan.Offset()
	var se *jsonscan.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset
	}
	return &RecordError{Offset: off, Err: err}
}

// pathString renders the path, which the walk recorded innermost step
// first: fields joined by dots, list indexes and map keys in brackets.
func (s *JSONShredder) pathString() string {
	var b []byte
	for i := len(s.path) - 1; i >= 0; i-- {
		e := s.path[i]
		switch e.kind {
		case pathField:
			if i < len(s.path)-1 {
				b = append(b, '.')
			}
			b = append(b, e.name...)
		case pathIndex:
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(e.index), 10)
			b = append(b, ']')
		case pathKey:
			b = append(b, '[')
			b = strconv.AppendQuote(b, string(s.mapKeyAt(e.index)))
			b = append(b, ']')
		}
	}
	return string(b)
}

// mapKeyAt returns the unescaped member name whose string starts at byte
// off of the record. The walk has already read it, so it is valid JSON.
func (s *JSONShredder) mapKeyAt(off int) []byte {
	if off < 0 || off >= len(s.line) {
		return nil
	}
	s.check.Reset(s.line[off:])
	if k, err := s.check.Next(); err != nil || k != jsonscan.String {
		return nil
	}
	return s.check.Bytes()
}
