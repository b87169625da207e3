package variant

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// Metadata is a read-only view of a Variant metadata: the dictionary of
// object field names that values refer to by id.
type Metadata struct {
	offSize int
	n       int
	sorted  bool
	offsets []byte // n+1 offsets of offSize bytes
	strs    []byte // the concatenated names
}

// ParseMetadata checks the metadata b and returns a view of it. It checks
// the header, that every offset is in order and in bounds, that the names
// are valid UTF-8, and, when the header claims sorted_strings, that the
// names are strictly increasing. The view aliases b.
func ParseMetadata(b []byte) (Metadata, error) {
	if len(b) == 0 {
		return Metadata{}, fmt.Errorf("variant metadata: empty")
	}
	h := b[0]
	if v := h & 0x0f; v != 1 {
		return Metadata{}, fmt.Errorf("variant metadata: unsupported version %d", v)
	}
	m := Metadata{offSize: int(h>>6) + 1, sorted: h&0x10 != 0}
	if len(b) < 1+m.offSize {
		return Metadata{}, fmt.Errorf("variant metadata: %d bytes, too short for the dictionary size", len(b))
	}
	n := readUint(b[1:], m.offSize)
	rest := b[1+m.offSize:]
	// Compare before multiplying so that a huge size cannot overflow.
	if n >= uint64(len(rest)/m.offSize) {
		return Metadata{}, fmt.Errorf("variant metadata: dictionary size %d does not fit in %d bytes", n, len(b))
	}
	m.n = int(n)
	m.offsets = rest[:(m.n+1)*m.offSize]
	m.strs = rest[len(m.offsets):]
	prev := 0
	for i := 0; i <= m.n; i++ {
		off := int(readUint(m.offsets[i*m.offSize:], m.offSize))
		if off < prev || off > len(m.strs) {
			return Metadata{}, fmt.Errorf("variant metadata: offset %d of name %d out of order or bounds (previous %d, %d bytes of names)", off, i, prev, len(m.strs))
		}
		if i == 0 && off != 0 {
			return Metadata{}, fmt.Errorf("variant metadata: first offset is %d, want 0", off)
		}
		prev = off
	}
	if prev != len(m.strs) {
		return Metadata{}, fmt.Errorf("variant metadata: names end at byte %d but %d bytes follow the offsets", prev, len(m.strs))
	}
	if !utf8.Valid(m.strs) {
		for i := 0; i < m.n; i++ {
			if !utf8.Valid(m.Key(i)) {
				return Metadata{}, fmt.Errorf("variant metadata: name %d is not valid UTF-8", i)
			}
		}
	}
	if m.sorted {
		for i := 1; i < m.n; i++ {
			if bytes.Compare(m.Key(i-1), m.Key(i)) >= 0 {
				return Metadata{}, fmt.Errorf("variant metadata: sorted_strings set but name %d %q is not after name %d %q", i, m.Key(i), i-1, m.Key(i-1))
			}
		}
	}
	return m, nil
}

// Len returns the number of names in the dictionary.
func (m Metadata) Len() int { return m.n }

// Sorted reports whether the names are unique and sorted, which lets
// Find use a binary search.
func (m Metadata) Sorted() bool { return m.sorted }

// Key returns the name with the given id, or nil if id is out of range.
// The slice aliases the metadata bytes.
func (m Metadata) Key(id int) []byte {
	if id < 0 || id >= m.n {
		return nil
	}
	lo := readUint(m.offsets[id*m.offSize:], m.offSize)
	hi := readUint(m.offsets[(id+1)*m.offSize:], m.offSize)
	return m.strs[lo:hi]
}

// Find returns the id of name. With unsorted metadata it scans the
// dictionary and returns the first match.
func (m Metadata) Find(name string) (int, bool) {
	if m.sorted {
		lo, hi := 0, m.n
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			switch c := compareKey(m.Key(mid), name); {
			case c == 0:
				return mid, true
			case c < 0:
				lo = mid + 1
			default:
				hi = mid
			}
		}
		return 0, false
	}
	for i := 0; i < m.n; i++ {
		if string(m.Key(i)) == name {
			return i, true
		}
	}
	return 0, false
}

// compareKey compares a name from the dictionary with a Go string,
// byte-wise, without converting either.
func compareKey(k []byte, s string) int {
	n := min(len(k), len(s))
	for i := 0; i < n; i++ {
		if k[i] != s[i] {
			if k[i] < s[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(k) < len(s):
		return -1
	case len(k) > len(s):
		return 1
	}
	return 0
}

// readUint reads an unsigned little-endian integer of size bytes (1-4).
// The caller guarantees len(b) >= size.
func readUint(b []byte, size int) uint64 {
	switch size {
	case 1:
		return uint64(b[0])
	case 2:
		_ = b[1]
		return uint64(b[0]) | uint64(b[1])<<8
	case 3:
		_ = b[2]
		return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16
	default:
		_ = b[3]
		return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24
	}
}

// appendUint appends v as an unsigned little-endian integer of size bytes.
func appendUint(dst []byte, v uint64, size int) []byte {
	for i := 0; i < size; i++ {
		dst = append(dst, byte(v>>(8*i)))
	}
	return dst
}

// sizeFor returns the number of bytes (1-4) needed to store v.
func sizeFor(v uint64) int {
	switch {
	case v <= 0xff:
		return 1
	case v <= 0xffff:
		return 2
	case v <= 0xffffff:
		return 3
	}
	return 4
}
