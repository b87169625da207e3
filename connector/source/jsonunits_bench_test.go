package source

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// unitsBenchSchema is a schema file's message with millisecond
// timestamps and a time of day, beside other fields.
const unitsBenchSchema = `message m {
  required int64 id;
  required int64 ts (TIMESTAMP(MILLIS,true));
  optional int64 local (TIMESTAMP(MILLIS,false));
  optional int32 tod (TIME(MILLIS,true));
  optional binary user (STRING);
  optional double score;
  optional group seen (LIST) { repeated group list { optional int64 element (TIMESTAMP(MILLIS,true)); } }
}`

// writeUnitsFile writes n records of unitsBenchSchema as the sink lands
// them (zstd, one row group) into dir: as a table's file, its
// millisecond columns in microseconds and named in the footer entry
// archive.JSONTimestampUnitsKey, when table; as a file without a table
// otherwise.
func writeUnitsFile(tb testing.TB, dir string, n int, table bool) {
	tb.Helper()
	msg, err := schema.Parse(unitsBenchSchema)
	if err != nil {
		tb.Fatal(err)
	}
	var opts []rowgroup.JSONOption
	footer := ""
	if table {
		if msg, _, err = schema.WidenMillis(msg); err != nil {
			tb.Fatal(err)
		}
		if msg, _, err = schema.WidenTimeMillis(msg); err != nil {
			tb.Fatal(err)
		}
		opts = append(opts, rowgroup.JSONTimestampUnits(map[string]schema.TimeUnit{
			"ts": schema.Millis, "local": schema.Millis, "tod": schema.Millis, "seen.list.element": schema.Millis}))
		footer = `{"local":"MILLIS","seen.list.element":"MILLIS","tod":"MILLIS","ts":"MILLIS"}`
	}
	unit := schema.Millis
	if table {
		unit = schema.Micros
	}
	fs, err := schema.New(msg.Name(), append(msg.Fields(), rowgroup.EnvelopeNodeIn(unit))...)
	if err != nil {
		tb.Fatal(err)
	}
	g := rowgroup.New(fs)
	sh, err := rowgroup.NewJSONShredder(g, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	bl, err := rowgroup.NewBuilder(g, sh)
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC).UnixMilli()
	var v []byte
	for i := range n {
		ts := start + int64(i)*37
		v = fmt.Appendf(v[:0], `{"id":%d,"ts":%d,"tod":%d,"user":"user-%d","score":%d.5,"seen":[%d,%d]`, i, ts, ts%86_400_000, i%1000, i%100, ts-1000, ts-2000)
		if i%3 != 0 {
			v = fmt.Appendf(v, `,"local":%d`, ts+3_600_000)
		}
		v = append(v, '}')
		if err := bl.Append(v, &rowgroup.Envelope{Topic: "t", Offset: int64(i), Timestamp: time.UnixMilli(ts)}); err != nil {
			tb.Fatalf("record %d: %v", i, err)
		}
	}
	var out bytes.Buffer
	w, err := writer.New(&out, fs, writer.Compression(meta.CodecZstd, 0))
	if err != nil {
		tb.Fatal(err)
	}
	if err := w.WriteRowGroup(g); err != nil {
		tb.Fatal(err)
	}
	for k, val := range map[string]string{archive.FooterTopic: "t", archive.FooterPartition: "0", archive.FooterFirstOffset: "0",
		archive.FooterLastOffset: strconv.Itoa(n - 1), archive.FooterRecords: strconv.Itoa(n)} {
		w.SetKeyValue(k, val)
	}
	if footer != "" {
		w.SetKeyValue(archive.JSONTimestampUnitsKey, footer)
	}
	if _, err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, filepath.FromSlash(sinkKey("t", 0, 0)))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkReplayJSONUnits replays 100,000 JSON records of a schema file
// with millisecond timestamps and a time of day from a file without a
// table (file=plain) and from a table's file, whose columns hold them in
// microseconds and whose footer names them (file=table), producing into
// nothing: ns/record and allocs/record of the reading and rendering.
// Run with
//
//	go test ./connector/source -run XXX -bench ReplayJSONUnits -count 6
func BenchmarkReplayJSONUnits(b *testing.B) {
	const n = 100_000
	for _, table := range []bool{false, true} {
		name := map[bool]string{false: "file=plain", true: "file=table"}[table]
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			writeUnitsFile(b, dir, n, table)
			b.ReportAllocs()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			b.ResetTimer()
			for b.Loop() {
				r, err := New(context.Background(), &config.Config{}, Options{From: "file://" + dir, Topic: "replayed", Producer: discard{}})
				if err != nil {
					b.Fatal(err)
				}
				if err := r.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
				if got := r.Stats().Records.Load(); got != n {
					b.Fatalf("%d records, want %d", got, n)
				}
				r.Close()
			}
			runtime.ReadMemStats(&ms1)
			records := float64(n) * float64(b.N)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/records, "ns/record")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/records, "allocs/record")
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/records, "B/record")
			b.ReportMetric(0, "ns/op")
		})
	}
}
