package encoding

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// Block layout written by the DELTA_BINARY_PACKED encoder: the smallest
// block the spec allows, split in four miniblocks of 32 values, which lets
// bit widths follow local changes in the data closely.
const (
	deltaBlockSize     = 128
	deltaMiniblocks    = 4
	deltaMiniblockSize = deltaBlockSize / deltaMiniblocks
	// deltaGroup is the unit the decoder unpacks at a time: every
	// miniblock holds a multiple of 32 values.
	deltaGroup = 32
)

// DeltaBinaryPacked is the DELTA_BINARY_PACKED encoding of INT32 and INT64
// values: a header, then blocks of 128 deltas, each block storing its
// minimum delta and four miniblocks bit-packed at their own widths. Deltas
// wrap around in the physical type's two's complement arithmetic.
type DeltaBinaryPacked struct{ unsupported[DeltaBinaryPacked] }

// String returns "DELTA_BINARY_PACKED".
func (DeltaBinaryPacked) String() string { return "DELTA_BINARY_PACKED" }

// EncodeInt32 appends src delta-encoded with 32-bit wrapping deltas.
func (DeltaBinaryPacked) EncodeInt32(dst []byte, src []int32) ([]byte, error) {
	var w deltaWriter
	if len(src) == 0 {
		return w.begin(dst, 0, 0, true), nil
	}
	dst = w.begin(dst, len(src), int64(src[0]), true)
	return w.finish(addDeltas(&w, dst, src[1:])), nil
}

// EncodeInt64 appends src delta-encoded with 64-bit wrapping deltas.
func (DeltaBinaryPacked) EncodeInt64(dst []byte, src []int64) ([]byte, error) {
	var w deltaWriter
	if len(src) == 0 {
		return w.begin(dst, 0, 0, false), nil
	}
	dst = w.begin(dst, len(src), src[0], false)
	return w.finish(addDeltas(&w, dst, src[1:])), nil
}

// DecodeInt32 appends n values decoded from src.
func (DeltaBinaryPacked) DecodeInt32(dst []int32, src []byte, n int) ([]int32, error) {
	return decodeDeltaInts(dst, src, n, 32)
}

// DecodeInt64 appends n values decoded from src.
func (DeltaBinaryPacked) DecodeInt64(dst []int64, src []byte, n int) ([]int64, error) {
	return decodeDeltaInts(dst, src, n, 64)
}

func decodeDeltaInts[T int32 | int64](dst []T, src []byte, n, bitLimit int) ([]T, error) {
	if err := checkCount(n); err != nil {
		return dst, fmt.Errorf("delta binary packed: %w", err)
	}
	var r deltaReader
	if err := r.init(src, bitLimit); err != nil {
		return dst, err
	}
	if r.left < n {
		return dst, fmt.Errorf("delta binary packed: header holds %d values, page needs %d", r.left, n)
	}
	orig := len(dst)
	var buf [deltaGroup]uint64
	for n > 0 {
		k, err := r.next(&buf)
		if err != nil {
			return dst[:orig], err
		}
		k = min(k, n)
		for _, v := range buf[:k] {
			dst = append(dst, T(v))
		}
		n -= k
	}
	return dst, nil
}

// deltaWriter writes one DELTA_BINARY_PACKED stream whose value count is
// known up front, buffering one block of deltas. Its zero value is ready for
// begin.
type deltaWriter struct {
	deltas [deltaBlockSize]int64
	n      int // buffered deltas
	prev   int64
	wrap32 bool // deltas wrap around in 32 bits (INT32 data)
}

// begin appends the stream header. first is the first value; the remaining
// count-1 values must be passed to add.
func (w *deltaWriter) begin(dst []byte, count int, first int64, wrap32 bool) []byte {
	w.n, w.prev, w.wrap32 = 0, first, wrap32
	dst = binary.AppendUvarint(dst, deltaBlockSize)
	dst = binary.AppendUvarint(dst, deltaMiniblocks)
	dst = binary.AppendUvarint(dst, uint64(count))
	return binary.AppendVarint(dst, first) // zigzag
}

// add buffers the delta to v, writing a block when one is full.
func (w *deltaWriter) add(dst []byte, v int64) []byte {
	d := v - w.prev
	if w.wrap32 {
		d = int64(int32(d))
	}
	w.prev = v
	w.deltas[w.n] = d
	w.n++
	if w.n == deltaBlockSize {
		dst = w.flush(dst)
	}
	return dst
}

// finish writes the last, partial block.
// addDeltas is add for each of vs, a block at a time: the deltas are
// taken in a loop of their own rather than by a call per value, and
// wrapped to 32 bits when the stream is of INT32 data.
func addDeltas[T int32 | int64](w *deltaWriter, dst []byte, vs []T) []byte {
	prev := w.prev
	for len(vs) > 0 {
		k := min(deltaBlockSize-w.n, len(vs))
		block := w.deltas[w.n : w.n+k]
		if w.wrap32 {
			for i, v := range vs[:k] {
				block[i] = int64(int32(int64(v) - prev))
				prev = int64(v)
			}
		} else {
			for i, v := range vs[:k] {
				block[i] = int64(v) - prev
				prev = int64(v)
			}
		}
		w.n += k
		vs = vs[k:]
		if w.n == deltaBlockSize {
			dst = w.flush(dst)
		}
	}
	w.prev = prev
	return dst
}

func (w *deltaWriter) finish(dst []byte) []byte {
	if w.n > 0 {
		dst = w.flush(dst)
	}
	return dst
}

// flush appends the buffered deltas as one block: the minimum delta, four
// bit widths, and the miniblocks needed to hold the deltas, the last one
// padded with zeros. Unneeded miniblocks have width 0 and no bytes.
func (w *deltaWriter) flush(dst []byte) []byte {
	deltas := w.deltas[:w.n]
	minDelta := deltas[0]
	for _, d := range deltas[1:] {
		minDelta = min(minDelta, d)
	}
	dst = binary.AppendVarint(dst, minDelta)
	widths := len(dst)
	dst = append(dst, 0, 0, 0, 0) // one per miniblock, filled below
	var rel [deltaMiniblockSize]uint64
	for m := 0; m*deltaMiniblockSize < len(deltas); m++ {
		chunk := deltas[m*deltaMiniblockSize : min((m+1)*deltaMiniblockSize, len(deltas))]
		var or uint64
		for i, d := range chunk {
			// Wrapping subtraction; the result is the unsigned distance
			// from the minimum, which fits the physical type's width.
			r := uint64(d - minDelta)
			rel[i] = r
			or |= r
		}
		clear(rel[len(chunk):])
		width := bits.Len64(or)
		dst[widths+m] = byte(width)
		dst = pack(dst, rel[:], width)
	}
	w.n = 0
	return dst
}

// deltaReader decodes a DELTA_BINARY_PACKED stream 32 values at a time,
// validating the stream as it goes.
type deltaReader struct {
	src       []byte
	off       int // next byte to read
	bitLimit  int // largest miniblock bit width: 32 or 64
	miniCount int // miniblocks per block
	miniSize  int // values per miniblock
	left      int // values not yet returned
	started   bool
	prev      uint64 // last value returned, in wrapping arithmetic
	minDelta  uint64
	widths    []byte // bit widths of the current block's miniblocks
	widthsAt  int    // offset of widths in src
	mini      int    // current miniblock; miniCount when a block must be read
	group     int    // next 32-value group within the miniblock
}

// maxDeltaBlockSize bounds the block size a reader accepts so that sizes
// computed from it cannot overflow; real writers use 128 to 1024.
const maxDeltaBlockSize = 1 << 30

// init reads the stream header.
func (r *deltaReader) init(src []byte, bitLimit int) error {
	*r = deltaReader{src: src, bitLimit: bitLimit}
	blockSize, err := r.uvarint("block size")
	if err != nil {
		return err
	}
	if blockSize == 0 || blockSize%128 != 0 || blockSize > maxDeltaBlockSize {
		return fmt.Errorf("delta binary packed: block size %d is not a multiple of 128 in 128..%d", blockSize, maxDeltaBlockSize)
	}
	miniCount, err := r.uvarint("miniblock count")
	if err != nil {
		return err
	}
	if miniCount == 0 || blockSize%miniCount != 0 || (blockSize/miniCount)%32 != 0 {
		return fmt.Errorf("delta binary packed: %d miniblocks do not divide block size %d in multiples of 32", miniCount, blockSize)
	}
	count, err := r.uvarint("value count")
	if err != nil {
		return err
	}
	if count > math.MaxInt32 {
		return fmt.Errorf("delta binary packed: value count %d exceeds %d", count, math.MaxInt32)
	}
	first, k := binary.Varint(r.src[r.off:])
	if k <= 0 {
		return fmt.Errorf("delta binary packed: invalid first value at offset %d", r.off)
	}
	r.off += k
	r.miniCount = int(miniCount)
	r.miniSize = int(blockSize / miniCount)
	r.left = int(count)
	r.prev = uint64(first)
	r.mini = r.miniCount
	return nil
}

func (r *deltaReader) uvarint(what string) (uint64, error) {
	v, k := binary.Uvarint(r.src[r.off:])
	if k <= 0 {
		return 0, fmt.Errorf("delta binary packed: invalid %s at offset %d", what, r.off)
	}
	r.off += k
	return v, nil
}

// next decodes up to 32 values into buf and returns how many. It returns 0
// at the end of the stream. The first call returns the header's first value
// alone.
func (r *deltaReader) next(buf *[deltaGroup]uint64) (int, error) {
	if r.left == 0 {
		return 0, nil
	}
	if !r.started {
		r.started = true
		r.left--
		buf[0] = r.prev
		return 1, nil
	}
	width, err := r.miniblock()
	if err != nil {
		return 0, err
	}
	size := deltaGroup * width / 8
	if len(r.src)-r.off < size {
		return 0, fmt.Errorf("delta binary packed: miniblock at offset %d: %d bytes of %d-bit values, have %d", r.off, size, width, len(r.src)-r.off)
	}
	unpack(buf[:], r.src[r.off:], width)
	r.off += size
	k := min(deltaGroup, r.left)
	prev, minDelta := r.prev, r.minDelta
	for i, v := range buf[:k] {
		prev += v + minDelta
		buf[i] = prev
	}
	r.prev = prev
	r.left -= k
	r.group++
	groups := r.miniSize / deltaGroup
	if r.left == 0 && r.group < groups {
		// The last miniblock is padded to its full size.
		if err := r.advance((groups - r.group) * size); err != nil {
			return 0, err
		}
		r.group = groups
	}
	if r.group == groups {
		r.group = 0
		r.mini++
	}
	return k, nil
}

// miniblock reads a block header if the current block is done and returns
// the bit width of the current miniblock.
func (r *deltaReader) miniblock() (int, error) {
	if r.mini == r.miniCount {
		start := r.off
		minDelta, k := binary.Varint(r.src[r.off:])
		if k <= 0 {
			return 0, fmt.Errorf("delta binary packed: invalid block min delta at offset %d", start)
		}
		r.off += k
		if len(r.src)-r.off < r.miniCount {
			return 0, fmt.Errorf("delta binary packed: block at offset %d: %d miniblock bit widths, have %d bytes", start, r.miniCount, len(r.src)-r.off)
		}
		r.minDelta = uint64(minDelta)
		r.widths = r.src[r.off : r.off+r.miniCount]
		r.widthsAt = r.off
		r.off += r.miniCount
		r.mini = 0
	}
	width := int(r.widths[r.mini])
	if width > r.bitLimit {
		return 0, fmt.Errorf("delta binary packed: miniblock bit width %d > %d at offset %d", width, r.bitLimit, r.widthsAt+r.mini)
	}
	return width, nil
}

func (r *deltaReader) advance(size int) error {
	if len(r.src)-r.off < size {
		return fmt.Errorf("delta binary packed: miniblock padding at offset %d: need %d bytes, have %d", r.off, size, len(r.src)-r.off)
	}
	r.off += size
	return nil
}

// end returns the offset just past the stream, walking block headers and
// skipping miniblock bodies without decoding them. It consumes r.
func (r *deltaReader) end() (int, error) {
	if r.left > 0 && !r.started {
		r.started = true
		r.left--
	}
	groups := r.miniSize / deltaGroup
	for r.left > 0 {
		width, err := r.miniblock()
		if err != nil {
			return 0, err
		}
		// Skip what is left of this miniblock, padding included.
		rest := groups - r.group
		if err := r.advance(rest * deltaGroup * width / 8); err != nil {
			return 0, err
		}
		r.left -= min(r.left, rest*deltaGroup)
		r.group = 0
		r.mini++
	}
	return r.off, nil
}
