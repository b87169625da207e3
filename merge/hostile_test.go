package merge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// mergeBytes merges in-memory files and returns the outputs' bytes, turning
// a panic into an error that names it.
func mergeBytes(ctx context.Context, files [][]byte, opts ...Option) (outs []Output, out [][]byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	var in []Input
	for i, f := range files {
		in = append(in, Input{Name: fmt.Sprintf("in%d", i), R: bytes.NewReader(f), Size: int64(len(f))})
	}
	var bufs []*bytes.Buffer
	outs, err = Merge(ctx, in, func(int) (io.Writer, error) {
		bufs = append(bufs, new(bytes.Buffer))
		return bufs[len(bufs)-1], nil
	}, opts...)
	for _, b := range bufs {
		out = append(out, b.Bytes())
	}
	return outs, out, err
}

// TestMergeHostileInputs gives the merge truncated and damaged inputs: each
// is refused with an error, never a panic, and a damaged file that still
// reads (a byte the format does not check) loses no row.
func TestMergeHostileInputs(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(writeInput(t, dir, nestedShape, spec{p: 0, first: 0, n: 300, perGroup: 100, opts: smallDicts}))
	if err != nil {
		t.Fatal(err)
	}
	next, err := os.ReadFile(writeInput(t, dir, nestedShape, spec{p: 0, first: 300, n: 50, opts: plainPages}))
	if err != nil {
		t.Fatal(err)
	}
	size := len(good)
	// The footer's length, from the file's last 8 bytes.
	footer := int(good[size-8]) | int(good[size-7])<<8 | int(good[size-6])<<16 | int(good[size-5])<<24
	truncations := []struct {
		name string
		n    int
	}{
		{"empty", 0}, {"magic only", 4}, {"a third", size / 3}, {"half", size / 2},
		{"without the footer", size - 8 - footer}, {"half the footer", size - 8 - footer/2},
		{"without the last magic", size - 4}, {"one byte short", size - 1},
	}
	for _, tr := range truncations {
		t.Run("truncated "+tr.name, func(t *testing.T) {
			_, _, err := mergeBytes(context.Background(), [][]byte{good[:tr.n:tr.n], next})
			if err == nil {
				t.Fatalf("a file cut to %d of %d bytes was merged", tr.n, size)
			}
			if strings.HasPrefix(err.Error(), "panic") {
				t.Fatalf("cut to %d bytes: %v", tr.n, err)
			}
		})
	}
	// A file whose tail (footer and all) is moved to the front of a
	// shorter file: the footer points past the data.
	t.Run("footer of a longer file", func(t *testing.T) {
		forged := append(append([]byte("PAR1"), good[size/2:size-8-footer]...), good[size-8-footer:]...)
		if _, _, err := mergeBytes(context.Background(), [][]byte{forged}); err == nil || strings.HasPrefix(err.Error(), "panic") {
			t.Fatalf("Merge: %v", err)
		}
	})
	// Damage: every 61st byte of the data, one at a time.
	refused := 0
	for off := 4; off < size-8-footer; off += 61 {
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
		// The byte was one nothing checks (statistics in a page header,
		// say): every row must still be there.
		f, err := reader.Open(bytes.NewReader(files[0]), int64(len(files[0])))
		if err != nil || outs[0].Rows != 350 || f.NumRows() != 350 {
			t.Fatalf("byte %d damaged: merged %d rows, reading back: %v", off, outs[0].Rows, err)
		}
	}
	if refused == 0 {
		t.Error("no damaged byte was noticed")
	}
}

// TestMergeFooterDisagrees refuses an input whose footer's record count is
// not its row count: merging it would make a footer that lies.
func TestMergeFooterDisagrees(t *testing.T) {
	s := eventsShape.schema(t)
	var buf bytes.Buffer
	w, err := writer.New(&buf, s)
	if err != nil {
		t.Fatal(err)
	}
	g := newEventsGroup(t, 10)
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	archive.Range{Topic: "clicks", First: 0, Last: 10, Records: 11}.Footer(w.SetKeyValue)
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, _, err = mergeBytes(context.Background(), [][]byte{buf.Bytes()})
	if err == nil || !strings.Contains(err.Error(), "its footer's Kafka ranges hold 11 records, the file 10 rows") {
		t.Errorf("Merge: %v", err)
	}
	// A range that cannot hold its records.
	buf.Reset()
	if w, err = writer.New(&buf, s); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	archive.Range{Topic: "clicks", First: 0, Last: 5, Records: 10}.Footer(w.SetKeyValue)
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, _, err = mergeBytes(context.Background(), [][]byte{buf.Bytes()})
	if err == nil || !strings.Contains(err.Error(), "input in0: range 0 (clicks/0, offsets 0 to 5) cannot hold 10 records") {
		t.Errorf("Merge: %v", err)
	}
}

// TestMergeCancel stops a merge through its context, before it starts and
// half-way.
func TestMergeCancel(t *testing.T) {
	dir := t.TempDir()
	var files [][]byte
	for i := range 4 {
		b, err := os.ReadFile(writeInput(t, dir, eventsShape, spec{p: 0, first: int64(i) * 100, n: 100, perGroup: 25}))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := mergeBytes(ctx, files); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled before: %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	var seen Progress
	_, _, err := mergeBytes(ctx, files, OnProgress(func(p Progress) {
		seen = p
		if p.Rows >= 150 {
			cancel()
		}
	}))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("canceled half-way: %v", err)
	}
	if seen.Rows != 150 {
		t.Errorf("progress went on to %d rows after the cancellation at 150", seen.Rows)
	}
}

// TestMergeMemoryLimit: row groups are written out at RowGroupBytes, and
// an input row group that alone exceeds the limit is refused with
// ErrMemory.
func TestMergeMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := range 6 {
		paths = append(paths, writeInput(t, dir, eventsShape, spec{p: 0, first: int64(i) * 2000, n: 2000}))
	}
	_, outs, err := mergeFiles(t, dir, paths, RowGroupBytes(600<<10), MemoryLimit(64<<20))
	if err != nil {
		t.Fatal(err)
	}
	if rgs := outs[0].Metadata.RowGroups; len(rgs) < 2 {
		t.Errorf("%d row groups of 12000 rows with a 600 KiB target", len(rgs))
	}
	// A row group of 30000 values of 2 KiB: a few KiB in the file, its
	// dictionary of one value, 60 MiB decoded.
	s := schema.MustParse(`message m { required binary s; }`)
	g := rowgroup.New(s)
	v := bytes.Repeat([]byte("x"), 2<<10)
	for range 30000 {
		g.Column(0).AppendBytes(0, v)
		g.EndRow()
	}
	var buf bytes.Buffer
	w, err := writer.New(&buf, s, writer.PageRowLimit(1000))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, _, err = mergeBytes(context.Background(), [][]byte{buf.Bytes()}, MemoryLimit(64<<20))
	if !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), "more than three quarters of the 67108864-byte limit") {
		t.Errorf("a row group of 60 MiB under a 64 MiB limit: %v", err)
	}
	if _, _, err := mergeBytes(context.Background(), [][]byte{buf.Bytes()}, MemoryLimit(128<<20)); err != nil {
		t.Errorf("the same under a 128 MiB limit: %v", err)
	}
}

// TestMergeRecomputesMetadata: the output's encodings, statistics, page
// index and bloom filters are the writer's, for the merged chunk, whatever
// the inputs had.
func TestMergeRecomputesMetadata(t *testing.T) {
	dir := t.TempDir()
	noStats := append([]writer.Option{writer.Statistics(false), writer.PageIndex(false)}, plainPages...)
	paths := []string{
		writeInput(t, dir, eventsShape, spec{p: 0, first: 0, n: 300, opts: noStats}),
		writeInput(t, dir, eventsShape, spec{p: 0, first: 300, n: 300, opts: withBloom}),
	}
	_, outs, err := mergeFiles(t, dir, paths)
	if err != nil {
		t.Fatal(err)
	}
	md := outs[0].Metadata
	if len(md.RowGroups) != 1 {
		t.Fatalf("%d row groups", len(md.RowGroups))
	}
	s := eventsShape.schema(t)
	for c, leaf := range s.Leaves() {
		cc := md.RowGroups[0].Columns[c]
		cm := cc.MetaData
		if cm.Statistics == nil || cc.ColumnIndexOffset == nil || cc.OffsetIndexOffset == nil {
			t.Errorf("column %s: statistics %v, column index %v, offset index %v", leaf.PathString(), cm.Statistics != nil, cc.ColumnIndexOffset != nil, cc.OffsetIndexOffset != nil)
		}
		switch leaf.PathString() {
		case "country":
			if cm.DictionaryPageOffset == nil {
				t.Errorf("country: no dictionary for 30 distinct values in 600 rows (encodings %v)", cm.Encodings)
			}
		case "_kafka.offset":
			lo, hi := cm.Statistics.MinValue, cm.Statistics.MaxValue
			if !bytes.Equal(lo, []byte{0, 0, 0, 0, 0, 0, 0, 0}) || !bytes.Equal(hi, []byte{0x57, 2, 0, 0, 0, 0, 0, 0}) {
				t.Errorf("_kafka.offset: min %x max %x, want 0 and 599", lo, hi)
			}
		case "_kafka.key":
			if cm.BloomFilterOffset == nil {
				t.Error("_kafka.key: no bloom filter, though an input had one")
			}
		}
	}
	if _, ok := keyValue(md, archive.FooterTopic); !ok {
		t.Error("no pqsink.kafka.topic in the footer of one range")
	}
	if md.CreatedBy == nil || !strings.HasPrefix(*md.CreatedBy, "pqsink version") {
		t.Errorf("created_by %v", md.CreatedBy)
	}
}
