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
	list := func(item string) string {
		n := size / (len(item) + 1)
		return `[` + strings.Repeat(item+",", n) + item + `]`
	}
	items := func(item string) []byte { return []byte(`{"a":` + list(item) + `}`) }
	// The largest of five runs on 8 MiB lines, with about 30% over them
	// for other machines and Go versions (heap in use is sampled, and
	// depends on when the collector ran: it varies by a third from run to
	// run; allocated bytes do not). What is left is mostly the line, held
	// while it is converted (twice while it is a sample for the
	// inference), the writer's buffers for a page of millions of values
	// (dictionary indices, and a PLAIN encoding and its compression to
	// compare encodings with: 6× a line of small ints) or for the one
	// huge value of an unshredded column (twice it), and the columns: 10
	// bytes of levels and values per shredded element, 3.6× a line of
	// small ints. Before the columns of a huge record were grown by
	// extrapolation and the leaves of a list shared their repetition
	// levels, a line of small ints took 41× allocated and 20× in use with
	// shredding; the first cases took 75-340× before the one-pass
	// builder.
	tests := []struct {
		name  string
		line  []byte
		shape *variant.Shape // nil: inferred
		alloc float64        // bound of allocated bytes / line bytes
		inUse float64        // bound of heap growth / line bytes
	}{
		{"small ints, shred none", items("1"), &variant.Shape{}, 22, 16},
		{"small ints, shred auto", items("1"), nil, 32, 22},
		{"[1,1,...], shred none", []byte(list("1")), &variant.Shape{}, 22, 16},
		{"[1,1,...], shred auto", []byte(list("1")), nil, 32, 22},
		{"short strings, shred none", items(`"ab"`), &variant.Shape{}, 15, 15},
		{"short strings, shred auto", items(`"ab"`), nil, 21, 17},
		{"small objects, shred none", items(`{"k":1}`), &variant.Shape{}, 28, 20},
		{"[{...},...], shred none", []byte(list(`{"a":1,"b":"x"}`)), &variant.Shape{}, 20, 15},
		{"[{...},...], shred auto", []byte(list(`{"a":1,"b":"x"}`)), nil, 24, 15},
		{"one long string, shred auto", []byte(`{"a":"` + strings.Repeat("x", size) + `"}`), nil, 13, 13},
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
