package writer

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/writer/encoding"
)

// dictionary maps a column chunk's distinct values to indices, in order of
// first appearance. It can be cut back to an earlier length, which is how a
// chunk undoes the page that pushed it over its size limit.
//
// The tables are open-addressing hash tables of indices into the entry
// list, specialised per type: lookups are the hot loop of dictionary
// encoding, and Go maps cost twice as much there (and a string allocation
// per distinct byte array).
type dictionary interface {
	// add appends to idx the index of each value v0..v1 of c.
	add(idx []int32, c *rowgroup.Column, v0, v1 int) []int32
	len() int
	// size is the dictionary page's PLAIN-encoded size.
	size() int
	truncate(n int)
	encode(dst []byte) ([]byte, error)
	reset()
	// held is the memory the dictionary keeps, by capacity.
	held() int64
}

func newDictionary(physical meta.Type, width int) dictionary {
	switch physical {
	case meta.TypeInt32:
		return &numDict[int32]{valueList[int32]{width: 4, values: func(c *rowgroup.Column) []int32 { return c.Int32 },
			enc: func(dst []byte, v []int32) ([]byte, error) { return encoding.Plain{}.EncodeInt32(dst, v) }}}
	case meta.TypeInt64:
		return &numDict[int64]{valueList[int64]{width: 8, values: func(c *rowgroup.Column) []int64 { return c.Int64 },
			enc: func(dst []byte, v []int64) ([]byte, error) { return encoding.Plain{}.EncodeInt64(dst, v) }}}
	case meta.TypeInt96:
		return &fixedDict[[12]byte]{
			valueList: valueList[[12]byte]{width: 12, values: func(c *rowgroup.Column) [][12]byte { return c.Int96 },
				enc: func(dst []byte, v [][12]byte) ([]byte, error) { return encoding.Plain{}.EncodeInt96(dst, v) }},
			hash: func(v [12]byte) uint64 {
				lo := uint64(v[0]) | uint64(v[1])<<8 | uint64(v[2])<<16 | uint64(v[3])<<24 | uint64(v[4])<<32 | uint64(v[5])<<40 | uint64(v[6])<<48 | uint64(v[7])<<56
				hi := uint64(v[8]) | uint64(v[9])<<8 | uint64(v[10])<<16 | uint64(v[11])<<24
				return mix(lo ^ mix(hi))
			}}
	case meta.TypeFloat:
		// Keyed by bit pattern: -0 and +0, and distinct NaNs, stay distinct,
		// and a NaN finds itself.
		return &numDict[uint32]{valueList[uint32]{width: 4, values: func(c *rowgroup.Column) []uint32 { return float32Bits(c.Float) },
			enc: func(dst []byte, v []uint32) ([]byte, error) {
				return encoding.Plain{}.EncodeInt32(dst, int32s(v))
			}}}
	case meta.TypeDouble:
		return &numDict[uint64]{valueList[uint64]{width: 8, values: func(c *rowgroup.Column) []uint64 { return float64Bits(c.Double) },
			enc: func(dst []byte, v []uint64) ([]byte, error) {
				return encoding.Plain{}.EncodeInt64(dst, int64s(v))
			}}}
	case meta.TypeByteArray:
		return newBytesDict(0)
	case meta.TypeFixedLenByteArray:
		return newBytesDict(width)
	}
	return nil
}

// mix is a 64-bit finalizer (from SplitMix64): every input bit affects
// every output bit, so masking the low bits spreads sequential keys.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// table is an open-addressing (linear probing) table of entry indices,
// kept at most half full (a small one a quarter, see full); -1 marks a
// free slot.
// initialTableSlots is the size of a new dictionary hash table, a power
// of two.
const initialTableSlots = 64

type table struct {
	slots []int32
	mask  uint64
}

func (t *table) reset() {
	if t.slots == nil {
		// Small to start with: a sink keeps a writer per open file, and
		// thousands of files with a few rows each must not cost a
		// kilobyte-sized table per column. The table doubles as it fills.
		t.slots = make([]int32, initialTableSlots)
		t.mask = initialTableSlots - 1
	}
	for i := range t.slots {
		t.slots[i] = -1
	}
}

// full reports whether a table of n entries is to grow: past half full,
// and past a quarter while it is smaller than sparseSlots. A dictionary of
// a few dozen codes looks each value up in a table that fits in a few
// cache lines, where what costs is the second probe, a branch mispredicted
// when a lookup collides: fewer collisions there cost little memory.
func (t *table) full(n int) bool {
	if len(t.slots) < sparseSlots {
		return 4*n > len(t.slots)
	}
	return 2*n > len(t.slots)
}

// sparseSlots is the table size up to which a table is kept at most a
// quarter full: 16 KiB.
const sparseSlots = 4096

// grow doubles the table and reinserts n entries by their hashes.
func (t *table) grow(n int, hash func(i int) uint64) {
	t.slots = make([]int32, 2*len(t.slots))
	t.mask = uint64(len(t.slots) - 1)
	t.rebuild(n, hash)
}

// rebuild empties the table and inserts entries 0..n-1 by their hashes.
func (t *table) rebuild(n int, hash func(i int) uint64) {
	t.reset()
	for i := 0; i < n; i++ {
		s := hash(i) & t.mask
		for t.slots[s] >= 0 {
			s = (s + 1) & t.mask
		}
		t.slots[s] = int32(i)
	}
}

// valueList is the table and the entries of a dictionary of fixed-width
// values held in a slice: what fixedDict and numDict share.
type valueList[T comparable] struct {
	table
	list   []T
	width  int
	values func(*rowgroup.Column) []T
	enc    func([]byte, []T) ([]byte, error)
}

func (d *valueList[T]) len() int                          { return len(d.list) }
func (d *valueList[T]) size() int                         { return len(d.list) * d.width }
func (d *valueList[T]) encode(dst []byte) ([]byte, error) { return d.enc(dst, d.list) }
func (d *valueList[T]) reset()                            { d.table.reset(); d.list = d.list[:0] }
func (d *valueList[T]) truncateBy(n int, hash func(T) uint64) {
	d.list = d.list[:n]
	d.rebuild(n, func(i int) uint64 { return hash(d.list[i]) })
}

// fixedDict is the dictionary of INT96 values, hashed by a function.
type fixedDict[T comparable] struct {
	valueList[T]
	hash func(T) uint64
}

func (d *fixedDict[T]) add(idx []int32, c *rowgroup.Column, v0, v1 int) []int32 {
	if d.slots == nil {
		d.table.reset()
	}
	for _, v := range d.values(c)[v0:v1] {
		s := d.hash(v) & d.mask
		for {
			j := d.slots[s]
			if j < 0 {
				j = int32(len(d.list))
				d.slots[s] = j
				d.list = append(d.list, v)
				if d.full(len(d.list)) {
					d.grow(len(d.list), func(i int) uint64 { return d.hash(d.list[i]) })
				}
				idx = append(idx, j)
				break
			}
			if d.list[j] == v {
				idx = append(idx, j)
				break
			}
			s = (s + 1) & d.mask
		}
	}
	return idx
}

// numDict is the dictionary of the integer and floating-point types (the
// floats by bit pattern). Unlike fixedDict it hashes a value inline by
// mix, not through a function value, and keeps the table in locals: a
// call per value was half of its work.
type numDict[T ~int32 | ~int64 | ~uint32 | ~uint64] struct {
	valueList[T]
}

func (d *numDict[T]) add(idx []int32, c *rowgroup.Column, v0, v1 int) []int32 {
	if d.slots == nil {
		d.table.reset()
	}
	vs := d.values(c)[v0:v1]
	at := len(idx)
	idx = slices.Grow(idx, len(vs))[:at+len(vs)]
	out := idx[at:]
	slots, mask, list := d.slots, d.mask, d.list
	for i, v := range vs {
		s := mix(uint64(v)) & mask
		for {
			j := slots[s]
			if j < 0 {
				j = int32(len(d.list))
				slots[s] = j
				d.list = append(d.list, v)
				if d.full(len(d.list)) {
					d.grow(len(d.list), func(i int) uint64 { return mix(uint64(d.list[i])) })
				}
				slots, mask, list = d.slots, d.mask, d.list
				out[i] = j
				break
			}
			if list[j] == v {
				out[i] = j
				break
			}
			s = (s + 1) & mask
		}
	}
	return idx
}

func (d *numDict[T]) truncate(n int)   { d.truncateBy(n, func(v T) uint64 { return mix(uint64(v)) }) }
func (d *fixedDict[T]) truncate(n int) { d.truncateBy(n, d.hash) }

// bytesDict serves BYTE_ARRAY (width 0) and FIXED_LEN_BYTE_ARRAY values.
type bytesDict struct {
	table
	seed    maphash.Seed
	keys    [3]uint64 // the short-value hash's secret, random per dictionary
	data    []byte
	offsets []uint32 // BYTE_ARRAY only
	hashes  []uint64 // per entry, to compare and regrow without rehashing bytes
	// short holds each BYTE_ARRAY entry's shortKey (zero for an entry
	// longer than maxShort): addBytes compares a short value with an
	// entry by it, without slicing the entry out of data and packing it
	// again, which was most of its work on a column of short codes.
	short []shortEntry
	width int
}

// shortEntry is an entry's shortKey and its length.
type shortEntry struct{ a, b, n uint64 }

func newBytesDict(width int) *bytesDict {
	d := &bytesDict{seed: maphash.MakeSeed(), width: width}
	if width == 0 {
		d.offsets = []uint32{0}
	}
	for i := range d.keys {
		d.keys[i] = rand.Uint64() | 1
	}
	return d
}

func (d *bytesDict) entry(i int) []byte {
	if d.width > 0 {
		return d.data[i*d.width : (i+1)*d.width]
	}
	return d.data[d.offsets[i]:d.offsets[i+1]]
}

func (d *bytesDict) add(idx []int32, c *rowgroup.Column, v0, v1 int) []int32 {
	if d.slots == nil {
		d.table.reset()
	}
	if d.width == 0 {
		return d.addBytes(idx, c.Bytes, c.Offsets[v0:v1+1])
	}
	for i := v0; i < v1; i++ {
		var v []byte
		if d.width > 0 {
			v = c.Bytes[i*d.width : (i+1)*d.width]
		} else {
			v = c.Bytes[c.Offsets[i]:c.Offsets[i+1]]
		}
		h := d.hash(v)
		s := h & d.mask
		for {
			j := d.slots[s]
			if j < 0 {
				idx = append(idx, d.insert(v, h, int(s), 0, 0))
				break
			}
			if d.hashes[j] == h && bytes.Equal(d.entry(int(j)), v) {
				idx = append(idx, j)
				break
			}
			s = (s + 1) & d.mask
		}
	}
	return idx
}

// maxShort is the longest value hashed by shortHash and compared through
// shortKey: most values of a dictionary-encoded column (codes, countries,
// event types) are this short, and the calls of maphash and bytes.Equal
// cost several times the work of hashing and comparing their bytes.
const maxShort = 16

// shortKey packs a value of at most maxShort bytes into two words which,
// with its length, identify it: its first 8 bytes (zero-padded), and the
// last 8 of a value longer than 8 (overlapping the first). keyAt computes
// the same from a buffer the value is in.
func shortKey(v []byte) (a, b uint64) {
	var pad [8]byte
	copy(pad[:], v)
	a = binary.LittleEndian.Uint64(pad[:])
	if n := len(v); n > 8 {
		b = binary.LittleEndian.Uint64(v[n-8:])
	}
	return a, b
}

// keyAt is the shortKey of buf[lo:hi], a value of at most maxShort bytes,
// read straight from buf as two words, without a branch on the value's
// length, which varies from value to value in a column of codes and names;
// ok is false, and the key is shortKey's to make, when buf does not hold 8
// bytes from lo.
func keyAt(buf []byte, lo, hi uint32) (a, b uint64, ok bool) {
	if int(lo)+8 > len(buf) {
		return 0, 0, false
	}
	n := hi - lo
	a = binary.LittleEndian.Uint64(buf[lo:]) & (^uint64(0) >> (64 - 8*min(n, 8)))
	// The 8 bytes that end the value; for a value of 8 bytes or less they
	// may start before it, and are masked away.
	b = binary.LittleEndian.Uint64(buf[max(hi, 8)-8:]) & (0 - uint64((n+7)>>4))
	return a, b, true
}

// hash is the hash of value v: its shortHash when it is short, its maphash
// otherwise. Whichever loop adds a value, it hashes the same.
func (d *bytesDict) hash(v []byte) uint64 {
	if len(v) <= maxShort {
		a, b := shortKey(v)
		return d.shortHash(a, b, len(v))
	}
	return maphash.Bytes(d.seed, v)
}

// shortHash hashes a short value's key and its length n as wyhash hashes
// short input: two multiplications keyed by the dictionary's random
// secret, so that which values collide cannot be chosen from outside.
func (d *bytesDict) shortHash(a, b uint64, n int) uint64 {
	hi, lo := bits.Mul64(a^d.keys[0], b^d.keys[1])
	hi, lo = bits.Mul64(lo^d.keys[2]^uint64(n), hi^d.keys[1])
	return hi ^ lo
}

// addBytes is add for BYTE_ARRAY values, given by their offsets into
// values: those of up to maxShort bytes are hashed inline and compared by
// their keys, without a call. The table, its mask and the entries' hashes
// live in locals, which change only when a value is new, and the indices
// are stored into room made first, not appended.
func (d *bytesDict) addBytes(idx []int32, values []byte, offsets []uint32) []int32 {
	n := len(offsets) - 1
	at := len(idx)
	idx = slices.Grow(idx, n)[:at+n]
	out := idx[at:]
	slots, mask, hashes, shortKeys := d.slots, d.mask, d.hashes, d.short
	k0, k1, k2, seed := d.keys[0], d.keys[1], d.keys[2], d.seed
	lo := offsets[0]
	for i, hi := range offsets[1:] {
		start := lo
		v := values[lo:hi]
		lo = hi
		short := len(v) <= maxShort
		var h, ka, kb uint64
		if short {
			var ok bool
			if ka, kb, ok = keyAt(values, start, hi); !ok {
				ka, kb = shortKey(v)
			}
			hi, lo := bits.Mul64(ka^k0, kb^k1) // shortHash, inline
			hi, lo = bits.Mul64(lo^k2^uint64(len(v)), hi^k1)
			h = hi ^ lo
		} else {
			h = maphash.Bytes(seed, v)
		}
		s := h & mask
		for {
			j := slots[s]
			if j < 0 {
				out[i] = d.insert(v, h, int(s), ka, kb)
				slots, mask, hashes, shortKeys = d.slots, d.mask, d.hashes, d.short
				break
			}
			if short {
				// The key and length are the value: no hash to check.
				if k := &shortKeys[j]; k.a == ka && k.b == kb && k.n == uint64(len(v)) {
					out[i] = j
					break
				}
			} else if hashes[j] == h && bytes.Equal(d.entry(int(j)), v) {
				out[i] = j
				break
			}
			s = (s + 1) & mask
		}
	}
	return idx
}

// insert adds v, of hash h, as a new entry at free slot s, and returns its
// index; a, b is the shortKey of a BYTE_ARRAY value of up to maxShort
// bytes.
func (d *bytesDict) insert(v []byte, h uint64, s int, a, b uint64) int32 {
	j := int32(len(d.hashes))
	d.slots[s] = j
	d.hashes = append(d.hashes, h)
	d.data = append(d.data, v...)
	if d.width == 0 {
		d.offsets = append(d.offsets, uint32(len(d.data)))
		d.short = append(d.short, shortEntry{a, b, uint64(len(v))})
	}
	if d.full(len(d.hashes)) {
		d.grow(len(d.hashes), func(i int) uint64 { return d.hashes[i] })
	}
	return j
}

func (d *bytesDict) len() int { return len(d.hashes) }

func (d *bytesDict) size() int {
	if d.width > 0 {
		return len(d.data)
	}
	return len(d.data) + 4*len(d.hashes)
}

func (d *bytesDict) truncate(n int) {
	if d.width > 0 {
		d.data = d.data[:n*d.width]
	} else {
		d.data = d.data[:d.offsets[n]]
		d.offsets = d.offsets[:n+1]
		d.short = d.short[:n]
	}
	d.hashes = d.hashes[:n]
	d.rebuild(n, func(i int) uint64 { return d.hashes[i] })
}

func (d *bytesDict) encode(dst []byte) ([]byte, error) {
	if d.width > 0 {
		return encoding.Plain{}.EncodeFixedLenByteArray(dst, d.data, d.width)
	}
	return encoding.Plain{}.EncodeByteArray(dst, d.data, d.offsets)
}

func (d *bytesDict) reset() {
	d.table.reset()
	d.data = d.data[:0]
	d.hashes = d.hashes[:0]
	if d.width == 0 {
		d.offsets = d.offsets[:1]
		d.short = d.short[:0]
	}
}

// The float dictionaries key on bit patterns; these views reinterpret the
// column's floats without copying.
func float32Bits(f []float32) []uint32 { return unsafeSlice[float32, uint32](f) }
func float64Bits(f []float64) []uint64 { return unsafeSlice[float64, uint64](f) }

func int32s(v []uint32) []int32 { return unsafeSlice[uint32, int32](v) }
func int64s(v []uint64) []int64 { return unsafeSlice[uint64, int64](v) }
