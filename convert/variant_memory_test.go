package convert

import (
	"bytes"
	"context"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pqsink/pqsink/variant"
)

// TestVariantHugeLineMemory converts single huge lines with --variant and
// bounds the bytes allocated, a bound on the peak heap, as a multiple of
// the line: memory is proportional to the record with a small constant.
// (Before the one-pass Variant builder, the direct shredding and the
// in-place value column, a line of small array items allocated 75-340
// times its size: a 48-byte node per element, copies of the value.)
//
// PQSINK_MEMPROFILE=FILE writes the allocation profile of all cases.
func TestVariantHugeLineMemory(t *testing.T) {
	size := 8 << 20
	if testing.Short() {
		size = 2 << 20
	}
	items := func(item string) []byte {
		n := size / (len(item) + 1)
		return []byte(`{"a":[` + strings.Repeat(item+",", n) + item + `]}`)
	}
	// The bounds hold with room to spare for sampling and for the writer
	// (whose trials, dictionary, page and compression buffers hold the
	// value column's one huge value several times: over half of what is
	// left); before, the cases of many small items took 75-340× allocated
	// and 37-144× in use.
	tests := []struct {
		name  string
		line  []byte
		shape *variant.Shape // nil: inferred
		alloc float64        // bound of allocated bytes / line bytes
		inUse float64        // bound of heap growth / line bytes
	}{
		{"small ints, shred none", items("1"), &variant.Shape{}, 40, 30},
		{"small ints, shred auto", items("1"), nil, 80, 35},
		{"short strings, shred none", items(`"ab"`), &variant.Shape{}, 30, 20},
		{"short strings, shred auto", items(`"ab"`), nil, 45, 22},
		{"small objects, shred none", items(`{"k":1}`), &variant.Shape{}, 40, 25},
		{"one long string, shred auto", []byte(`{"a":"` + strings.Repeat("x", size) + `"}`), nil, 20, 16},
	}
	for _, tt := range tests {
		in := append(bytes.Clone(tt.line), '\n')
		opts := VariantOptions{Shape: tt.shape}
		opts.Writer = nil
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		peak := watchHeap()
		if _, err := RunVariant(context.Background(), bytes.NewReader(in), io.Discard, opts); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		live := peak()
		runtime.ReadMemStats(&after)
		ratio := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(tt.line))
		liveRatio := float64(live-before.HeapInuse) / float64(len(tt.line))
		t.Logf("%s: a %.1f MiB line: %.1f× the line allocated, heap in use grew by at most %.1f× the line", tt.name, float64(len(tt.line))/(1<<20), ratio, liveRatio)
		if ratio > tt.alloc {
			t.Errorf("%s: %.1f× the line allocated, want at most %.0f×", tt.name, ratio, tt.alloc)
		}
		if liveRatio > tt.inUse {
			t.Errorf("%s: heap in use grew by %.1f× the line, want at most %.0f×", tt.name, liveRatio, tt.inUse)
		}
	}
	if path := os.Getenv("PQSINK_MEMPROFILE"); path != "" {
		runtime.GC() // the profile is as of the last collection
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			t.Fatal(err)
		}
	}
}

// watchHeap samples the heap in use (runtime/metrics, which does not stop
// the world) until the returned function is called, which returns the
// largest sample. Sampling may miss a short peak; the bounds of the test
// are generous enough for that.
func watchHeap() func() uint64 {
	const name = "/memory/classes/heap/objects:bytes"
	sample := []metrics.Sample{{Name: name}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	var peak atomic.Uint64
	peak.Store(read())
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if v := read(); v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-stopped
		return max(peak.Load(), read())
	}
}
