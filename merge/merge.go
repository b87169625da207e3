// Package merge rewrites several Parquet files of one schema into one file,
// or a few near a target size: the engine of compaction. It works at the
// column-chunk level: the pages of each input column chunk are decoded
// (package reader) into the column buffers of an output row group (package
// rowgroup), and full row groups are encoded again by pqsink's writer, which
// chooses encodings and dictionaries for the bigger chunk and computes
// statistics, the page index and bloom filters as for any file. No record
// is ever assembled.
//
// # Exactness
//
// Every row of the inputs (but the deleted ones, see below) is in the
// output once. When the inputs are pqsink archive files (their footers have
// the pqsink.kafka.* entries of package archive), the output is made of
// runs: each Kafka range of an input's footer is a run of its rows (the
// rows after those of the ranges before it, as many as the range's
// records), and the runs of all inputs are copied in order by topic,
// partition and first offset. The output's rows are then in order by
// partition and offset, even where the inputs' ranges interleave (two
// earlier compactions of the same partitions, or a compacted file with a
// gap that another file fills), and its footer lists the runs' ranges in
// that order, coalesced (archive.WriteRanges: one range as the sink writes
// it, several in pqsink.kafka.ranges). Runs that hold the same offsets of a
// partition are refused: their records would be in the output twice. So are
// inputs of which some are archive files and some are not, unless those
// that are not are placed by their envelope columns (Input.Ranges: a
// table's file that another engine rewrote, copy-on-write, without the
// rows it deleted), whose ranges then stand for their footers'. Runs of an input
// that follow one another in its rows are copied as one, and a run copies
// the input's row groups that it holds whole; a row group it holds in part
// (the run starts or ends inside it) is copied from the run's first row to
// its last: where the chunk has an offset index, the pages before the run
// are not read (the chunk's dictionary aside), nor those after the page
// that follows it. Other files are merged whole, in the order given.
//
// The rows of Input.Deleted are left out: each footer range of their
// input becomes the range of the records it keeps, from the first kept
// to the last, with the records kept (their offsets read from the input's
// _kafka.offset column, or, without one, known from a range that holds
// every offset from its first to its last; a range with gaps of an input
// without the column is refused with an error wrapping ErrUnplaced), and
// a range of which no record is kept is dropped. A deleted record is so a
// gap in the output's ranges (a range of fewer records than offsets, as a
// transactional topic's files have), as a record the sink never received;
// the rows around it are copied as one run, each deleted row left out as
// the pages are copied.
//
// The inputs must have the same schema: names, repetitions, physical and
// logical types and field ids of every column. The first column that
// differs is named in the error. An input with Ranges needs only the
// shape of the output's schema (envelope.SameSchema); the output takes
// the schema and footer entries of the inputs without Ranges, or those
// given with Like. With WidenMillis, a TIMESTAMP(MILLIS) column may be
// TIMESTAMP(MICROS) in other inputs: the output's is TIMESTAMP(MICROS),
// and the millisecond inputs' values are written times 1000. (Schema
// evolution, which would widen a column of the older files to the newer
// type, is not done yet.)
//
// # Memory
//
// MemoryLimit bounds what the merge holds, in three shares: the output row
// group being built (its column buffers, decoded values and levels), which
// is written out once it reaches RowGroupBytes (at most half the limit);
// the reading of one input column chunk at a time (its window of file bytes
// and one decoded page, under a reader budget of a quarter of the limit,
// in buffers passed from chunk to chunk); and the writer's buffers (one
// encoded column chunk and its dictionary; n of them with
// writer.Parallelism(n) among the WriterOptions). Outside the limit are the
// inputs' footers, all open for the whole merge (a few KiB each for the
// sink's files), the offset indexes of the chunks that runs take in part
// (a few bytes per page), and the garbage the collector has yet to take.
// An input row group, or a run's part of it, is copied whole into the
// output row group: one that alone decodes to more than three quarters of
// the limit fails the merge with an error wrapping ErrMemory, after at
// most one of its column chunks past the limit, and so does a page or
// chunk window that does not fit in the reader's quarter.
package merge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/archive/envelope"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// ErrMemory is wrapped by the error of a merge that cannot stay within its
// memory limit: an input row group larger than the limit allows.
var ErrMemory = errors.New("merge: over the memory limit")

// Input is one file to merge.
type Input struct {
	// Name names the file in errors and in Output.Inputs.
	Name string
	// R reads the file, of Size bytes.
	R    io.ReaderAt
	Size int64
	// Deleted are the positions of the file's rows (from 0) to leave out,
	// in increasing order: the rows that a table's delete files delete
	// (compaction applying another engine's deletes). A deleted row is a
	// gap in the output's Kafka ranges (see Exactness).
	Deleted []int64
	// Ranges are, for a file whose footer has no Kafka ranges (another
	// engine's rewrite of an archive file: a copy-on-write DELETE), the
	// ranges its envelope columns say it holds (envelope.Place), in the
	// order of its rows, each one run of them: the merge takes them as
	// its footer's, and merges it with archive files. Its schema needs
	// only the shape of the output's (envelope.SameSchema: field ids and
	// integer annotations of a column's own width aside), and its footer
	// entries are not carried into the output.
	Ranges []archive.Range
}

// Output describes one file the merge wrote.
type Output struct {
	// Metadata is the file's footer, as the writer returned it.
	Metadata *meta.FileMetaData
	// Ranges are the Kafka ranges the file holds, coalesced, as its footer
	// records them; nil when the inputs are not archive files.
	Ranges []archive.Range
	// Inputs are the names of the inputs whose rows the file holds; the
	// runs of one input may be in several files.
	Inputs []string
	// Rows and Bytes are the file's rows and size.
	Rows, Bytes int64
}

// Progress is how far a merge has come, given to the OnProgress callback
// after each input row group.
type Progress struct {
	// Rows are the input rows done; TotalRows those of every input.
	Rows, TotalRows int64
	// Bytes are the input column chunk bytes done (compressed, as in the
	// files); TotalBytes those of every input.
	Bytes, TotalBytes int64
	// Files are the input files done.
	Files int
}

// minMemory is the smallest MemoryLimit.
const minMemory = 64 << 20

// Option configures a merge.
type Option func(*options) error

type options struct {
	memory     int64
	rowGroup   int64
	target     int64
	writerOpts []writer.Option
	progress   func(Progress)
	like       *schema.Schema
	likeKV     []meta.KeyValue
	widen      bool
}

// MemoryLimit bounds the memory the merge holds (see the package comment),
// as `memory.limit` bounds the daemon. It is at least 64 MiB: the reader
// reads a column chunk in windows of up to 8 MiB, beside a decoded page,
// within its quarter.
// Defaults to 512 MiB.
func MemoryLimit(n int64) Option {
	return func(o *options) error {
		if n < minMemory {
			return fmt.Errorf("memory limit %d: at least %d MiB", n, minMemory>>20)
		}
		o.memory = n
		return nil
	}
}

// RowGroupBytes is the size of an output row group in memory (decoded
// values and levels) at which it is written out; at most half the memory
// limit is used.
// Defaults to 64 MiB, as the sink's parquet.row_group_bytes.
func RowGroupBytes(n int64) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("row group bytes %d: must be positive", n)
		}
		o.rowGroup = n
		return nil
	}
}

// TargetFileSize starts a new output file, between two runs (two inputs,
// unless merged files' ranges interleave: see Exactness), when the current
// one would grow past n bytes; a file holds at least one run.
// Defaults to 0: one output file.
func TargetFileSize(n int64) Option {
	return func(o *options) error {
		if n < 0 {
			return fmt.Errorf("target file size %d: must not be negative", n)
		}
		o.target = n
		return nil
	}
}

// WriterOptions are options of the output files' writer (codecs, page
// size, dictionary, bloom filters: the sink's parquet settings through
// writer.Settings). Columns whose chunks have bloom filters in any input
// get one at a false-positive probability of 1% unless these
// options set theirs.
func WriterOptions(opts ...writer.Option) Option {
	return func(o *options) error {
		o.writerOpts = append(o.writerOpts, opts...)
		return nil
	}
}

// OnProgress calls fn after each input row group, on the merge's
// goroutine.
func OnProgress(fn func(Progress)) Option {
	return func(o *options) error {
		o.progress = fn
		return nil
	}
}

// Like gives the output the schema sch and the footer entries kv (those
// of a sink file's with the same columns: the records' schema, see
// envelope.SchemaEntries) when every input has Ranges, so that none has
// the sink's own schema and footer to give it. Inputs that have no
// Ranges give them otherwise, and Like is not used.
func Like(sch *schema.Schema, kv []meta.KeyValue) Option {
	return func(o *options) error {
		o.like, o.likeKV = sch, kv
		return nil
	}
}

// input is an opened Input with its Kafka ranges.
type input struct {
	Input
	f      *reader.File
	ranges []archive.Range // nil for a file that is not an archive file
	runs   int             // the runs of the file not yet copied
	// index holds the offset indexes of the chunks that spans read, by
	// row group and column.
	index map[[2]int][]meta.PageLocation
	// millis are the leaves whose milliseconds the output holds in
	// microseconds (WidenMillis), nil when none.
	millis []bool
}

// Merge merges inputs into files that create makes, one after the other
// (n counts them from 0), and returns what it wrote. create's writers are
// the caller's to close or commit; when Merge fails, the files it started
// are incomplete and the caller discards them. Merge stops when ctx is
// done, with ctx's error.
func Merge(ctx context.Context, inputs []Input, create func(n int) (io.Writer, error), opts ...Option) ([]Output, error) {
	o := options{memory: 512 << 20, rowGroup: 64 << 20}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
	}
	if len(inputs) == 0 {
		return nil, errors.New("merge: no input")
	}
	in, sch, err := open(ctx, inputs, o.memory/4, o.like, o.widen)
	if err != nil {
		return nil, err
	}
	runs, err := order(in)
	if err != nil {
		return nil, err
	}
	wopts, err := writerOptions(in, sch, o)
	if err != nil {
		return nil, err
	}
	m := &merger{ctx: ctx, opts: o, sch: sch, g: rowgroup.New(sch), create: create, wopts: wopts}
	defer func() {
		if m.spare != nil {
			m.spare.Release()
		}
	}()
	m.rowGroup = min(o.rowGroup, o.memory/2)
	for _, x := range in {
		m.progress.TotalRows += x.f.NumRows() - int64(len(x.Deleted))
		m.progress.TotalBytes += chunkBytes(x.f)
	}
	for _, r := range runs {
		if err := m.run(r); err != nil {
			return nil, err
		}
	}
	if err := m.finish(); err != nil {
		return nil, err
	}
	return m.outputs, nil
}

// open opens the inputs, checks that those without Ranges share the first
// one's schema and that those with Ranges have its shape, and returns the
// output's schema: that first one's, or like's when every input has
// Ranges. With widen (WidenMillis), the schemas are compared, and the
// output's is, with their millisecond timestamps in microseconds.
func open(ctx context.Context, inputs []Input, readerMemory int64, like *schema.Schema, widen bool) ([]*input, *schema.Schema, error) {
	in := make([]*input, len(inputs))
	var ref *input // the first input without Ranges
	var refSchema *schema.Schema
	for i, x := range inputs {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		f, err := reader.Open(x.R, x.Size, reader.MaxMemory(readerMemory))
		if err != nil {
			return nil, nil, fmt.Errorf("merge: input %s: %w", x.Name, err)
		}
		in[i] = &input{Input: x, f: f}
		if x.Ranges != nil {
			continue
		}
		s := f.Schema()
		if widen {
			if s, err = widened(s); err != nil {
				return nil, nil, fmt.Errorf("merge: input %s: %w", x.Name, err)
			}
		}
		if ref == nil {
			ref, refSchema = in[i], s
			continue
		}
		if d := firstDifference(refSchema, s); d != "" {
			return nil, nil, fmt.Errorf("merge: input %s has another schema than %s: %s (files of different schemas are not merged yet: that waits for schema evolution, which will widen the older files' columns)", x.Name, ref.Name, d)
		}
	}
	sch, from := like, "the schema given (Like)"
	if ref != nil {
		sch, from = refSchema, ref.Name
	} else if widen && sch != nil {
		var err error
		if sch, err = widened(sch); err != nil {
			return nil, nil, err
		}
	}
	if sch == nil {
		return nil, nil, errors.New("merge: every input is placed by its envelope columns (Input.Ranges), and no schema is given for the output (Like)")
	}
	for _, x := range in {
		s := x.f.Schema()
		if widen {
			x.millis = millisColumns(s, sch)
			var err error
			if s, err = widened(s); err != nil {
				return nil, nil, fmt.Errorf("merge: input %s: %w", x.Name, err)
			}
		}
		if x.Ranges != nil && !envelope.SameSchema(sch, s) {
			return nil, nil, fmt.Errorf("merge: input %s has columns of another shape than %s's", x.Name, from)
		}
	}
	return in, sch, nil
}

// run is a span of one input's rows, [lo, hi), that the merge copies as
// one piece: a whole input, or, of an archive file, the rows of some of
// its Kafka ranges (ranges are the runs' of their output order).
type run struct {
	in     *input
	lo, hi int64
	ranges []archive.Range
	// deleted are the input's rows of [lo, hi) left out (Input.Deleted),
	// in increasing order.
	deleted []int64
}

// order reads the inputs' Kafka ranges and returns the runs the output is
// made of, in its order: for archive files, each footer range of each
// input is a run of the input's rows (by the records of the ranges before
// it), and the runs are sorted by topic, partition and first offset, those
// of one input that follow one another in its rows joined again; other
// files are whole runs, in the order given. Runs whose offsets overlap
// within a partition are refused.
func order(in []*input) ([]run, error) {
	archived := 0
	for _, x := range in {
		rs, err := archive.ReadRanges(x.f.Metadata().KeyValueMetadata)
		if errors.Is(err, archive.ErrForeign) && x.Ranges != nil {
			// Placed by its envelope columns: each range on its own is
			// one, in the order of the file's rows.
			rs, err = x.Ranges, nil
			for _, r := range rs {
				if err = archive.WriteRanges([]archive.Range{r}, func(string, string) {}); err != nil {
					break
				}
			}
		} else if errors.Is(err, archive.ErrForeign) {
			continue
		} else if err == nil && x.Ranges != nil {
			err = errors.New("its footer has Kafka ranges, and Input.Ranges gives others")
		} else if err == nil {
			// The checks of a footer being written: ranges that are
			// ranges, in order.
			err = archive.WriteRanges(rs, func(string, string) {})
		}
		if err != nil {
			return nil, fmt.Errorf("merge: input %s: %w", x.Name, err)
		}
		var records int64
		for _, r := range rs {
			records += r.Records
		}
		if records != x.f.NumRows() {
			return nil, fmt.Errorf("merge: input %s: its footer's Kafka ranges hold %d records, the file %d rows", x.Name, records, x.f.NumRows())
		}
		// The runs are found by the rows of the row groups: they must add
		// up too.
		var rows int64
		for _, rg := range x.f.Metadata().RowGroups {
			rows += rg.NumRows
		}
		if rows != x.f.NumRows() {
			return nil, fmt.Errorf("merge: input %s: %w: its row groups hold %d rows, its footer says %d", x.Name, reader.ErrCorrupt, rows, x.f.NumRows())
		}
		x.ranges = rs
		archived++
	}
	var runs []run
	switch archived {
	case 0:
		for _, x := range in {
			if err := checkDeleted(x); err != nil {
				return nil, err
			}
			if int64(len(x.Deleted)) < x.f.NumRows() {
				runs = append(runs, run{in: x, hi: x.f.NumRows(), deleted: x.Deleted})
				x.runs++
			}
		}
		return runs, nil
	case len(in):
	default:
		for _, x := range in {
			if x.ranges == nil {
				return nil, fmt.Errorf("merge: input %s has no Kafka range in its footer (%s), other inputs do: archive files merge only with archive files", x.Name, archive.FooterTopic)
			}
		}
	}
	for _, x := range in {
		if len(x.Deleted) > 0 {
			rs, err := deletedRuns(x)
			if err != nil {
				return nil, err
			}
			runs = append(runs, rs...)
			continue
		}
		var row int64
		for i := range x.ranges {
			r := x.ranges[i : i+1 : i+1]
			runs = append(runs, run{in: x, lo: row, hi: row + r[0].Records, ranges: r})
			row += r[0].Records
		}
	}
	slices.SortStableFunc(runs, func(a, b run) int { return archive.CompareRanges(a.ranges[0], b.ranges[0]) })
	for i := 1; i < len(runs); i++ {
		p, x := runs[i-1].ranges[0], runs[i].ranges[0]
		if p.Topic == x.Topic && p.Partition == x.Partition && x.First <= p.Last {
			return nil, fmt.Errorf("merge: inputs %s (%s) and %s (%s) overlap: both hold offsets %d to %d of %s/%d, and a merge would hold those records twice",
				runs[i-1].in.Name, describe(runs[i-1].in.ranges), runs[i].in.Name, describe(runs[i].in.ranges),
				x.First, min(p.Last, x.Last), x.Topic, x.Partition)
		}
	}
	// Join the runs of an input that follow one another in its rows: a
	// file of one range, or a merged file whose partitions no other input
	// has, is then copied whole, row group by row group.
	out := runs[:0]
	for _, r := range runs {
		if n := len(out); n > 0 && out[n-1].in == r.in && out[n-1].hi == r.lo {
			p := &out[n-1]
			p.hi = r.hi
			p.ranges = append(p.ranges, r.ranges...)
			p.deleted = append(p.deleted, r.deleted...)
			continue
		}
		out = append(out, r)
	}
	for _, r := range out {
		r.in.runs++
	}
	return out, nil
}

func describe(rs []archive.Range) string {
	s := ""
	for i, r := range rs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s/%d offsets %d to %d", r.Topic, r.Partition, r.First, r.Last)
	}
	return s
}

// carried reports whether a footer entry of the inputs goes into the
// output as it is: every entry except the Kafka ranges, which the merge
// writes anew.
func carried(key string) bool {
	switch key {
	case archive.FooterTopic, archive.FooterPartition, archive.FooterFirstOffset, archive.FooterLastOffset,
		archive.FooterRecords, archive.FooterRanges:
		return false
	}
	return true
}

// writerOptions returns the output writer's options: bloom filters where
// an input has them, the footer entries of the inputs without Ranges
// (which must agree) or o's Like entries when all have them, then the
// caller's options.
func writerOptions(in []*input, sch *schema.Schema, o options) ([]writer.Option, error) {
	var opts []writer.Option
	for c, leaf := range sch.Leaves() {
		if slices.ContainsFunc(in, func(x *input) bool { return hasBloom(x.f, c) }) {
			opts = append(opts, writer.BloomFilter(leaf.PathString(), 0.01))
		}
	}
	values := map[string]string{}
	from := map[string]string{}
	var keys []string
	type footer struct {
		name string
		kv   []meta.KeyValue
	}
	var footers []footer
	for _, x := range in {
		if x.Ranges == nil {
			footers = append(footers, footer{x.Name, x.f.Metadata().KeyValueMetadata})
		}
	}
	if len(footers) == 0 {
		footers = append(footers, footer{"the footer given (Like)", o.likeKV})
	}
	for _, x := range footers {
		for _, kv := range x.kv {
			if !carried(kv.Key) || kv.Value == nil {
				continue
			}
			v, seen := values[kv.Key]
			switch {
			case !seen:
				values[kv.Key], from[kv.Key] = *kv.Value, x.name
				keys = append(keys, kv.Key)
			case v != *kv.Value:
				return nil, fmt.Errorf("merge: inputs %s and %s differ in their footer entry %s; the merged file could keep only one", from[kv.Key], x.name, kv.Key)
			}
		}
	}
	for _, k := range keys {
		opts = append(opts, writer.KeyValue(k, values[k]))
	}
	return append(opts, o.writerOpts...), nil
}

// hasBloom reports whether a chunk of column c of f has a bloom filter.
func hasBloom(f *reader.File, c int) bool {
	for _, rg := range f.Metadata().RowGroups {
		if c < len(rg.Columns) && rg.Columns[c].MetaData != nil && rg.Columns[c].MetaData.BloomFilterOffset != nil {
			return true
		}
	}
	return false
}

// chunkBytes is the compressed size of the column chunks of f.
func chunkBytes(f *reader.File) int64 {
	var n int64
	for _, rg := range f.Metadata().RowGroups {
		for _, cc := range rg.Columns {
			if cc.MetaData != nil {
				n += cc.MetaData.TotalCompressedSize
			}
		}
	}
	return n
}
