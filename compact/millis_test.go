package compact

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"
	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector/source"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/avrorow"
	"github.com/pqsink/pqsink/rowgroup/rowgrouptest"
	"github.com/pqsink/pqsink/schema"
	pavro "github.com/pqsink/pqsink/schema/avro"
	"github.com/pqsink/pqsink/table"
	"github.com/pqsink/pqsink/writer"
)

// millisAvro is the Avro schema of the records: "at" a nullable
// timestamp-millis.
const millisAvro = `{"type":"record","name":"event","fields":[{"name":"id","type":"long"},
{"name":"at","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null}]}`

// avroRecord is record o of millisAvro, in Avro's binary encoding: "at"
// null for every tenth record.
func avroRecord(o int64) []byte {
	b := binary.AppendVarint(nil, o) // Avro's long: a zigzag varint
	if o%10 == 9 {
		return binary.AppendVarint(b, 0) // the union's null
	}
	b = binary.AppendVarint(b, 1)
	return binary.AppendVarint(b, millisAt(o).UnixMilli())
}

// millisAt is the instant of record o's "at": o hours and o milliseconds
// after day0, and 7 ms.
func millisAt(o int64) time.Time {
	return day0.Add(time.Duration(o)*time.Hour + time.Duration(o+7)*time.Millisecond)
}

// inMillis is s with its INT64 TIMESTAMP(MICROS) leaves in milliseconds,
// field ids kept: the schema with which an older pqsink wrote the files
// of the table s is the schema of.
func inMillis(t *testing.T, s *schema.Schema) *schema.Schema {
	t.Helper()
	var retime func([]*schema.Node) []*schema.Node
	retime = func(fields []*schema.Node) []*schema.Node {
		out := make([]*schema.Node, len(fields))
		for i, f := range fields {
			c := *f
			if f.IsLeaf() && f.Logical.Kind == schema.Timestamp && f.Logical.Unit == schema.Micros {
				c.Logical.Unit = schema.Millis
			} else if !f.IsLeaf() {
				c.Fields = retime(f.Fields)
			}
			out[i] = &c
		}
		return out
	}
	m, err := schema.New(s.Name(), retime(s.Fields())...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// commitAt writes the records first..last, "at" in s's unit (a JSON
// number of milliseconds or microseconds; null for every tenth record),
// with the footer entries kv, into one file of the table, and commits it.
//
// With avro set, the records are Avro (millisAvro, avroRecord) shredded
// by the Avro decoder, and the footer has the records' schema.
func (e *deleteEnv) commitAt(t *testing.T, s *schema.Schema, avro bool, first, last int64, kv ...[2]string) string {
	t.Helper()
	ctx := context.Background()
	var g *rowgroup.RowGroup
	var b *rowgroup.Builder
	if avro {
		g = rowgroup.New(s)
		dec, err := avrorow.NewDecoder(g, pavro.MustParse(millisAvro))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = rowgroup.NewBuilder(g, dec); err != nil {
			t.Fatal(err)
		}
		kv = append(kv, [2]string{pavro.MetadataKey, pavro.MustParse(millisAvro).String()})
	} else {
		g, b = rowgrouptest.JSON(t, s)
	}
	micros := s.Leaf("at").Logical.Unit == schema.Micros
	for o := first; o <= last; o++ {
		at := "null"
		if o%10 != 9 {
			v := millisAt(o).UnixMilli()
			if micros {
				v = millisAt(o).UnixMicro()
			}
			at = fmt.Sprint(v)
		}
		rec := []byte(fmt.Sprintf(`{"id":%d,"at":%s}`, o, at))
		if avro {
			rec = avroRecord(o)
		}
		if err := b.Append(rec, &rowgroup.Envelope{Topic: "events", Partition: 0, Offset: o, Timestamp: millisAt(o), Key: []byte("k")}); err != nil {
			t.Fatal(err)
		}
	}
	loc := fmt.Sprintf("%s/events+0+%020d.parquet", e.folder(0), first)
	p := strings.TrimPrefix(loc, "file://")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w, err := writer.New(out, s)
	if err != nil {
		t.Fatal(err)
	}
	archive.Range{Topic: "events", Partition: 0, First: first, Last: last, Records: last - first + 1}.Footer(w.SetKeyValue)
	for _, e := range kv {
		w.SetKeyValue(e[0], e[1])
	}
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	md, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	f := table.File{Location: loc, Size: w.Offset(), Footer: md, PathID: "p"}
	if _, err := e.h.Commit(ctx, "g", []table.File{f}, table.State{{Group: "g", Topic: "events", Partition: 0}: {Committed: last + 1}}); err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestCompactConvertsMillis commits, to a table whose "at" is a
// timestamptz, a file an older pqsink wrote (at and _kafka.timestamp
// TIMESTAMP(MILLIS), no pqsink.json.timestamp_units entry) beside two of
// the newer sink's (TIMESTAMP(MICROS), the entry naming "at"), and
// compacts with a minimum of files the folder does not have: the old file
// alone makes the bin, which holds the new files too. Before it,
// iceberg-go's scan filtered on "at" returns none of the old file's rows;
// after it, every live file is TIMESTAMP(MICROS), the filtered scans
// return exactly the rows, DuckDB reads each instant, the plan and report
// count one converted file, and a replay of the compacted table gives the
// producer's JSON, "at" with the schema file's three fraction digits.
func TestCompactConvertsMillis(t *testing.T) {
	for _, avro := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "avro"}[avro], func(t *testing.T) { testCompactConvertsMillis(t, avro) })
	}
}

func testCompactConvertsMillis(t *testing.T, avro bool) {
	ctx := context.Background()
	micro, err := schema.New("event",
		schema.Leaf("id", schema.Required, meta.TypeInt64, schema.Logical{}),
		schema.Leaf("at", schema.Optional, meta.TypeInt64, schema.Logical{Kind: schema.Timestamp, Unit: schema.Micros, UTC: true}),
		rowgroup.EnvelopeNodeIn(schema.Micros))
	if err != nil {
		t.Fatal(err)
	}
	e := newDeleteEnvOf(t, 2, false, micro)
	// The newer sink's JSON files name the column (Avro's schema says
	// it), and so must the new file.
	units := [2]string{archive.JSONTimestampUnitsKey, `{"at":"MILLIS"}`}
	var newer [][2]string
	if !avro {
		newer = append(newer, units)
	} else {
		units[1] = ""
	}
	old := e.commitAt(t, inMillis(t, e.h.Schema()), avro, 0, 9)
	e.commitAt(t, e.h.Schema(), avro, 10, 19, newer...)
	e.commitAt(t, e.h.Schema(), avro, 20, 29, newer...)

	// The rows iceberg-go's scan filtered on "at" returns.
	scanIDs := func(t *testing.T, filter iceberg.BooleanExpression) []int64 {
		t.Helper()
		tbl, err := e.other.LoadTable(ctx, []string{"kafka", "events"})
		if err != nil {
			t.Fatal(err)
		}
		tab, err := tbl.Scan(itable.WithRowFilter(filter)).ToArrowTable(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tab.Release()
		rdr := array.NewTableReader(tab, -1)
		defer rdr.Release()
		var ids []int64
		for rdr.Next() {
			rec := rdr.RecordBatch()
			for i, f := range rec.Schema().Fields() {
				if f.Name == "id" {
					ids = append(ids, rec.Column(i).(*array.Int64).Int64Values()...)
				}
			}
		}
		slices.Sort(ids)
		return ids
	}
	at := func(o int64) int64 { return millisAt(o).UnixMicro() }
	filters := []struct {
		name   string
		filter iceberg.BooleanExpression
		before []int64 // the ids before the compaction
		want   []int64 // after it
	}{
		{"one instant of the old file", iceberg.EqualTo(iceberg.Reference("at"), at(3)), nil, []int64{3}},
		{"one instant of a new file", iceberg.EqualTo(iceberg.Reference("at"), at(13)), []int64{13}, []int64{13}},
		{"a span across both", iceberg.NewAnd(iceberg.GreaterThanEqual(iceberg.Reference("at"), at(5)), iceberg.LessThan(iceberg.Reference("at"), at(12))),
			[]int64{10, 11}, []int64{5, 6, 7, 8, 10, 11}},
	}
	for _, f := range filters {
		if got := scanIDs(t, f.filter); fmt.Sprint(got) != fmt.Sprint(f.before) {
			t.Errorf("before the compaction, %s: ids %v, want %v (iceberg-go misreads the millisecond file)", f.name, got, f.before)
		}
	}

	// With a target that makes every file large, a run looks for
	// millisecond files only with ConvertMillis (a footer read per file).
	for _, all := range []bool{false, true} {
		big := Options{TargetFileSize: 64, MinInputFiles: 5, DryRun: true, ConvertMillis: all}
		r, err := Table(ctx, e.h, e.store, "file://"+e.dir, big)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{false: 0, true: 1}[all]; r.Converted != want {
			t.Errorf("files large for the target, ConvertMillis %v: %d converted, want %d", all, r.Converted, want)
		}
	}

	// Files just committed are too young for an hour's --older-than:
	// the report counts every one of them, and plans none.
	young, err := Table(ctx, e.h, e.store, "file://"+e.dir, Options{TargetFileSize: 1 << 20, MinInputFiles: 5, OlderThan: time.Hour, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if young.TooYoung != young.LiveFiles || young.LiveFiles == 0 || len(young.Bins) != 0 {
		t.Errorf("older than an hour: %d too young of %d files, %d bins; want all of them and none", young.TooYoung, young.LiveFiles, len(young.Bins))
	}

	o := Options{TargetFileSize: 1 << 20, MinInputFiles: 5, OlderThan: 0, DryRun: true}
	plan, err := Table(ctx, e.h, e.store, "file://"+e.dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if plan.TooYoung != 0 {
		t.Errorf("--older-than 0: %d files too young, want 0", plan.TooYoung)
	}
	o.DryRun = false
	rep, err := Table(ctx, e.h, e.store, "file://"+e.dir, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Report{plan, rep} {
		if r.Converted != 1 || r.FilesIn != 3 || len(r.Bins) != 1 || r.Bins[0].Converted != 1 {
			t.Errorf("report: %d converted, %d files in, %d bins; want 1, 3 and 1", r.Converted, r.FilesIn, len(r.Bins))
		}
	}
	if rep.FilesOut != 1 || rep.Snapshot == 0 {
		t.Fatalf("report: %d files out, snapshot %d", rep.FilesOut, rep.Snapshot)
	}

	live, _, err := e.h.Live(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, f := range live {
		if f.Location == old {
			t.Errorf("the old file is live after the compaction")
		}
		p := strings.TrimPrefix(f.Location, "file://")
		keys = append(keys, strings.TrimPrefix(p, e.dir+"/"))
		r, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := r.Stat()
		rf, err := reader.Open(r, st.Size())
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range rf.Schema().Leaves() {
			if l.Logical.Kind == schema.Timestamp && l.Logical.Unit != schema.Micros {
				t.Errorf("%s: column %s is %s", filepath.Base(p), l.PathString(), l.Logical)
			}
		}
		if v, _ := footerValue(rf.Metadata().KeyValueMetadata, archive.JSONTimestampUnitsKey); v != units[1] {
			t.Errorf("%s: footer entry %s = %q, want %q", filepath.Base(p), archive.JSONTimestampUnitsKey, v, units[1])
		}
		r.Close()
		// DuckDB reads each instant.
		db := duckdb.Start(t)
		res := db.Query(t, fmt.Sprintf(`SELECT count(*) FILTER (WHERE "at" IS NOT NULL AND epoch_us("at") <> %d + id * 3600000000 + (id + 7) * 1000),
  count(*) FILTER (WHERE epoch_us(_kafka.timestamp) <> %d + id * 3600000000 + (id + 7) * 1000), count("at"), count(*) FROM read_parquet('%s')`,
			day0.UnixMicro(), day0.UnixMicro(), p))
		if got := fmt.Sprint(res.Rows[0]); got != "[0 0 27 30]" {
			t.Errorf("DuckDB: rows whose at or _kafka.timestamp is not their instant, values of at, rows: %s, want [0 0 27 30]", got)
		}
	}
	for _, f := range filters {
		if got := scanIDs(t, f.filter); fmt.Sprint(got) != fmt.Sprint(f.want) {
			t.Errorf("after the compaction, %s: ids %v, want %v", f.name, got, f.want)
		}
	}

	// A replay of the compacted table: the producer's JSON.
	c := &messages{}
	r, err := source.New(ctx, &config.Config{}, source.Options{From: "file://" + e.dir, Topic: "target", Producer: c, BatchRecords: 16, Registry: registry{},
		Files: objects(keys), PathTemplate: "{field:table_path}/{topic}+{partition}+{first_offset}.parquet"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(c.msgs) != 30 {
		t.Fatalf("replay: %d records, want 30", len(c.msgs))
	}
	for i, m := range c.msgs {
		o := int64(i)
		if avro {
			if _, body, err := schemaregistry.SplitWire(m.Value); err != nil || !bytes.Equal(body, avroRecord(o)) || !m.Time.Equal(millisAt(o)) {
				t.Errorf("record %d: body %x (%v) at %s, want %x at %s", o, body, err, m.Time, avroRecord(o), millisAt(o))
			}
			continue
		}
		want := fmt.Sprintf(`{"id":%d}`, o) // a null field is left out, as replay renders one
		if o%10 != 9 {
			want = fmt.Sprintf(`{"id":%d,"at":%q}`, o, millisAt(o).Format("2006-01-02T15:04:05.000Z"))
		}
		var got, exp any
		if err := json.Unmarshal(m.Value, &got); err != nil {
			t.Fatalf("record %d: %v: %s", o, err, m.Value)
		}
		_ = json.Unmarshal([]byte(want), &exp)
		if fmt.Sprint(got) != fmt.Sprint(exp) || !m.Time.Equal(millisAt(o)) {
			t.Errorf("record %d: %s at %s, want %s at %s", o, m.Value, m.Time, want, millisAt(o))
		}
	}
}

// footerValue returns the value of a footer entry.
func footerValue(kv []meta.KeyValue, key string) (string, bool) {
	for _, e := range kv {
		if e.Key == key && e.Value != nil {
			return *e.Value, true
		}
	}
	return "", false
}

func objects(keys []string) []source.Object {
	var out []source.Object
	for _, k := range keys {
		out = append(out, source.Object{Key: k})
	}
	return out
}

// messages collects what a replay produces.
type messages struct {
	mu   sync.Mutex
	msgs []kafka.Message
}

func (c *messages) WriteMessages(_ context.Context, msgs ...kafka.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		m.Value = append([]byte(nil), m.Value...)
		c.msgs = append(c.msgs, m)
	}
	return nil
}

func (c *messages) Close() error { return nil }

// registry gives every Avro schema the id 1.
type registry struct{}

func (registry) Register(context.Context, string, string) (uint32, error) { return 1, nil }

// TestPlanTakesMillisFiles: a file with millisecond timestamps is planned
// whatever its size, and a bin that holds one whatever its number of
// files; the others are planned as before.
func TestPlanTakesMillisFiles(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	file := func(name string, size int64) table.LiveFile {
		return table.LiveFile{Location: "s3://b/t/data/d=1/" + name, Size: size, Records: 10, Added: now.Add(-time.Hour)}
	}
	tests := []struct {
		name    string
		files   []table.LiveFile
		convert []string
		want    [][]string // the bins' files, by name
	}{
		{"no millis: too few files", []table.LiveFile{file("a", 10), file("b", 10)}, nil, nil},
		{"a small millis file makes the bin", []table.LiveFile{file("a", 10), file("b", 10)}, []string{"a"}, [][]string{{"a", "b"}}},
		{"a large millis file is taken", []table.LiveFile{file("a", 900), file("b", 10)}, []string{"a"}, [][]string{{"a", "b"}}},
		{"a large file without", []table.LiveFile{file("a", 900), file("b", 10)}, []string{"b"}, [][]string{{"b"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{TargetFileSize: 1000, MinInputFiles: 5, Now: func() time.Time { return now }, convert: map[string]bool{}}
			for _, c := range tc.convert {
				o.convert["s3://b/t/data/d=1/"+c] = true
			}
			var got [][]string
			for _, b := range Plan(tc.files, o) {
				var names []string
				for _, f := range b.Files {
					names = append(names, filepath.Base(f.Location))
				}
				got = append(got, names)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("bins %v, want %v", got, tc.want)
			}
		})
	}
}
