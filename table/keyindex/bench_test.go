package keyindex

import (
	"bytes"
	"context"
	"math/rand/v2"
	"runtime"
	"testing"
)

// The benchmarks work on an index of 1M keys, each a long (an order id,
// 9 bytes encoded), in memory and spilled (a 16 MiB limit). Run them as
//
//	go test ./table/keyindex -run NONE -bench 'Put|Get' -benchmem -benchtime 1000000x
//	go test ./table/keyindex -run NONE -bench 'WriteSnapshot|Load' -benchmem -benchtime 3x
//
// since each builds its index of 1M keys first.

const benchKeys = 1 << 20

func benchKey(dst []byte, i int) []byte { return AppendInt(dst[:0], int64(i)*7919) }

var benchCases = []struct {
	name  string
	limit int64
}{
	{"in_memory", 512 << 20},
	{"spilled_16MiB", 16 << 20},
}

// buildIndex returns an index of benchKeys keys.
func buildIndex(b *testing.B, limit int64) *Index {
	b.Helper()
	x := newIndex(b, Options{MemoryLimit: limit})
	var k []byte
	for i := 0; i < benchKeys; i++ {
		k = benchKey(k, i)
		if _, _, err := x.Put(k, int64(i)); err != nil {
			b.Fatal(err)
		}
	}
	return x
}

// BenchmarkPut: puts of random keys among 2M into an index of 1M, so
// about half replace a key's offset and half add a key.
func BenchmarkPut(b *testing.B) {
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			x := buildIndex(b, c.limit)
			runtime.GC()
			runtime.ReadMemStats(&after)
			s := x.Stats()
			rng := rand.New(rand.NewPCG(1, 2))
			var k []byte
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k = benchKey(k, rng.IntN(2*benchKeys))
				if _, _, err := x.Put(k, int64(i)); err != nil {
					b.Fatal(err)
				}
			}
			// After the loop: ResetTimer drops metrics reported before it.
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/benchKeys, "heapB/key")
			b.ReportMetric(float64(s.MemoryBytes)/benchKeys, "countedB/key")
			b.ReportMetric(float64(s.DiskBytes)/benchKeys, "diskB/key")
		})
	}
}

// BenchmarkGet: lookups of keys the index holds.
func BenchmarkGet(b *testing.B) {
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			x := buildIndex(b, c.limit)
			rng := rand.New(rand.NewPCG(1, 2))
			var k []byte
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k = benchKey(k, rng.IntN(benchKeys))
				if _, ok, err := x.Get(k); err != nil || !ok {
					b.Fatalf("Get: %v, %v", ok, err)
				}
			}
		})
	}
}

// BenchmarkWriteSnapshot: a full snapshot of 1M keys written.
func BenchmarkWriteSnapshot(b *testing.B) {
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			x := buildIndex(b, c.limit)
			var buf bytes.Buffer
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				buf.Reset()
				if _, err := x.WriteSnapshot(context.Background(), &buf, Full); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buf.Len())/benchKeys, "snapshotB/key")
		})
	}
}

// BenchmarkLoad: a full snapshot of 1M keys loaded by a new owner.
func BenchmarkLoad(b *testing.B) {
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			x := buildIndex(b, c.limit)
			var buf bytes.Buffer
			if _, err := x.WriteSnapshot(context.Background(), &buf, Full); err != nil {
				b.Fatal(err)
			}
			x.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				y, err := Load(context.Background(), Options{Dir: b.TempDir(), MemoryLimit: c.limit}, bytes.NewReader(buf.Bytes()))
				if err != nil {
					b.Fatal(err)
				}
				if y.Len() != benchKeys {
					b.Fatalf("loaded %d keys", y.Len())
				}
				y.Close()
			}
		})
	}
}
