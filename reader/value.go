package reader

import (
	"encoding/binary"
	"fmt"
	"iter"
	"math"
	"math/big"
	"strconv"
	"time"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/variant"
)

// Kind is the shape of a Value.
type Kind uint8

// Kinds of Value. The scalar kinds follow the physical types; the logical
// type, which says how to read them, comes from the value's schema node.
const (
	KindNull Kind = iota
	KindBool
	KindInt32
	KindInt64
	KindInt96
	KindFloat
	KindDouble
	KindBytes // BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY
	KindList
	KindMap
	KindGroup
	KindVariant
)

var kindNames = [...]string{"null", "bool", "int32", "int64", "int96", "float", "double", "bytes", "list", "map", "group", "variant"}

// String returns the kind's name in lower case, e.g. "int64".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is one value of a record: a null, a scalar of a physical type, a
// list, a map, a group of named fields, or a Variant. It carries the schema
// node it was read from, whose logical type the typed views (Decimal, Time,
// UUID, ...) and AppendJSON follow. Values share memory with the row
// iterator that produced them only as documented by Rows.Next.
type Value struct {
	kind Kind
	// num holds a bool, an integer or float bits, and for a Variant the
	// length of its metadata.
	num uint64
	// bytes holds a byte array, an INT96, or a Variant's metadata and
	// value back to back. (A record holds a Value per list element, and
	// every field saved here is memory a reader's budget counts.)
	bytes []byte
	elems []Value // list elements; map keys and values alternating; group fields
	node  *schema.Node
}

// variantValue returns a KindVariant Value of metadata and value, which
// must be adjacent in memory (value right after metadata) or be copied.
func variantValue(node *schema.Node, both []byte, metaLen int) Value {
	return Value{kind: KindVariant, node: node, num: uint64(metaLen), bytes: both}
}

func (v Value) variantMeta() []byte  { return v.bytes[:v.num:v.num] }
func (v Value) variantValue() []byte { return v.bytes[v.num:] }

// Kind returns the value's kind.
func (v Value) Kind() Kind { return v.kind }

// IsNull reports whether v is null.
func (v Value) IsNull() bool { return v.kind == KindNull }

// Node returns the schema node the value was read from: the leaf for a
// scalar, the LIST, MAP or VARIANT group, the group of a Group. It is nil
// for the elements of a Variant's reconstruction and for the record root.
func (v Value) Node() *schema.Node { return v.node }

// Logical returns the logical type of the value's node, or the zero Logical.
func (v Value) Logical() schema.Logical {
	if v.node == nil {
		return schema.Logical{}
	}
	return v.node.Logical
}

// Bool returns a KindBool value.
func (v Value) Bool() bool { return v.num != 0 }

// Int32 returns a KindInt32 value.
func (v Value) Int32() int32 { return int32(v.num) }

// Int64 returns a KindInt64 value.
func (v Value) Int64() int64 { return int64(v.num) }

// Float returns a KindFloat value.
func (v Value) Float() float32 { return math.Float32frombits(uint32(v.num)) }

// Double returns a KindDouble value.
func (v Value) Double() float64 { return math.Float64frombits(v.num) }

// Bytes returns the bytes of a KindBytes or KindInt96 value, or the value
// bytes of a KindVariant.
func (v Value) Bytes() []byte {
	switch v.kind {
	case KindVariant:
		return v.variantValue()
	case KindList:
		return nil // a packed list keeps its elements there
	}
	return v.bytes
}

// Int96 returns a KindInt96 value.
func (v Value) Int96() (b [12]byte) {
	copy(b[:], v.bytes)
	return b
}

// List returns the elements of a KindList value. A record holds a list of
// scalars (a LIST of strings or numbers, a repeated primitive field) packed,
// its values as the pages decoded them, and List builds a slice of Values
// for it at each call; Index and Elements walk any list without allocating.
func (v Value) List() []Value {
	if v.kind != KindList {
		return nil
	}
	if pl := v.packed(); pl != nil {
		out := make([]Value, pl.n)
		for i := range out {
			out[i] = pl.at(i)
		}
		return out
	}
	return v.elems
}

// Index returns element i of a KindList value, which must be in
// [0, Len()).
func (v Value) Index(i int) Value {
	if pl := v.packed(); pl != nil {
		if i < 0 || i >= pl.n {
			panic(fmt.Sprintf("reader: list index %d out of range [0, %d)", i, pl.n))
		}
		return pl.at(i)
	}
	if v.kind != KindList {
		panic("reader: Index of a " + v.kind.String() + " value")
	}
	return v.elems[i]
}

// Elements iterates the indexes and elements of a KindList value.
func (v Value) Elements() iter.Seq2[int, Value] {
	return func(yield func(int, Value) bool) {
		if v.kind != KindList {
			return
		}
		for i := range v.Len() {
			if !yield(i, v.Index(i)) {
				return
			}
		}
	}
}

// Len returns the number of elements of a list, entries of a map, or fields
// of a group.
func (v Value) Len() int {
	if v.kind == KindMap {
		return len(v.elems) / 2
	}
	if pl := v.packed(); pl != nil {
		return pl.n
	}
	return len(v.elems)
}

// Entries iterates the keys and values of a KindMap value, in file order.
func (v Value) Entries() iter.Seq2[Value, Value] {
	return func(yield func(Value, Value) bool) {
		if v.kind != KindMap {
			return
		}
		for i := 0; i+1 < len(v.elems); i += 2 {
			if !yield(v.elems[i], v.elems[i+1]) {
				return
			}
		}
	}
}

// Fields iterates the names and values of the fields of a KindGroup value,
// in schema order. Fields left out by a projection are absent.
func (v Value) Fields() iter.Seq2[string, Value] {
	return func(yield func(string, Value) bool) {
		if v.kind != KindGroup {
			return
		}
		for _, f := range v.elems {
			if !yield(f.node.Name, f) {
				return
			}
		}
	}
}

// Field returns the field of a group called name.
func (v Value) Field(name string) (Value, bool) {
	if v.kind == KindGroup {
		for _, f := range v.elems {
			if f.node.Name == name {
				return f, true
			}
		}
	}
	return Value{}, false
}

// Variant returns the Variant held by a KindVariant value. Reconstruction
// from shredded columns has already produced the unshredded bytes.
func (v Value) Variant() (variant.Value, error) {
	return variant.New(v.variantMeta(), v.variantValue())
}

// VariantBytes returns the metadata and value bytes of a KindVariant value.
func (v Value) VariantBytes() (metadata, value []byte) {
	if v.kind != KindVariant {
		return nil, nil
	}
	return v.variantMeta(), v.variantValue()
}

// Decimal returns the unscaled value and scale of a DECIMAL value, stored
// as INT32, INT64, BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY (big-endian two's
// complement).
func (v Value) Decimal() (unscaled *big.Int, scale int32, ok bool) {
	l := v.Logical()
	if l.Kind != schema.Decimal {
		return nil, 0, false
	}
	switch v.kind {
	case KindInt32:
		return big.NewInt(int64(v.Int32())), l.Scale, true
	case KindInt64:
		return big.NewInt(v.Int64()), l.Scale, true
	case KindBytes:
		if checkDecimal(v.bytes, l.Precision) != nil {
			return nil, 0, false
		}
		return signedBig(v.bytes), l.Scale, true
	}
	return nil, 0, false
}

// signedBig interprets b as a big-endian two's complement integer.
func signedBig(b []byte) *big.Int {
	x := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(len(b))*8))
	}
	return x
}

// Time returns the instant of a DATE (midnight UTC), TIMESTAMP or INT96
// value. A timestamp that is not adjusted to UTC is returned as if it were
// UTC, which keeps its wall-clock reading.
func (v Value) Time() (time.Time, bool) {
	l := v.Logical()
	switch {
	case v.kind == KindInt96 && len(v.bytes) == 12:
		return int96Time(v.bytes), true
	case l.Kind == schema.Date && v.kind == KindInt32:
		return time.Unix(int64(v.Int32())*86400, 0).UTC(), true
	case l.Kind == schema.Timestamp && v.kind == KindInt64:
		return unitTime(v.Int64(), l.Unit), true
	}
	return time.Time{}, false
}

// int96Time decodes the legacy INT96 timestamp: nanoseconds of the day,
// then the Julian day number, both little endian.
func int96Time(b []byte) time.Time {
	nanos := int64(binary.LittleEndian.Uint64(b[:8]))
	julian := int64(binary.LittleEndian.Uint32(b[8:12]))
	const unixEpochJulian = 2440588
	return time.Unix((julian-unixEpochJulian)*86400, 0).Add(time.Duration(nanos)).UTC()
}

func unitTime(x int64, u schema.TimeUnit) time.Time {
	switch u {
	case schema.Millis:
		return time.UnixMilli(x).UTC()
	case schema.Micros:
		return time.UnixMicro(x).UTC()
	}
	return time.Unix(0, x).UTC()
}

// TimeOfDay returns a TIME value as the time since midnight.
func (v Value) TimeOfDay() (time.Duration, bool) {
	l := v.Logical()
	if l.Kind != schema.Time {
		return 0, false
	}
	switch {
	case v.kind == KindInt32 && l.Unit == schema.Millis:
		return time.Duration(v.Int32()) * time.Millisecond, true
	case v.kind == KindInt64 && l.Unit == schema.Micros:
		return time.Duration(v.Int64()) * time.Microsecond, true
	case v.kind == KindInt64 && l.Unit == schema.Nanos:
		return time.Duration(v.Int64()), true
	}
	return 0, false
}

// UUID returns a UUID value.
func (v Value) UUID() (u [16]byte, ok bool) {
	if v.Logical().Kind != schema.UUID || v.kind != KindBytes || len(v.bytes) != 16 {
		return u, false
	}
	copy(u[:], v.bytes)
	return u, true
}

// Interval returns the months, days and milliseconds of an INTERVAL value.
func (v Value) Interval() (months, days, millis uint32, ok bool) {
	if v.Logical().Kind != schema.Interval || v.kind != KindBytes || len(v.bytes) != 12 {
		return 0, 0, 0, false
	}
	b := v.bytes
	return binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[8:]), true
}

// Float16 returns a FLOAT16 value widened to float32.
func (v Value) Float16() (float32, bool) {
	if v.Logical().Kind != schema.Float16 || v.kind != KindBytes || len(v.bytes) != 2 {
		return 0, false
	}
	return halfToFloat(binary.LittleEndian.Uint16(v.bytes)), true
}

// halfToFloat widens an IEEE 754 binary16 value, exactly.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinities and NaNs keep their payload
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
	case frac == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: frac × 2^-24.
	f := float32(frac) / (1 << 24)
	if sign != 0 {
		f = -f
	}
	return f
}

// leafValue returns value i of vals as a Value of the leaf n.
func leafValue(n *schema.Node, vals *Values, i int) Value {
	v := Value{node: n}
	switch vals.Type {
	case meta.TypeBoolean:
		v.kind = KindBool
		if vals.Bool[i] {
			v.num = 1
		}
	case meta.TypeInt32:
		v.kind, v.num = KindInt32, uint64(uint32(vals.Int32[i]))
	case meta.TypeInt64:
		v.kind, v.num = KindInt64, uint64(vals.Int64[i])
	case meta.TypeInt96:
		v.kind, v.bytes = KindInt96, vals.Int96[i][:]
	case meta.TypeFloat:
		v.kind, v.num = KindFloat, uint64(math.Float32bits(vals.Float[i]))
	case meta.TypeDouble:
		v.kind, v.num = KindDouble, math.Float64bits(vals.Double[i])
	case meta.TypeByteArray, meta.TypeFixedLenByteArray:
		v.kind, v.bytes = KindBytes, vals.Bytes(i)
	}
	return v
}

// maxDecimalBytes bounds the two's complement bytes of a DECIMAL value that
// the reader renders, whatever precision the schema declares: 4 KiB hold
// about 9,800 digits, far beyond the 76 of the widest decimal any system
// computes with, and keep rendering (whose cost grows faster than the
// length) within microseconds per value.
const maxDecimalBytes = 4 << 10

// significant returns b without the redundant sign-extension bytes at its
// start.
func significant(b []byte) []byte {
	for len(b) > 1 && ((b[0] == 0 && b[1]&0x80 == 0) || (b[0] == 0xff && b[1]&0x80 != 0)) {
		b = b[1:]
	}
	return b
}

// checkDecimal checks that a big-endian two's complement DECIMAL value has
// at most precision digits, in time linear in its length.
func checkDecimal(b []byte, precision int32) error {
	s := significant(b)
	if precision <= 0 {
		return fmt.Errorf("DECIMAL precision %d", precision)
	}
	// Bits a value of precision digits may need: 10^p < 2^bits, plus
	// the sign.
	maxBits := int64(math.Ceil(float64(precision)*math.Log2(10))) + 1
	if int64(len(s))*8-8 >= maxBits {
		return fmt.Errorf("DECIMAL value of %d bytes exceeds precision %d", len(b), precision)
	}
	if len(s) > maxDecimalBytes {
		return fmt.Errorf("DECIMAL value of %d significant bytes: more than the %d bytes the reader renders", len(s), maxDecimalBytes)
	}
	if len(s) <= 64 {
		x := signedBig(s)
		x.Abs(x)
		if x.Cmp(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(precision)), nil)) >= 0 {
			return fmt.Errorf("DECIMAL value %s has more than %d digits", x.String(), precision)
		}
	}
	return nil
}
