package connector

import (
	"context"
	"errors"
	"fmt"
	"github.com/pqsink/pqsink/connector/tablecommit"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/avrorow"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
	"github.com/pqsink/pqsink/table"
)

// The writer schemas of TestAvroTablePartValues: v2 drops country, widens n to
// long, moves ts to the front and adds a field.
const (
	partV1 = `{"type":"record","name":"ev","fields":[
 {"name":"n","type":"int"},
 {"name":"country","type":["null","string"],"default":null},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"amount","type":{"type":"fixed","name":"f5","size":5,"logicalType":"decimal","precision":9,"scale":2}},
 {"name":"kind","type":{"type":"enum","name":"k","symbols":["A","B"]}},
 {"name":"d","type":{"type":"int","logicalType":"date"}},
 {"name":"p","type":["null",{"type":"record","name":"p","fields":[{"name":"level","type":"string"}]}],"default":null}]}`
	partV2 = `{"type":"record","name":"ev","fields":[
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"new","type":"string","default":""},
 {"name":"n","type":"long"},
 {"name":"amount","type":{"type":"fixed","name":"f5","size":5,"logicalType":"decimal","precision":9,"scale":2}},
 {"name":"kind","type":{"type":"enum","name":"k","symbols":["A","B"]}},
 {"name":"d","type":{"type":"int","logicalType":"date"}},
 {"name":"p","type":["null",{"type":"record","name":"p","fields":[{"name":"level","type":"string"}]}],"default":null}]}`
)

func avroStr(b []byte, s string) []byte { return append(avro.AppendLong(b, int64(len(s))), s...) }

// newAvroTableSink starts (without running) a sink of format avro into a
// table partitioned by partitionBy, and returns the committer of topic t.
func newAvroTableSink(t *testing.T, partitionBy string) (*Sink, *tablecommit.Committer) {
	t.Helper()
	dir := t.TempDir()
	text := fmt.Sprintf(`kafka: {brokers: [127.0.0.1:1], group: g, topics: [t]}
store: {url: "file://%s/warehouse"}
format: {type: avro, registry: {url: "http://127.0.0.1:1"}}
table:
  format: iceberg
  catalog: {type: sql, uri: "sqlite://%s/catalog.db"}
  namespace: kafka
  partition_by: %s
`, dir, dir, partitionBy)
	cfg, err := config.Parse([]byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tc, err := s.tables.ForTopic(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	return s, tc
}

// TestAvroPartitionRefused: the first writer schema creates the table
// with partition_by's spec; one without a partition field's column, or
// with a type its transform cannot take, cannot, and the error says the
// schema is incompatible (its records are rejected with reason schema),
// naming the field.
func TestAvroPartitionRefused(t *testing.T) {
	for _, c := range []struct {
		by, schema, err string
	}{
		{`["identity(region)"]`, `{"type":"record","name":"ev","fields":[{"name":"id","type":"long"}]}`, "no column region"},
		{`["day(id)"]`, `{"type":"record","name":"ev","fields":[{"name":"id","type":"string"}]}`, "day cannot transform column id"},
		{`["identity(p.level)"]`, `{"type":"record","name":"ev","fields":[{"name":"p","type":{"type":"record","name":"p","fields":[{"name":"level","type":{"type":"array","items":"int"}}]}}]}`, "identity cannot transform column p.level"},
	} {
		t.Run(c.by, func(t *testing.T) {
			_, tc := newAvroTableSink(t, c.by)
			ps, err := avro.MustParse(c.schema).Parquet(rowgroup.EnvelopeNodeIn(schema.Micros))
			if err != nil {
				t.Fatal(err)
			}
			_, err = tc.Fit(context.Background(), ps)
			if !errors.Is(err, table.ErrIncompatible) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("error %v, want ErrIncompatible with %q", err, c.err)
			}
		})
	}
}

// TestAvroTablePartValues: the table's partition values of Avro records, read
// with each record's own writer schema (two, the table evolving from the
// first to take the second) and transformed as iceberg-go transforms the
// same logical values; the null partition for a null field, a field the
// writer schema lacks and a field below a null record; a record cut short
// before the fields is a decode rejection.
func TestAvroTablePartValues(t *testing.T) {
	ctx := context.Background()
	_, tc := newAvroTableSink(t, `["bucket[4](n)", "identity(country)", "day(ts)", "truncate[100](amount)", "identity(kind)", "month(d)", "identity(p.level)"]`)
	if want := "n_bucket={field:n}/country={field:country}/ts_day={field:ts}/amount_trunc={field:amount}/kind={field:kind}/d_month={field:d}/p_level={field:p.level}/"; !strings.Contains(tc.Template().String(), want) {
		t.Errorf("path %s, want the folders %s", tc.Template(), want)
	}
	parts := map[int]*payloadTablePart{}
	for i, text := range []string{partV1, partV2} { // in order: v1 creates the table
		v := i + 1
		as := avro.MustParse(text)
		ps, err := as.Parquet(rowgroup.EnvelopeNodeIn(schema.Micros))
		if err != nil {
			t.Fatal(err)
		}
		fitted, err := tc.Fit(ctx, ps) // v1 creates the table, v2 evolves it
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		ap, schemaErr, err := newAvroTablePart(ctx, tc, as, fitted)
		if err != nil || schemaErr != nil {
			t.Fatalf("v%d: %v %v", v, schemaErr, err)
		}
		parts[v] = ap
	}

	bucket := func(n int64) string {
		return fmt.Sprint(iceberg.BucketTransform{NumBuckets: 4}.Apply(iceberg.Optional[iceberg.Literal]{Val: iceberg.NewLiteral(n), Valid: true}).Val.Any())
	}
	ts := time.Date(2026, 11, 23, 23, 59, 59, 999e6, time.UTC)
	day := int32(time.Date(2025, 2, 28, 0, 0, 0, 0, time.UTC).Unix() / 86400)
	v1 := func(n int32, country *string, level *string) []byte {
		b := avro.AppendLong(nil, int64(n))
		if country == nil {
			b = avro.AppendLong(b, 0)
		} else {
			b = avroStr(avro.AppendLong(b, 1), *country)
		}
		b = avro.AppendLong(b, ts.UnixMilli())
		b = append(b, 0xff, 0xff, 0xff, 0xfc, 0x18) // -1000: -10.00
		b = avro.AppendLong(b, 1)
		b = avro.AppendLong(b, int64(day))
		if level == nil {
			return avro.AppendLong(b, 0)
		}
		return avroStr(avro.AppendLong(b, 1), *level)
	}
	v2 := func(n int64) []byte {
		b := avro.AppendLong(nil, ts.UnixMilli())
		b = avroStr(b, "x")
		b = avro.AppendLong(b, n)
		b = append(b, 0, 0, 0, 0, 0x64) // 100: 1.00
		b = avro.AppendLong(b, 0)
		b = avro.AppendLong(b, int64(day))
		return avroStr(avro.AppendLong(b, 1), "a/b")
	}
	fr, empty, hi := "fr", "", "hi"
	for _, c := range []struct {
		name  string
		v     int
		body  []byte
		want  []string // nil: a decode rejection
		isRej bool
	}{
		{"v1", 1, v1(5, &fr, &hi), []string{bucket(5), "fr", "2026-11-23", "-10.00", "B", "2025-02", "hi"}, false},
		{"v1 nulls", 1, v1(-17, nil, nil), []string{bucket(-17), archive.HiveNull, "2026-11-23", "-10.00", "B", "2025-02", archive.HiveNull}, false},
		{"v1 empty string", 1, v1(0, &empty, &empty), []string{bucket(0), "", "2026-11-23", "-10.00", "B", "2025-02", ""}, false},
		{"v2 without country, n a long", 2, v2(1 << 40), []string{bucket(1 << 40), archive.HiveNull, "2026-11-23", "1.00", "A", "2025-02", "a%2Fb"}, false},
		{"v2 the same n as v1", 2, v2(5), []string{bucket(5), archive.HiveNull, "2026-11-23", "1.00", "A", "2025-02", "a%2Fb"}, false},
		{"cut short", 1, v1(5, &fr, &hi)[:3], nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			vals := make([]string, len(tc.Computed()))
			err := parts[c.v].values(c.body, vals)
			if c.isRej {
				rej, ok := err.(*rejection)
				if !ok || rej.Reason != rejectDecode {
					t.Fatalf("error %v, want a decode rejection", err)
				}
				return
			}
			if err != nil || strings.Join(vals, "|") != strings.Join(c.want, "|") {
				t.Errorf("values %q (%v), want %q", vals, err, c.want)
			}
		})
	}
}

// newAvroTablePart compiles the partition values of records of writer schema
// w whose Parquet schema the table took as fitted, as the sink does with
// the Avro format's lookup of a table's files.
func newAvroTablePart(ctx context.Context, tc *tablecommit.Committer, w *avro.Schema, fitted *schema.Schema) (*payloadTablePart, error, error) {
	return newSchemaTablePart(ctx, tc, fitted, func(paths [][]string) (payloadLookup, error) {
		return avrorow.NewLookup(w, paths, avrorow.MicrosTimes())
	})
}
