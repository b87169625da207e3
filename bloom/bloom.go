// Package bloom implements Parquet's split-block Bloom filter (SBBF), as
// specified in BloomFilter.md of the Parquet format: a bitset of 256-bit
// blocks, one block picked per value by the top half of its 64-bit hash and
// eight bits set in it by the bottom half.
//
// The package knows nothing of thrift: the BloomFilterHeader that precedes
// the bitset in a file is meta's business, and Bytes and Load deal in the
// bitset alone.
package bloom

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

const (
	// BlockBytes is the size of one block: eight 32-bit words.
	BlockBytes = 32

	// MinBytes is the smallest filter: a single block.
	MinBytes = BlockBytes

	// MaxBytes caps the bitset at 128 MiB, the upper bound the Parquet
	// implementations agree on. A bigger filter would cost more I/O to probe
	// than scanning the column chunk it guards would save.
	MaxBytes = 128 << 20
)

// salt holds the eight odd constants of the spec's mask function; each
// spreads the low 32 bits of the hash into one word of the block.
var salt = [8]uint32{
	0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d,
	0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31,
}

// Filter is a split-block Bloom filter. Its zero value is not usable; create
// one with New or Load.
//
// Insert must not run concurrently with Insert or Check; Check alone is safe
// for concurrent use.
type Filter struct {
	// bits is the bitset exactly as serialized: blocks of eight
	// little-endian 32-bit words. Keeping the wire form avoids a copy in
	// Bytes and Load.
	bits []byte
}

// New returns an empty filter of numBytes bytes, rounded up to a power of two
// and clamped to [MinBytes, MaxBytes].
func New(numBytes int) *Filter {
	return &Filter{bits: make([]byte, roundBytes(numBytes))}
}

// Load returns a filter over bitset, the bytes that follow a
// BloomFilterHeader in a file. The filter uses bitset directly: the caller
// must not modify it afterwards.
//
// The size must be a positive multiple of BlockBytes and at most MaxBytes;
// it need not be a power of two, since other writers are free to choose any
// block count.
func Load(bitset []byte) (*Filter, error) {
	switch n := len(bitset); {
	case n == 0:
		return nil, fmt.Errorf("bloom: empty bitset")
	case n%BlockBytes != 0:
		return nil, fmt.Errorf("bloom: bitset of %d bytes is not a multiple of the %d-byte block", n, BlockBytes)
	case n > MaxBytes:
		return nil, fmt.Errorf("bloom: bitset of %d bytes exceeds the %d-byte maximum", n, MaxBytes)
	}
	return &Filter{bits: bitset}, nil
}

// OptimalBytes returns the smallest bitset size, in bytes, at which a filter
// holding ndv distinct values has a false positive probability of at most
// fpp (see FalsePositiveRate). Sizes are powers of two within
// [MinBytes, MaxBytes]; when even MaxBytes cannot reach fpp, or fpp is not
// positive, the result is MaxBytes.
//
// The closed form bits = -8·ndv / ln(1 - fpp^(1/8)) that some writers use
// treats every block as equally loaded and so undersizes the filter: at a
// 0.1% target it yields about twice the rate. Modelling the block load is
// what reproduces the table in BloomFilter.md.
func OptimalBytes(ndv uint64, fpp float64) int {
	switch {
	case ndv == 0 || fpp >= 1:
		return MinBytes
	case !(fpp > 0): // also catches NaN
		return MaxBytes
	}
	for n := MinBytes; n < MaxBytes; n *= 2 {
		if FalsePositiveRate(n, ndv) <= fpp {
			return n
		}
	}
	return MaxBytes
}

// FalsePositiveRate returns the expected false positive probability of a
// filter of numBytes bytes holding ndv distinct values.
//
// A value lands in a block chosen uniformly, so the load of the block a probe
// hits is Poisson with mean λ = ndv/blocks; a block holding k values has each
// word's probed bit set with probability 1-(31/32)^k, and a probe checks one
// bit in each of the eight words. The rate is the Poisson-weighted mean of
// (1-(31/32)^k)^8. It matches the figures of BloomFilter.md (1.26% at 10
// bits per value, 0.1% at 16.9).
func FalsePositiveRate(numBytes int, ndv uint64) float64 {
	blocks := numBytes / BlockBytes
	if blocks < 1 {
		return 1
	}
	if ndv == 0 {
		return 0
	}
	lambda := float64(ndv) / float64(blocks)
	// Sum over k within 12 standard deviations of λ; the tails beyond hold
	// less than 1e-30 of the mass.
	spread := 12*math.Sqrt(lambda) + 12
	lo := math.Max(0, math.Floor(lambda-spread))
	if lo > 3000 {
		// Every block is so full that (31/32)^k < 1e-40: all bits set.
		return 1
	}
	hi := math.Ceil(lambda + spread)
	logLambda := math.Log(lambda)
	logMiss := math.Log(31.0 / 32.0) // chance a value leaves a given bit unset
	var rate float64
	for k := lo; k <= hi; k++ {
		lgk, _ := math.Lgamma(k + 1)
		p := math.Exp(k*logLambda - lambda - lgk)
		rate += p * math.Pow(-math.Expm1(k*logMiss), 8)
	}
	return math.Min(rate, 1)
}

// roundBytes rounds n up to a power of two within [MinBytes, MaxBytes].
func roundBytes(n int) int {
	switch {
	case n <= MinBytes:
		return MinBytes
	case n >= MaxBytes:
		return MaxBytes
	}
	return 1 << bits.Len(uint(n-1))
}

// Bytes returns the bitset as it is written after the BloomFilterHeader. It
// aliases the filter's storage: later inserts show through.
func (f *Filter) Bytes() []byte { return f.bits }

// Insert adds a value, given by its hash (see the Hash functions), to the
// filter.
func (f *Filter) Insert(hash uint64) {
	b := f.block(hash)
	x := uint32(hash)
	for i := range 8 {
		w := (*[4]byte)(b[4*i:])
		binary.LittleEndian.PutUint32(w[:], binary.LittleEndian.Uint32(w[:])|1<<((x*salt[i])>>27))
	}
}

// Check reports whether a value with this hash may have been inserted. A
// false result is certain; a true one is wrong with the probability the
// filter was sized for.
func (f *Filter) Check(hash uint64) bool {
	b := f.block(hash)
	x := uint32(hash)
	for i := range 8 {
		if binary.LittleEndian.Uint32(b[4*i:])&(1<<((x*salt[i])>>27)) == 0 {
			return false
		}
	}
	return true
}

// block returns the block selected by the top 32 bits of hash. Multiplying
// and keeping the high half maps them onto [0, z) without a division.
func (f *Filter) block(hash uint64) *[BlockBytes]byte {
	z := uint64(len(f.bits) / BlockBytes)
	i := int((hash >> 32) * z >> 32)
	return (*[BlockBytes]byte)(f.bits[i*BlockBytes:])
}
