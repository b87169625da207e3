package merge

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/test/crossread"
	"github.com/pqsink/pqsink/writer"
)

// Writer settings that make inputs differ in encodings, dictionaries, page
// versions and codecs, so that the merge decodes every kind of page.
var (
	plainPages = []writer.Option{writer.Dictionary(false), writer.AdaptiveEncoding(false), writer.PageSize(2 << 10), writer.Compression(meta.CodecGzip, 0)}
	deltaPages = []writer.Option{writer.Dictionary(false), writer.DataPageVersion(2), writer.Compression(meta.CodecZstd, 3),
		writer.ColumnEncoding("_kafka.offset", meta.EncodingDeltaBinaryPacked)}
	smallDicts = []writer.Option{writer.DictionaryPageSize(256), writer.PageSize(1 << 10), writer.Compression(meta.CodecUncompressed, 0)}
	splitPages = []writer.Option{writer.Dictionary(false), writer.DataPageVersion(2), writer.ColumnEncoding("i64", meta.EncodingDeltaBinaryPacked),
		writer.ColumnEncoding("bin", meta.EncodingDeltaByteArray), writer.ColumnEncoding("f", meta.EncodingByteStreamSplit),
		writer.ColumnEncoding("d", meta.EncodingByteStreamSplit)}
	withBloom = []writer.Option{writer.BloomFilter("_kafka.key", 0.05), writer.Compression(meta.CodecLZ4Raw, 0)}
)

// TestMergeReadsBackEqual merges files of each shape and reads the result
// back with arrow-go, parquet-go, pqsink's reader and DuckDB: the merged
// files hold the inputs' rows, row for row, in order by partition and
// offset, and their footers the inputs' Kafka ranges.
func TestMergeReadsBackEqual(t *testing.T) {
	db := duckdb.Start(t)
	tests := []struct {
		name   string
		shape  shape
		inputs []spec // in the order given to Merge
		// order is the order of the inputs in the output (indexes into
		// inputs), by partition and first offset.
		order  []int
		opts   []Option
		ranges [][]archive.Range // per output file
	}{
		{
			name:  "events of two partitions, given out of order",
			shape: eventsShape,
			inputs: []spec{
				{p: 1, first: 0, n: 120, perGroup: 50, opts: smallDicts},
				{p: 0, first: 300, n: 200, opts: plainPages},
				{p: 0, first: 0, n: 300, perGroup: 128, opts: deltaPages},
				{p: 0, first: 600, n: 40, opts: withBloom},
			},
			order: []int{2, 1, 3, 0},
			ranges: [][]archive.Range{{
				{Topic: "clicks", Partition: 0, First: 0, Last: 499, Records: 500},
				{Topic: "clicks", Partition: 0, First: 600, Last: 639, Records: 40},
				{Topic: "clicks", Partition: 1, First: 0, Last: 119, Records: 120},
			}},
		},
		{
			name:   "events of one partition, consecutive",
			shape:  eventsShape,
			inputs: []spec{{p: 3, first: 1000, n: 64}, {p: 3, first: 1064, n: 1, opts: plainPages}, {p: 3, first: 1065, n: 500, perGroup: 100}},
			order:  []int{0, 1, 2},
			opts:   []Option{RowGroupBytes(16 << 10)},
			ranges: [][]archive.Range{{{Topic: "clicks", Partition: 3, First: 1000, Last: 1564, Records: 565}}},
		},
		{
			name:   "nested, every level",
			shape:  nestedShape,
			inputs: []spec{{p: 0, first: 100, n: 100, opts: deltaPages}, {p: 0, first: 0, n: 100, perGroup: 33, opts: smallDicts}, {p: 0, first: 200, n: 77, opts: plainPages}},
			order:  []int{1, 0, 2},
			ranges: [][]archive.Range{{{Topic: "clicks", Partition: 0, First: 0, Last: 276, Records: 277}}},
		},
		{
			name:   "shredded variant",
			shape:  variantShape,
			inputs: []spec{{p: 2, first: 0, n: 90, opts: smallDicts}, {p: 2, first: 90, n: 90, perGroup: 40, opts: deltaPages}, {p: 5, first: 7, n: 30}},
			order:  []int{0, 1, 2},
			ranges: [][]archive.Range{{{Topic: "clicks", Partition: 2, First: 0, Last: 179, Records: 180}, {Topic: "clicks", Partition: 5, First: 7, Last: 36, Records: 30}}},
		},
		{
			name:   "every physical type, not archive files, in the order given",
			shape:  physicalShape,
			inputs: []spec{{first: 500, n: 100, opts: smallDicts}, {first: 0, n: 300, perGroup: 70, opts: plainPages}, {first: 300, n: 3, opts: splitPages}},
			order:  []int{0, 1, 2},
			ranges: [][]archive.Range{nil},
		},
		{
			name:  "events near a target file size",
			shape: eventsShape,
			inputs: []spec{
				{p: 0, first: 0, n: 400}, {p: 0, first: 400, n: 400}, {p: 0, first: 800, n: 400}, {p: 1, first: 0, n: 400},
			},
			order: []int{0, 1, 2, 3},
			// Each input is about 26 KB (data page v1): two fit.
			opts: []Option{TargetFileSize(53 << 10)},
			ranges: [][]archive.Range{
				{{Topic: "clicks", Partition: 0, First: 0, Last: 799, Records: 800}},
				{{Topic: "clicks", Partition: 0, First: 800, Last: 1199, Records: 400}, {Topic: "clicks", Partition: 1, First: 0, Last: 399, Records: 400}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var paths []string
			for _, sp := range tt.inputs {
				paths = append(paths, writeInput(t, dir, tt.shape, sp))
			}
			var ordered []string
			for _, i := range tt.order {
				ordered = append(ordered, paths[i])
			}
			var progress []Progress
			opts := append([]Option{OnProgress(func(p Progress) { progress = append(progress, p) })}, tt.opts...)
			merged, outs, err := mergeFiles(t, dir, paths, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if len(outs) != len(tt.ranges) {
				t.Fatalf("%d output files, want %d", len(outs), len(tt.ranges))
			}
			var rows, wantRows int64
			for _, sp := range tt.inputs {
				wantRows += sp.n
			}
			for i, o := range outs {
				rows += o.Rows
				if o.Metadata.NumRows != o.Rows {
					t.Errorf("output %d: footer has %d rows, Output %d", i, o.Metadata.NumRows, o.Rows)
				}
				if !reflect.DeepEqual(o.Ranges, tt.ranges[i]) {
					t.Errorf("output %d: ranges %+v, want %+v", i, o.Ranges, tt.ranges[i])
				}
				got, err := archive.ReadRanges(o.Metadata.KeyValueMetadata)
				switch {
				case tt.ranges[i] == nil:
					if !errors.Is(err, archive.ErrForeign) {
						t.Errorf("output %d of files without ranges: footer ranges %+v, %v", i, got, err)
					}
				case err != nil || !reflect.DeepEqual(got, tt.ranges[i]):
					t.Errorf("output %d: footer ranges %+v, %v; want %+v", i, got, err, tt.ranges[i])
				}
				if _, several := keyValue(o.Metadata, archive.FooterRanges); len(tt.ranges[i]) == 1 && several {
					t.Errorf("output %d of one range has %s", i, archive.FooterRanges)
				}
			}
			if rows != wantRows {
				t.Errorf("%d rows merged, want %d", rows, wantRows)
			}
			last := progress[len(progress)-1]
			if last.Rows != wantRows || last.TotalRows != wantRows || last.Files != len(paths) || last.Bytes != last.TotalBytes || last.Bytes == 0 {
				t.Errorf("last progress %+v, want every row, byte and file done", last)
			}
			for i := 1; i < len(progress); i++ {
				if progress[i].Rows < progress[i-1].Rows || progress[i].Bytes < progress[i-1].Bytes {
					t.Errorf("progress went back: %+v after %+v", progress[i], progress[i-1])
				}
			}

			s := tt.shape.schema(t)
			for name, read := range map[string]func(string) ([][]crossread.Chunk, error){
				"arrow-go": crossread.Arrow, "parquet-go": crossread.ParquetGo, "pqsink": crossread.PQSink,
			} {
				sameColumns(t, name, s, columnsOf(t, crossread.PQSink, ordered), columnsOf(t, read, merged))
			}
			want, got := duckRows(t, db, ordered), duckRows(t, db, merged)
			if len(got) != len(want) {
				t.Fatalf("duckdb: %d rows merged, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("duckdb: row %d is %s, want %s", i, got[i], want[i])
				}
			}
			if s.Leaf("_kafka.offset") != nil {
				checkKafkaOrder(t, db, merged)
			}
		})
	}
}

// duckRows reads the rows of the files, one after the other, with DuckDB,
// each row as text.
func duckRows(t *testing.T, db *duckdb.DB, paths []string) []string {
	t.Helper()
	var rows []string
	for _, p := range paths {
		res := db.Query(t, "SELECT CAST(t AS VARCHAR) AS r FROM read_parquet("+duckdb.Quote(p)+") t")
		for i := range res.Rows {
			rows = append(rows, res.Value(i, "r").(string))
		}
	}
	return rows
}

// checkKafkaOrder checks with DuckDB that the rows of each file are in
// order by partition and offset.
func checkKafkaOrder(t *testing.T, db *duckdb.DB, paths []string) {
	t.Helper()
	for _, p := range paths {
		res := db.Query(t, `SELECT count(*) AS n FROM (SELECT _kafka.partition AS p, _kafka.offset AS o,
			lag(_kafka.partition) OVER (ORDER BY file_row_number) AS pp, lag(_kafka.offset) OVER (ORDER BY file_row_number) AS po
			FROM read_parquet(`+duckdb.Quote(p)+`, file_row_number = true)) WHERE pp > p OR (pp = p AND po >= o)`)
		if n := fmt.Sprint(res.Value(0, "n")); n != "0" {
			t.Errorf("%s: %v rows out of order by partition and offset", filepath.Base(p), n)
		}
	}
}

// TestMergeRefuses covers the inputs a merge must refuse, with an error
// that says why.
func TestMergeRefuses(t *testing.T) {
	dir := t.TempDir()
	ev := func(p int32, first, n int64) string {
		return writeInput(t, dir, eventsShape, spec{p: p, first: first, n: n})
	}
	a, b := ev(0, 0, 50), ev(0, 50, 50)
	overlap := ev(0, 40, 20)
	nested := writeInput(t, dir, nestedShape, spec{p: 0, first: 500, n: 10})
	noRange := writeInput(t, dir, eventsShape, spec{p: 0, first: 200, n: 10, noRange: true})
	// The events schema with a column of another type.
	other := writeInput(t, dir, shape{name: "other", schema: func(t testing.TB) *schema.Schema {
		return withEnvelope(t, `message event { required int64 id; required int64 ts (TIMESTAMP(MICROS,true)); required binary user (STRING);
			required binary country (STRING); required float amount; optional group tags (LIST) { repeated group list { required binary element (STRING); } }
			optional group payload { required binary session (STRING); optional group nested { required int32 level; required boolean flag; required double score; } } }`)
	}, rows: jsonRows(eventRecord)}, spec{p: 0, first: 100, n: 10})
	tests := []struct {
		name  string
		paths []string
		opts  []Option
		want  string
	}{
		{"another schema", []string{a, other}, nil, "input other-0-100.parquet has another schema than events-0-0.parquet: column amount: DOUBLE, the other schema's is FLOAT (files of different schemas are not merged yet: that waits for schema evolution, which will widen the older files' columns)"},
		{"another shape", []string{a, nested}, nil, "has another schema than events-0-0.parquet: column id: the other schema has i32 in its place"},
		{"overlapping ranges", []string{a, b, overlap}, nil, "inputs events-0-0.parquet (clicks/0 offsets 0 to 49) and events-0-40.parquet (clicks/0 offsets 40 to 59) overlap: both hold offsets 40 to 49 of clicks/0"},
		{"archive files and others", []string{a, noRange}, nil, "input events-0-200.parquet has no Kafka range in its footer (pqsink.kafka.topic), other inputs do"},
		{"no input", nil, nil, "merge: no input"},
		{"tiny memory", []string{a, b}, []Option{MemoryLimit(64 << 20), RowGroupBytes(1)}, ""},
		{"bad option", []string{a}, []Option{TargetFileSize(-1)}, "target file size -1: must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := mergeFiles(t, t.TempDir(), tt.paths, tt.opts...)
			if tt.want == "" {
				if err != nil {
					t.Errorf("Merge: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Merge: %v\nwant an error with %q", err, tt.want)
			}
		})
	}
}
