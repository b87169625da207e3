package variant

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Value is a read-only view of one Variant value and the metadata its
// object field ids refer to. A Value aliases the bytes it was made from
// and reads only what its methods need; Validate checks a whole value.
//
// Scalar accessors return ok == false when the value is not of a matching
// type. Navigation (Field, Lookup, Index, At) checks every offset it
// follows and returns an error when the bytes are malformed.
type Value struct {
	meta Metadata
	raw  []byte // exactly this value's bytes
}

// New returns a view of the Variant (metadata, value). It parses the
// metadata (see ParseMetadata) and checks that value holds exactly one
// value whose headers are in bounds; nested values are checked when they
// are visited.
func New(metadata, value []byte) (Value, error) {
	m, err := ParseMetadata(metadata)
	if err != nil {
		return Value{}, err
	}
	return NewWithMetadata(m, value)
}

// NewWithMetadata is New for a value whose metadata is already parsed,
// such as a residual value of a shredded column.
func NewWithMetadata(m Metadata, value []byte) (Value, error) {
	n, err := valueSize(value)
	if err != nil {
		return Value{}, fmt.Errorf("variant value: %w", err)
	}
	if n != len(value) {
		return Value{}, fmt.Errorf("variant value: value ends at byte %d, %d bytes follow", n, len(value)-n)
	}
	return Value{meta: m, raw: value}, nil
}

// Metadata returns the metadata the value refers to.
func (v Value) Metadata() Metadata { return v.meta }

// Raw returns the encoded bytes of the value, which together with the
// metadata form a valid Variant on their own.
func (v Value) Raw() []byte { return v.raw }

// Type returns the type of the value, or Invalid for an unknown primitive
// type id (or the zero Value).
func (v Value) Type() Type {
	if len(v.raw) == 0 {
		return Invalid
	}
	h := v.raw[0]
	switch h & 3 {
	case basicPrimitive:
		if id := h >> 2; id < numPrims {
			return primTypes[id]
		}
		return Invalid
	case basicShortString:
		return String
	case basicObject:
		return Object
	}
	return Array
}

func (v Value) primID() byte {
	if len(v.raw) == 0 || v.raw[0]&3 != basicPrimitive {
		return 0xff
	}
	return v.raw[0] >> 2
}

// data returns the primitive value data; its length was checked by valueSize.
func (v Value) data() []byte { return v.raw[1:] }

// Bool returns the value of a boolean.
func (v Value) Bool() (val, ok bool) {
	switch v.primID() {
	case primTrue:
		return true, true
	case primFalse:
		return false, true
	}
	return false, false
}

// Int returns the value of an int8, int16, int32 or int64.
func (v Value) Int() (int64, bool) {
	switch v.primID() {
	case primInt8:
		return int64(int8(v.raw[1])), true
	case primInt16:
		return int64(int16(binary.LittleEndian.Uint16(v.data()))), true
	case primInt32:
		return int64(int32(binary.LittleEndian.Uint32(v.data()))), true
	case primInt64:
		return int64(binary.LittleEndian.Uint64(v.data())), true
	}
	return 0, false
}

// Double returns the value of a double.
func (v Value) Double() (float64, bool) {
	if v.primID() != primDouble {
		return 0, false
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(v.data())), true
}

// Float returns the value of a float.
func (v Value) Float() (float32, bool) {
	if v.primID() != primFloat {
		return 0, false
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(v.data())), true
}

// Decimal returns the value of a decimal4, decimal8 or decimal16. The
// scale is not checked here; Validate rejects scales above 38.
func (v Value) Decimal() (Decimal, bool) {
	d := v.data()
	switch v.primID() {
	case primDecimal4:
		u := int64(int32(binary.LittleEndian.Uint32(d[1:])))
		return Decimal{Hi: u >> 63, Lo: uint64(u), Scale: d[0]}, true
	case primDecimal8:
		u := int64(binary.LittleEndian.Uint64(d[1:]))
		return Decimal{Hi: u >> 63, Lo: uint64(u), Scale: d[0]}, true
	case primDecimal16:
		return Decimal{
			Lo:    binary.LittleEndian.Uint64(d[1:]),
			Hi:    int64(binary.LittleEndian.Uint64(d[9:])),
			Scale: d[0],
		}, true
	}
	return Decimal{}, false
}

// Date returns the value of a date: days since 1970-01-01.
func (v Value) Date() (int32, bool) {
	if v.primID() != primDate {
		return 0, false
	}
	return int32(binary.LittleEndian.Uint32(v.data())), true
}

// Timestamp returns the value of a timestamp, in the unit of its type:
// microseconds for Timestamp and TimestampNTZ, nanoseconds for
// TimestampNanos and TimestampNTZNanos.
func (v Value) Timestamp() (int64, bool) {
	switch v.primID() {
	case primTimestamp, primTimestampNTZ, primTimestampNanos, primTimestampNTZNanos:
		return int64(binary.LittleEndian.Uint64(v.data())), true
	}
	return 0, false
}

// TimeNTZ returns the value of a time without time zone: microseconds
// since midnight.
func (v Value) TimeNTZ() (int64, bool) {
	if v.primID() != primTimeNTZ {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(v.data())), true
}

// UUID returns the value of a uuid, in big-endian (canonical) order.
func (v Value) UUID() ([16]byte, bool) {
	if v.primID() != primUUID {
		return [16]byte{}, false
	}
	return [16]byte(v.data()), true
}

// Bytes returns the bytes of a string (short or long) or a binary value.
// The slice aliases the value; strings are not checked for UTF-8 here.
func (v Value) Bytes() ([]byte, bool) {
	if len(v.raw) == 0 {
		return nil, false
	}
	if v.raw[0]&3 == basicShortString {
		return v.raw[1:], true
	}
	switch v.primID() {
	case primString, primBinary:
		return v.raw[5:], true
	}
	return nil, false
}

// String renders the value as JSON, or describes the error that prevents
// it; it is meant for debugging and messages.
func (v Value) String() string {
	b, err := v.AppendJSON(nil)
	if err != nil {
		return "<invalid variant: " + err.Error() + ">"
	}
	return string(b)
}

// container is the decoded header of an object or array.
type container struct {
	n       int
	idSize  int // objects only
	offSize int
	ids     []byte // objects only
	offs    []byte
	fields  []byte // the values region, up to the last offset
}

// containerOf decodes the header of the object or array b, whose size
// valueSize has already checked.
func containerOf(b []byte) container {
	h := b[0] >> 2
	var c container
	c.offSize = int(h&3) + 1
	large := h>>2&1 != 0
	if b[0]&3 == basicObject {
		c.idSize = int(h>>2&3) + 1
		large = h>>4&1 != 0
	}
	p := 1
	if large {
		c.n = int(binary.LittleEndian.Uint32(b[1:]))
		p += 4
	} else {
		c.n = int(b[1])
		p++
	}
	c.ids = b[p : p+c.n*c.idSize]
	p += len(c.ids)
	c.offs = b[p : p+(c.n+1)*c.offSize]
	p += len(c.offs)
	c.fields = b[p:]
	return c
}

func (c *container) offset(i int) int { return int(readUint(c.offs[i*c.offSize:], c.offSize)) }
func (c *container) id(i int) int     { return int(readUint(c.ids[i*c.idSize:], c.idSize)) }

// child returns element i, checked to lie inside the values region.
func (c *container) child(i int) ([]byte, error) {
	off := c.offset(i)
	if off >= len(c.fields) {
		return nil, fmt.Errorf("element %d: offset %d beyond the %d bytes of values", i, off, len(c.fields))
	}
	b := c.fields[off:]
	n, err := valueSize(b)
	if err != nil {
		return nil, fmt.Errorf("element %d at offset %d: %w", i, off, err)
	}
	return b[:n], nil
}

// Len returns the number of fields of an object or elements of an array,
// and 0 for any other value.
func (v Value) Len() int {
	if t := v.Type(); t != Object && t != Array {
		return 0
	}
	c := containerOf(v.raw)
	return c.n
}

// Index returns element i of an array.
func (v Value) Index(i int) (Value, error) {
	if v.Type() != Array {
		return Value{}, fmt.Errorf("variant: Index on %v, want array", v.Type())
	}
	c := containerOf(v.raw)
	if i < 0 || i >= c.n {
		return Value{}, fmt.Errorf("variant: index %d out of range [0, %d)", i, c.n)
	}
	b, err := c.child(i)
	if err != nil {
		return Value{}, fmt.Errorf("variant array: %w", err)
	}
	return Value{meta: v.meta, raw: b}, nil
}

// Field returns the name and value of field i of an object. Fields are in
// the order of their names.
func (v Value) Field(i int) (name []byte, val Value, err error) {
	if v.Type() != Object {
		return nil, Value{}, fmt.Errorf("variant: Field on %v, want object", v.Type())
	}
	c := containerOf(v.raw)
	if i < 0 || i >= c.n {
		return nil, Value{}, fmt.Errorf("variant: field %d out of range [0, %d)", i, c.n)
	}
	return v.field(&c, i)
}

func (v Value) field(c *container, i int) ([]byte, Value, error) {
	id := c.id(i)
	name := v.meta.Key(id)
	if name == nil && id >= v.meta.Len() {
		return nil, Value{}, fmt.Errorf("variant object: field %d has id %d, dictionary has %d names", i, id, v.meta.Len())
	}
	b, err := c.child(i)
	if err != nil {
		return nil, Value{}, fmt.Errorf("variant object: field %q: %w", name, err)
	}
	return name, Value{meta: v.meta, raw: b}, nil
}

// Lookup returns the field called name of an object. It binary-searches
// the fields, which the spec orders by name; with sorted metadata it
// first finds the name's id and then searches ids, comparing no strings.
func (v Value) Lookup(name string) (Value, bool, error) {
	if v.Type() != Object {
		return Value{}, false, fmt.Errorf("variant: Lookup on %v, want object", v.Type())
	}
	c := containerOf(v.raw)
	lo, hi := 0, c.n
	if v.meta.sorted {
		want, ok := v.meta.Find(name)
		if !ok {
			return Value{}, false, nil
		}
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			switch id := c.id(mid); {
			case id == want:
				_, val, err := v.field(&c, mid)
				return val, err == nil, err
			case id < want:
				lo = mid + 1
			default:
				hi = mid
			}
		}
		return Value{}, false, nil
	}
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		id := c.id(mid)
		key := v.meta.Key(id)
		if key == nil && id >= v.meta.Len() {
			return Value{}, false, fmt.Errorf("variant object: field %d has id %d, dictionary has %d names", mid, id, v.meta.Len())
		}
		switch cmp := compareKey(key, name); {
		case cmp == 0:
			_, val, err := v.field(&c, mid)
			return val, err == nil, err
		case cmp < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return Value{}, false, nil
}

// valueSize returns the size of the value at the start of b, checking
// that its headers, offset tables and last offset are within b.
func valueSize(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("empty value")
	}
	h := b[0]
	switch h & 3 {
	case basicPrimitive:
		id := h >> 2
		if id >= numPrims {
			return 0, fmt.Errorf("unknown primitive type %d", id)
		}
		n := primSizes[id]
		if n < 0 {
			if len(b) < 5 {
				return 0, fmt.Errorf("%v length: need 5 bytes, have %d", primTypes[id], len(b))
			}
			l := uint64(binary.LittleEndian.Uint32(b[1:]))
			if l > uint64(len(b)-5) {
				return 0, fmt.Errorf("%v of %d bytes: only %d bytes left", primTypes[id], l, len(b)-5)
			}
			return 5 + int(l), nil
		}
		if 1+n > len(b) {
			return 0, fmt.Errorf("%v: need %d bytes, have %d", primTypes[id], 1+n, len(b))
		}
		return 1 + n, nil
	case basicShortString:
		n := 1 + int(h>>2)
		if n > len(b) {
			return 0, fmt.Errorf("short string: need %d bytes, have %d", n, len(b))
		}
		return n, nil
	}
	hdr := h >> 2
	offSize := int(hdr&3) + 1
	idSize := 0
	large := hdr>>2&1 != 0
	kind := "array"
	if h&3 == basicObject {
		idSize = int(hdr>>2&3) + 1
		large = hdr>>4&1 != 0
		kind = "object"
	}
	p := 2
	if large {
		p = 5
	}
	if p > len(b) {
		return 0, fmt.Errorf("%s header: need %d bytes, have %d", kind, p, len(b))
	}
	var n uint64
	if large {
		n = uint64(binary.LittleEndian.Uint32(b[1:]))
	} else {
		n = uint64(b[1])
	}
	// Each element takes at least idSize+offSize table bytes; compare
	// before multiplying so that n cannot overflow anything.
	if n > uint64(len(b)) {
		return 0, fmt.Errorf("%s of %d elements: only %d bytes", kind, n, len(b))
	}
	tables := int(n)*idSize + (int(n)+1)*offSize
	if p+tables > len(b) {
		return 0, fmt.Errorf("%s of %d elements: tables need %d bytes, have %d", kind, n, p+tables, len(b))
	}
	last := readUint(b[p+tables-offSize:], offSize)
	if last > uint64(len(b)-p-tables) {
		return 0, fmt.Errorf("%s values end at offset %d, only %d bytes left", kind, last, len(b)-p-tables)
	}
	return p + tables + int(last), nil
}
