// Package writer writes Parquet files. A Writer takes filled row groups
// (package rowgroup), encodes each column chunk into pages — dictionary
// encoded while the dictionary pays off, then the column's fallback encoding
// — compresses them, and writes them to an io.Writer at once, keeping only
// the small metadata it needs for the footer: the page index, and the row
// group and column chunk descriptions.
//
// The layout of a file:
//
//	"PAR1"
//	row group 0: column chunk 0 (dictionary page, data pages), column chunk 1, ...
//	             bloom filters of row group 0
//	...
//	column indexes, offset indexes (all row groups)
//	footer (FileMetaData), 4-byte footer length, "PAR1"
package writer

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer/encoding"
)

const magic = "PAR1"

// ErrClosed is returned by a Writer used after Close.
var ErrClosed = errors.New("writer: closed")

// Writer writes one Parquet file. It is not safe for concurrent use; with
// Parallelism, it runs goroutines of its own within WriteRowGroup.
type Writer struct {
	out       countingWriter
	schema    *schema.Schema
	cfg       config
	columns   []*chunkWriter
	rowGroups []meta.RowGroup
	indexes   [][]pageIndex // per row group, per column
	numRows   int64
	keyValues []meta.KeyValue // this file's, from SetKeyValue
	closed    bool
	err       error // sticky: a failed write leaves the file unusable

	scratch    *Scratch // what chunks borrow their working memory from
	ownScratch bool     // not shared: Held counts it
}

// New starts a Parquet file for schema s on w, writing the leading magic.
func New(w io.Writer, s *schema.Schema, opts ...Option) (*Writer, error) {
	cfg := defaults()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, fmt.Errorf("writer: %w", err)
		}
	}
	for path := range cfg.columns {
		if s.Leaf(path) == nil {
			return nil, fmt.Errorf("writer: column option names %q, which is not a leaf column of the schema (leaves: %s)", path, leafNames(s))
		}
	}
	wr := &Writer{out: countingWriter{w: w}, schema: s, cfg: cfg}
	codecs := cfg.codecs // columns with one codec share its (costly) state
	if codecs == nil {
		codecs = NewCodecs()
	}
	wr.scratch = cfg.scratch
	if wr.scratch == nil {
		wr.scratch, wr.ownScratch = NewScratch(), true
	}
	for _, leaf := range s.Leaves() {
		cw, err := newChunkWriter(leaf, &wr.cfg, codecs)
		if err != nil {
			return nil, fmt.Errorf("writer: column %s: %w", leaf.PathString(), err)
		}
		cw.scratch = wr.scratch
		wr.columns = append(wr.columns, cw)
	}
	if err := wr.write([]byte(magic)); err != nil {
		return nil, err
	}
	return wr, nil
}

func leafNames(s *schema.Schema) string {
	var names []string
	for _, l := range s.Leaves() {
		names = append(names, l.PathString())
	}
	return strings.Join(names, ", ")
}

// Reset starts a new file with the same schema and options on out,
// abandoning the current one, and keeps the buffers, dictionaries and codec
// state the previous files grew: a sink that writes file after file pays
// for them once.
func (w *Writer) Reset(out io.Writer) error {
	w.out = countingWriter{w: out}
	w.rowGroups, w.indexes = nil, nil
	w.numRows, w.closed, w.err = 0, false, nil
	w.keyValues = w.keyValues[:0]
	return w.write([]byte(magic))
}

// SetKeyValue sets an entry of this file's key_value_metadata, which the
// footer gets at Close: for what is known only at the end, such as the
// file's last Kafka offset and record count. A later call with the same
// key replaces the value, and so does it replace a KeyValue option's
// value, which is the default of every file. Entries set here belong to
// the current file: Reset drops them. After Close it has no effect.
func (w *Writer) SetKeyValue(key, value string) {
	if w.closed {
		return
	}
	w.keyValues = setKeyValue(w.keyValues, key, value)
}

// setKeyValue replaces the value of key in kvs, or appends the entry.
func setKeyValue(kvs []meta.KeyValue, key, value string) []meta.KeyValue {
	for i := range kvs {
		if kvs[i].Key == key {
			kvs[i].Value = &value
			return kvs
		}
	}
	return append(kvs, meta.KeyValue{Key: key, Value: &value})
}

// footerKeyValues merges the writer's defaults (the KeyValue options) with
// the file's own entries, which win: defaults first, in their order, then
// the file's other keys in the order they were first set. The result is a
// new slice, so the footer returned by Close shares nothing with the
// writer.
func (w *Writer) footerKeyValues() []meta.KeyValue {
	if len(w.cfg.keyValues) == 0 && len(w.keyValues) == 0 {
		return nil
	}
	kvs := make([]meta.KeyValue, 0, len(w.cfg.keyValues)+len(w.keyValues))
	kvs = append(kvs, w.cfg.keyValues...)
	for _, kv := range w.keyValues {
		kvs = setKeyValue(kvs, kv.Key, *kv.Value)
	}
	return kvs
}

// Offset is the number of bytes written so far.
func (w *Writer) Offset() int64 { return w.out.n }

// NumRows is the number of rows written so far.
func (w *Writer) NumRows() int64 { return w.numRows }

func (w *Writer) write(b []byte) error {
	if w.err != nil {
		return w.err
	}
	if _, err := w.out.Write(b); err != nil {
		w.err = fmt.Errorf("writer: %w", err)
	}
	return w.err
}

// WriteRowGroup encodes g as the file's next row group and writes it out.
// g can be Reset and refilled as soon as WriteRowGroup returns. An empty
// row group is skipped.
func (w *Writer) WriteRowGroup(g *rowgroup.RowGroup) error {
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	if g.Schema() != w.schema && g.Schema().String() != w.schema.String() {
		return fmt.Errorf("writer: row group schema differs from the file's")
	}
	if g.NumRows() == 0 {
		return nil
	}
	if err := g.Check(); err != nil {
		return fmt.Errorf("writer: row group %d: %w", len(w.rowGroups), err)
	}
	ordinal := len(w.rowGroups)
	rg := meta.RowGroup{NumRows: int64(g.NumRows()), FileOffset: ptr(w.out.n), Ordinal: ptr(int16(ordinal))}
	indexes := make([]pageIndex, len(w.columns))
	var compressed int64
	add := func(i int, cc meta.ColumnChunk, ix pageIndex) {
		rg.Columns = append(rg.Columns, cc)
		rg.TotalByteSize += cc.MetaData.TotalUncompressedSize
		compressed += cc.MetaData.TotalCompressedSize
		indexes[i] = ix
	}
	if w.cfg.parallelism > 1 && len(w.columns) > 1 {
		if err := w.writeChunksParallel(g, ordinal, add); err != nil {
			w.err = err
			return w.err
		}
	} else {
		for i, cw := range w.columns {
			cc, ix, err := cw.writeChunk(&w.out, g.Column(i))
			if err != nil {
				w.err = fmt.Errorf("writer: row group %d, column %s: %w", ordinal, cw.leaf.PathString(), err)
				return w.err
			}
			add(i, cc, ix)
		}
	}
	rg.TotalCompressedSize = &compressed
	for i, cw := range w.columns {
		if cw.bloom == nil {
			continue
		}
		off, n, err := cw.writeBloom(&w.out)
		if err != nil {
			w.err = fmt.Errorf("writer: row group %d, column %s: bloom filter: %w", ordinal, cw.leaf.PathString(), err)
			return w.err
		}
		rg.Columns[i].MetaData.BloomFilterOffset = &off
		rg.Columns[i].MetaData.BloomFilterLength = &n
	}
	w.rowGroups = append(w.rowGroups, rg)
	w.indexes = append(w.indexes, indexes)
	w.numRows += int64(g.NumRows())
	return nil
}

// writeChunksParallel encodes the column chunks of g on up to
// cfg.parallelism goroutines, each into its column's buffer, largest
// column first, and writes them out in column order as they are done,
// moving their offsets to where they land: the file is the same, byte for
// byte, as one goroutine writes it.
func (w *Writer) writeChunksParallel(g *rowgroup.RowGroup, ordinal int, add func(int, meta.ColumnChunk, pageIndex)) error {
	n := len(w.columns)
	type result struct {
		cc  meta.ColumnChunk
		ix  pageIndex
		err error
	}
	results := make([]result, n)
	done := make([]chan struct{}, n)
	order := make([]int, n)
	for i := range order {
		order[i] = i
		done[i] = make(chan struct{})
	}
	// Longest first, by how long each column took the last time, or by
	// its size in the first row group.
	key := func(i int) int64 { return work(g.Column(i)) }
	if !slices.ContainsFunc(w.columns, func(cw *chunkWriter) bool { return cw.took == 0 }) {
		key = func(i int) int64 { return int64(w.columns[i].took) }
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(key(b), key(a)) })
	var next atomic.Int64
	workers := min(w.cfg.parallelism, n)
	for range workers {
		go func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= n {
					return
				}
				i := order[k]
				cw := w.columns[i]
				cw.buf.reset()
				out := countingWriter{w: &cw.buf}
				r := &results[i]
				start := time.Now()
				r.cc, r.ix, r.err = cw.writeChunk(&out, g.Column(i))
				cw.took = max(time.Since(start), 1)
				close(done[i])
			}
		}()
	}
	var first error
	for i, cw := range w.columns {
		<-done[i]
		r := &results[i]
		if first == nil && r.err != nil {
			first = fmt.Errorf("writer: row group %d, column %s: %w", ordinal, cw.leaf.PathString(), r.err)
		}
		if first != nil {
			continue // wait for every worker before returning
		}
		base := w.out.n
		err := cw.buf.writeTo(&w.out)
		cw.buf.reset()
		if err != nil {
			first = fmt.Errorf("writer: %w", err)
			continue
		}
		relocate(&r.cc, r.ix, base)
		add(i, r.cc, r.ix)
	}
	return first
}

// work estimates the time it takes to encode a column chunk: its PLAIN
// size, which is about what the codec compresses.
func work(c *rowgroup.Column) int64 {
	n := int64(c.NumValues())
	switch c.Leaf.Physical {
	case meta.TypeByteArray:
		return int64(len(c.Bytes)) + 4*n
	case meta.TypeFixedLenByteArray:
		return int64(len(c.Bytes))
	case meta.TypeBoolean:
		return n / 8
	}
	return n * int64(valueSize(c, 0))
}

// relocate moves the offsets of a column chunk written at offset 0 by base.
func relocate(cc *meta.ColumnChunk, ix pageIndex, base int64) {
	cc.FileOffset += base
	md := cc.MetaData
	md.DataPageOffset += base
	if md.DictionaryPageOffset != nil {
		md.DictionaryPageOffset = ptr(*md.DictionaryPageOffset + base)
	}
	for i := range ix.offset.PageLocations {
		ix.offset.PageLocations[i].Offset += base
	}
}

// Close writes the page index and the footer and returns the file's
// metadata. It does not close the underlying io.Writer.
func (w *Writer) Close() (*meta.FileMetaData, error) {
	if w.closed {
		return nil, ErrClosed
	}
	w.closed = true
	if w.err != nil {
		return nil, w.err
	}
	if w.cfg.pageIndex {
		if err := w.writePageIndex(); err != nil {
			return nil, err
		}
	}
	fmd := &meta.FileMetaData{
		Version:          1,
		Schema:           w.schema.Elements(),
		NumRows:          w.numRows,
		RowGroups:        w.rowGroups,
		KeyValueMetadata: w.footerKeyValues(),
		CreatedBy:        &w.cfg.createdBy,
	}
	if fmd.RowGroups == nil {
		fmd.RowGroups = []meta.RowGroup{}
	}
	for range w.columns {
		fmd.ColumnOrders = append(fmd.ColumnOrders, meta.ColumnOrder{TypeOrder: &meta.TypeDefinedOrder{}})
	}
	footer := fmd.Append(nil)
	n := len(footer)
	footer = append(footer, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	footer = append(footer, magic...)
	if err := w.write(footer); err != nil {
		return nil, err
	}
	return fmd, nil
}

func (w *Writer) writePageIndex() error {
	var buf []byte
	for r := range w.rowGroups {
		for c := range w.columns {
			ix := &w.indexes[r][c]
			if ix.column == nil {
				continue
			}
			buf = ix.column.Append(buf[:0])
			cc := &w.rowGroups[r].Columns[c]
			cc.ColumnIndexOffset, cc.ColumnIndexLength = ptr(w.out.n), ptr(int32(len(buf)))
			if err := w.write(buf); err != nil {
				return err
			}
		}
	}
	for r := range w.rowGroups {
		for c := range w.columns {
			ix := &w.indexes[r][c]
			buf = ix.offset.Append(buf[:0])
			cc := &w.rowGroups[r].Columns[c]
			cc.OffsetIndexOffset, cc.OffsetIndexLength = ptr(w.out.n), ptr(int32(len(buf)))
			if err := w.write(buf); err != nil {
				return err
			}
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// chunkBuffer is an io.Writer that keeps what it is given: a column chunk
// encoded by a Parallelism goroutine waits there for its turn. It holds
// segments, not one slice, so that growing never copies what it holds,
// and keeps them for the next chunk.
type chunkBuffer struct {
	segs [][]byte
	n    int // segments in use; the last of them is being filled
}

// The first segment of a chunk buffer holds minSegment bytes, and each
// new one twice the one before, up to maxSegment (or the write it takes):
// a small chunk costs little, a large one few segments.
const (
	minSegment = 64 << 10
	maxSegment = 16 << 20
)

func (c *chunkBuffer) reset() {
	// A segment made for one large write, or adopted, goes: kept, every
	// later chunk would pay for a huge value long gone.
	kept := c.segs[:0]
	for _, s := range c.segs {
		if regularSegment(cap(s)) {
			kept = append(kept, s[:0])
		}
	}
	clear(c.segs[len(kept):])
	c.segs, c.n = kept, 0
}

func (c *chunkBuffer) Write(b []byte) (int, error) {
	if c.n == 0 || len(c.segs[c.n-1])+len(b) > cap(c.segs[c.n-1]) {
		size := minSegment
		if c.n > 0 && regularSegment(cap(c.segs[c.n-1])) {
			// (after a large write's own segment, small ones again)
			size = min(2*cap(c.segs[c.n-1]), maxSegment)
		}
		size = max(size, len(b))
		if c.n == len(c.segs) {
			c.segs = append(c.segs, make([]byte, 0, size))
		} else if cap(c.segs[c.n]) < len(b) {
			c.segs[c.n] = make([]byte, 0, size)
		}
		c.n++
	}
	c.segs[c.n-1] = append(c.segs[c.n-1], b...)
	return len(b), nil
}

// regularSegment reports whether a segment's capacity is one the doubling
// makes (minSegment times a power of two, up to maxSegment), not one made
// for a single large write or adopted.
func regularSegment(n int) bool {
	return n >= minSegment && n <= maxSegment && n%minSegment == 0 && bits.OnesCount(uint(n/minSegment)) == 1
}

// adopt appends b to the buffer as a segment of its own, without copying
// it: b is the buffer's now. It is how a huge page joins its chunk.
func (c *chunkBuffer) adopt(b []byte) {
	c.segs = slices.Insert(c.segs, c.n, b)
	c.n++
}

// writeTo writes what the buffer holds to w.
func (c *chunkBuffer) writeTo(w io.Writer) error {
	for _, seg := range c.segs[:c.n] {
		if _, err := w.Write(seg); err != nil {
			return err
		}
	}
	return nil
}

// encodingFor returns the implementation of a non-dictionary encoding.
func encodingFor(e meta.Encoding) (encoding.Encoding, error) {
	if enc, ok := encoding.ByID(int32(e)); ok {
		return enc, nil
	}
	return nil, fmt.Errorf("encoding %s cannot be chosen for a column (dictionary encoding is on by default; use the dictionary options)", e)
}

// encodingAllowed reports whether physical type t can take encoding e.
func encodingAllowed(e meta.Encoding, t meta.Type) bool {
	switch e {
	case meta.EncodingPlain:
		return true
	case meta.EncodingRLE:
		return t == meta.TypeBoolean
	case meta.EncodingDeltaBinaryPacked:
		return t == meta.TypeInt32 || t == meta.TypeInt64
	case meta.EncodingDeltaLengthByteArray:
		return t == meta.TypeByteArray
	case meta.EncodingDeltaByteArray:
		return t == meta.TypeByteArray || t == meta.TypeFixedLenByteArray
	case meta.EncodingByteStreamSplit:
		switch t {
		case meta.TypeFloat, meta.TypeDouble, meta.TypeInt32, meta.TypeInt64, meta.TypeFixedLenByteArray:
			return true
		}
	}
	return false
}
