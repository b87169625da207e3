package merge

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/writer"
)

// kafkaOf reads the partition and offset of each row of a file with
// pqsink's reader, in the file's order.
func kafkaOf(t testing.TB, data []byte) []record {
	t.Helper()
	f, err := reader.Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	sch := f.Schema()
	cols := []int{sch.Leaf("_kafka.partition").Column, sch.Leaf("_kafka.offset").Column}
	var out []record
	for g := range f.Metadata().RowGroups {
		cur, err := f.ColumnCursors(g, cols)
		if err != nil {
			t.Fatal(err)
		}
		for !cur[0].EOF() {
			out = append(out, record{cur[0].Int32(), cur[1].Int64()})
			if err := cur[0].Advance(); err != nil {
				t.Fatal(err)
			}
			if err := cur[1].Advance(); err != nil {
				t.Fatal(err)
			}
		}
		cur[0].Release()
		cur[1].Release()
	}
	return out
}

// FuzzMergeDeleted merges an earlier merge's file (runs of two
// partitions, small pages of nested columns, with or without a page
// index), with some of its rows deleted as the fuzzer's bits say, and a
// file whose runs interleave with its own: the output holds exactly the
// records not deleted, in order by partition and offset, and its ranges
// hold each of its records' offsets, as many records as it has.
func FuzzMergeDeleted(f *testing.F) {
	dir := f.TempDir()
	var firsts, seconds []string
	for p := range int32(2) {
		firsts = append(firsts, writeInput(f, dir, nestedShape, spec{p: p, first: 0, n: 30, perGroup: 12}))
		seconds = append(seconds, writeInput(f, dir, nestedShape, spec{p: p, first: 30, n: 20, opts: deltaPages}))
	}
	earlier := func(name string, paths []string, opts ...Option) []byte {
		sub := filepath.Join(dir, name)
		if err := os.Mkdir(sub, 0o755); err != nil {
			f.Fatal(err)
		}
		merged, _, err := mergeFiles(f, sub, paths, opts...)
		if err != nil {
			f.Fatal(err)
		}
		data, err := os.ReadFile(merged[0])
		if err != nil {
			f.Fatal(err)
		}
		return data
	}
	next := earlier("next", seconds)
	withIndex := earlier("index", firsts, WriterOptions(writer.PageSize(300), writer.DataPageVersion(1)))
	noIndex := earlier("no-index", firsts, WriterOptions(writer.PageSize(300), writer.PageIndex(false)))
	for _, seed := range [][]byte{{}, {1}, {0xff, 0, 0x81}, {0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55}, bytes.Repeat([]byte{0xff}, 8)} {
		f.Add(false, seed)
		f.Add(true, seed)
	}
	f.Fuzz(func(t *testing.T, index bool, mask []byte) {
		first := noIndex
		if index {
			first = withIndex
		}
		rows := kafkaOf(t, first)
		var deleted []int64
		var want []record
		for i, r := range rows {
			if i/8 < len(mask) && mask[i/8]&(1<<(i%8)) != 0 {
				deleted = append(deleted, int64(i))
				continue
			}
			want = append(want, r)
		}
		want = append(want, kafkaOf(t, next)...)
		slices.SortFunc(want, func(a, b record) int { return cmp.Or(cmp.Compare(a.p, b.p), cmp.Compare(a.o, b.o)) })
		in := []Input{
			{Name: "first", R: bytes.NewReader(first), Size: int64(len(first)), Deleted: deleted},
			{Name: "next", R: bytes.NewReader(next), Size: int64(len(next))},
		}
		var buf bytes.Buffer
		outs, err := Merge(context.Background(), in, func(n int) (io.Writer, error) {
			if n > 0 {
				return nil, fmt.Errorf("a second output")
			}
			return &buf, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got := kafkaOf(t, buf.Bytes())
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("records %v\nwant %v", got, want)
		}
		// Each record in a range of its partition, in the ranges' order,
		// and the ranges' records those of the file.
		ranges, err := archive.ReadRanges(outs[0].Metadata.KeyValueMetadata)
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for _, r := range ranges {
			for range r.Records {
				if i >= len(got) || got[i].p != r.Partition || got[i].o < r.First || got[i].o > r.Last {
					t.Fatalf("range %+v: record %d is not in it (%v)", r, i, got)
				}
				i++
			}
			if got[i-1].o != r.Last || got[i-int(r.Records)].o != r.First {
				t.Fatalf("range %+v does not begin and end with its records", r)
			}
		}
		if i != len(got) {
			t.Fatalf("the ranges hold %d records, the file %d", i, len(got))
		}
	})
}
