package source

import (
	"context"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/internal/events"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/writer"
)

// benchArchive writes partitions × perPartition reference events as the
// sink lands them with its defaults (zstd, one row group per file of up to
// 100,000 records), and returns the directory and the record count.
func benchArchive(b *testing.B, partitions int32, perPartition int) (string, int) {
	return benchArchive2(b, partitions, perPartition)
}

func benchArchive2(b testing.TB, partitions int32, perPartition int) (string, int) {
	b.Helper()
	dir := b.TempDir()
	gen := events.New(1, time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	const perFile = 100000
	for p := range partitions {
		for first := 0; first < perPartition; first += perFile {
			n := min(perFile, perPartition-first)
			recs := make([]srcRecord, n)
			for i := range n {
				recs[i] = recordOf(gen, "events", p, int64(first+i), first+i)
			}
			writeFile(b, dir, sinkKey("events", p, int64(first)), recs, perFile, writer.Compression(meta.CodecZstd, 0))
		}
	}
	return dir, int(partitions) * perPartition
}

// discard is a Producer that drops the messages: replay's reading and
// encoding alone.
type discard struct{}

func (discard) WriteMessages(context.Context, ...kafka.Message) error { return nil }
func (discard) Close() error                                          { return nil }

// BenchmarkReplay measures replay from file:// into the in-process broker
// (kfake, through kafka-go's Writer), and with the producing left out
// (producer=discard). Run with
//
//	go test ./connector/source -run XXX -bench Replay -benchtime 3x
func BenchmarkReplay(b *testing.B) {
	dir, n := benchArchive(b, 4, 100000)
	for _, target := range []string{"kfake", "discard"} {
		b.Run("producer="+target, func(b *testing.B) {
			cfg := &config.Config{}
			var producer Producer = discard{}
			if target == "kfake" {
				cluster := kafkatest.Start(b, 4, "replayed")
				cfg.Kafka = config.Kafka{Brokers: cluster.Brokers, ClientID: "replay-bench"}
				producer = nil
			}
			b.ReportAllocs()
			var ru0, ru1 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			b.ResetTimer()
			for b.Loop() {
				r, err := New(context.Background(), cfg, Options{From: "file://" + dir, Topic: "replayed", Producer: producer})
				if err != nil {
					b.Fatal(err)
				}
				if err := r.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
				if got := r.Stats().Records.Load(); got != int64(n) {
					b.Fatalf("%d records, want %d", got, n)
				}
				r.Close()
			}
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			records := float64(n) * float64(b.N)
			b.ReportMetric(records/b.Elapsed().Seconds(), "records/s")
			// On a shared machine the wall clock measures the neighbours
			// too; the process's CPU time (replay, and for kfake the
			// in-process broker as well) does not.
			cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
			b.ReportMetric(records/cpu.Seconds(), "records/cpu-s")
			runtime.ReadMemStats(&ms1)
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/records, "allocs/record")
			b.ReportMetric(0, "ns/op")
		})
	}
}
