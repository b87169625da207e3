package encoding

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// referencePack packs values one bit at a time, least significant first; the
// fast packers are checked against it.
func referencePack(values []uint64, width int) []byte {
	out := make([]byte, (len(values)*width+7)/8)
	bit := 0
	for _, v := range values {
		for b := range width {
			if v>>b&1 != 0 {
				out[bit/8] |= 1 << (bit % 8)
			}
			bit++
		}
	}
	return out
}

func TestPackUnpack(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for width := 0; width <= 64; width++ {
		for _, n := range []int{8, 16, 24, 32, 64, 200, 1024} {
			values := make([]uint64, n)
			for i := range values {
				values[i] = rng.Uint64() & widthMask(width)
			}
			want := referencePack(values, width)
			got := pack([]byte{9}, values, width)
			if got[0] != 9 || !bytes.Equal(got[1:], want) {
				t.Fatalf("width %d, n %d: pack differs from reference", width, n)
			}
			out := make([]uint64, n)
			unpack(out, want, width)
			if !equalSlices(out, values) {
				t.Fatalf("width %d, n %d: unpack64 differs", width, n)
			}
			if width <= 32 {
				v32 := make([]uint32, n)
				for i, v := range values {
					v32[i] = uint32(v)
				}
				if got := pack(nil, v32, width); !bytes.Equal(got, want) {
					t.Fatalf("width %d, n %d: pack32 differs from reference", width, n)
				}
				out32 := make([]uint32, n)
				unpack(out32, want, width)
				if !equalSlices(out32, v32) {
					t.Fatalf("width %d, n %d: unpack32 differs", width, n)
				}
			}
			if width <= 8 {
				v8 := make([]uint8, n)
				for i, v := range values {
					v8[i] = uint8(v)
				}
				out8 := make([]uint8, n)
				unpack(out8, want, width)
				if !bytes.Equal(out8, v8) {
					t.Fatalf("width %d, n %d: unpack8 differs", width, n)
				}
			}
		}
	}
}

func TestBitWidth(t *testing.T) {
	for _, tt := range []struct {
		max  uint64
		want int
	}{{0, 0}, {1, 1}, {2, 2}, {3, 2}, {4, 3}, {255, 8}, {256, 9}, {1<<32 - 1, 32}, {1<<64 - 1, 64}} {
		if got := BitWidth(tt.max); got != tt.want {
			t.Errorf("BitWidth(%d) = %d, want %d", tt.max, got, tt.want)
		}
	}
}

func TestHybridRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for width := 0; width <= 32; width++ {
		for _, shape := range []string{"random", "runs", "mixed", "equal"} {
			for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 100, 1000, 5000} {
				values := hybridShape(rng, shape, n, width)
				enc := AppendHybrid([]byte{1}, values, width)
				got, err := DecodeHybrid([]uint32{7}, enc[1:], width, n)
				if err != nil {
					t.Fatalf("width %d %s/%d: %v", width, shape, n, err)
				}
				if got[0] != 7 || !equalSlices(got[1:], values) {
					t.Fatalf("width %d %s/%d: round trip differs", width, shape, n)
				}
				if width <= 8 {
					levels := make([]uint8, n)
					for i, v := range values {
						levels[i] = uint8(v)
					}
					if enc8 := AppendLevels(nil, levels, width); !bytes.Equal(enc8, enc[1:]) {
						t.Fatalf("width %d %s/%d: AppendLevels differs from AppendHybrid", width, shape, n)
					}
					dec, err := DecodeLevels(nil, enc[1:], width, n)
					if err != nil || !bytes.Equal(dec, levels) {
						t.Fatalf("width %d %s/%d: DecodeLevels: %v", width, shape, n, err)
					}
				}
			}
		}
	}
}

func hybridShape(rng *rand.Rand, shape string, n, width int) []uint32 {
	mask := uint32(widthMask(width))
	values := make([]uint32, n)
	for i := range values {
		switch shape {
		case "random":
			values[i] = rng.Uint32() & mask
		case "runs":
			values[i] = uint32(i/13) & mask
		case "mixed":
			if (i/40)%2 == 0 {
				values[i] = rng.Uint32() & mask
			} else {
				values[i] = mask
			}
		case "equal":
			values[i] = mask
		}
	}
	return values
}

// TestHybridSize checks that the encoder uses RLE for repeats and long
// bit-packed runs otherwise, so that output stays near the ideal size.
func TestHybridSize(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	// A million equal values: one run, a 4-byte header and the value.
	if got := len(AppendHybrid(nil, repeat(3, 1_000_000), 2)); got > 5 {
		t.Errorf("1e6 equal values: %d bytes, want at most 5", got)
	}
	// Random data: one bit-packed run, header at most 3 bytes.
	for _, width := range []int{1, 3, 8, 17, 32} {
		n := 10000
		values := hybridShape(rng, "random", n, width)
		ideal := (n + 7) / 8 * width
		if got := len(AppendHybrid(nil, values, width)); got > ideal+3 {
			t.Errorf("width %d random: %d bytes, want at most %d", width, got, ideal+3)
		}
	}
	// Alternating 40 random values and 40 equal ones: each equal stretch
	// becomes an RLE run of at least 32 values.
	values := hybridShape(rng, "mixed", 8000, 10)
	got := len(AppendHybrid(nil, values, 10))
	if limit := 100 * (48*10/8 + 2 + 2 + 2); got > limit {
		t.Errorf("mixed: %d bytes, want at most %d", got, limit)
	}
	// Runs of 7 never become RLE runs: the output is all bit-packed.
	sevens := make([]uint32, 7000)
	for i := range sevens {
		sevens[i] = uint32(i/7) & 1
	}
	if got, ideal := len(AppendHybrid(nil, sevens, 1)), 7000/8; got > ideal+2 {
		t.Errorf("runs of 7: %d bytes, want at most %d", got, ideal+2)
	}
}

func TestHybridDecodeCases(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		width   int
		n       int
		want    []uint32
		wantErr string
	}{
		// Runs written by other writers: several short bit-packed runs,
		// zero-length runs, and a final run cut after the needed bytes.
		{"short runs", "03 0102030405060708 03 090a0b0c0d0e0f10 04 11", 8, 18, []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 17}, ""},
		{"short runs cut", "03 0102030405060708 03 090a0b0c", 8, 16, nil, "bit-packed run at offset 9: 8 values of 8 bits need 8 bytes, have 4"},
		{"zero-length runs", "00 05 01 04 02", 3, 2, []uint32{2, 2}, ""},
		{"truncated last run", "05 ff", 1, 8, repeat(1, 8), ""},
		{"truncated last run needing more", "05 ff", 1, 9, nil, "bit-packed run at offset 0"},
		{"rle value too wide", "04 04", 2, 2, nil, "value 4 exceeds bit width 2"},
		{"rle value short", "04 01", 9, 2, nil, "value needs 2 bytes, have 1"},
		{"missing header", "04 01", 1, 3, nil, "missing or invalid run header at offset 2"},
		{"overlong varint", "ffffffffffffffffffffff01", 1, 3, nil, "invalid run header"},
		{"huge bit-packed run", "ffffffffffffffff7f 00", 3, 100, nil, "bit-packed run at offset 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeHybrid(nil, unhex(t, tt.src), tt.width, tt.n)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !equalSlices(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	if _, err := DecodeHybrid(nil, nil, 33, 1); err == nil {
		t.Error("bit width 33 accepted")
	}
	if _, err := DecodeLevels(nil, nil, 9, 1); err == nil {
		t.Error("level bit width 9 accepted")
	}
}

// TestRunScans wants the word-at-a-time run scans to find what a value at
// a time finds, for levels and indices, at every start and run length.
func TestRunScans(t *testing.T) {
	t.Run("uint8", func(t *testing.T) { checkRunScans(t, func(i int) uint8 { return uint8(i) }) })
	t.Run("int32", func(t *testing.T) { checkRunScans(t, func(i int) int32 { return int32(i) << 20 }) })
	t.Run("uint32", func(t *testing.T) { checkRunScans(t, func(i int) uint32 { return uint32(i) * 0x01010101 }) })
}

func checkRunScans[T hybridValue](t *testing.T, of func(int) T) {
	r := rand.New(rand.NewPCG(3, 4))
	values := make([]T, 200)
	for i := 0; i < len(values); {
		// Single values and runs of up to 20, of a few values.
		v, k := of(r.IntN(3)), 1
		if r.IntN(2) == 0 {
			k += r.IntN(20)
		}
		for ; k > 0 && i < len(values); k-- {
			values[i] = v
			i++
		}
	}
	for start := range values {
		vs := values[start:]
		want := 1
		for want < len(vs) && vs[want] == vs[0] {
			want++
		}
		if got := runLength(vs); got != want {
			t.Fatalf("runLength(values[%d:]) = %d, want %d", start, got, want)
		}
		next := start
		for next+1 < len(values) && values[next] != values[next+1] {
			next++
		}
		if got := nextRepeat(values, start); got != next {
			t.Fatalf("nextRepeat(values, %d) = %d, want %d", start, got, next)
		}
	}
}

// appendHybridByRuns is appendHybrid as it measured every repeat: the
// reference for its shortcuts.
func appendHybridByRuns[T hybridValue](dst []byte, values []T, width int) []byte {
	n := len(values)
	for i := 0; i < n; {
		start := i
		for k := i; ; {
			for k+1 < n && values[k] != values[k+1] {
				k++
			}
			r := 1
			for k+r < n && values[k+r] == values[k] {
				r++
			}
			boundary := start + (k-start+7)&^7
			if rest := k + r - boundary; rest >= minRepeat && worthRepeat(rest, width, boundary > start, k+r < n) {
				dst = appendBitPacked(dst, values[start:boundary], width)
				dst = appendRepeat(dst, uint64(values[boundary]), rest, width)
				i = k + r
				break
			}
			k += r
			if k == n {
				dst = appendBitPacked(dst, values[start:], width)
				i = n
				break
			}
		}
	}
	return dst
}

// TestHybridShortcuts wants appendHybrid to write what the run-by-run
// encoder writes, byte for byte, on levels and indices with runs of every
// length around minRepeat and the widths where RLE pays off sooner or
// later.
func TestHybridShortcuts(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, distinct := range []int{2, 3, 5, 50, 1000} {
		for _, maxRun := range []int{1, 3, 9, 30, 200} {
			n := 1 + r.IntN(3000)
			values := make([]int32, 0, n)
			for len(values) < n {
				v, k := int32(r.IntN(distinct)), 1+r.IntN(maxRun)
				for ; k > 0 && len(values) < n; k-- {
					values = append(values, v)
				}
			}
			width := BitWidth(uint64(distinct - 1))
			if got, want := appendHybrid(nil, values, width), appendHybridByRuns(nil, values, width); !bytes.Equal(got, want) {
				t.Errorf("int32, %d distinct, runs up to %d: %d bytes, want %d", distinct, maxRun, len(got), len(want))
			}
			if distinct > 256 {
				continue
			}
			levels := make([]uint8, n)
			for i, v := range values {
				levels[i] = uint8(v)
			}
			if got, want := appendHybrid(nil, levels, width), appendHybridByRuns(nil, levels, width); !bytes.Equal(got, want) {
				t.Errorf("uint8, %d distinct, runs up to %d: %d bytes, want %d", distinct, maxRun, len(got), len(want))
			}
		}
	}
}
