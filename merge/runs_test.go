package merge

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/test/crossread"
	"github.com/pqsink/pqsink/writer"
)

// Settings of the earlier compactions in TestMergeRuns: small pages, so
// that a run of a compacted file starts and ends inside a page, with page
// versions 1 and 2.
var (
	smallPagesV1 = []Option{WriterOptions(writer.PageSize(512), writer.DataPageVersion(1), writer.Dictionary(false))}
	smallPagesV2 = []Option{WriterOptions(writer.PageSize(700), writer.DataPageVersion(2), writer.Compression(meta.CodecZstd, 1))}
	// Row groups of about one input row group each.
	smallGroups = []Option{RowGroupBytes(1), WriterOptions(writer.PageSize(1 << 10))}
)

// TestMergeRuns merges again the files of earlier merges (compactions),
// whose ranges interleave with each other's and with sink files': each
// footer range is a run of rows, and the runs are copied in order by
// partition and offset, from inside row groups and pages where they start
// there. The merged files read back (arrow-go, parquet-go, pqsink's reader,
// DuckDB) as the sink files they all came from, taken in order by
// partition and offset: every row once, in that order, and their footers
// list the ranges coalesced.
func TestMergeRuns(t *testing.T) {
	db := duckdb.Start(t)
	type earlier struct {
		files []int // indexes into the sink files
		opts  []Option
	}
	tests := []struct {
		name  string
		shape shape
		files []spec // the sink files
		// earlier are the earlier merges: each of sink files, into one
		// compacted file given to the merge.
		earlier []earlier
		// rest are the sink files given to the merge beside them.
		rest   []int
		opts   []Option
		ranges []archive.Range // of the outputs, one after the other, coalesced
	}{
		{
			name:  "hourly compactions of two partitions",
			shape: eventsShape,
			files: []spec{
				{p: 0, first: 0, n: 100, perGroup: 40}, {p: 1, first: 0, n: 100, opts: plainPages},
				{p: 0, first: 100, n: 100, opts: deltaPages}, {p: 1, first: 100, n: 100, perGroup: 30},
				{p: 0, first: 200, n: 60, opts: smallDicts},
			},
			earlier: []earlier{{[]int{0, 1}, smallPagesV1}, {[]int{2, 3}, smallPagesV2}},
			rest:    []int{4},
			ranges: []archive.Range{
				{Topic: "clicks", Partition: 0, First: 0, Last: 259, Records: 260},
				{Topic: "clicks", Partition: 1, First: 0, Last: 199, Records: 200},
			},
		},
		{
			name:  "a gap that another compaction and a sink file fill",
			shape: eventsShape,
			files: []spec{
				{p: 0, first: 0, n: 50}, {p: 0, first: 50, n: 50}, {p: 0, first: 100, n: 50}, {p: 0, first: 150, n: 50},
				{p: 1, first: 0, n: 50}, {p: 1, first: 50, n: 50}, {p: 2, first: 10, n: 5},
			},
			// c1 holds p0 0-49 and 100-149 (two runs of one partition),
			// and p1 0-49; c2 p0 50-99 and 150-199; a sink file p1 50-99.
			earlier: []earlier{{[]int{0, 2, 4}, smallGroups}, {[]int{1, 3, 6}, smallPagesV1}},
			rest:    []int{5},
			ranges: []archive.Range{
				{Topic: "clicks", Partition: 0, First: 0, Last: 199, Records: 200},
				{Topic: "clicks", Partition: 1, First: 0, Last: 99, Records: 100},
				{Topic: "clicks", Partition: 2, First: 10, Last: 14, Records: 5},
			},
		},
		{
			name:  "nested columns, runs inside pages of v1 and v2",
			shape: nestedShape,
			files: []spec{
				{p: 0, first: 0, n: 90, opts: smallDicts}, {p: 1, first: 0, n: 70, perGroup: 25, opts: deltaPages},
				{p: 0, first: 90, n: 45, opts: plainPages}, {p: 1, first: 70, n: 33},
				{p: 0, first: 135, n: 17, perGroup: 5}, {p: 3, first: 0, n: 20},
			},
			earlier: []earlier{{[]int{0, 1, 5}, smallPagesV1}, {[]int{2, 3}, smallPagesV2}},
			rest:    []int{4},
			ranges: []archive.Range{
				{Topic: "clicks", Partition: 0, First: 0, Last: 151, Records: 152},
				{Topic: "clicks", Partition: 1, First: 0, Last: 102, Records: 103},
				{Topic: "clicks", Partition: 3, First: 0, Last: 19, Records: 20},
			},
		},
		{
			name:  "nested columns, runs across row groups",
			shape: nestedShape,
			files: []spec{
				{p: 0, first: 0, n: 80, perGroup: 30}, {p: 1, first: 0, n: 80, perGroup: 30, opts: plainPages},
				{p: 0, first: 80, n: 80, perGroup: 25, opts: deltaPages}, {p: 1, first: 80, n: 80, perGroup: 30},
			},
			earlier: []earlier{{[]int{0, 1}, smallGroups}, {[]int{2, 3}, smallGroups}},
			opts:    []Option{RowGroupBytes(20 << 10)},
			ranges: []archive.Range{
				{Topic: "clicks", Partition: 0, First: 0, Last: 159, Records: 160},
				{Topic: "clicks", Partition: 1, First: 0, Last: 159, Records: 160},
			},
		},
		{
			name:  "shredded variant",
			shape: variantShape,
			files: []spec{
				{p: 0, first: 0, n: 60}, {p: 1, first: 0, n: 60, opts: deltaPages},
				{p: 0, first: 60, n: 60, opts: smallDicts}, {p: 1, first: 60, n: 60},
			},
			earlier: []earlier{{[]int{0, 1}, smallPagesV2}, {[]int{2, 3}, smallPagesV1}},
			ranges: []archive.Range{
				{Topic: "clicks", Partition: 0, First: 0, Last: 119, Records: 120},
				{Topic: "clicks", Partition: 1, First: 0, Last: 119, Records: 120},
			},
		},
		{
			name:  "nested columns, no page index",
			shape: nestedShape,
			files: []spec{
				{p: 0, first: 0, n: 70}, {p: 1, first: 0, n: 70, opts: deltaPages},
				{p: 0, first: 70, n: 70, opts: smallDicts}, {p: 1, first: 70, n: 70},
			},
			earlier: []earlier{
				{[]int{0, 1}, []Option{WriterOptions(writer.PageIndex(false), writer.PageSize(400), writer.DataPageVersion(1))}},
				{[]int{2, 3}, []Option{WriterOptions(writer.PageIndex(false), writer.PageSize(600), writer.DataPageVersion(2))}},
			},
			ranges: []archive.Range{
				{Topic: "clicks", Partition: 0, First: 0, Last: 139, Records: 140},
				{Topic: "clicks", Partition: 1, First: 0, Last: 139, Records: 140},
			},
		},
		{
			name:  "runs on page boundaries",
			shape: nestedShape,
			files: []spec{
				{p: 0, first: 0, n: 50}, {p: 1, first: 0, n: 50}, {p: 2, first: 0, n: 50},
				{p: 0, first: 50, n: 50}, {p: 1, first: 50, n: 50}, {p: 2, first: 50, n: 50},
			},
			earlier: []earlier{
				{[]int{0, 1, 2}, []Option{WriterOptions(writer.PageRowLimit(10))}},
				{[]int{3, 4, 5}, []Option{WriterOptions(writer.PageRowLimit(25), writer.DataPageVersion(2))}},
			},
			ranges: []archive.Range{
				{Topic: "clicks", Partition: 0, First: 0, Last: 99, Records: 100},
				{Topic: "clicks", Partition: 1, First: 0, Last: 99, Records: 100},
				{Topic: "clicks", Partition: 2, First: 0, Last: 99, Records: 100},
			},
		},
		{
			name:  "several output files",
			shape: eventsShape,
			files: []spec{
				{p: 0, first: 0, n: 300}, {p: 1, first: 0, n: 300}, {p: 0, first: 300, n: 300}, {p: 1, first: 300, n: 300},
			},
			earlier: []earlier{{[]int{0, 1}, smallPagesV1}, {[]int{2, 3}, nil}},
			opts:    []Option{TargetFileSize(30 << 10)},
			ranges: []archive.Range{
				{Topic: "clicks", Partition: 0, First: 0, Last: 599, Records: 600},
				{Topic: "clicks", Partition: 1, First: 0, Last: 599, Records: 600},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var sink []string
			for _, sp := range tt.files {
				sink = append(sink, writeInput(t, dir, tt.shape, sp))
			}
			// The sink files in the order the output must have their rows.
			order := make([]int, len(sink))
			for i := range order {
				order[i] = i
			}
			slices.SortFunc(order, func(a, b int) int {
				x, y := tt.files[a], tt.files[b]
				if x.p != y.p {
					return int(x.p - y.p)
				}
				return int(x.first - y.first)
			})
			var ordered []string
			for _, i := range order {
				ordered = append(ordered, sink[i])
			}
			var inputs []string
			for i, e := range tt.earlier {
				var paths []string
				for _, f := range e.files {
					paths = append(paths, sink[f])
				}
				sub := filepath.Join(dir, fmt.Sprintf("earlier-%d", i))
				if err := os.Mkdir(sub, 0o755); err != nil {
					t.Fatal(err)
				}
				merged, outs, err := mergeFiles(t, sub, paths, e.opts...)
				if err != nil {
					t.Fatalf("earlier merge %d: %v", i, err)
				}
				if len(merged) != 1 || len(outs[0].Ranges) < 2 {
					t.Fatalf("earlier merge %d: %d files, ranges %+v", i, len(merged), outs[0].Ranges)
				}
				named := filepath.Join(dir, fmt.Sprintf("compacted-%d.parquet", i))
				if err := os.Rename(merged[0], named); err != nil {
					t.Fatal(err)
				}
				inputs = append(inputs, named)
			}
			for _, f := range tt.rest {
				inputs = append(inputs, sink[f])
			}

			var progress []Progress
			opts := append([]Option{OnProgress(func(p Progress) { progress = append(progress, p) })}, tt.opts...)
			merged, outs, err := mergeFiles(t, dir, inputs, opts...)
			if err != nil {
				t.Fatal(err)
			}
			var all []archive.Range
			var rows, wantRows int64
			for _, sp := range tt.files {
				wantRows += sp.n
			}
			for i, o := range outs {
				rows += o.Rows
				got, err := archive.ReadRanges(o.Metadata.KeyValueMetadata)
				if err != nil || !reflect.DeepEqual(got, o.Ranges) {
					t.Errorf("output %d: footer ranges %+v (%v), Output says %+v", i, got, err, o.Ranges)
				}
				if o.Metadata.NumRows != o.Rows {
					t.Errorf("output %d: footer has %d rows, Output %d", i, o.Metadata.NumRows, o.Rows)
				}
				all = append(all, o.Ranges...)
			}
			if got := archive.Coalesce(all); !reflect.DeepEqual(got, tt.ranges) {
				t.Errorf("ranges %+v, want %+v", got, tt.ranges)
			}
			if rows != wantRows {
				t.Errorf("%d rows merged, want %d", rows, wantRows)
			}
			last := progress[len(progress)-1]
			if last.Rows != wantRows || last.TotalRows != wantRows || last.Files != len(inputs) || last.Bytes != last.TotalBytes {
				t.Errorf("last progress %+v, want every row, byte and file done", last)
			}

			s := tt.shape.schema(t)
			want := columnsOf(t, crossread.PQSink, ordered)
			for name, read := range map[string]func(string) ([][]crossread.Chunk, error){
				"arrow-go": crossread.Arrow, "parquet-go": crossread.ParquetGo, "pqsink": crossread.PQSink,
			} {
				sameColumns(t, name, s, want, columnsOf(t, read, merged))
			}
			wantText, gotText := duckRows(t, db, ordered), duckRows(t, db, merged)
			if len(gotText) != len(wantText) {
				t.Fatalf("duckdb: %d rows merged, want %d", len(gotText), len(wantText))
			}
			for i := range wantText {
				if gotText[i] != wantText[i] {
					t.Fatalf("duckdb: row %d is %s, want %s", i, gotText[i], wantText[i])
				}
			}
			checkKafkaOrder(t, db, merged)
		})
	}
}

// TestMergeRunsOverlap: runs of two merged files that hold the same
// offsets of a partition are refused, naming both files and their ranges.
func TestMergeRunsOverlap(t *testing.T) {
	dir := t.TempDir()
	ev := func(p int32, first, n int64) string {
		return writeInput(t, dir, eventsShape, spec{p: p, first: first, n: n})
	}
	compacted := func(name string, paths ...string) string {
		t.Helper()
		sub := filepath.Join(dir, name)
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		merged, _, err := mergeFiles(t, sub, paths)
		if err != nil {
			t.Fatal(err)
		}
		return merged[0]
	}
	c1 := compacted("c1", ev(0, 0, 50), ev(1, 0, 50))
	c2 := compacted("c2", ev(0, 50, 50), ev(1, 40, 20))
	_, _, err := mergeFiles(t, t.TempDir(), []string{c1, c2})
	want := "inputs merged-0.parquet (clicks/0 offsets 0 to 49, clicks/1 offsets 0 to 49) and merged-0.parquet (clicks/0 offsets 50 to 99, clicks/1 offsets 40 to 59) overlap: both hold offsets 40 to 49 of clicks/1"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Merge: %v\nwant an error with %q", err, want)
	}
}

// TestMergeSpanSkipsPages: a run that starts late in a row group of many
// pages goes straight to its page (the offset index says where it is):
// the pages before it are neither read nor decoded.
func TestMergeSpanSkipsPages(t *testing.T) {
	dir := t.TempDir()
	a := writeInput(t, dir, eventsShape, spec{p: 0, first: 0, n: 2000})
	b := writeInput(t, dir, eventsShape, spec{p: 1, first: 0, n: 10})
	sub := filepath.Join(dir, "c1")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	// Data page v2, whose delta encodings keep the small pages of the
	// integer columns small without a dictionary page to read.
	merged, _, err := mergeFiles(t, sub, []string{a, b}, WriterOptions(writer.PageSize(1<<10), writer.DataPageVersion(2)))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(merged[0])
	if err != nil {
		t.Fatal(err)
	}
	counted := &countingReaderAt{r: bytes.NewReader(data)}
	f, err := reader.Open(counted, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	counted.n = 0
	if f.NumRowGroups() != 1 {
		t.Fatalf("%d row groups, the test wants one", f.NumRowGroups())
	}
	// The pages copySpan decodes for the run of partition 1 (rows 2000 to
	// 2009), column by column.
	x := &input{Input: Input{Name: "c1"}, f: f}
	m := &merger{ctx: context.Background(), opts: options{memory: 512 << 20}, sch: f.Schema()}
	m.g = rowgroup.New(f.Schema())
	decoded, pages := 0, 0
	for c := range f.Schema().Leaves() {
		oi, err := f.OffsetIndex(0, c)
		if err != nil || oi == nil {
			t.Fatalf("column %d: no offset index: %v", c, err)
		}
		pages += len(oi.PageLocations)
		before := m.decodedPages
		if err := m.copyChunkSpan(x, 0, c, 2000, 2010, nil); err != nil {
			t.Fatal(err)
		}
		decoded += m.decodedPages - before
	}
	t.Logf("%d of %d pages decoded, %d of the file's %d bytes read", decoded, pages, counted.n, len(data))
	if decoded == 0 || decoded*4 > pages {
		t.Errorf("%d of %d pages decoded for the last 10 of 2010 rows", decoded, pages)
	}
	// A chunk's dictionary page is read whatever the span; the data pages
	// are what the span skips.
	var dictBytes int64
	for _, cc := range f.Metadata().RowGroups[0].Columns {
		if md := cc.MetaData; md.DictionaryPageOffset != nil && *md.DictionaryPageOffset > 0 {
			dictBytes += md.DataPageOffset - *md.DictionaryPageOffset
		}
	}
	if (counted.n-dictBytes)*4 > int64(len(data))-dictBytes {
		t.Errorf("%d of the file's %d bytes read for the last 10 of 2010 rows (%d of them dictionary pages)", counted.n, len(data), dictBytes)
	}
	if m.g.EndRows(10); m.g.NumRows() != 10 {
		t.Fatalf("%d rows", m.g.NumRows())
	}
	if err := m.g.Check(); err != nil {
		t.Errorf("the span's rows: %v", err)
	}
}

// TestMergeRunsHostile damages an earlier merge's file, one byte at a
// time, and merges it with a file whose ranges interleave with its own:
// the runs are copied in spans of row groups and pages, and a damaged file
// is refused with an error, never a panic, or (a byte nothing checks)
// merged into the same rows as the undamaged file: with an offset index,
// which the pages read must agree with, and without one.
func TestMergeRunsHostile(t *testing.T) {
	dir := t.TempDir()
	var firsts, seconds []string
	for p := range int32(2) {
		firsts = append(firsts, writeInput(t, dir, nestedShape, spec{p: p, first: 0, n: 60, perGroup: 25}))
		seconds = append(seconds, writeInput(t, dir, nestedShape, spec{p: p, first: 60, n: 40, opts: deltaPages}))
	}
	earlier := func(name string, paths []string, opts ...Option) []byte {
		sub := filepath.Join(dir, name)
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		merged, _, err := mergeFiles(t, sub, paths, opts...)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(merged[0])
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	next := earlier("c2", seconds)
	s := nestedShape.schema(t)
	columns := func(file []byte) []crossread.Chunk {
		p := filepath.Join(dir, "out.parquet")
		if err := os.WriteFile(p, file, 0o644); err != nil {
			t.Fatal(err)
		}
		return columnsOf(t, crossread.PQSink, []string{p})
	}
	for i, tc := range []struct {
		name string
		opts []writer.Option
	}{
		{"with an offset index", nil},
		{"without a page index", []writer.Option{writer.PageIndex(false)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]writer.Option{writer.PageSize(300), writer.DataPageVersion(1)}, tc.opts...)
			good := earlier(fmt.Sprintf("c1-%d", i), firsts, WriterOptions(opts...))
			_, want, err := mergeBytes(context.Background(), [][]byte{good, next})
			if err != nil {
				t.Fatalf("undamaged: %v", err)
			}
			wantColumns := columns(want[0])
			refused, tried := 0, 0
			for off := 4; off < len(good)-8; off += 7 {
				tried++
				bad := bytes.Clone(good)
				bad[off] ^= 0x5a
				outs, files, err := mergeBytes(context.Background(), [][]byte{bad, next})
				if err != nil {
					if strings.HasPrefix(err.Error(), "panic") {
						t.Fatalf("byte %d damaged: %v", off, err)
					}
					refused++
					continue
				}
				if outs[0].Rows != 200 {
					t.Fatalf("byte %d damaged: merged %d rows of 200", off, outs[0].Rows)
				}
				// The byte was one nothing checks, and nothing reads
				// that matters (statistics, say): the same rows.
				sameColumns(t, fmt.Sprintf("byte %d damaged", off), s, wantColumns, columns(files[0]))
			}
			t.Logf("%d of %d damaged files refused", refused, tried)
			if refused == 0 {
				t.Error("no damaged byte was noticed")
			}
		})
	}
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r io.ReaderAt
	n int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}
