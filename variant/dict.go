package variant

import (
	"bytes"
	"slices"
)

// Dictionary collects the field names of one Variant at a time and writes
// its metadata exactly as Builder.Finish and Encoder.AppendJSON do: the
// distinct names sorted by bytes, with sorted_strings set, and the
// smallest offset size that fits.
//
// It is meant for writers that produce the metadata of many records
// without building each value, such as a shredder that writes typed
// columns straight from JSON: names are interned once for all records and
// get ids that stay valid until the dictionary outgrows its bound (see
// Generation), so a caller can remember the id of a name it expects; and
// when a record uses the same names in the same order of first use as the
// record before it, Append copies the previous metadata instead of
// sorting again.
//
// The zero Dictionary is ready to use. It must not be used by several
// goroutines at once.
type Dictionary struct {
	keys    keyTable
	gen     uint32   // bumped when keys is cleared
	serial  uint32   // current record, for stamp
	stamp   []uint32 // per id: serial of the last record that used it
	used    []int32  // ids used by the current record, in order of first use
	prev    []int32  // used of the record whose metadata is in last
	prevGen uint32
	last    []byte // metadata of prev
	sorted  []int32
	valid   bool // last and prev describe a finished record
}

// Bounds on the names kept across records: beyond them, Reset forgets
// every name, so a stream of records with ever new names holds no more
// than this. One record may hold more; it is its own size.
const (
	dictMaxNames = 1 << 14
	dictMaxBytes = 1 << 20
)

// Reset starts a new record. Ids from before a Reset stay valid while
// Generation does not change.
func (d *Dictionary) Reset() {
	if len(d.keys.refs) > dictMaxNames || len(d.keys.arena) > dictMaxBytes {
		d.keys.reset()
		d.stamp = d.stamp[:0]
		d.gen++
		d.valid = false
	}
	d.serial++
	if d.serial == 0 { // wrapped: old stamps could collide
		clear(d.stamp)
		d.serial = 1
	}
	d.used = d.used[:0]
}

// Generation changes whenever ids given before are no longer valid.
func (d *Dictionary) Generation() uint32 { return d.gen }

// Intern returns the id of name, adding it to the names known across
// records if needed, without marking it used by the current record.
func (d *Dictionary) Intern(name []byte) int32 {
	id := int32(d.keys.intern(name))
	if int(id) >= len(d.stamp) {
		d.stamp = append(d.stamp, 0)
	}
	return id
}

// Add marks name as used by the current record and returns its id.
func (d *Dictionary) Add(name []byte) int32 {
	id := d.Intern(name)
	d.Use(id)
	return id
}

// Use marks the name with the given id (from Intern or Add in this
// Generation) as used by the current record.
func (d *Dictionary) Use(id int32) {
	if d.stamp[id] != d.serial {
		d.stamp[id] = d.serial
		d.used = append(d.used, id)
	}
}

// Name returns the name with the given id.
func (d *Dictionary) Name(id int32) []byte { return d.keys.name(id) }

// Append appends the metadata of the current record: its used names.
func (d *Dictionary) Append(dst []byte) []byte {
	if d.valid && d.prevGen == d.gen && slices.Equal(d.used, d.prev) {
		return append(dst, d.last...)
	}
	d.sorted = append(d.sorted[:0], d.used...)
	slices.SortFunc(d.sorted, func(x, y int32) int {
		return bytes.Compare(d.keys.name(x), d.keys.name(y))
	})
	total := 0
	for _, id := range d.sorted {
		total += len(d.keys.name(id))
	}
	n := len(d.sorted)
	offSize := sizeFor(uint64(max(n, total)))
	start := len(dst)
	h := byte(1) | byte(offSize-1)<<6
	if n > 0 {
		h |= 1 << 4
	}
	dst = append(dst, h)
	dst = appendUint(dst, uint64(n), offSize)
	off := 0
	for _, id := range d.sorted {
		dst = appendUint(dst, uint64(off), offSize)
		off += len(d.keys.name(id))
	}
	dst = appendUint(dst, uint64(off), offSize)
	for _, id := range d.sorted {
		dst = append(dst, d.keys.name(id)...)
	}
	d.last = append(d.last[:0], dst[start:]...)
	d.prev = append(d.prev[:0], d.used...)
	d.prevGen = d.gen
	d.valid = true
	return dst
}
