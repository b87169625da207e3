package merge

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// record is a Kafka record by partition and offset.
type record struct {
	p int32
	o int64
}

// kafkaRows reads the partitions and offsets of the rows of the file at
// path with DuckDB, in the file's order.
func kafkaRows(t *testing.T, db *duckdb.DB, path string) []record {
	t.Helper()
	res := db.Query(t, `SELECT _kafka.partition AS p, _kafka.offset AS o FROM read_parquet(`+duckdb.Quote(path)+`, file_row_number = true) ORDER BY file_row_number`)
	out := make([]record, len(res.Rows))
	for i := range res.Rows {
		var p, o int64
		fmt.Sscan(fmt.Sprint(res.Value(i, "p")), &p)
		fmt.Sscan(fmt.Sprint(res.Value(i, "o")), &o)
		out[i] = record{int32(p), o}
	}
	return out
}

// TestMergeDeleted merges inputs with deleted rows (Input.Deleted, a
// table's delete files applied): the output holds every other row once,
// in order by partition and offset, and its footer's ranges say exactly
// the records it holds, from the first kept to the last, a deleted record
// a gap (fewer records than offsets). The rows read back with
// DuckDB are those of the inputs without the deleted ones.
func TestMergeDeleted(t *testing.T) {
	db := duckdb.Start(t)
	r := func(p int32, first, last, n int64) archive.Range {
		return archive.Range{Topic: "clicks", Partition: p, First: first, Last: last, Records: n}
	}
	tests := []struct {
		name  string
		shape shape
		files []spec
		// earlier, when set, merges these files first into one compacted
		// input; the others are inputs as they are.
		earlier []int
		// earlierOpts write it; smallPagesV1 when nil.
		earlierOpts []Option
		deleted     []record
		ranges      []archive.Range
	}{
		{
			name:    "a range's first, middle and last records",
			shape:   eventsShape,
			files:   []spec{{p: 0, first: 0, n: 100, perGroup: 30}, {p: 1, first: 0, n: 50}},
			deleted: []record{{0, 0}, {0, 45}, {0, 99}, {1, 10}, {1, 11}, {1, 12}},
			ranges:  []archive.Range{r(0, 1, 98, 97), r(1, 0, 49, 47)},
		},
		{
			name:    "runs of a compacted file, inside pages",
			shape:   nestedShape,
			files:   []spec{{p: 0, first: 0, n: 60}, {p: 1, first: 0, n: 60, perGroup: 25}, {p: 0, first: 60, n: 40}},
			earlier: []int{0, 1},
			deleted: []record{{0, 0}, {0, 59}, {1, 0}, {1, 40}, {0, 70}},
			ranges:  []archive.Range{r(0, 1, 58, 58), r(0, 60, 99, 39), r(1, 1, 59, 58)},
		},
		{
			name:        "runs of a compacted file without page index, v1 pages",
			shape:       nestedShape,
			files:       []spec{{p: 0, first: 0, n: 70}, {p: 1, first: 0, n: 70, perGroup: 25}, {p: 0, first: 70, n: 30}},
			earlier:     []int{0, 1},
			earlierOpts: []Option{WriterOptions(writer.PageIndex(false), writer.PageSize(400), writer.DataPageVersion(1))},
			deleted:     append(everyOther(0, 10, 40), record{1, 0}, record{1, 69}, record{1, 33}, record{0, 69}),
			ranges:      []archive.Range{r(0, 0, 68, 54), r(0, 70, 99, 30), r(1, 1, 68, 67)},
		},
		{
			name:    "every other row, in pages of both versions",
			shape:   nestedShape,
			files:   []spec{{p: 0, first: 0, n: 120, perGroup: 50}, {p: 1, first: 0, n: 30, opts: plainPages}},
			deleted: everyOther(0, 0, 120),
			ranges:  []archive.Range{r(0, 1, 119, 60), r(1, 0, 29, 30)},
		},
		{
			name:    "every row of an input",
			shape:   eventsShape,
			files:   []spec{{p: 0, first: 0, n: 5}, {p: 0, first: 5, n: 10}},
			deleted: []record{{0, 0}, {0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 6}},
			ranges:  []archive.Range{r(0, 5, 14, 9)},
		},
		{
			name:    "a range with gaps: offsets from the _kafka.offset column",
			shape:   eventsShape,
			files:   []spec{{p: 0, first: 0, n: 40, stride: 3, perGroup: 15}, {p: 1, first: 0, n: 10}},
			deleted: []record{{0, 0}, {0, 30}, {0, 33}, {0, 117}},
			ranges:  []archive.Range{r(0, 3, 114, 36), r(1, 0, 9, 10)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var sink []string
			for _, sp := range tt.files {
				sink = append(sink, writeInput(t, dir, tt.shape, sp))
			}
			var inputs []string
			if tt.earlier != nil {
				var paths []string
				for _, i := range tt.earlier {
					paths = append(paths, sink[i])
				}
				sub := filepath.Join(dir, "earlier")
				if err := os.Mkdir(sub, 0o755); err != nil {
					t.Fatal(err)
				}
				opts := tt.earlierOpts
				if opts == nil {
					opts = smallPagesV1
				}
				merged, _, err := mergeFiles(t, sub, paths, opts...)
				if err != nil {
					t.Fatal(err)
				}
				inputs = append(inputs, merged[0])
			}
			for i, p := range sink {
				if !slices.Contains(tt.earlier, i) {
					inputs = append(inputs, p)
				}
			}
			gone := map[record]bool{}
			for _, d := range tt.deleted {
				gone[d] = true
			}
			in := inputsOf(t, inputs)
			var want []record
			for i, p := range inputs {
				for pos, rec := range kafkaRows(t, db, p) {
					if gone[rec] {
						in[i].Deleted = append(in[i].Deleted, int64(pos))
					} else {
						want = append(want, rec)
					}
				}
			}
			slices.SortFunc(want, func(a, b record) int { return cmp.Or(cmp.Compare(a.p, b.p), cmp.Compare(a.o, b.o)) })
			var buf bytes.Buffer
			outs, err := Merge(context.Background(), in, func(n int) (io.Writer, error) {
				if n > 0 {
					return nil, fmt.Errorf("a second output")
				}
				return &buf, nil
			}, smallPagesV2...)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "merged.parquet")
			if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := archive.ReadRanges(outs[0].Metadata.KeyValueMetadata)
			if err != nil || !reflect.DeepEqual(got, tt.ranges) || !reflect.DeepEqual(outs[0].Ranges, tt.ranges) {
				t.Errorf("footer ranges %+v (%v), Output's %+v; want %+v", got, err, outs[0].Ranges, tt.ranges)
			}
			if outs[0].Rows != int64(len(want)) || outs[0].Metadata.NumRows != int64(len(want)) {
				t.Errorf("%d rows (footer %d), want %d", outs[0].Rows, outs[0].Metadata.NumRows, len(want))
			}
			if rows := kafkaRows(t, db, out); !reflect.DeepEqual(rows, want) {
				t.Errorf("DuckDB reads records %v\nwant %v", rows, want)
			}
			checkKafkaOrder(t, db, []string{out})
		})
	}
}

// TestMergeDeletedWithoutOffsets: an input without the _kafka.offset
// column has its deleted rows left out when the offsets of its first and
// last kept records are known (its range holds every offset from first to
// last, or they are the range's first and last), and is refused
// (ErrUnplaced) otherwise.
func TestMergeDeletedWithoutOffsets(t *testing.T) {
	s, err := schema.New("m", schema.Leaf("id", schema.Required, meta.TypeInt64, schema.Logical{}))
	if err != nil {
		t.Fatal(err)
	}
	file := func(rg archive.Range, deleted int64) Input {
		g := rowgroup.New(s)
		for i := range rg.Records {
			g.Column(0).AppendInt64(0, i)
			g.EndRow()
		}
		var buf bytes.Buffer
		w, err := writer.New(&buf, s)
		if err != nil {
			t.Fatal(err)
		}
		rg.Footer(w.SetKeyValue)
		if err := w.WriteRowGroup(g); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return Input{Name: "f", R: bytes.NewReader(buf.Bytes()), Size: int64(buf.Len()), Deleted: []int64{deleted}}
	}
	create := func(int) (io.Writer, error) { return io.Discard, nil }
	for _, tc := range []struct {
		name    string
		in      archive.Range
		deleted int64
		err     error
		ranges  []archive.Range
	}{
		{"dense", archive.Range{Topic: "t", First: 10, Last: 19, Records: 10}, 0, nil,
			[]archive.Range{{Topic: "t", First: 11, Last: 19, Records: 9}}},
		{"gaps inside", archive.Range{Topic: "t", First: 10, Last: 29, Records: 10}, 3, nil,
			[]archive.Range{{Topic: "t", First: 10, Last: 29, Records: 9}}},
		{"gaps, the first deleted", archive.Range{Topic: "t", First: 10, Last: 29, Records: 10}, 0, ErrUnplaced, nil},
		{"gaps, the last deleted", archive.Range{Topic: "t", First: 10, Last: 29, Records: 10}, 9, ErrUnplaced, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outs, err := Merge(context.Background(), []Input{file(tc.in, tc.deleted)}, create)
			if !errors.Is(err, tc.err) {
				t.Fatalf("merge: %v, want %v", err, tc.err)
			}
			if err == nil && !reflect.DeepEqual(outs[0].Ranges, tc.ranges) {
				t.Errorf("ranges %+v, want %+v", outs[0].Ranges, tc.ranges)
			}
		})
	}
}

// everyOther is the records of partition p from offset first to last,
// every other one from the first.
func everyOther(p int32, first, last int64) []record {
	var out []record
	for o := first; o < last; o += 2 {
		out = append(out, record{p, o})
	}
	return out
}
