package merge

import (
	"bytes"
	"context"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/archive/envelope"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/writer"
)

// TestMergeEnvelopeRanges merges files without Kafka ranges in their
// footers (another engine's copy-on-write rewrite) placed by their
// envelope columns (Input.Ranges from envelope.Place), beside archive
// files and alone (Like): the output holds each row once in order by
// partition and offset, its footer's ranges say exactly the records it
// holds (a rewritten file's gaps too), and it carries the archive
// files' footer entries, never the rewritten files'.
func TestMergeEnvelopeRanges(t *testing.T) {
	db := duckdb.Start(t)
	r := func(p int32, first, last, n int64) archive.Range {
		return archive.Range{Topic: "clicks", Partition: p, First: first, Last: last, Records: n}
	}
	own := []writer.Option{writer.KeyValue("avro.schema", `"long"`)}
	theirs := []writer.Option{writer.KeyValue("iceberg.schema", "{}")}
	tests := []struct {
		name    string
		files   []spec
		placed  []bool // by file: an input with Ranges
		like    bool
		deleted map[int][]int64
		ranges  []archive.Range
		err     string
	}{
		{
			name:   "rewritten files between the sink's",
			files:  []spec{{p: 0, first: 0, n: 40, opts: own}, {p: 0, first: 40, n: 30, noRange: true, stride: 1, opts: theirs}, {p: 1, first: 5, n: 20, stride: 3, noRange: true, opts: theirs}, {p: 0, first: 70, n: 10, opts: own}},
			placed: []bool{false, true, true, false},
			ranges: []archive.Range{r(0, 0, 79, 80), r(1, 15, 72, 20)},
		},
		{
			name:    "a rewritten file with deleted rows",
			files:   []spec{{p: 0, first: 0, n: 40, opts: own}, {p: 1, first: 0, n: 20, stride: 2, noRange: true, perGroup: 7, opts: theirs}},
			placed:  []bool{false, true},
			deleted: map[int][]int64{1: {0, 5, 19}},
			ranges:  []archive.Range{r(0, 0, 39, 40), r(1, 2, 36, 17)},
		},
		{
			name:   "rewritten files alone",
			files:  []spec{{p: 0, first: 0, n: 10, noRange: true, opts: theirs}, {p: 0, first: 20, n: 10, noRange: true, opts: theirs}},
			placed: []bool{true, true},
			like:   true,
			ranges: []archive.Range{r(0, 0, 9, 10), r(0, 20, 29, 10)},
		},
		{
			name:   "rewritten files alone, no schema given",
			files:  []spec{{p: 0, first: 0, n: 10, noRange: true, opts: theirs}},
			placed: []bool{true},
			err:    "no schema is given",
		},
		{
			name:   "a rewritten file that overlaps",
			files:  []spec{{p: 0, first: 0, n: 40, opts: own}, {p: 0, first: 30, n: 20, noRange: true, opts: theirs}},
			placed: []bool{false, true},
			err:    "overlap",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var paths []string
			for _, sp := range tc.files {
				paths = append(paths, writeInput(t, dir, eventsShape, sp))
			}
			in := inputsOf(t, paths)
			var want []record
			for i, sp := range tc.files {
				del := map[int64]bool{}
				for _, d := range tc.deleted[i] {
					del[d] = true
				}
				in[i].Deleted = tc.deleted[i]
				for row := range sp.n {
					if !del[row] {
						want = append(want, record{sp.p, (sp.first + row) * max(sp.stride, 1)})
					}
				}
				if !tc.placed[i] {
					continue
				}
				f, err := reader.Open(in[i].R, in[i].Size)
				if err != nil {
					t.Fatal(err)
				}
				ps, err := envelope.Place(context.Background(), f)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range ps {
					in[i].Ranges = append(in[i].Ranges, p.Range())
				}
			}
			var opts []Option
			if tc.like {
				opts = append(opts, Like(eventsShape.schema(t), nil))
			}
			var buf bytes.Buffer
			outs, err := Merge(context.Background(), in, func(int) (io.Writer, error) { return &buf, nil }, opts...)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("merge: %v, want an error saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(outs) != 1 || !reflect.DeepEqual(outs[0].Ranges, tc.ranges) {
				t.Fatalf("ranges %+v, want %+v", outs, tc.ranges)
			}
			if got, ok := keyValue(outs[0].Metadata, "avro.schema"); ok != !tc.like || ok && got != `"long"` {
				t.Errorf("avro.schema %q (%v) in the output's footer", got, ok)
			}
			if _, ok := keyValue(outs[0].Metadata, "iceberg.schema"); ok {
				t.Error("the output carries a rewritten file's footer entry")
			}
			out := dir + "/merged.parquet"
			if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			sortRecords(want)
			if got := kafkaRows(t, db, out); !reflect.DeepEqual(got, want) {
				t.Errorf("rows %v,\nwant %v", got, want)
			}
		})
	}
}

// sortRecords sorts records by partition and offset.
func sortRecords(rs []record) {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && (rs[j].p < rs[j-1].p || rs[j].p == rs[j-1].p && rs[j].o < rs[j-1].o); j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}
