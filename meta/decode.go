package meta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxDepth bounds the nesting of structs, lists and maps that Decode
// accepts. The deepest path parquet.thrift defines is about eight levels
// (FileMetaData.row_groups[].columns[].meta_data.statistics); unknown
// fields may nest further, but recursion on attacker-chosen depth must stop
// somewhere, and 64 leaves ample room for future spec versions.
const MaxDepth = 64

// Errors wrapped by DecodeError.Err, for use with errors.Is.
var (
	ErrUnexpectedEOF = errors.New("unexpected end of input")
	ErrTrailingBytes = errors.New("trailing bytes after message")
	ErrTooDeep       = fmt.Errorf("nesting deeper than %d levels", MaxDepth)
	ErrMissingField  = errors.New("required field missing")
	ErrWrongType     = errors.New("wrong compact type")
	ErrMalformed     = errors.New("malformed input")
)

// DecodeError describes why and where decoding failed.
type DecodeError struct {
	// Path locates the failing value from the decoded struct down, with
	// thrift field names: "FileMetaData.row_groups[3].columns[0].meta_data".
	Path string
	// Offset is the byte offset in the input at which the error was found.
	Offset int
	// Err is what went wrong; it wraps one of the Err values of this package.
	Err error
}

// Error formats the error as "meta: <path>: <what> at offset <n>".
func (e *DecodeError) Error() string {
	return "meta: " + e.Path + ": " + e.Err.Error() + " at offset " + strconv.Itoa(e.Offset)
}

// Unwrap returns Err, so errors.Is works with the Err values of this package.
func (e *DecodeError) Unwrap() error { return e.Err }

// decoder reads compact-protocol values from src. It remembers the first
// error and turns every later read into a no-op returning zero, so that
// generated code checks for errors once per field instead of once per read.
type decoder struct {
	src    []byte
	pos    int
	depth  int
	err    error
	errPos int
	// path collects the location of an error while the decode functions
	// return, innermost segment first.
	path []string
	// mismatched is set when the current field had an unexpected type and
	// was skipped, so it does not count as present.
	mismatched bool
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
		d.errPos = d.pos
	}
}

func (d *decoder) failf(format string, args ...any) {
	d.fail(fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...))
}

// result returns the error of a decode of the struct named root, if any.
func (d *decoder) result(root string) error {
	if d.err == nil {
		return nil
	}
	var b strings.Builder
	b.WriteString(root)
	for i := len(d.path) - 1; i >= 0; i-- {
		b.WriteString(d.path[i])
	}
	return &DecodeError{Path: b.String(), Offset: d.errPos, Err: d.err}
}

// field, index and missing record the location of an error on the way out.
func (d *decoder) field(name string) { d.path = append(d.path, "."+name) }
func (d *decoder) index(i int)       { d.path = append(d.path, "["+strconv.Itoa(i)+"]") }

func (d *decoder) missing(name string) {
	if d.err != nil {
		return // the struct ended early for another reason
	}
	d.fail(ErrMissingField)
	d.field(name)
}

func (d *decoder) enter() bool {
	d.depth++
	if d.depth > MaxDepth {
		d.fail(ErrTooDeep)
		return false
	}
	return true
}

func (d *decoder) leave() { d.depth-- }

func (d *decoder) remaining() int { return len(d.src) - d.pos }

func (d *decoder) readByte() byte {
	if d.err != nil {
		return 0
	}
	if d.pos >= len(d.src) {
		d.fail(ErrUnexpectedEOF)
		return 0
	}
	b := d.src[d.pos]
	d.pos++
	return b
}

// uvarint reads a ULEB128 varint of at most 64 bits.
func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if d.pos >= len(d.src) {
			d.fail(ErrUnexpectedEOF)
			return 0
		}
		b := d.src[d.pos]
		d.pos++
		if b < 0x80 {
			if shift == 63 && b > 1 {
				d.failf("varint overflows 64 bits")
				return 0
			}
			return v | uint64(b)<<shift
		}
		v |= uint64(b&0x7f) << shift
	}
	d.failf("varint longer than 10 bytes")
	return 0
}

func (d *decoder) readI64() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *decoder) readI32() int32 {
	v := d.readI64()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.failf("value %d out of range for i32", v)
		return 0
	}
	return int32(v)
}

func (d *decoder) readI16() int16 {
	v := d.readI64()
	if v < math.MinInt16 || v > math.MaxInt16 {
		d.failf("value %d out of range for i16", v)
		return 0
	}
	return int16(v)
}

func (d *decoder) readI8() int8 { return int8(d.readByte()) }

// readBool reads a bool list element. Writers use 1 for true and 2 (some
// 0) for false, so anything but 1 is false.
func (d *decoder) readBool() bool { return d.readByte() == ctTrue }

func (d *decoder) readDouble() float64 {
	b := d.take(8)
	if b == nil {
		return 0
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}

// take returns the next n bytes of src, without copying, or nil on error.
func (d *decoder) take(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(d.remaining()) {
		d.fail(fmt.Errorf("%w: %d bytes wanted, %d left", ErrUnexpectedEOF, n, d.remaining()))
		return nil
	}
	b := d.src[d.pos : d.pos+int(n) : d.pos+int(n)]
	d.pos += int(n)
	return b
}

// readBinary reads a length-prefixed byte string into a new slice, so that
// decoded values never alias the caller's buffer. A present empty value is
// a non-nil empty slice.
func (d *decoder) readBinary() []byte {
	b := d.take(d.uvarint())
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

func (d *decoder) readString() string { return string(d.take(d.uvarint())) }

// fieldHeader reads the next field header of a struct whose previous field
// id is *last. It returns ok=false at the stop byte or on error.
func (d *decoder) fieldHeader(last *int16) (ct byte, id int16, ok bool) {
	b := d.readByte()
	if b == ctStop || d.err != nil {
		return 0, 0, false
	}
	ct = b & 0x0f
	if delta := int(b >> 4); delta != 0 {
		next := int(*last) + delta
		if next > math.MaxInt16 {
			d.failf("field id %d out of range", next)
			return 0, 0, false
		}
		id = int16(next)
	} else {
		id = d.readI16()
	}
	*last = id
	d.mismatched = false
	return ct, id, d.err == nil
}

// want reports whether a known field has the compact type its declaration
// implies. A field of another type is skipped, as Thrift's own readers do
// (writers have been seen to put a list where parquet.thrift has an i32):
// the struct reads as if the field were absent, so a required one is then
// reported missing.
func (d *decoder) want(ct, expected byte) bool {
	if ct != expected {
		d.mismatch(ct)
		return false
	}
	return true
}

// isBool reports whether a known bool field has a bool header type, and
// skips it otherwise.
func (d *decoder) isBool(ct byte) bool {
	if ct != ctTrue && ct != ctFalse {
		d.mismatch(ct)
		return false
	}
	return true
}

// mismatch skips a known field of an unexpected type.
func (d *decoder) mismatch(ct byte) {
	d.skip(ct, false)
	d.mismatched = true
}

// listHeader reads the header of a list field and returns its length, or
// -1 on error. Every element takes at least minSize bytes, so a length the
// rest of the input cannot hold is rejected here, before the caller
// allocates: a forged header cannot make a small input allocate much.
func (d *decoder) listHeader(ct, elem byte, minSize int) int {
	if !d.want(ct, ctList) {
		return -1
	}
	n, et := d.collectionHeader()
	if d.err != nil {
		return -1
	}
	if n > 0 && et != elem && !(elem == ctTrue && et == ctFalse) {
		// A list of the wrong element type is skipped like any mistyped field.
		if n > d.remaining() {
			d.failf("list of %d elements cannot fit in %d remaining bytes", n, d.remaining())
			return -1
		}
		for i := 0; i < n && d.err == nil; i++ {
			d.skip(et, true)
		}
		d.mismatched = true
		return -1
	}
	if n > d.remaining()/minSize {
		d.failf("list of %d elements cannot fit in %d remaining bytes", n, d.remaining())
		return -1
	}
	return n
}

// collectionHeader reads a list or set header: a size in the high nibble,
// or 15 there and the size as a varint after.
func (d *decoder) collectionHeader() (n int, elem byte) {
	b := d.readByte()
	n, elem = int(b>>4), b&0x0f
	if n == 15 {
		u := d.uvarint()
		if u > math.MaxInt32 {
			d.failf("collection size %d too large", u)
			return 0, 0
		}
		n = int(u)
	}
	return n, elem
}

// skipField skips the value of a field the struct does not declare.
func (d *decoder) skipField(ct byte, id int16) {
	d.skip(ct, false)
	if d.err != nil {
		d.field("#" + strconv.Itoa(int(id)))
	}
}

// skip skips one value of compact type ct. Bools take no bytes as struct
// fields (the value is in the header) and one byte as collection elements.
func (d *decoder) skip(ct byte, element bool) {
	switch ct {
	case ctTrue, ctFalse:
		if element {
			d.readByte()
		}
	case ctI8:
		d.readByte()
	case ctI16, ctI32, ctI64:
		d.uvarint()
	case ctDouble:
		d.take(8)
	case ctBinary:
		d.take(d.uvarint())
	case ctUUID:
		d.take(16)
	case ctList, ctSet:
		if !d.enter() {
			return
		}
		n, et := d.collectionHeader()
		if n > d.remaining() {
			d.failf("collection of %d elements cannot fit in %d remaining bytes", n, d.remaining())
		}
		for i := 0; i < n && d.err == nil; i++ {
			d.skip(et, true)
		}
		d.leave()
	case ctMap:
		if !d.enter() {
			return
		}
		u := d.uvarint()
		if u > 0 {
			kv := d.readByte()
			if u > uint64(d.remaining()/2) {
				d.failf("map of %d entries cannot fit in %d remaining bytes", u, d.remaining())
			}
			for i := uint64(0); i < u && d.err == nil; i++ {
				d.skip(kv>>4, true)
				d.skip(kv&0x0f, true)
			}
		}
		d.leave()
	case ctStruct:
		if !d.enter() {
			return
		}
		var last int16
		for {
			ct, _, ok := d.fieldHeader(&last)
			if !ok {
				break
			}
			d.skip(ct, false)
		}
		d.leave()
	default:
		d.failf("unknown compact type %d", ct)
	}
}

func ctName(ct byte) string {
	ctNames := [...]string{"stop", "bool", "bool", "i8", "i16", "i32", "i64", "double", "binary", "list", "set", "map", "struct", "uuid"}
	if int(ct) < len(ctNames) {
		return ctNames[ct]
	}
	return "type " + strconv.Itoa(int(ct))
}

// typeName is the bare type name of m, for error paths.
func typeName(m Message) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", m), "*meta.")
}
