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
	nodes    []node
	data     []byte  // encoded scalars
	open     []int   // indexes of open containers in nodes
	pending  int     // 1 + key id of the next field's name, 0 if none
	pendPos  int     // source offset of the pending key
	rootDone bool    // a complete top-level value was added
	order    []int32 // sorted children of objects, filled by Finish
	keys     keyTable
	rank     []int32 // final (sorted) id of each key
	sorted   []int32 // key ids in name order
	lastWins bool
	err      error
}

// node is one value in the order it was added.
type node struct {
	kind  uint8 // kindScalar, kindObject or kindArray
	key   int32 // key id when the node is an object field, else -1
	pos   int   // source offset of the key, for error messages; -1 if none
	start int   // scalar: start in data; object: start of its children in order
	end   int   // scalar: end in data; container: index of the node after its subtree
	count int   // container: number of elements (after duplicate removal)
	size  int   // encoded size, computed by Finish
}

const (
	kindScalar uint8 = iota
	kindObject
	kindArray
)

// Reset discards everything added since the last Finish or Reset.
func (b *Builder) Reset() {
	b.nodes = b.nodes[:0]
	b.data = b.data[:0]
	b.open = b.open[:0]
	b.order = b.order[:0]
	b.pending = 0
	b.pendPos = -1
	b.rootDone = false
	b.keys.reset()
	b.err = nil
}

func (b *Builder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Err returns the first error met so far.
func (b *Builder) Err() error { return b.err }

// begin checks that a value may be added here and records its key.
func (b *Builder) begin(kind uint8) (*node, bool) {
	if b.err != nil {
		return nil, false
	}
	key, pos := int32(-1), -1
	if len(b.open) == 0 {
		if b.rootDone {
			b.fail(fmt.Errorf("variant builder: second top-level value"))
			return nil, false
		}
		if kind == kindScalar {
			b.rootDone = true
		}
	} else if b.nodes[b.open[len(b.open)-1]].kind == kindObject {
		if b.pending == 0 {
			b.fail(fmt.Errorf("variant builder: object field value without a Key"))
			return nil, false
		}
		key, pos = int32(b.pending-1), b.pendPos
		b.pending = 0
	}
	b.nodes = append(b.nodes, node{kind: kind, key: key, pos: pos})
	return &b.nodes[len(b.nodes)-1], true
}

// scalar appends a node for the encoded bytes added to b.data since start.
func (b *Builder) scalarFrom(start int) {
	n, ok := b.begin(kindScalar)
	if !ok {
		b.data = b.data[:start]
		return
	}
	n.start, n.end = start, len(b.data)
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
// that holds its precision.
func (b *Builder) Decimal(d Decimal) {
	switch p := d.Precision(); {
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
	if _, ok := b.begin(kind); ok {
		b.open = append(b.open, len(b.nodes)-1)
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
	if len(b.open) == 0 || b.nodes[b.open[len(b.open)-1]].kind != kindObject {
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
	if len(b.open) == 0 || b.nodes[b.open[len(b.open)-1]].kind != kind {
		b.fail(fmt.Errorf("variant builder: End%s without a matching Begin", kindName(kind == kindObject)))
		return
	}
	if b.pending != 0 {
		b.fail(fmt.Errorf("variant builder: object ends after a Key without a value"))
		return
	}
	i := b.open[len(b.open)-1]
	b.open = b.open[:len(b.open)-1]
	b.nodes[i].end = len(b.nodes)
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
	if b.err != nil {
		return metadata, value, b.err
	}
	if len(b.open) > 0 {
		return metadata, value, fmt.Errorf("variant builder: %d objects or arrays not ended", len(b.open))
	}
	if len(b.nodes) == 0 {
		return metadata, value, fmt.Errorf("variant builder: no value")
	}
	b.sortKeys()
	for i := len(b.nodes) - 1; i >= 0; i-- {
		if err := b.measure(i); err != nil {
			return metadata, value, err
		}
	}
	if b.nodes[0].size > math.MaxUint32 {
		return metadata, value, fmt.Errorf("variant builder: value of %d bytes exceeds 4 GiB", b.nodes[0].size)
	}
	metadata = b.appendMetadata(metadata)
	value = slices.Grow(value, b.nodes[0].size)
	value = b.appendNode(value, 0)
	return metadata, value, nil
}

// sortKeys computes the final id of every key: its rank by name.
func (b *Builder) sortKeys() {
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

// measure computes the size of node i, whose descendants are measured;
// for objects it also orders the fields and removes duplicates.
func (b *Builder) measure(i int) error {
	n := &b.nodes[i]
	switch n.kind {
	case kindScalar:
		n.size = n.end - n.start
		return nil
	case kindArray:
		count, sum := 0, 0
		for c := i + 1; c < n.end; c = b.next(c) {
			count++
			sum += b.nodes[c].size
		}
		n.count = count
		n.size = containerSize(count, 0, sum)
		return nil
	}
	start := len(b.order)
	for c := i + 1; c < n.end; c = b.next(c) {
		b.order = append(b.order, int32(c))
	}
	fields := b.order[start:]
	// Order by name (rank), then by position so that the last of equal
	// names comes last.
	slices.SortFunc(fields, func(x, y int32) int {
		if d := b.rank[b.nodes[x].key] - b.rank[b.nodes[y].key]; d != 0 {
			return int(d)
		}
		return int(x - y)
	})
	out := fields[:0]
	for j, c := range fields {
		if j+1 < len(fields) && b.nodes[fields[j+1]].key == b.nodes[c].key {
			if !b.lastWins {
				dup := b.nodes[fields[j+1]]
				name := b.keys.name(dup.key)
				if dup.pos >= 0 {
					return fmt.Errorf("variant: duplicate key %q at byte %d", name, dup.pos)
				}
				return fmt.Errorf("variant builder: duplicate key %q", name)
			}
			continue
		}
		out = append(out, c)
	}
	b.order = b.order[:start+len(out)]
	sum, maxID := 0, int32(0)
	for _, c := range out {
		sum += b.nodes[c].size
		maxID = max(maxID, b.rank[b.nodes[c].key])
	}
	n.start = start
	n.count = len(out)
	n.size = containerSize(len(out), sizeFor(uint64(maxID)), sum)
	return nil
}

// next returns the index of the node after the subtree of node c.
func (b *Builder) next(c int) int {
	if b.nodes[c].kind == kindScalar {
		return c + 1
	}
	return b.nodes[c].end
}

// containerSize is the encoded size of an object (idSize > 0) or array
// (idSize == 0) of count elements taking sum bytes.
func containerSize(count, idSize, sum int) int {
	countSize := 1
	if count > 255 {
		countSize = 4
	}
	return 1 + countSize + count*idSize + (count+1)*sizeFor(uint64(sum)) + sum
}

func (b *Builder) appendNode(dst []byte, i int) []byte {
	n := &b.nodes[i]
	switch n.kind {
	case kindScalar:
		return append(dst, b.data[n.start:n.end]...)
	case kindArray:
		sum := 0
		for c := i + 1; c < n.end; c = b.next(c) {
			sum += b.nodes[c].size
		}
		offSize := sizeFor(uint64(sum))
		dst = appendContainerHeader(dst, basicArray, n.count, 0, offSize)
		off := 0
		for c := i + 1; c < n.end; c = b.next(c) {
			dst = appendUint(dst, uint64(off), offSize)
			off += b.nodes[c].size
		}
		dst = appendUint(dst, uint64(off), offSize)
		for c := i + 1; c < n.end; c = b.next(c) {
			dst = b.appendNode(dst, c)
		}
		return dst
	}
	fields := b.order[n.start : n.start+n.count]
	sum, maxID := 0, int32(0)
	for _, c := range fields {
		sum += b.nodes[c].size
		maxID = max(maxID, b.rank[b.nodes[c].key])
	}
	offSize, idSize := sizeFor(uint64(sum)), sizeFor(uint64(maxID))
	dst = appendContainerHeader(dst, basicObject, n.count, idSize, offSize)
	for _, c := range fields {
		dst = appendUint(dst, uint64(b.rank[b.nodes[c].key]), idSize)
	}
	off := 0
	for _, c := range fields {
		dst = appendUint(dst, uint64(off), offSize)
		off += b.nodes[c].size
	}
	dst = appendUint(dst, uint64(off), offSize)
	for _, c := range fields {
		dst = b.appendNode(dst, int(c))
	}
	return dst
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
	n := len(b.sorted)
	total := len(b.keys.arena)
	offSize := sizeFor(uint64(max(n, total)))
	h := byte(1) | byte(offSize-1)<<6
	if n > 0 {
		h |= 1 << 4
	}
	dst = append(dst, h)
	dst = appendUint(dst, uint64(n), offSize)
	off := 0
	for _, id := range b.sorted {
		dst = appendUint(dst, uint64(off), offSize)
		off += len(b.keys.name(id))
	}
	dst = appendUint(dst, uint64(off), offSize)
	for _, id := range b.sorted {
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
	for _, r := range t.refs {
		t.slots[r.slot] = 0
	}
	t.refs = t.refs[:0]
	t.arena = t.arena[:0]
}

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
