package bloom

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func TestNewRoundsSize(t *testing.T) {
	tests := []struct{ in, want int }{
		{-1, 32}, {0, 32}, {1, 32}, {32, 32}, {33, 64}, {64, 64}, {1000, 1024},
		{1 << 20, 1 << 20}, {1<<20 + 1, 2 << 20}, {MaxBytes, MaxBytes}, {MaxBytes + 1, MaxBytes},
	}
	for _, tt := range tests {
		if got := len(New(tt.in).Bytes()); got != tt.want {
			t.Errorf("New(%d): %d bytes, want %d", tt.in, got, tt.want)
		}
	}
}

func TestOptimalBytes(t *testing.T) {
	// Expected sizes worked out independently (Python, same Poisson model)
	// as the smallest power of two whose rate is at most fpp. The comments
	// give the closed form -8·ndv/ln(1-fpp^(1/8)) where it disagrees.
	tests := []struct {
		ndv  uint64
		fpp  float64
		want int
	}{
		{1000, 0.01, 2048},
		{1_000_000, 0.01, 2 << 20},
		{1_000_000, 0.001, 4 << 20}, // closed form: 2 MiB, which gives 0.103%
		{25_000, 0.01, 64 << 10},    // closed form: 32 KiB, which gives 1.02%
		{10_000, 0.1, 8192},
		{20_000, 0.001, 64 << 10},
		{100_000, 0.0001, 512 << 10},
		{10_000_000, 0.01, 16 << 20},
		{1, 0.01, MinBytes},
		{0, 0.01, MinBytes},
		{100_000_000, 0.0001, MaxBytes}, // needs more than the cap
		{1000, 1, MinBytes},
		{1000, 0, MaxBytes},
		{1000, -0.5, MaxBytes},
		{1000, math.NaN(), MaxBytes},
	}
	for _, tt := range tests {
		if got := OptimalBytes(tt.ndv, tt.fpp); got != tt.want {
			t.Errorf("OptimalBytes(%d, %g) = %d, want %d", tt.ndv, tt.fpp, got, tt.want)
		}
	}
}

// TestFalsePositiveRateTable checks the model against the table of bits per
// value and rates in BloomFilter.md.
func TestFalsePositiveRateTable(t *testing.T) {
	tests := []struct {
		bitsPerValue float64
		want         float64
	}{
		{5, 0.18}, {6, 0.10}, {10, 0.0126}, {10.5, 0.01}, {16.9, 0.001},
		{20, 0.0004}, {26.4, 0.0001}, {41, 0.00001},
	}
	const numBytes = 1 << 20
	for _, tt := range tests {
		ndv := uint64(math.Round(8 * numBytes / tt.bitsPerValue))
		got := FalsePositiveRate(numBytes, ndv)
		if math.Abs(got-tt.want) > 0.05*tt.want {
			t.Errorf("%.1f bits per value: rate %.6f, spec says %g", tt.bitsPerValue, got, tt.want)
		}
	}
	if got := FalsePositiveRate(1024, 0); got != 0 {
		t.Errorf("empty filter: rate %g, want 0", got)
	}
	if got := FalsePositiveRate(32, 1<<40); got != 1 {
		t.Errorf("saturated filter: rate %g, want 1", got)
	}
	if got := FalsePositiveRate(0, 1); got != 1 {
		t.Errorf("no blocks: rate %g, want 1", got)
	}
}

func TestLoad(t *testing.T) {
	tests := []struct {
		size int
		ok   bool
	}{
		{0, false}, {1, false}, {31, false}, {32, true}, {33, false},
		{96, true}, // not a power of two: legal for other writers
		{MaxBytes, true}, {MaxBytes + 32, false},
	}
	for _, tt := range tests {
		f, err := Load(make([]byte, tt.size))
		if (err == nil) != tt.ok {
			t.Errorf("Load(%d bytes): err = %v, want ok=%v", tt.size, err, tt.ok)
			continue
		}
		if tt.ok {
			f.Insert(0xdeadbeefcafebabe) // must stay in bounds
			if !f.Check(0xdeadbeefcafebabe) {
				t.Errorf("Load(%d bytes): inserted hash not found", tt.size)
			}
		}
	}
}

func TestLoadSharesBytes(t *testing.T) {
	f := New(1024)
	for i := range 100 {
		f.Insert(HashInt64(int64(i)))
	}
	g, err := Load(bytes.Clone(f.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if !g.Check(HashInt64(int64(i))) {
			t.Fatalf("value %d lost in Bytes/Load round trip", i)
		}
	}
}

// TestNoFalseNegatives is a property test: whatever the size and the hashes,
// everything inserted is found.
func TestNoFalseNegatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{32, 64, 96, 1 << 10, 1 << 16} {
		f, err := Load(make([]byte, size))
		if err != nil {
			t.Fatal(err)
		}
		// Overfill small filters on purpose: saturation must not lose values.
		hashes := make([]uint64, 4*size)
		for i := range hashes {
			hashes[i] = rng.Uint64()
			f.Insert(hashes[i])
		}
		for _, h := range hashes {
			if !f.Check(h) {
				t.Fatalf("size %d: false negative for %#x", size, h)
			}
		}
	}
}

// TestSetsEightBitsPerInsert checks the block layout: one insert into an
// empty filter sets exactly one bit in each of the eight words of one block.
func TestSetsEightBitsPerInsert(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		f := New(1024)
		h := rng.Uint64()
		f.Insert(h)
		wantBlock := int((h >> 32) * 32 >> 32)
		b := f.Bytes()
		for i := 0; i < len(b); i += 4 {
			ones := bits32(binary.LittleEndian.Uint32(b[i:]))
			want := 0
			if i/BlockBytes == wantBlock {
				want = 1
			}
			if ones != want {
				t.Fatalf("hash %#x: word %d has %d bits set, want %d", h, i/4, ones, want)
			}
		}
	}
}

func bits32(w uint32) int {
	n := 0
	for ; w != 0; w &= w - 1 {
		n++
	}
	return n
}

// measureFPP inserts n random hashes into f and returns the share of
// 500,000 other random hashes that Check accepts.
func measureFPP(f *Filter, n int, seed uint64) float64 {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	for range n {
		f.Insert(rng.Uint64())
	}
	const probes = 500_000
	hits := 0
	for range probes {
		if f.Check(rng.Uint64()) {
			hits++
		}
	}
	return float64(hits) / probes
}

// TestFalsePositiveRateSpecExample reproduces the worked example of
// BloomFilter.md: 1024 blocks at 10, 5 and 20 bits per value.
func TestFalsePositiveRateSpecExample(t *testing.T) {
	tests := []struct {
		values   int
		spec     float64 // the probability the spec quotes
		min, max float64
	}{
		{26_214, 0.0126, 0.0110, 0.0145},
		{52_428, 0.18, 0.16, 0.20},
		{13_107, 0.0004, 0.0002, 0.0007},
	}
	for _, tt := range tests {
		got := measureFPP(New(1024*BlockBytes), tt.values, uint64(tt.values))
		if got < tt.min || got > tt.max {
			t.Errorf("%d values in 1024 blocks: fpp %.5f, spec says about %.4f", tt.values, got, tt.spec)
		}
	}
}

// TestFalsePositiveRateOptimal checks that filters deliver the rate the
// model predicts: sized by OptimalBytes, at most the target (with room for
// sampling noise), and at the smallest block count the model accepts, close
// to the target from both sides.
func TestFalsePositiveRateOptimal(t *testing.T) {
	tests := []struct {
		ndv int
		fpp float64
	}{
		{1000, 0.1}, {1000, 0.01}, {10_000, 0.01}, {20_000, 0.001}, {50_000, 0.05}, {25_000, 0.01},
	}
	for _, tt := range tests {
		size := OptimalBytes(uint64(tt.ndv), tt.fpp)
		got := measureFPP(New(size), tt.ndv, uint64(tt.ndv))
		if got > 1.15*tt.fpp {
			t.Errorf("ndv %d, fpp %g: %d bytes give fpp %.5f", tt.ndv, tt.fpp, size, got)
		}

		blocks := sort.Search(MaxBytes/BlockBytes, func(z int) bool {
			return z > 0 && FalsePositiveRate(z*BlockBytes, uint64(tt.ndv)) <= tt.fpp
		})
		f, err := Load(make([]byte, blocks*BlockBytes))
		if err != nil {
			t.Fatal(err)
		}
		got = measureFPP(f, tt.ndv, uint64(tt.ndv)+7)
		if got < 0.8*tt.fpp || got > 1.2*tt.fpp {
			t.Errorf("ndv %d, fpp %g: %d blocks give fpp %.5f", tt.ndv, tt.fpp, blocks, got)
		}
		t.Logf("ndv %d, fpp %g: %d bytes; %d blocks measure %.5f", tt.ndv, tt.fpp, size, blocks, got)
	}
}

func TestHashes(t *testing.T) {
	// XXH64 (seed 0) of the empty input, from the xxHash reference.
	if got := HashBytes(nil); got != 0xef46db3751d8e999 {
		t.Errorf("HashBytes(nil) = %#x, want 0xef46db3751d8e999", got)
	}
	// Each helper hashes the PLAIN bytes of its value.
	le32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	le64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	var i96 [12]byte
	copy(i96[:], "0123456789ab")
	tests := []struct {
		name string
		got  uint64
		want []byte
	}{
		{"int32", HashInt32(-2), le32(0xfffffffe)},
		{"int64", HashInt64(1 << 40), le64(1 << 40)},
		{"float", HashFloat(1.5), le32(0x3fc00000)},
		{"float -0", HashFloat(float32(math.Copysign(0, -1))), le32(0x80000000)},
		{"double", HashDouble(-2.25), le64(0xc002000000000000)},
		{"int96", HashInt96(i96), []byte("0123456789ab")},
		{"string", HashString("parquet"), []byte("parquet")},
	}
	for _, tt := range tests {
		if want := HashBytes(tt.want); tt.got != want {
			t.Errorf("%s: hash %#x, want %#x (hash of % x)", tt.name, tt.got, want, tt.want)
		}
	}
	if HashFloat(0) == HashFloat(float32(math.Copysign(0, -1))) {
		t.Error("+0 and -0 hash alike")
	}
}

func BenchmarkInsert(b *testing.B) {
	f := New(1 << 20)
	hashes := randomHashes(1 << 16)
	b.ResetTimer()
	for i := range b.N {
		f.Insert(hashes[i&(len(hashes)-1)])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "values/s")
}

func BenchmarkCheck(b *testing.B) {
	f := New(1 << 20)
	hashes := randomHashes(1 << 16)
	for _, h := range hashes[:len(hashes)/2] {
		f.Insert(h)
	}
	b.ResetTimer()
	found := 0
	for i := range b.N {
		if f.Check(hashes[i&(len(hashes)-1)]) {
			found++
		}
	}
	if b.N >= len(hashes) && found < b.N/2 {
		b.Fatalf("only %d of %d found", found, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "values/s")
}

func BenchmarkHashBytes(b *testing.B) {
	v := []byte("a-typical-kafka-record-key-0123456789")
	b.SetBytes(int64(len(v)))
	var sink uint64
	for range b.N {
		sink += HashBytes(v)
	}
	_ = sink
}

func randomHashes(n int) []uint64 {
	rng := rand.New(rand.NewPCG(5, 6))
	h := make([]uint64, n)
	for i := range h {
		h[i] = rng.Uint64()
	}
	return h
}

// FuzzLoad feeds arbitrary bitsets and hashes to Load, Check and Insert:
// whatever the bytes, nothing may panic or index outside the bitset, and an
// inserted hash is then found.
func FuzzLoad(f *testing.F) {
	f.Add(make([]byte, 32), uint64(0))
	f.Add(make([]byte, 96), uint64(math.MaxUint64))
	f.Add(bytes.Repeat([]byte{0xff}, 64), uint64(0x123456789abcdef))
	f.Add([]byte{1, 2, 3}, uint64(7))
	f.Fuzz(func(t *testing.T, bitset []byte, hash uint64) {
		flt, err := Load(bitset)
		if err != nil {
			return
		}
		flt.Check(hash)
		flt.Insert(hash)
		if !flt.Check(hash) {
			t.Fatalf("hash %#x not found after Insert", hash)
		}
	})
}
