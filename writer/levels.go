package writer

import (
	"encoding/binary"
	"math/bits"

	"github.com/pqsink/pqsink/writer/encoding"
)

// Levels are bytes, mostly in long runs of the same few values: these
// helpers scan them eight at a time, as words. encoding.ZeroBytes marks
// the zero bytes of a word exactly, and the count or position of the
// marks answers the question at hand.

// ones has a 1 in every byte.
const ones = 0x0101010101010101

// countEqual returns how many of levels equal v.
func countEqual(levels []uint8, v uint8) int {
	pat := ones * uint64(v)
	n, i := 0, 0
	for ; i+8 <= len(levels); i += 8 {
		n += bits.OnesCount64(encoding.ZeroBytes(binary.LittleEndian.Uint64(levels[i:]) ^ pat))
	}
	for _, l := range levels[i:] {
		if l == v {
			n++
		}
	}
	return n
}

// recordsEnd returns where the page of repetition levels rep that starts
// at l0 ends by the row limit alone: at the first record start after l0
// that has rowLimit (at least 1) record starts before it in the page, or
// at the end of rep; and how many records start in the page.
func recordsEnd(rep []uint8, l0, rowLimit int) (end, rows int) {
	if l0 >= len(rep) {
		return len(rep), 0
	}
	if rep[l0] == 0 {
		rows = 1
	}
	i := l0 + 1
	for ; i+8 <= len(rep); i += 8 {
		k := bits.OnesCount64(encoding.ZeroBytes(binary.LittleEndian.Uint64(rep[i:])))
		if rows+k > rowLimit {
			break // the end is in this word
		}
		rows += k
	}
	for ; i < len(rep); i++ {
		if rep[i] == 0 {
			if rows >= rowLimit {
				return i, rows
			}
			rows++
		}
	}
	return len(rep), rows
}
