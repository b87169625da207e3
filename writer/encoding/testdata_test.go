package encoding

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Test data sets shared by the round-trip, allocation, fuzz and benchmark
// tests. Every generator covers the same shapes: empty, one value, extreme
// values, all equal, alternating, long runs, sizes around block and group
// boundaries, and random data.

type dataset[T any] struct {
	name   string
	values []T
}

// column is one named column of a type that is not a plain slice.
type column[T any] struct {
	name   string
	values T
}

func testSizes() []int {
	return []int{0, 1, 2, 7, 8, 9, 31, 32, 33, 127, 128, 129, 130, 511, 1000, 4097}
}

func intDatasets[T int32 | int64](rng *rand.Rand, minV, maxV T) []dataset[T] {
	var sets []dataset[T]
	add := func(name string, v []T) { sets = append(sets, dataset[T]{name, v}) }
	add("empty", []T{})
	add("one", []T{42})
	add("min", []T{minV})
	add("max", []T{maxV})
	add("min-max", []T{minV, maxV, minV, maxV, 0, -1, 1, maxV, minV})
	for _, n := range testSizes() {
		equal := make([]T, n)
		alt := make([]T, n)
		runs := make([]T, n)
		random := make([]T, n)
		small := make([]T, n)
		inc := make([]T, n)
		extremes := make([]T, n)
		for i := range n {
			equal[i] = 7
			alt[i] = T(i % 2)
			runs[i] = T(i / 50)
			random[i] = T(rng.Uint64())
			small[i] = T(rng.IntN(16)) - 8
			inc[i] = T(1000 + 3*i)
			if rng.IntN(2) == 0 {
				extremes[i] = minV
			} else {
				extremes[i] = maxV
			}
		}
		add(fmt.Sprintf("equal/%d", n), equal)
		add(fmt.Sprintf("alternating/%d", n), alt)
		add(fmt.Sprintf("runs/%d", n), runs)
		add(fmt.Sprintf("random/%d", n), random)
		add(fmt.Sprintf("small/%d", n), small)
		add(fmt.Sprintf("increasing/%d", n), inc)
		add(fmt.Sprintf("extremes/%d", n), extremes)
	}
	return sets
}

func int32Datasets(rng *rand.Rand) []dataset[int32] {
	return intDatasets(rng, int32(math.MinInt32), int32(math.MaxInt32))
}

func int64Datasets(rng *rand.Rand) []dataset[int64] {
	return intDatasets(rng, int64(math.MinInt64), int64(math.MaxInt64))
}

func floatDatasets(rng *rand.Rand) []dataset[float32] {
	special := []float32{
		0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.Float32frombits(0x7fc00001), math.Float32frombits(0xffffffff),
		math.MaxFloat32, math.SmallestNonzeroFloat32, -math.MaxFloat32,
	}
	sets := []dataset[float32]{{"empty", []float32{}}, {"special", special}}
	for _, n := range testSizes() {
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(rng.Uint32())
		}
		sets = append(sets, dataset[float32]{fmt.Sprintf("random/%d", n), v})
	}
	return sets
}

func doubleDatasets(rng *rand.Rand) []dataset[float64] {
	special := []float64{
		0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
		math.Float64frombits(0x7ff8000000000001), math.Float64frombits(0xffffffffffffffff),
		math.MaxFloat64, math.SmallestNonzeroFloat64, -math.MaxFloat64,
	}
	sets := []dataset[float64]{{"empty", []float64{}}, {"special", special}}
	for _, n := range testSizes() {
		v := make([]float64, n)
		for i := range v {
			v[i] = math.Float64frombits(rng.Uint64())
		}
		sets = append(sets, dataset[float64]{fmt.Sprintf("random/%d", n), v})
	}
	return sets
}

func boolDatasets(rng *rand.Rand) []dataset[bool] {
	sets := []dataset[bool]{{"empty", []bool{}}, {"true", []bool{true}}, {"false", []bool{false}}}
	for _, n := range testSizes() {
		random, alt, runs, all := make([]bool, n), make([]bool, n), make([]bool, n), make([]bool, n)
		for i := range n {
			random[i] = rng.IntN(2) == 0
			alt[i] = i%2 == 0
			runs[i] = (i/37)%2 == 0
			all[i] = true
		}
		sets = append(sets,
			dataset[bool]{fmt.Sprintf("random/%d", n), random},
			dataset[bool]{fmt.Sprintf("alternating/%d", n), alt},
			dataset[bool]{fmt.Sprintf("runs/%d", n), runs},
			dataset[bool]{fmt.Sprintf("all/%d", n), all})
	}
	return sets
}

func int96Datasets(rng *rand.Rand) []dataset[[12]byte] {
	sets := []dataset[[12]byte]{{"empty", [][12]byte{}}}
	for _, n := range []int{1, 3, 100} {
		v := make([][12]byte, n)
		for i := range v {
			for j := range v[i] {
				v[i][j] = byte(rng.Uint32())
			}
		}
		sets = append(sets, dataset[[12]byte]{fmt.Sprintf("random/%d", n), v})
	}
	return sets
}

// byteArrays is a BYTE_ARRAY column in the package's representation.
type byteArrays struct {
	data    []byte
	offsets []uint32
}

func (b byteArrays) len() int { return max(len(b.offsets)-1, 0) }

func makeByteArrays(values ...[]byte) byteArrays {
	b := byteArrays{offsets: []uint32{0}}
	for _, v := range values {
		b.data = append(b.data, v...)
		b.offsets = append(b.offsets, uint32(len(b.data)))
	}
	return b
}

func byteArrayDatasets(rng *rand.Rand) []column[byteArrays] {
	str := func(s ...string) byteArrays {
		v := make([][]byte, len(s))
		for i := range s {
			v[i] = []byte(s[i])
		}
		return makeByteArrays(v...)
	}
	sets := []column[byteArrays]{
		{"none", byteArrays{}},
		{"zero", str()},
		{"one-empty", str("")},
		{"empties", str("", "", "", "")},
		{"spec", str("axis", "axle", "babble", "babyhood")},
		{"hello", str("Hello", "World", "Foobar", "ABCDEF")},
		{"equal", str("same", "same", "same", "same", "same")},
		{"prefixes", str("a", "ab", "abc", "abcd", "abc", "ab", "a", "", "a")},
		{"long", str(string(make([]byte, 100000)), "x", string(make([]byte, 70000)))},
	}
	for _, n := range testSizes() {
		var values [][]byte
		for i := range n {
			// Sorted-ish keys with shared prefixes, and some random bytes.
			v := fmt.Appendf(nil, "user/%06d/", i/3)
			for range rng.IntN(20) {
				v = append(v, byte(rng.Uint32()))
			}
			values = append(values, v)
		}
		sets = append(sets, column[byteArrays]{fmt.Sprintf("keys/%d", n), makeByteArrays(values...)})
	}
	return sets
}

// fixedLen is a FIXED_LEN_BYTE_ARRAY column.
type fixedLen struct {
	data []byte
	size int
}

func fixedLenDatasets(rng *rand.Rand) []column[fixedLen] {
	var sets []column[fixedLen]
	for _, size := range []int{1, 2, 3, 16, 33} {
		for _, n := range []int{0, 1, 5, 129, 1000} {
			data := make([]byte, n*size)
			for i := range data {
				// Few distinct bytes so prefixes repeat.
				data[i] = byte(rng.IntN(3))
			}
			sets = append(sets, column[fixedLen]{fmt.Sprintf("size%d/%d", size, n), fixedLen{data, size}})
		}
	}
	return sets
}
