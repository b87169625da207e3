package variant

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"math/big"
	"slices"
	"unicode/utf8"
	"unsafe"
)

// Builder assembles one Variant from typed values, for sources that are
// not JSON (Avro records, Kafka envelopes, reconstruction of shredded
// columns). Values are added in document order: scalars with the typed
// methods, objects between BeginObject and EndObject with a Key before
// each field, arrays between BeginArray and EndArray. Object fields may be
// added in any order; Finish sorts them by name and writes a sorted,
// de-duplicated dictionary with the smallest widths that fit.
//
// A Builder keeps its buffers across Finish calls, so reusing one per
// goroutine makes building allocation-free once the buffers have grown.
// The first misuse or invalid input is remembered and returned by Finish.
// The zero Builder is ready to use.
type Builder struct {
	// data holds the value being built from base on: scalars as they are
	// added, and each closed container in its final form (its header and
	// offsets written in front of its elements, which are moved into
	// name order for an object), except that object field ids are
	// provisional (ids of keys) until Finish writes their ranks. No tree
	// is kept: an element costs its bytes and, while its container is
	// open, one start offset.
	data    []byte
	base    int    // where the value starts in data
	own     []byte // the Builder's buffer while data is a caller's (Encoder)
	inPlace bool   // data is a caller's slice (buildIn)
	starts  []uint32
	fields  []field // names of the elements of open objects, in starts order
	open    []frame
	objs    []objRef // closed objects, for Finish to write their field ids
	// scratch for closing objects
	perm     []int32
	moved    []byte
	newOff   []uint32
	pending  int  // 1 + key id of the next field's name, 0 if none
	pendPos  int  // source offset of the pending key
	rootDone bool // a complete top-level value was added
	hasRoot  bool // a top-level value was begun
	values   int  // values begun, in document order
	dupErr   error
	dupAt    int // values when the object holding dupErr began
	keys     keyTable
	// Orders of the objects of the last records, by the index of the
	// object in the record, valid while records intern the same names
	// (keyTable.same); and whether rank is of those names.
	orders    []objOrder
	closed    int // objects closed in this record
	rankValid bool
	rank      []int32 // final (sorted) id of each key
	sorted    []int32 // key ids in name order
	lastWins  bool
	err       error
}

// objOrder is the field order of an object: the key ids of its fields as
// added, and the permutation that sorts them by name.
type objOrder struct {
	keys    []int32
	perm    []int32
	inOrder bool
}

// maxOrders bounds the objects per record whose order is remembered, and
// maxOrderFields the fields of one.
const (
	maxOrders      = 64
	maxOrderFields = 1024
)

// maxKept bounds the bytes of scratch a Builder keeps between values: one
// huge record does not leave a huge Builder behind (a sink holds one per
// partition).
const maxKept = 4 << 20

// field is the name of an element of an open object.
type field struct {
	key int32 // key id
	pos int   // source offset of the key, for error messages; -1 if none
}

// frame is an open object or array.
type frame struct {
	kind   uint8
	start  uint32 // of its bytes, from base
	starts int    // objects: index in Builder.starts of its first element
	count  int    // arrays: elements
	fields int    // objects: index in Builder.fields of its first field
	objs   int    // index in Builder.objs of the first object closed inside it
	order  int    // Builder.values when it began
}

// objRef locates the field ids of a closed object.
type objRef struct {
	pos    uint32 // of the first id, from base
	n      uint32 // fields
	idSize uint8
}

const (
	kindScalar uint8 = iota
	kindObject
	kindArray
)

// Reset discards everything added since the last Finish or Reset.
func (b *Builder) Reset() {
	if b.inPlace {
		b.data, b.own, b.inPlace = b.own, nil, false
	}
	if cap(b.data)+cap(b.moved)+4*(cap(b.starts)+cap(b.perm)+cap(b.newOff))+16*cap(b.fields)+12*cap(b.objs) > maxKept {
		// A huge value: do not hold its buffers for the values after it.
		b.data, b.moved, b.starts, b.perm, b.newOff, b.fields, b.objs = nil, nil, nil, nil, nil, nil, nil
	}
	b.data = b.data[:0]
	b.base = 0
	b.starts = b.starts[:0]
	b.fields = b.fields[:0]
	b.open = b.open[:0]
	b.objs = b.objs[:0]
	b.pending = 0
	b.pendPos = -1
	b.rootDone = false
	b.hasRoot = false
	b.values = 0
	b.dupErr = nil
	if len(b.keys.refs) > 0 && !b.keys.identical() {
		b.orders = b.orders[:0]
		b.rankValid = false
	}
	b.closed = 0
	b.keys.reset()
	b.err = nil
}

// buildIn makes the Builder build its value at the end of dst, which
// Finish then returns grown, instead of in its own buffer: the Encoder
// uses it to write straight into the caller's slice.
func (b *Builder) buildIn(dst []byte) {
	b.own, b.data, b.base, b.inPlace = b.data[:0], dst, len(dst), true
}

func (b *Builder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Err returns the first error met so far.
func (b *Builder) Err() error { return b.err }

// begin checks that a value starting at start (in data) may be added
// here, and records it as an element of the open container.
func (b *Builder) begin(kind uint8, start int) bool {
	if b.err != nil {
		return false
	}
	if start-b.base > math.MaxUint32 {
		b.fail(fmt.Errorf("variant builder: value of more than %d bytes exceeds 4 GiB", start-b.base))
		return false
	}
	if len(b.open) == 0 {
		if b.rootDone {
			b.fail(fmt.Errorf("variant builder: second top-level value"))
			return false
		}
		if kind == kindScalar {
			b.rootDone = true
		}
		b.hasRoot = true
	} else {
		f := &b.open[len(b.open)-1]
		if f.kind == kindArray {
			// Arrays keep no per-element state: closeArray finds the
			// elements by their sizes.
			f.count++
		} else {
			if b.pending == 0 {
				b.fail(fmt.Errorf("variant builder: object field value without a Key"))
				return false
			}
			b.fields = append(b.fields, field{key: int32(b.pending - 1), pos: b.pendPos})
			b.pending = 0
			b.starts = append(b.starts, uint32(start-b.base))
		}
	}
	b.values++
	return true
}

// scalarFrom adds the scalar encoded in b.data since start.
func (b *Builder) scalarFrom(start int) {
	if !b.begin(kindScalar, start) {
		b.data = b.data[:start]
	}
}

func (b *Builder) prim(id byte, payload ...byte) {
	start := len(b.data)
	b.data = append(b.data, primitiveHeader(id))
	b.data = append(b.data, payload...)
	b.scalarFrom(start)
}

// Null adds a null.
func (b *Builder) Null() { b.prim(primNull) }

// Bool adds a boolean.
func (b *Builder) Bool(v bool) {
	if v {
		b.prim(primTrue)
	} else {
		b.prim(primFalse)
	}
}

// Int8 adds an int8.
func (b *Builder) Int8(v int8) { b.prim(primInt8, byte(v)) }

// Int16 adds an int16.
func (b *Builder) Int16(v int16) { b.prim(primInt16, byte(v), byte(v>>8)) }

// Int32 adds an int32.
func (b *Builder) Int32(v int32) { b.fixed32(primInt32, uint32(v)) }

// Int64 adds an int64.
func (b *Builder) Int64(v int64) { b.fixed64(primInt64, uint64(v)) }

// Int adds v as the smallest of int8, int16, int32 and int64 that holds it.
func (b *Builder) Int(v int64) {
	switch {
	case v == int64(int8(v)):
		b.Int8(int8(v))
	case v == int64(int16(v)):
		b.Int16(int16(v))
	case v == int64(int32(v)):
		b.Int32(int32(v))
	default:
		b.Int64(v)
	}
}

func (b *Builder) fixed32(id byte, v uint32) {
	start := len(b.data)
	b.data = append(b.data, primitiveHeader(id))
	b.data = binary.LittleEndian.AppendUint32(b.data, v)
	b.scalarFrom(start)
}

func (b *Builder) fixed64(id byte, v uint64) {
	start := len(b.data)
	b.data = append(b.data, primitiveHeader(id))
	b.data = binary.LittleEndian.AppendUint64(b.data, v)
	b.scalarFrom(start)
}

// Float adds a float.
func (b *Builder) Float(v float32) { b.fixed32(primFloat, math.Float32bits(v)) }

// Double adds a double.
func (b *Builder) Double(v float64) { b.fixed64(primDouble, math.Float64bits(v)) }

// Date adds a date: days since 1970-01-01.
func (b *Builder) Date(days int32) { b.fixed32(primDate, uint32(days)) }

// Timestamp adds a timestamp in microseconds since the epoch, UTC.
func (b *Builder) Timestamp(micros int64) { b.fixed64(primTimestamp, uint64(micros)) }

// TimestampNTZ adds a timestamp without time zone in microseconds.
func (b *Builder) TimestampNTZ(micros int64) { b.fixed64(primTimestampNTZ, uint64(micros)) }

// TimestampNanos adds a timestamp in nanoseconds since the epoch, UTC.
func (b *Builder) TimestampNanos(nanos int64) { b.fixed64(primTimestampNanos, uint64(nanos)) }

// TimestampNTZNanos adds a timestamp without time zone in nanoseconds.
func (b *Builder) TimestampNTZNanos(nanos int64) { b.fixed64(primTimestampNTZNanos, uint64(nanos)) }

// TimeNTZ adds a time of day without time zone, in microseconds since
// midnight; it must be in [0, 24h).
func (b *Builder) TimeNTZ(micros int64) {
	if micros < 0 || micros >= microsPerDay {
		b.fail(fmt.Errorf("variant builder: time_ntz %d µs is not a time of day", micros))
		return
	}
	b.fixed64(primTimeNTZ, uint64(micros))
}

// UUID adds a uuid given in big-endian (canonical) byte order.
func (b *Builder) UUID(u [16]byte) { b.prim(primUUID, u[:]...) }

// Binary adds a binary value.
func (b *Builder) Binary(p []byte) {
	start := len(b.data)
	b.data = append(b.data, primitiveHeader(primBinary))
	b.data = binary.LittleEndian.AppendUint32(b.data, uint32(len(p)))
	b.data = append(b.data, p...)
	b.scalarFrom(start)
}

// String adds a string, which must be valid UTF-8. Strings shorter than
// 64 bytes use the short string encoding.
func (b *Builder) String(s string) {
	if !utf8.ValidString(s) {
		b.fail(fmt.Errorf("variant builder: string is not valid UTF-8"))
		return
	}
	start := len(b.data)
	b.data = appendString(b.data, s)
	b.scalarFrom(start)
}

// stringBytes adds a string already known to be valid UTF-8.
func (b *Builder) stringBytes(s []byte) {
	start := len(b.data)
	b.data = appendString(b.data, s)
	b.scalarFrom(start)
}

func appendString[S string | []byte](dst []byte, s S) []byte {
	if len(s) < 64 {
		dst = append(dst, byte(len(s))<<2|basicShortString)
		return append(dst, s...)
	}
	dst = append(dst, primitiveHeader(primString))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

// Decimal4 adds a decimal4: unscaled × 10^-scale with at most 9 digits.
func (b *Builder) Decimal4(unscaled int32, scale uint8) {
	if err := checkDecimal(DecimalFromInt64(int64(unscaled), scale), 9); err != nil {
		b.fail(err)
		return
	}
	b.prim(primDecimal4, scale, byte(unscaled), byte(unscaled>>8), byte(unscaled>>16), byte(unscaled>>24))
}

// Decimal8 adds a decimal8: unscaled × 10^-scale with at most 18 digits.
func (b *Builder) Decimal8(unscaled int64, scale uint8) {
	if err := checkDecimal(DecimalFromInt64(unscaled, scale), 18); err != nil {
		b.fail(err)
		return
	}
	start := len(b.data)
	b.data = append(b.data, primitiveHeader(primDecimal8), scale)
	b.data = binary.LittleEndian.AppendUint64(b.data, uint64(unscaled))
	b.scalarFrom(start)
}

// Decimal16 adds a decimal16 whose unscaled value is given as big-endian
// two's complement bytes (at most 16, sign-extended), as Avro and Parquet
// store decimals.
func (b *Builder) Decimal16(unscaledBigEndian []byte, scale uint8) {
	if len(unscaledBigEndian) > 16 {
		b.fail(fmt.Errorf("variant builder: decimal16 of %d bytes", len(unscaledBigEndian)))
		return
	}
	var be [16]byte
	if len(unscaledBigEndian) > 0 && unscaledBigEndian[0]&0x80 != 0 {
		be = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	copy(be[16-len(unscaledBigEndian):], unscaledBigEndian)
	b.decimal16(Decimal{
		Hi:    int64(binary.BigEndian.Uint64(be[:8])),
		Lo:    binary.BigEndian.Uint64(be[8:]),
		Scale: scale,
	})
}

func (b *Builder) decimal16(d Decimal) {
	if err := checkDecimal(d, 38); err != nil {
		b.fail(err)
		return
	}
	start := len(b.data)
	b.data = append(b.data, primitiveHeader(primDecimal16), d.Scale)
	b.data = binary.LittleEndian.AppendUint64(b.data, d.Lo)
	b.data = binary.LittleEndian.AppendUint64(b.data, uint64(d.Hi))
	b.scalarFrom(start)
}

// Decimal adds d as the narrowest of decimal4, decimal8 and decimal16
// whose precision holds both d's digits and its scale.
func (b *Builder) Decimal(d Decimal) {
	switch p := max(d.Precision(), int(d.Scale)); {
	case p <= 9:
		b.Decimal4(int32(d.Lo), d.Scale)
	case p <= 18:
		b.Decimal8(int64(d.Lo), d.Scale)
	default:
		b.decimal16(d)
	}
}

// BigDecimal adds unscaled × 10^-scale as the narrowest decimal type
// that holds it; it fails beyond 38 digits.
func (b *Builder) BigDecimal(unscaled *big.Int, scale uint8) {
	if unscaled.BitLen() > 127 {
		b.fail(fmt.Errorf("variant builder: decimal %s has more than 38 digits", unscaled))
		return
	}
	var mag big.Int
	mag.Abs(unscaled)
	var buf [16]byte
	mag.FillBytes(buf[:])
	hi, lo := binary.BigEndian.Uint64(buf[:8]), binary.BigEndian.Uint64(buf[8:])
	d := Decimal{Hi: int64(hi), Lo: lo, Scale: scale}
	if unscaled.Sign() < 0 {
		d = d.neg()
	}
	b.Decimal(d)
}

func (d Decimal) neg() Decimal {
	lo, borrow := bits64Sub(0, d.Lo)
	return Decimal{Hi: -d.Hi - int64(borrow), Lo: lo, Scale: d.Scale}
}

func bits64Sub(x, y uint64) (uint64, uint64) {
	d := x - y
	if y > x {
		return d, 1
	}
	return d, 0
}

func checkDecimal(d Decimal, maxDigits int) error {
	if d.Scale > 38 {
		return fmt.Errorf("variant builder: decimal scale %d above 38", d.Scale)
	}
	if p := d.Precision(); p > maxDigits {
		return fmt.Errorf("variant builder: decimal %s has %d digits, at most %d fit", d, p, maxDigits)
	}
	return nil
}

// BeginObject starts an object; add fields with Key and a value each.
func (b *Builder) BeginObject() { b.beginContainer(kindObject) }

// BeginArray starts an array.
func (b *Builder) BeginArray() { b.beginContainer(kindArray) }

func (b *Builder) beginContainer(kind uint8) {
	if len(b.open) >= MaxDepth {
		b.fail(fmt.Errorf("variant builder: nesting deeper than %d levels", MaxDepth))
		return
	}
	start := len(b.data)
	if b.begin(kind, start) {
		b.open = append(b.open, frame{kind: kind, start: uint32(start - b.base), starts: len(b.starts),
			fields: len(b.fields), objs: len(b.objs), order: b.values})
	}
}

// Key sets the name of the next field of the current object. The name
// must be valid UTF-8.
func (b *Builder) Key(name string) {
	if !utf8.ValidString(name) {
		b.fail(fmt.Errorf("variant builder: field name %q is not valid UTF-8", name))
		return
	}
	// intern only reads the name (and copies it), so viewing the string's
	// bytes is safe and saves an allocation per field.
	b.key(unsafe.Slice(unsafe.StringData(name), len(name)), -1)
}

// key sets the pending key; pos is its source offset for messages.
func (b *Builder) key(name []byte, pos int) {
	if b.err != nil {
		return
	}
	if len(b.open) == 0 || b.open[len(b.open)-1].kind != kindObject {
		b.fail(fmt.Errorf("variant builder: Key %q outside an object", name))
		return
	}
	if b.pending != 0 {
		b.fail(fmt.Errorf("variant builder: Key %q after Key without a value", name))
		return
	}
	b.pending = b.keys.intern(name) + 1
	b.pendPos = pos
}

// EndObject ends the current object.
func (b *Builder) EndObject() { b.end(kindObject) }

// EndArray ends the current array.
func (b *Builder) EndArray() { b.end(kindArray) }

func (b *Builder) end(kind uint8) {
	if b.err != nil {
		return
	}
	if len(b.open) == 0 || b.open[len(b.open)-1].kind != kind {
		b.fail(fmt.Errorf("variant builder: End%s without a matching Begin", kindName(kind == kindObject)))
		return
	}
	if b.pending != 0 {
		b.fail(fmt.Errorf("variant builder: object ends after a Key without a value"))
		return
	}
	f := b.open[len(b.open)-1]
	b.open = b.open[:len(b.open)-1]
	if kind == kindArray {
		b.closeArray(&f)
	} else {
		b.closeObject(&f)
	}
	if len(b.open) == 0 {
		b.rootDone = true
	}
}

// Value adds a copy of v, which may come from another Variant: object
// field names are re-interned into this Builder's dictionary. v is
// checked as it is copied.
func (b *Builder) Value(v Value) {
	if b.err != nil {
		return
	}
	if len(v.raw) == 0 {
		b.fail(fmt.Errorf("variant builder: empty Value"))
		return
	}
	if err := b.copyValue(v, 0); err != nil {
		b.fail(fmt.Errorf("variant builder: copying value: %w", err))
	}
}

func (b *Builder) copyValue(v Value, depth int) error {
	switch v.Type() {
	case Object:
		c := containerOf(v.raw)
		b.BeginObject()
		for i := 0; i < c.n; i++ {
			name, field, err := v.field(&c, i)
			if err != nil {
				return err
			}
			if !utf8.Valid(name) {
				return fmt.Errorf("field name %q is not valid UTF-8", name)
			}
			b.key(name, -1)
			if err := b.copyValue(field, depth+1); err != nil {
				return fmt.Errorf("field %q: %w", name, err)
			}
		}
		b.EndObject()
	case Array:
		c := containerOf(v.raw)
		b.BeginArray()
		for i := 0; i < c.n; i++ {
			raw, err := c.child(i)
			if err != nil {
				return err
			}
			if err := b.copyValue(Value{meta: v.meta, raw: raw}, depth+1); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		b.EndArray()
	case Invalid:
		return fmt.Errorf("unknown primitive type %d", v.raw[0]>>2)
	default:
		// Scalars do not refer to the metadata: copy their bytes after
		// the same checks the decoder makes.
		d := decoder{meta: v.meta}
		if _, err := d.walk(nil, v.raw, depth); err != nil {
			return err
		}
		start := len(b.data)
		b.data = append(b.data, v.raw...)
		b.scalarFrom(start)
	}
	return b.err
}

// Finish appends the metadata and value of the Variant built since the
// last Reset to the given slices, and resets the Builder.
func (b *Builder) Finish(metadata, value []byte) ([]byte, []byte, error) {
	defer b.Reset()
	metadata, err := b.finish(metadata)
	if err != nil {
		return metadata, value, err
	}
	if b.inPlace { // built in value already
		return metadata, b.data, nil
	}
	return metadata, append(value, b.data...), nil
}

// finish checks the value, writes the final field ids into it and
// appends the metadata. The value is b.data[b.base:].
func (b *Builder) finish(metadata []byte) ([]byte, error) {
	switch {
	case b.err != nil:
		return metadata, b.err
	case len(b.open) > 0:
		return metadata, fmt.Errorf("variant builder: %d objects or arrays not ended", len(b.open))
	case !b.hasRoot:
		return metadata, fmt.Errorf("variant builder: no value")
	case b.dupErr != nil:
		return metadata, b.dupErr
	case len(b.data)-b.base > math.MaxUint32:
		return metadata, fmt.Errorf("variant builder: value of %d bytes exceeds 4 GiB", len(b.data)-b.base)
	}
	b.sortKeys()
	// Fields are in name order, and ranks follow names, so the last
	// field has the largest rank: the width it needs is the object's.
	same := true
	for _, r := range b.objs {
		if r.n > 0 {
			p := b.base + int(r.pos) + int(r.n-1)*int(r.idSize)
			last := b.rank[readUint(b.data[p:], int(r.idSize))]
			if sizeFor(uint64(last)) != int(r.idSize) {
				same = false
				break
			}
		}
	}
	if same {
		for _, r := range b.objs {
			w := int(r.idSize)
			p := b.base + int(r.pos)
			for i := 0; i < int(r.n); i, p = i+1, p+w {
				putUint(b.data[p:], uint64(b.rank[readUint(b.data[p:], w)]), w)
			}
		}
	} else {
		// Some object needs wider (or narrower) ids than it was given: lay
		// the value out again with the final ids. Only a record of more
		// than 256 names can get here.
		b.moved = append(b.moved[:0], b.data[b.base:]...)
		b.data = b.relayout(b.data[:b.base], b.moved, 0)
	}
	return b.appendMetadata(metadata), nil
}

// relayout appends v, a value built with provisional field ids, with the
// final ones (b.rank), and the widths and offsets that they give.
func (b *Builder) relayout(dst, v []byte, depth int) []byte {
	basic := v[0] & 3
	if basic != basicObject && basic != basicArray {
		return append(dst, v...)
	}
	c := containerOf(v)
	start := len(dst)
	var offs []uint32
	maxID := 0
	for i := 0; i < c.n; i++ {
		child, _ := c.child(i) // valid: the Builder wrote it
		offs = append(offs, uint32(len(dst)-start))
		dst = b.relayout(dst, child, depth+1)
		if basic == basicObject {
			maxID = max(maxID, int(b.rank[c.id(i)]))
		}
	}
	sum := len(dst) - start
	offSize, idSize := sizeFor(uint64(sum)), 0
	if basic == basicObject {
		idSize = sizeFor(uint64(maxID))
	}
	hdr := containerSize(c.n, idSize, 0) + (c.n+1)*(offSize-1)
	dst = slices.Grow(dst, hdr)[:len(dst)+hdr]
	copy(dst[start+hdr:], dst[start:start+sum])
	h := appendContainerHeader(dst[start:start], basic, c.n, idSize, offSize)
	for i := 0; i < c.n && idSize > 0; i++ {
		h = appendUint(h, uint64(b.rank[c.id(i)]), idSize)
	}
	for _, o := range offs {
		h = appendUint(h, uint64(o), offSize)
	}
	appendUint(h, uint64(sum), offSize)
	return dst
}

// closeArray writes the header and offsets of the array f in front of
// its elements.
func (b *Builder) closeArray(f *frame) {
	cs := b.base + int(f.start)
	n := f.count
	sum := len(b.data) - cs
	offSize := sizeFor(uint64(sum))
	hdr := containerSize(n, 0, 0) + (n+1)*(offSize-1)
	b.data = slices.Grow(b.data, hdr)[:len(b.data)+hdr]
	copy(b.data[cs+hdr:], b.data[cs:cs+sum])
	h := appendContainerHeader(b.data[cs:cs], basicArray, n, 0, offSize)
	elems := b.data[cs+hdr:]
	off := 0
	for range n {
		h = appendUint(h, uint64(off), offSize)
		size, _ := valueSize(elems[off:]) // valid: the Builder wrote it
		off += size
	}
	appendUint(h, uint64(sum), offSize)
	for i := f.objs; i < len(b.objs); i++ {
		b.objs[i].pos += uint32(hdr)
	}
}

// closeObject orders the fields of the object f by name, drops repeated
// names (keeping the last, or recording the error), and writes the header,
// provisional field ids and offsets in front of them.
func (b *Builder) closeObject(f *frame) {
	cs := b.base + int(f.start)
	starts := b.starts[f.starts:]
	fields := b.fields[f.fields:]
	n := len(starts)
	end := uint32(len(b.data) - b.base)
	k := b.closed
	b.closed++
	if b.keys.same && k < len(b.orders) && sameKeys(b.orders[k].keys, fields) {
		o := &b.orders[k]
		b.layoutObject(f, cs, starts, fields, end, o.perm, o.inOrder)
		return
	}
	perm := b.perm[:0]
	inOrder := true
	for i := range n {
		perm = append(perm, int32(i))
		if i > 0 && inOrder && bytes.Compare(b.keys.name(fields[i-1].key), b.keys.name(fields[i].key)) >= 0 {
			inOrder = false
		}
	}
	dups := false
	if !inOrder {
		// Order by name, then by position so that the last of equal
		// names comes last.
		slices.SortFunc(perm, func(x, y int32) int {
			if x == y {
				return 0
			}
			if kx, ky := fields[x].key, fields[y].key; kx != ky {
				return bytes.Compare(b.keys.name(kx), b.keys.name(ky))
			}
			return int(x - y)
		})
		out := perm[:0]
		for j, c := range perm {
			if j+1 < len(perm) && fields[perm[j+1]].key == fields[c].key {
				dups = true
				if !b.lastWins && (b.dupErr == nil || f.order > b.dupAt) {
					dup := fields[perm[j+1]]
					name := b.keys.name(dup.key)
					if dup.pos >= 0 {
						b.dupErr = fmt.Errorf("variant: duplicate key %q at byte %d", name, dup.pos)
					} else {
						b.dupErr = fmt.Errorf("variant builder: duplicate key %q", name)
					}
					b.dupAt = f.order
				}
				continue
			}
			out = append(out, c)
		}
		perm = out
	}
	b.perm = perm
	if b.keys.same && !dups && k < maxOrders && n <= maxOrderFields {
		if k >= len(b.orders) {
			b.orders = append(b.orders, make([]objOrder, k+1-len(b.orders))...)
		}
		o := &b.orders[k]
		o.keys = o.keys[:0]
		for _, fd := range fields {
			o.keys = append(o.keys, fd.key)
		}
		o.perm = append(o.perm[:0], perm...)
		o.inOrder = inOrder
	}
	b.layoutObject(f, cs, starts, fields, end, perm, inOrder)
}

// sameKeys reports whether fields have the given key ids.
func sameKeys(keys []int32, fields []field) bool {
	if len(keys) != len(fields) {
		return false
	}
	for i, k := range keys {
		if fields[i].key != k {
			return false
		}
	}
	return true
}

// layoutObject writes the object f with its fields in the order perm
// (the identity when inOrder).
func (b *Builder) layoutObject(f *frame, cs int, starts []uint32, fields []field, end uint32, perm []int32, inOrder bool) {
	n := len(starts)
	size := func(i int32) uint32 {
		if int(i)+1 < n {
			return starts[i+1] - starts[i]
		}
		return end - starts[i]
	}
	m := len(perm)
	sum, maxID := uint32(0), int32(0)
	for _, c := range perm {
		sum += size(c)
		maxID = max(maxID, fields[c].key)
	}
	idSize, offSize := sizeFor(uint64(maxID)), sizeFor(uint64(sum))
	hdr := containerSize(m, idSize, 0) + (m+1)*(offSize-1)
	if inOrder {
		b.data = slices.Grow(b.data, hdr)[:len(b.data)+hdr]
		copy(b.data[cs+hdr:], b.data[cs:cs+int(sum)])
		for i := f.objs; i < len(b.objs); i++ {
			b.objs[i].pos += uint32(hdr)
		}
	} else {
		b.moved = append(b.moved[:0], b.data[cs:]...)
		b.data = slices.Grow(b.data[:cs], hdr+int(sum))[:cs+hdr]
		// Where each kept element goes, from f.start; dropped ones get 0.
		b.newOff = slices.Grow(b.newOff[:0], n)[:n]
		clear(b.newOff)
		for _, c := range perm {
			b.newOff[c] = uint32(len(b.data)-cs) + 1 // +1: 0 marks dropped
			st := starts[c] - f.start
			b.data = append(b.data, b.moved[st:st+size(c)]...)
		}
		// Objects closed inside an element move with it, or go with a
		// dropped one.
		kept := b.objs[:f.objs]
		for _, r := range b.objs[f.objs:] {
			i, _ := slices.BinarySearch(starts, r.pos+1)
			i-- // the element starting at or before r.pos
			if off := b.newOff[i]; off != 0 {
				r.pos = r.pos - starts[i] + f.start + off - 1
				kept = append(kept, r)
			}
		}
		b.objs = kept
	}
	h := appendContainerHeader(b.data[cs:cs], basicObject, m, idSize, offSize)
	for _, c := range perm {
		h = appendUint(h, uint64(fields[c].key), idSize)
	}
	off := uint32(0)
	for _, c := range perm {
		h = appendUint(h, uint64(off), offSize)
		off += size(c)
	}
	appendUint(h, uint64(off), offSize)
	b.objs = append(b.objs, objRef{pos: f.start + uint32(1+countSize(m)), n: uint32(m), idSize: uint8(idSize)})
	b.starts = b.starts[:f.starts]
	b.fields = b.fields[:f.fields]
}

// countSize is the size of the element count of a container of n.
func countSize(n int) int {
	if n > 255 {
		return 4
	}
	return 1
}

// containerSize is the encoded size of an object (idSize > 0) or array
// (idSize == 0) of count elements taking sum bytes, with 1-byte offsets
// when sum is 0 (the header alone, for a caller that adds its offsets'
// extra bytes).
func containerSize(count, idSize, sum int) int {
	return 1 + countSize(count) + count*idSize + (count+1)*sizeFor(uint64(sum)) + sum
}

func appendContainerHeader(dst []byte, basic byte, count, idSize, offSize int) []byte {
	large := count > 255
	var h byte
	if basic == basicObject {
		h = byte(idSize-1)<<2 | byte(offSize-1)
		if large {
			h |= 1 << 4
		}
	} else {
		h = byte(offSize - 1)
		if large {
			h |= 1 << 2
		}
	}
	dst = append(dst, h<<2|basic)
	if large {
		return binary.LittleEndian.AppendUint32(dst, uint32(count))
	}
	return append(dst, byte(count))
}

// appendMetadata writes the dictionary in name order. An empty dictionary
// is written without sorted_strings, byte for byte as other writers do.
func (b *Builder) appendMetadata(dst []byte) []byte {
	sorted := b.sorted
	if len(b.keys.refs) == 0 {
		sorted = nil // sortKeys kept the last record's
	}
	n := len(sorted)
	total := len(b.keys.arena)
	offSize := sizeFor(uint64(max(n, total)))
	h := byte(1) | byte(offSize-1)<<6
	if n > 0 {
		h |= 1 << 4
	}
	dst = append(dst, h)
	dst = appendUint(dst, uint64(n), offSize)
	off := 0
	for _, id := range sorted {
		dst = appendUint(dst, uint64(off), offSize)
		off += len(b.keys.name(id))
	}
	dst = appendUint(dst, uint64(off), offSize)
	for _, id := range sorted {
		dst = append(dst, b.keys.name(id)...)
	}
	return dst
}

// keyTable interns field names without allocating per name: names live in
// one arena and an open-addressing table maps them to ids.
type keyTable struct {
	arena []byte
	refs  []keyRef
	slots []int32 // id+1, 0 for empty
	seed  maphash.Seed
	init  bool
	// The names before the last reset, and whether every name since has
	// the same id as then: records of one shape intern the same names in
	// the same order, and the Builder reuses what it derived from them.
	prevArena []byte
	prevRefs  []keyRef
	same      bool
}

type keyRef struct {
	off, len int32
	slot     int32
}

func (t *keyTable) name(id int32) []byte {
	r := t.refs[id]
	return t.arena[r.off : r.off+r.len]
}

func (t *keyTable) reset() {
	t.same = true
	if len(t.refs) == 0 {
		return // keep the names of the last record that had some
	}
	for _, r := range t.refs {
		t.slots[r.slot] = 0
	}
	t.prevArena, t.arena = t.arena, t.prevArena[:0]
	t.prevRefs, t.refs = t.refs, t.prevRefs[:0]
}

// identical reports whether the names since the last reset are those
// before it, with the same ids.
func (t *keyTable) identical() bool { return t.same && len(t.refs) == len(t.prevRefs) }

func (t *keyTable) intern(name []byte) int {
	if !t.init {
		t.seed = maphash.MakeSeed()
		t.slots = make([]int32, 64)
		t.init = true
	}
	if 2*(len(t.refs)+1) > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	for s := int(maphash.Bytes(t.seed, name)) & mask; ; s = (s + 1) & mask {
		id := t.slots[s] - 1
		if id < 0 {
			id = int32(len(t.refs))
			if t.same {
				if int(id) >= len(t.prevRefs) {
					t.same = false
				} else if p := t.prevRefs[id]; !bytes.Equal(t.prevArena[p.off:p.off+p.len], name) {
					t.same = false
				}
			}
			t.refs = append(t.refs, keyRef{off: int32(len(t.arena)), len: int32(len(name)), slot: int32(s)})
			t.arena = append(t.arena, name...)
			t.slots[s] = id + 1
			return int(id)
		}
		if bytes.Equal(t.name(id), name) {
			return int(id)
		}
	}
}

func (t *keyTable) grow() {
	t.slots = make([]int32, 2*len(t.slots))
	mask := len(t.slots) - 1
	for id := range t.refs {
		s := int(maphash.Bytes(t.seed, t.name(int32(id)))) & mask
		for t.slots[s] != 0 {
			s = (s + 1) & mask
		}
		t.slots[s] = int32(id) + 1
		t.refs[id].slot = int32(s)
	}
}

// sortKeys computes the final id of every key: its rank by name.
func (b *Builder) sortKeys() {
	if len(b.keys.refs) == 0 || b.rankValid && b.keys.identical() {
		return // no names, or those of the last record, whose ranks these are
	}
	b.rankValid = true
	n := len(b.keys.refs)
	b.sorted = b.sorted[:0]
	for i := range n {
		b.sorted = append(b.sorted, int32(i))
	}
	slices.SortFunc(b.sorted, func(x, y int32) int {
		return bytes.Compare(b.keys.name(x), b.keys.name(y))
	})
	b.rank = slices.Grow(b.rank[:0], n)[:n]
	for r, id := range b.sorted {
		b.rank[id] = int32(r)
	}
}

// putUint writes v as an unsigned little-endian integer of size bytes.
func putUint(dst []byte, v uint64, size int) {
	for i := 0; i < size; i++ {
		dst[i] = byte(v >> (8 * i))
	}
}
