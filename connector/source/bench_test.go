package source

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/internal/testutil/avroevents"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/avrorow"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
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

// writeAvroFile writes recs (reference events as JSON) as the sink lands
// an Avro topic of avroevents.Schema.
func writeAvroFile(b testing.TB, dir, key string, recs []srcRecord) {
	b.Helper()
	s := avro.MustParse(avroevents.Schema)
	ps, err := s.Parquet(rowgroup.EnvelopeNode())
	if err != nil {
		b.Fatal(err)
	}
	g := rowgroup.New(ps)
	dec, err := avrorow.NewDecoder(g, s)
	if err != nil {
		b.Fatal(err)
	}
	bl, err := rowgroup.NewBuilder(g, dec)
	if err != nil {
		b.Fatal(err)
	}
	var out bytes.Buffer
	w, err := writer.New(&out, ps, writer.Compression(meta.CodecZstd, 0))
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range recs {
		body, err := avroevents.Append(nil, r.value)
		if err != nil {
			b.Fatal(err)
		}
		env := &rowgroup.Envelope{Topic: r.topic, Partition: r.partition, Offset: r.offset, Timestamp: time.UnixMilli(r.ms), Key: r.key}
		for _, h := range r.headers {
			env.Headers = append(env.Headers, rowgroup.Header{Key: h.Key, Value: h.Value})
		}
		if err := bl.Append(body, env); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.WriteRowGroup(g); err != nil {
		b.Fatal(err)
	}
	for k, v := range map[string]string{archive.FooterTopic: recs[0].topic, archive.FooterPartition: strconv.Itoa(int(recs[0].partition)),
		archive.FooterFirstOffset: strconv.FormatInt(recs[0].offset, 10), archive.FooterLastOffset: strconv.FormatInt(recs[len(recs)-1].offset, 10),
		archive.FooterRecords: strconv.Itoa(len(recs)), avro.MetadataKey: s.String()} {
		w.SetKeyValue(k, v)
	}
	if _, err := w.Close(); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkReplayAvro measures replay of Avro files (reader.Rows and the
// Avro encoder), producing nowhere.
func BenchmarkReplayAvro(b *testing.B) {
	dir := b.TempDir()
	gen := events.New(1, time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	const n = 100000
	recs := make([]srcRecord, n)
	for i := range recs {
		recs[i] = recordOf(gen, "events", 0, int64(i), i)
	}
	writeAvroFile(b, dir, sinkKey("events", 0, 0), recs)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := New(context.Background(), &config.Config{}, Options{From: "file://" + dir, Topic: "x", Producer: discard{},
			Registry: &memRegistry{ids: map[string]uint32{}}})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkReplayShapes measures reading and encoding the payload shapes
// that reader.Rows alone used to read: the reference events as a VARIANT
// shredded by a shape (its nested score left in the residual object), and
// as typed columns with legacy two-level lists; each through the columnar
// path and through reader.Rows, in the same run.
func BenchmarkReplayShapes(b *testing.B) {
	gen := events.New(1, time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	const n = 50000
	values := make([]string, n)
	for i := range values {
		values[i] = string(gen.Append(nil))
	}
	shape, err := rowgroup.ParseVariantShape(`$.id int64
$.ts string
$.user string
$.country string
$.amount decimal(9,2)
$.tags[*] string
$.payload.session string
$.payload.nested.level int32
$.payload.nested.flag boolean`)
	if err != nil {
		b.Fatal(err)
	}
	vnode, err := rowgroup.VariantNode("event", schema.Required, shape)
	if err != nil {
		b.Fatal(err)
	}
	vs, err := schema.New("m", vnode, rowgroup.EnvelopeNode())
	if err != nil {
		b.Fatal(err)
	}
	env, err := schema.New("e", rowgroup.EnvelopeNode())
	if err != nil {
		b.Fatal(err)
	}
	envText := strings.TrimSuffix(strings.TrimSpace(env.String()), "}")
	envText = envText[strings.Index(envText, "{")+1:]
	ls, err := schema.Parse(`message m {
  required int64 id;
  required int64 ts (TIMESTAMP(MICROS,true));
  required binary user (STRING);
  required binary country (STRING);
  required double amount;
  optional group tags (LIST) { repeated binary tags_tuple (STRING); }
  required group payload {
    required binary session (STRING);
    required group nested { required int32 level; required boolean flag; required double score; }
  }
` + envText + "}")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		s       *schema.Schema
		payload func(*rowgroup.RowGroup) (rowgroup.Payload, error)
	}{
		{"shredded-variant", vs, func(g *rowgroup.RowGroup) (rowgroup.Payload, error) { return rowgroup.NewVariantShredder(g) }},
		{"legacy-list", ls, func(g *rowgroup.RowGroup) (rowgroup.Payload, error) { return rowgroup.NewJSONShredder(g) }},
	} {
		path := writePayloadFile(b, b.TempDir(), c.s, c.payload, values, n)
		osf, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		st, err := osf.Stat()
		if err != nil {
			b.Fatal(err)
		}
		f, err := reader.Open(osf, st.Size())
		if err != nil {
			b.Fatal(err)
		}
		s := &fileStream{f: f, kind: valueJSON, tsPerMilli: 1, payload: f.Schema().Fields()[:1]}
		s.unwrap = s.payload[0].Logical.Kind == schema.Variant
		if c.name == "legacy-list" {
			s.payload = f.Schema().Fields()[:len(f.Schema().Fields())-1]
		}
		for _, p := range []struct {
			name string
			open func(*fileStream, int) (rowSource, error)
		}{{"columnar", newColumnSource}, {"rows", newRowsSource}} {
			b.Run(c.name+"/path="+p.name, func(b *testing.B) {
				bt := &batch{}
				b.ReportAllocs()
				for b.Loop() {
					src, err := p.open(s, 0)
					if err != nil {
						b.Fatal(err)
					}
					for {
						ok, err := src.next()
						if err != nil {
							b.Fatal(err)
						}
						if !ok {
							break
						}
						if len(bt.msgs) == 10000 {
							bt.reset()
						}
						bt.msgs = append(bt.msgs, kafka.Message{})
						if err := src.emit(bt, &bt.msgs[len(bt.msgs)-1]); err != nil {
							b.Fatal(err)
						}
					}
					src.release()
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
				b.ReportMetric(0, "ns/op")
			})
		}
		osf.Close()
	}
}
