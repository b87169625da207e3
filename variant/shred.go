package variant

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"unicode/utf8"
)

// Shape is the shredding schema of one value: what its typed_value column
// holds, per VariantShredding.md. The zero Shape has no typed_value, so
// every value stays in the value column.
//
// Type says what typed_value holds:
//
//   - Invalid: there is no typed_value;
//   - a primitive type (Boolean, Int8 … Int64, Float, Double, Decimal4/8/16
//     with Precision and Scale, Date, Timestamp*, TimeNTZ, String, Binary,
//     UUID): values that fit that type exactly; Null is not allowed;
//   - Object: the Fields, each shredded by its own Shape;
//   - Array: every element shredded by Element.
type Shape struct {
	Type      Type
	Precision uint8 // decimals: total digits, 1-38
	Scale     uint8 // decimals: digits after the point, at most Precision
	Fields    []ShapeField
	Element   *Shape
}

// ShapeField is one shredded field of an object Shape.
type ShapeField struct {
	Name  string
	Shape Shape
}

// Check reports the first thing that makes s unusable: a Null or Invalid
// primitive, a decimal type whose precision does not fit it, fields out of
// name order or repeated, an array without Element. Fields must be sorted
// by name bytes, as SortFields leaves them.
func (s *Shape) Check() error { return s.check(0) }

func (s *Shape) check(depth int) error {
	if depth > MaxDepth {
		return fmt.Errorf("variant shape: nesting deeper than %d levels", MaxDepth)
	}
	switch s.Type {
	case Invalid:
		if len(s.Fields) > 0 || s.Element != nil {
			return fmt.Errorf("variant shape: fields or element without a typed_value")
		}
	case Null:
		return fmt.Errorf("variant shape: null cannot be a shredded type")
	case Decimal4, Decimal8, Decimal16:
		limit := uint8(38)
		switch s.Type {
		case Decimal4:
			limit = 9
		case Decimal8:
			limit = 18
		}
		if s.Precision < 1 || s.Precision > limit || s.Scale > s.Precision {
			return fmt.Errorf("variant shape: %v(%d,%d) needs 1 <= precision <= %d and scale <= precision", s.Type, s.Precision, s.Scale, limit)
		}
	case Object:
		for i, f := range s.Fields {
			if i > 0 && s.Fields[i-1].Name >= f.Name {
				return fmt.Errorf("variant shape: field %q after %q: fields must be unique and sorted by name", f.Name, s.Fields[i-1].Name)
			}
			if err := f.Shape.check(depth + 1); err != nil {
				return fmt.Errorf("field %q: %w", f.Name, err)
			}
		}
	case Array:
		if s.Element == nil {
			return fmt.Errorf("variant shape: array without an element shape")
		}
		if err := s.Element.check(depth + 1); err != nil {
			return fmt.Errorf("element: %w", err)
		}
	default:
		if s.Type > Array {
			return fmt.Errorf("variant shape: unknown type %v", s.Type)
		}
	}
	if s.Type != Object && len(s.Fields) > 0 || s.Type != Array && s.Element != nil {
		return fmt.Errorf("variant shape: %v with fields or an element", s.Type)
	}
	return nil
}

// SortFields orders the fields of every object in s by name bytes, the
// order Check and SplitObject require.
func (s *Shape) SortFields() {
	slices.SortFunc(s.Fields, func(a, b ShapeField) int { return strings.Compare(a.Name, b.Name) })
	for i := range s.Fields {
		s.Fields[i].Shape.SortFields()
	}
	if s.Element != nil {
		s.Element.SortFields()
	}
}

// Typed reports whether s has a typed_value.
func (s *Shape) Typed() bool { return s.Type != Invalid }

// Leaves returns the number of typed_value leaf columns s yields.
func (s *Shape) Leaves() int {
	switch s.Type {
	case Invalid:
		return 0
	case Object:
		n := 0
		for i := range s.Fields {
			n += s.Fields[i].Shape.Leaves()
		}
		return n
	case Array:
		return s.Element.Leaves()
	}
	return 1
}

// String renders s compactly, e.g. {a: int64, b: [string], c: decimal8(12,2)}.
func (s *Shape) String() string { return string(s.appendText(nil)) }

func (s *Shape) appendText(b []byte) []byte {
	switch s.Type {
	case Invalid:
		return append(b, "variant"...)
	case Object:
		b = append(b, '{')
		for i, f := range s.Fields {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = fmt.Appendf(b, "%q: ", f.Name)
			b = f.Shape.appendText(b)
		}
		return append(b, '}')
	case Array:
		b = append(b, '[')
		return append(s.Element.appendText(b), ']')
	case Decimal4, Decimal8, Decimal16:
		return fmt.Appendf(b, "%v(%d,%d)", s.Type, s.Precision, s.Scale)
	}
	return append(b, s.Type.String()...)
}

// Match reports whether v goes to the typed_value of s rather than to the
// value column: v is an object for an object shape, an array for an array
// shape, or a primitive that the shredded type holds without loss. Any
// integer fits an integer shape whose range holds it, and a decimal shape
// of scale 0 whose precision holds it; a decimal fits a decimal shape of
// its own scale whose precision holds it. These are the Exact Numeric
// class of VariantEncoding.md, and the scale must be the value's own so
// that the value reads back as it was written: 1.5 does not match a
// DECIMAL(9,2) shape (it would read back as 1.50, an equal number in
// another form) and stays in the value column, as 1.50 does not match a
// DECIMAL(9,1) one. Strings and binaries only match their own type; Null
// never matches.
func (s *Shape) Match(v Value) bool {
	switch s.Type {
	case Invalid:
		return false
	case Object, Array:
		return v.Type() == s.Type
	case Int8, Int16, Int32, Int64:
		_, ok := s.Int(v)
		return ok
	case Decimal4, Decimal8, Decimal16:
		_, ok := s.Decimal(v)
		return ok
	case Boolean:
		_, ok := v.Bool()
		return ok
	}
	return v.Type() == s.Type
}

// Int returns v as a value of the integer shape s: v is an integer of any
// width within the range of s's width.
func (s *Shape) Int(v Value) (int64, bool) {
	x, ok := v.Int()
	if !ok {
		return 0, false
	}
	switch s.Type {
	case Int8:
		return x, x == int64(int8(x))
	case Int16:
		return x, x == int64(int16(x))
	case Int32:
		return x, x == int64(int32(x))
	case Int64:
		return x, true
	}
	return 0, false
}

// Decimal returns v as a value of the decimal shape s: a decimal of scale
// s.Scale, or an integer when s.Scale is 0, within s.Precision digits. A
// value of another scale does not match (see Match), although it could be
// rescaled exactly: its scale is part of what it reads back as.
func (s *Shape) Decimal(v Value) (Decimal, bool) {
	if s.Type != Decimal4 && s.Type != Decimal8 && s.Type != Decimal16 {
		return Decimal{}, false
	}
	d, ok := v.Decimal()
	if !ok {
		x, isInt := v.Int()
		if !isInt {
			return Decimal{}, false
		}
		d = DecimalFromInt64(x, 0)
	}
	if d.Scale != s.Scale {
		return Decimal{}, false
	}
	return d.Rescale(s.Scale, int(s.Precision))
}

// Rescale returns d with the given scale and the same value, when the
// scale is not below d's and the result has at most precision digits
// (1-38).
func (d Decimal) Rescale(scale uint8, precision int) (Decimal, bool) {
	if scale < d.Scale || precision < 1 || precision > 38 {
		return Decimal{}, false
	}
	hi, lo, neg := d.magnitude()
	for range scale - d.Scale {
		h1, l := bits.Mul64(lo, 10)
		h2, h := bits.Mul64(hi, 10)
		h, carry := bits.Add64(h, h1, 0)
		if h2 != 0 || carry != 0 || h>>63 != 0 {
			return Decimal{}, false
		}
		hi, lo = h, l
	}
	// |unscaled| < 10^precision.
	p := pow10(precision)
	if hi > p[0] || hi == p[0] && lo >= p[1] {
		return Decimal{}, false
	}
	r := Decimal{Hi: int64(hi), Lo: lo, Scale: scale}
	if neg {
		r = r.neg()
	}
	return r, true
}

// pow10 returns 10^n (0 <= n <= 38) as hi, lo.
func pow10(n int) [2]uint64 { return pow10Table[n] }

// pow10Table holds 10^0 … 10^38 as hi, lo.
var pow10Table = func() (t [39][2]uint64) {
	var hi, lo uint64 = 0, 1
	for n := range t {
		t[n] = [2]uint64{hi, lo}
		hi, lo = mulAdd10(hi, lo, 0)
	}
	return t
}()

// FieldIndex returns the index in s.Fields of the field called name, or
// -1; the fields must be sorted (see SortFields).
func (s *Shape) FieldIndex(name []byte) int {
	lo, hi := 0, len(s.Fields)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		switch c := compareKey(name, s.Fields[mid].Name); {
		case c == 0:
			return mid
		case c > 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return -1
}

// SplitObject looks up the fields of the object shape s in the object v.
// It sets found[i] to the value of s.Fields[i], or to the zero Value when v
// has no such field, and appends to residual the encoding of an object
// holding the other fields of v, with the same metadata and field ids; it
// reports whether there were any other fields (when not, residual is left
// as it was). found must have len(s.Fields) elements.
//
// The fields of v are walked in order, merged with the sorted shape
// fields, so the cost is linear in the number of fields.
func (s *Shape) SplitObject(residual []byte, v Value, found []Value) ([]byte, bool, error) {
	if v.Type() != Object {
		return residual, false, fmt.Errorf("variant: SplitObject on %v", v.Type())
	}
	if len(found) != len(s.Fields) {
		return residual, false, fmt.Errorf("variant: SplitObject with %d slots for %d fields", len(found), len(s.Fields))
	}
	clear(found)
	c := containerOf(v.raw)
	// First pass: match names and measure the residual fields.
	rest, restBytes, maxID := 0, 0, 0
	j := 0
	for i := 0; i < c.n; i++ {
		id := c.id(i)
		name := v.meta.Key(id)
		if name == nil && id >= v.meta.Len() {
			return residual, false, fmt.Errorf("variant object: field %d has id %d, dictionary has %d names", i, id, v.meta.Len())
		}
		for j < len(s.Fields) && compareKey(name, s.Fields[j].Name) > 0 {
			j++
		}
		if j < len(s.Fields) && compareKey(name, s.Fields[j].Name) == 0 {
			b, err := c.child(i)
			if err != nil {
				return residual, false, fmt.Errorf("variant object: field %q: %w", name, err)
			}
			found[j] = Value{meta: v.meta, raw: b}
			continue
		}
		b, err := c.child(i)
		if err != nil {
			return residual, false, fmt.Errorf("variant object: field %q: %w", name, err)
		}
		rest++
		restBytes += len(b)
		maxID = max(maxID, id)
	}
	if rest == 0 {
		return residual, false, nil
	}
	if rest == c.n {
		return append(residual, v.raw...), true, nil
	}
	idSize, offSize := sizeFor(uint64(maxID)), sizeFor(uint64(restBytes))
	residual = appendContainerHeader(residual, basicObject, rest, idSize, offSize)
	j = 0
	isShredded := func(i int) bool {
		name := v.meta.Key(c.id(i))
		for j < len(s.Fields) && compareKey(name, s.Fields[j].Name) > 0 {
			j++
		}
		return j < len(s.Fields) && compareKey(name, s.Fields[j].Name) == 0
	}
	for i := 0; i < c.n; i++ {
		if !isShredded(i) {
			residual = appendUint(residual, uint64(c.id(i)), idSize)
		}
	}
	off := 0
	j = 0
	for i := 0; i < c.n; i++ {
		if !isShredded(i) {
			residual = appendUint(residual, uint64(off), offSize)
			b, _ := c.child(i)
			off += len(b)
		}
	}
	residual = appendUint(residual, uint64(off), offSize)
	j = 0
	for i := 0; i < c.n; i++ {
		if !isShredded(i) {
			b, _ := c.child(i)
			residual = append(residual, b...)
		}
	}
	return residual, true, nil
}

// Scalar is a primitive value in Go form, as a shredded typed_value column
// holds it. Type says which field is used:
//
//   - Boolean: Bool;
//   - Int8 … Int64, Date, Timestamp*, TimeNTZ: Int;
//   - Float, Double: Double;
//   - Decimal4/8/16: Decimal (with its scale);
//   - String, Binary: Bytes;
//   - UUID: UUID (big-endian).
type Scalar struct {
	Type    Type
	Bool    bool
	Int     int64
	Double  float64
	Decimal Decimal
	Bytes   []byte
	UUID    [16]byte
}

// Scalar adds a primitive given in Go form; the type is kept exactly
// (an Int16 scalar becomes an int16 even when it would fit in an int8).
func (b *Builder) Scalar(s Scalar) {
	switch s.Type {
	case Null:
		b.Null()
	case Boolean:
		b.Bool(s.Bool)
	case Int8:
		b.checkRange(s.Int, math.MinInt8, math.MaxInt8)
		b.Int8(int8(s.Int))
	case Int16:
		b.checkRange(s.Int, math.MinInt16, math.MaxInt16)
		b.Int16(int16(s.Int))
	case Int32:
		b.checkRange(s.Int, math.MinInt32, math.MaxInt32)
		b.Int32(int32(s.Int))
	case Int64:
		b.Int64(s.Int)
	case Float:
		b.Float(float32(s.Double))
	case Double:
		b.Double(s.Double)
	case Decimal4:
		if err := checkDecimal(s.Decimal, 9); err != nil {
			b.fail(err)
			return
		}
		b.Decimal4(int32(s.Decimal.Lo), s.Decimal.Scale)
	case Decimal8:
		if err := checkDecimal(s.Decimal, 18); err != nil {
			b.fail(err)
			return
		}
		b.Decimal8(int64(s.Decimal.Lo), s.Decimal.Scale)
	case Decimal16:
		b.decimal16(s.Decimal)
	case Date:
		b.checkRange(s.Int, math.MinInt32, math.MaxInt32)
		b.Date(int32(s.Int))
	case Timestamp:
		b.Timestamp(s.Int)
	case TimestampNTZ:
		b.TimestampNTZ(s.Int)
	case TimestampNanos:
		b.TimestampNanos(s.Int)
	case TimestampNTZNanos:
		b.TimestampNTZNanos(s.Int)
	case TimeNTZ:
		b.TimeNTZ(s.Int)
	case String:
		if !utf8.Valid(s.Bytes) {
			b.fail(fmt.Errorf("variant builder: string is not valid UTF-8"))
			return
		}
		b.stringBytes(s.Bytes)
	case Binary:
		b.Binary(s.Bytes)
	case UUID:
		b.UUID(s.UUID)
	default:
		b.fail(fmt.Errorf("variant builder: %v is not a scalar type", s.Type))
	}
}

func (b *Builder) checkRange(x, lo, hi int64) {
	if x < lo || x > hi {
		b.fail(fmt.Errorf("variant builder: %d out of range [%d, %d]", x, lo, hi))
	}
}

// ScalarOf returns the primitive v in Go form, for writing it to a typed
// column of shape s (see Match): integers and decimals are converted to
// the shape's type, other types are returned as they are. ok is false when
// v does not match s.
func (s *Shape) ScalarOf(v Value) (Scalar, bool) {
	out := Scalar{Type: s.Type}
	ok := false
	switch s.Type {
	case Int8, Int16, Int32, Int64:
		out.Int, ok = s.Int(v)
	case Decimal4, Decimal8, Decimal16:
		out.Decimal, ok = s.Decimal(v)
	case Boolean:
		out.Bool, ok = v.Bool()
	case Double:
		out.Double, ok = v.Double()
	case Float:
		var f float32
		f, ok = v.Float()
		out.Double = float64(f)
	case Date:
		var d int32
		d, ok = v.Date()
		out.Int = int64(d)
	case Timestamp, TimestampNTZ, TimestampNanos, TimestampNTZNanos:
		if v.Type() == s.Type {
			out.Int, ok = v.Timestamp()
		}
	case TimeNTZ:
		out.Int, ok = v.TimeNTZ()
	case String, Binary:
		if v.Type() == s.Type {
			out.Bytes, ok = v.Bytes()
		}
	case UUID:
		out.UUID, ok = v.UUID()
	}
	return out, ok
}
