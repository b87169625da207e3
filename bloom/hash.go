package bloom

import (
	"encoding/binary"
	"math"

	"github.com/cespare/xxhash/v2"
)

// The Hash functions return the value's hash as Parquet Bloom filters expect
// it: XXH64 with seed 0 over the value's PLAIN encoding. For byte arrays that
// is the bytes alone, without PLAIN's 4-byte length prefix.

// HashInt32 hashes an INT32 value (also DATE, and the 8/16/32-bit integer
// logical types).
func HashInt32(v int32) uint64 {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(v))
	return xxhash.Sum64(b[:])
}

// HashInt64 hashes an INT64 value (also TIMESTAMP, TIME and 64-bit DECIMAL).
func HashInt64(v int64) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	return xxhash.Sum64(b[:])
}

// HashFloat hashes a FLOAT value by its IEEE 754 bits, so -0 and +0, and
// distinct NaN payloads, hash differently.
func HashFloat(v float32) uint64 {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
	return xxhash.Sum64(b[:])
}

// HashDouble hashes a DOUBLE value by its IEEE 754 bits, so -0 and +0, and
// distinct NaN payloads, hash differently.
func HashDouble(v float64) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
	return xxhash.Sum64(b[:])
}

// HashBytes hashes a BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY value.
func HashBytes(v []byte) uint64 { return xxhash.Sum64(v) }

// HashInt96 hashes an INT96 value, given as its 12 PLAIN-encoded bytes.
func HashInt96(v [12]byte) uint64 { return xxhash.Sum64(v[:]) }

// HashString hashes a string as the BYTE_ARRAY holding its bytes, without
// converting it to a []byte first.
func HashString(v string) uint64 { return xxhash.Sum64String(v) }
