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
// the records it holds, a deleted record a gap. The rows read back with
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
		deleted []record
		ranges  []archive.Range
	}{
		{
			name:    "a range's first, middle and last records",
			shape:   eventsShape,
			files:   []spec{{p: 0, first: 0, n: 100, perGroup: 30}, {p: 1, first: 0, n: 50}},
			deleted: []record{{0, 0}, {0, 45}, {0, 99}, {1, 10}, {1, 11}, {1, 12}},
			ranges:  []archive.Range{r(0, 1, 44, 44), r(0, 46, 98, 53), r(1, 0, 9, 10), r(1, 13, 49, 37)},
		},
		{
			name:    "runs of a compacted file, inside pages",
			shape:   nestedShape,
			files:   []spec{{p: 0, first: 0, n: 60}, {p: 1, first: 0, n: 60, perGroup: 25}, {p: 0, first: 60, n: 40}},
			earlier: []int{0, 1},
			deleted: []record{{0, 0}, {0, 59}, {1, 0}, {1, 40}, {0, 70}},
			ranges:  []archive.Range{r(0, 1, 58, 58), r(0, 60, 69, 10), r(0, 71, 99, 29), r(1, 1, 39, 39), r(1, 41, 59, 19)},
		},
		{
			name:    "every row of an input",
			shape:   eventsShape,
			files:   []spec{{p: 0, first: 0, n: 5}, {p: 0, first: 5, n: 10}},
			deleted: []record{{0, 0}, {0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 6}},
			ranges:  []archive.Range{r(0, 5, 5, 1), r(0, 7, 14, 8)},
		},
		{
			name:    "a range with gaps: offsets from the _kafka.offset column",
			shape:   eventsShape,
			files:   []spec{{p: 0, first: 0, n: 40, stride: 3, perGroup: 15}, {p: 1, first: 0, n: 10}},
			deleted: []record{{0, 0}, {0, 30}, {0, 33}, {0, 117}},
			ranges:  []archive.Range{r(0, 3, 27, 9), r(0, 36, 114, 27), r(1, 0, 9, 10)},
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
				merged, _, err := mergeFiles(t, sub, paths, smallPagesV1...)
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
// column has its deleted rows left out when its range holds every offset
// from first to last (the offsets are known), and is refused
// (ErrUnplaced) when the range has gaps.
func TestMergeDeletedWithoutOffsets(t *testing.T) {
	s, err := schema.New("m", schema.Leaf("id", schema.Required, meta.TypeInt64, schema.Logical{}))
	if err != nil {
		t.Fatal(err)
	}
	file := func(rg archive.Range) Input {
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
		return Input{Name: "f", R: bytes.NewReader(buf.Bytes()), Size: int64(buf.Len()), Deleted: []int64{3}}
	}
	create := func(int) (io.Writer, error) { return io.Discard, nil }
	for _, tc := range []struct {
		name   string
		in     archive.Range
		err    error
		ranges []archive.Range
	}{
		{"dense", archive.Range{Topic: "t", First: 10, Last: 19, Records: 10}, nil,
			[]archive.Range{{Topic: "t", First: 10, Last: 12, Records: 3}, {Topic: "t", First: 14, Last: 19, Records: 6}}},
		{"gaps", archive.Range{Topic: "t", First: 10, Last: 29, Records: 10}, ErrUnplaced, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outs, err := Merge(context.Background(), []Input{file(tc.in)}, create)
			if !errors.Is(err, tc.err) {
				t.Fatalf("merge: %v, want %v", err, tc.err)
			}
			if err == nil && !reflect.DeepEqual(outs[0].Ranges, tc.ranges) {
				t.Errorf("ranges %+v, want %+v", outs[0].Ranges, tc.ranges)
			}
		})
	}
}
