package source

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema"
)

// ErrNotPqsink is wrapped by the error of a file that replay cannot read
// back into Kafka records: one without the sink's footer metadata or
// without the _kafka envelope columns.
var ErrNotPqsink = errors.New("not a pqsink file with a Kafka envelope")

// valueKind is how a file's payload becomes record values.
type valueKind uint8

const (
	valueJSON   valueKind = iota // typed columns or VARIANT, as JSON
	valueRaw                     // the original bytes, kept in one binary column
	valueFormat                  // a format's own encoding, by its format.Replayer
)

// Paths of the envelope leaves.
const (
	envField     = "_kafka"
	envOffset    = "_kafka.offset"
	envTimestamp = "_kafka.timestamp"
	envKey       = "_kafka.key"
	envHdrKey    = "_kafka.headers.key_value.key"
	envHdrValue  = "_kafka.headers.key_value.value"
)

// batch is the messages of one produce request, with the memory their
// bytes live in.
type batch struct {
	msgs    []kafka.Message
	arena   []byte
	headers []kafka.Header
	marks   []mark // the last record of each partition in the batch
}

// mark is a position in a source partition: the last record of it that a
// batch holds.
type mark struct {
	part   string // "topic/partition"
	object string
	row    int64
	offset int64
}

func (b *batch) reset() {
	clear(b.msgs) // drop references for the collector
	b.msgs, b.arena, b.headers, b.marks = b.msgs[:0], b.arena[:0], b.headers[:0], b.marks[:0]
}

// bytesOf copies p into the batch's arena and returns the copy; an empty
// p gives an empty, non-nil slice.
func (b *batch) bytesOf(p []byte) []byte {
	start := len(b.arena)
	b.arena = append(b.arena, p...)
	return b.arena[start:len(b.arena):len(b.arena)]
}

// fileStream reads the matching records of one file in offset order.
type fileStream struct {
	r        *Replayer
	ref      *fileRef
	part     string
	f        *reader.File
	closeF   func()
	kind     valueKind
	payload  []*schema.Node
	unwrap   bool
	enc      format.RecordEncoder // of valueFormat
	label    string               // of valueFormat: the format's records
	groups   []int
	rowBases []int64
	gi       int
	src      rowSource
	// tsPerMilli is 1000 when _kafka.timestamp is in microseconds (the
	// files of a table), 1 in milliseconds: Kafka's unit is the latter.
	tsPerMilli int64
	// millis are the columns of a table's file of a JSON schema file
	// that hold its millisecond (or nanosecond) timestamps in
	// microseconds, and that unit (jsonUnits); nil for other files.
	millis map[int]schema.TimeUnit

	// rowLo and rowHi bound the rows of the file that are of the
	// partition: all of them, unless the file holds several.
	rowLo, rowHi int64

	// The current record, once peek has found one.
	has    bool
	offset int64
	ts     int64
	row    int64 // in the file
}

// rowSource reads the records of one row group.
type rowSource interface {
	// next moves to the next record; false after the last.
	next() (bool, error)
	// offset, timestamp and row (in the row group) of the current record.
	current() (offset, ts, row int64)
	// emit fills m with the current record and moves past it.
	emit(b *batch, m *kafka.Message) error
	// skip moves past the current record.
	skip() error
	release()
}

// openStream opens a file for reading its records after done (the last
// offset already produced of its partition). It returns nil when the
// footer rules the whole file out.
func (r *Replayer) openStream(ctx context.Context, ref *fileRef, part string, done int64) (*fileStream, error) {
	f, closeF, err := r.open(ctx, ref.key)
	if err != nil {
		return nil, err
	}
	s := &fileStream{r: r, ref: ref, part: part, f: f, closeF: closeF}
	ok := false
	defer func() {
		if !ok {
			closeF()
		}
	}()
	// Placed by its envelope columns while planning, or by its footer.
	kr := &filePartition{topic: ref.topic, partition: ref.partition, first: ref.first, last: ref.last, rowLo: ref.rowLo, rowHi: ref.rowHi}
	if !ref.scanned {
		if kr, err = footerPartition(f, ref); err != nil {
			return nil, err
		}
	}
	s.rowLo, s.rowHi = kr.rowLo, kr.rowHi
	o := &r.opts
	from := max(o.FromOffset, done+1)
	if kr.last < from || kr.first >= o.EndOffset {
		r.stats.FilesSkipped.Add(1)
		return nil, nil
	}
	sch := f.Schema()
	for _, p := range []string{envOffset, envTimestamp, envKey, envHdrKey, envHdrValue} {
		if sch.Leaf(p) == nil {
			return nil, fmt.Errorf("%s: %w: no column %s (was it written with envelope: false?); replay needs the envelope to restore keys, headers, timestamps and order", ref.key, ErrNotPqsink, p)
		}
	}
	if err := checkEnvelope(sch); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", ref.key, ErrNotPqsink, err)
	}
	for _, fl := range sch.Fields() {
		if fl.Name != envField {
			s.payload = append(s.payload, fl)
		}
	}
	if len(s.payload) == 0 {
		return nil, fmt.Errorf("%s: %w: no payload columns beside %s", ref.key, ErrNotPqsink, envField)
	}
	kv := f.Metadata().KeyValueMetadata
	if ref.lentKV != nil {
		kv = ref.lentKV
	}
	rp := r.replayerOf(kv)
	switch {
	case rp != nil:
		s.kind, s.label = valueFormat, rp.Label()
		if s.enc, err = rp.Encoder(ctx, format.ReplayFile{KV: kv, Payload: s.payload}); err != nil {
			return nil, fmt.Errorf("%s: %w", ref.key, err)
		}
	case len(s.payload) == 1 && s.payload[0].IsLeaf() && s.payload[0].Physical == meta.TypeByteArray &&
		s.payload[0].Logical.Kind == schema.None && s.payload[0].Repetition != schema.Repeated:
		s.kind = valueRaw
	default:
		s.kind = valueJSON
		s.unwrap = len(s.payload) == 1 && s.payload[0].Logical.Kind == schema.Variant
		if s.millis, err = jsonUnits(f.Metadata().KeyValueMetadata, sch); err != nil {
			return nil, fmt.Errorf("%s: %w: %w", ref.key, ErrNotPqsink, err)
		}
	}
	// Row groups that statistics rule out are never read.
	offLeaf, tsLeaf := sch.Leaf(envOffset), sch.Leaf(envTimestamp)
	s.tsPerMilli = 1
	if tsLeaf.Logical.Kind == schema.Timestamp && tsLeaf.Logical.Unit == schema.Micros {
		s.tsPerMilli = 1000
	}
	var base int64
	for g, rg := range f.Metadata().RowGroups {
		rows := rg.NumRows
		keep := rows > 0 && base < s.rowHi && base+rows > s.rowLo
		if lo, hi, ok := int64Stats(rg.Columns[offLeaf.Column].MetaData); keep && ok {
			keep = hi >= from && lo < o.EndOffset
		}
		if lo, hi, ok := int64Stats(rg.Columns[tsLeaf.Column].MetaData); keep && ok {
			keep = o.timeMayMatch(lo/s.tsPerMilli, hi/s.tsPerMilli)
		}
		if keep {
			s.groups = append(s.groups, g)
			s.rowBases = append(s.rowBases, base)
		} else if rows > 0 {
			r.stats.RowGroupsSkipped.Add(1)
		}
		base += rows
	}
	if len(s.groups) == 0 {
		r.stats.FilesSkipped.Add(1)
		return nil, nil
	}
	s.gi = -1
	ok = true
	return s, nil
}

// footerPartition finds in the footer of f what it holds of ref's
// partition, which ref was placed by (its key or the footer): the run of
// rows is the whole file when it holds one partition.
func footerPartition(f *reader.File, ref *fileRef) (*filePartition, error) {
	rs, err := footerRanges(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref.key, err)
	}
	parts := partitionsOf(rs)
	var kr *filePartition
	for i := range parts {
		if parts[i].topic == ref.topic && parts[i].partition == ref.partition {
			kr = &parts[i]
		}
	}
	switch {
	case kr == nil && len(parts) == 1:
		return nil, fmt.Errorf("%s: footer says topic %q partition %d, the key says topic %q partition %d", ref.key, parts[0].topic, parts[0].partition, ref.topic, ref.partition)
	case kr == nil:
		return nil, fmt.Errorf("%s: footer has no range of topic %q partition %d, which the key says", ref.key, ref.topic, ref.partition)
	case len(parts) > 1 && (ref.rowLo != kr.rowLo || ref.rowHi != kr.rowHi):
		// Placed by its key, which names one partition, or by a footer
		// that changed since.
		return nil, fmt.Errorf("%s: the file holds records of %d partitions (%s); replay places such a file by its footer, so it must not be at a key that the path template matches", ref.key, len(parts), archive.FooterRanges)
	}
	if len(parts) == 1 {
		kr.rowLo, kr.rowHi = 0, f.NumRows()
	}
	return kr, nil
}

// checkEnvelope checks the types and shape of the envelope columns replay
// reads, as rowgroup.EnvelopeNode declares them.
func checkEnvelope(sch *schema.Schema) error {
	for _, c := range []struct {
		path     string
		physical meta.Type
		maxRep   int
	}{{envOffset, meta.TypeInt64, 0}, {envTimestamp, meta.TypeInt64, 0}, {envKey, meta.TypeByteArray, 0},
		{envHdrKey, meta.TypeByteArray, 1}, {envHdrValue, meta.TypeByteArray, 1}} {
		n := sch.Leaf(c.path)
		if n.Physical != c.physical || n.MaxRep != c.maxRep {
			return fmt.Errorf("column %s is %s with %d repeated levels, want %v with %d", c.path, n.TypeName(), n.MaxRep, c.physical, c.maxRep)
		}
	}
	if k, v := sch.Leaf(envHdrKey), sch.Leaf(envHdrValue); k.Parent() != v.Parent() || k.Parent().Repetition != schema.Repeated {
		return fmt.Errorf("%s and %s are not the key and value of one repeated group", envHdrKey, envHdrValue)
	}
	return nil
}

// int64Stats returns the chunk's INT64 min and max statistics.
func int64Stats(cm *meta.ColumnMetaData) (lo, hi int64, ok bool) {
	if cm == nil || cm.Statistics == nil {
		return 0, 0, false
	}
	st := cm.Statistics
	mn, mx := st.MinValue, st.MaxValue
	if mn == nil || mx == nil {
		mn, mx = st.Min, st.Max // signed INT64: the legacy fields agree
	}
	if len(mn) != 8 || len(mx) != 8 {
		return 0, 0, false
	}
	return int64(binary.LittleEndian.Uint64(mn)), int64(binary.LittleEndian.Uint64(mx)), true
}

// peek finds the next record that passes the filters, after done; false at
// the end of the file.
func (s *fileStream) peek(done int64) (bool, error) {
	if s.has {
		return true, nil
	}
	o := &s.r.opts
	from := max(o.FromOffset, done+1)
	for {
		if s.src == nil {
			s.gi++
			if s.gi >= len(s.groups) {
				return false, nil
			}
			src, err := s.newSource(s.groups[s.gi])
			if err != nil {
				return false, fmt.Errorf("%s: row group %d: %w", s.ref.key, s.groups[s.gi], err)
			}
			s.src = src
		}
		ok, err := s.src.next()
		if err != nil {
			return false, fmt.Errorf("%s: row group %d: %w", s.ref.key, s.groups[s.gi], err)
		}
		if !ok {
			s.src.release()
			s.src = nil
			continue
		}
		off, ts, row := s.src.current()
		if s.rowBases[s.gi]+row >= s.rowHi {
			// The rows of the partition end here; the rest of the file
			// is another partition's.
			s.src.release()
			s.src, s.gi = nil, len(s.groups)
			return false, nil
		}
		skip := s.rowBases[s.gi]+row < s.rowLo || off < from || off >= o.EndOffset || !o.keepTime(ts)
		if !skip && s.ref.deleted != nil && s.ref.deleted.Contains(s.rowBases[s.gi]+row) {
			// The table deleted the row.
			skip = true
			s.r.stats.RecordsDeleted.Add(1)
		}
		if skip {
			if err := s.src.skip(); err != nil {
				return false, fmt.Errorf("%s: row group %d: %w", s.ref.key, s.groups[s.gi], err)
			}
			continue
		}
		s.has, s.offset, s.ts, s.row = true, off, ts, s.rowBases[s.gi]+row
		return true, nil
	}
}

// emit appends the current record to b.
func (s *fileStream) emit(b *batch) error {
	b.msgs = append(b.msgs, kafka.Message{Partition: int(s.ref.partition)})
	m := &b.msgs[len(b.msgs)-1]
	if err := s.src.emit(b, m); err != nil {
		b.msgs = b.msgs[:len(b.msgs)-1]
		return fmt.Errorf("%s: row %d (offset %d): %w", s.ref.key, s.row, s.offset, err)
	}
	if n := len(b.marks); n > 0 && b.marks[n-1].part == s.part {
		b.marks[n-1] = mark{part: s.part, object: s.ref.key, row: s.row, offset: s.offset}
	} else {
		b.marks = append(b.marks, mark{part: s.part, object: s.ref.key, row: s.row, offset: s.offset})
	}
	s.has = false
	return nil
}

func (s *fileStream) close() {
	if s.src != nil {
		s.src.release()
		s.src = nil
	}
	s.closeF()
}

// newSource returns the reader of row group g: columnar for JSON and raw
// values when the payload's shape allows, reader.Rows otherwise.
func (s *fileStream) newSource(g int) (rowSource, error) {
	src, err := newColumnSource(s, g)
	if err == nil {
		return src, nil
	}
	if !errors.Is(err, reader.ErrNotColumnar) {
		return nil, err
	}
	s.r.stats.RowGroupsByRows.Add(1)
	return newRowsSource(s, g)
}

// columnSource reads a row group column by column.
type columnSource struct {
	env  []*reader.ColumnCursor // offset, timestamp, key, header key, header value
	json *reader.JSONAssembler
	recs format.ColumnRecords // of a format's ColumnEncoder
	raw  *reader.ColumnCursor
	hdef uint8 // definition level of a present header entry
	hrep uint8 // repetition level of a header after the first
	row  int64
	rows int64
	// names interns header keys, which repeat from record to record.
	names map[string]string
	// tsPerMilli is fileStream's: timestamps are divided by it.
	tsPerMilli int64
}

// maxInterned bounds the header keys a row group interns.
const maxInterned = 1024

// headerKey returns b as a string, interned.
func (c *columnSource) headerKey(b []byte) string {
	if s, ok := c.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(c.names) < maxInterned {
		c.names[s] = s
	}
	return s
}

func newColumnSource(s *fileStream, g int) (rowSource, error) {
	sch := s.f.Schema()
	cols := []int{sch.Leaf(envOffset).Column, sch.Leaf(envTimestamp).Column, sch.Leaf(envKey).Column,
		sch.Leaf(envHdrKey).Column, sch.Leaf(envHdrValue).Column}
	c := &columnSource{row: -1, rows: s.f.Metadata().RowGroups[g].NumRows, names: map[string]string{}, tsPerMilli: s.tsPerMilli}
	kv := sch.Leaf(envHdrKey).Parent()
	c.hdef, c.hrep = uint8(kv.MaxDef), uint8(kv.MaxRep)
	if s.kind == valueRaw {
		cur, err := s.f.ColumnCursors(g, append(cols, s.payload[0].Column))
		if err != nil {
			return nil, err
		}
		c.env, c.raw = cur[:5], cur[5]
		return c, nil
	}
	if s.kind == valueFormat {
		ce, ok := s.enc.(format.ColumnEncoder)
		if !ok { // records are assembled, then encoded
			return nil, fmt.Errorf("%w: %s records", reader.ErrNotColumnar, s.label)
		}
		recs, env, err := ce.Columns(s.f, g, cols)
		if err != nil {
			return nil, err
		}
		c.recs, c.env = recs, env
		return c, nil
	}
	// The envelope is read under the assembler's memory budget.
	a, err := reader.NewJSONAssembler(s.f, g, s.payload, s.unwrap, cols...)
	if err != nil {
		return nil, err
	}
	if s.millis != nil {
		// A table's file: the columns of the schema file's
		// milliseconds (or nanoseconds) render in that unit (jsonUnits),
		// as appendCompactJSON renders them from reader.Rows.
		if err := a.RenderIn(s.millis); err != nil {
			a.Release()
			return nil, err
		}
	}
	// A JSON record's numbers went into its DECIMAL columns: they come
	// back as numbers (with the column's scale), as appendCompactJSON
	// renders them.
	a.DecimalsAsNumbers()
	c.json, c.env = a, a.Extra()
	return c, nil
}

func (c *columnSource) next() (bool, error) {
	c.row++
	if c.row >= c.rows {
		return false, nil
	}
	off, ts := c.env[0], c.env[1]
	if !off.HasValue() || !ts.HasValue() {
		return false, fmt.Errorf("%w: record %d has no _kafka.offset or _kafka.timestamp", reader.ErrCorrupt, c.row)
	}
	return true, nil
}

func (c *columnSource) current() (int64, int64, int64) {
	return c.env[0].Int64(), c.env[1].Int64() / c.tsPerMilli, c.row
}

func (c *columnSource) emit(b *batch, m *kafka.Message) error {
	m.Time = timeOfMillis(c.env[1].Int64() / c.tsPerMilli)
	if k := c.env[2]; k.HasValue() {
		m.Key = b.bytesOf(k.Bytes())
	}
	hk, hv := c.env[3], c.env[4]
	if hk.Def() >= c.hdef {
		start := len(b.headers)
		for {
			if !hk.HasValue() {
				return fmt.Errorf("%w: a header without a key", reader.ErrCorrupt)
			}
			h := kafka.Header{Key: c.headerKey(hk.Bytes())}
			if hv.HasValue() {
				h.Value = b.bytesOf(hv.Bytes())
			}
			b.headers = append(b.headers, h)
			if err := hk.Advance(); err != nil {
				return err
			}
			if err := hv.Advance(); err != nil {
				return err
			}
			if hk.EOF() || hk.Rep() != c.hrep {
				break
			}
		}
		m.Headers = b.headers[start:len(b.headers):len(b.headers)]
	} else if err := advance(hk, hv); err != nil {
		return err
	}
	if err := advance(c.env[0], c.env[1], c.env[2]); err != nil {
		return err
	}
	if c.raw != nil {
		if c.raw.HasValue() {
			m.Value = b.bytesOf(c.raw.Bytes())
		}
		return c.raw.Advance()
	}
	start := len(b.arena)
	var err error
	if c.recs != nil {
		b.arena, err = c.recs.AppendNext(b.arena)
	} else {
		b.arena, err = c.json.Append(b.arena)
	}
	if err != nil {
		return err
	}
	m.Value = b.arena[start:len(b.arena):len(b.arena)]
	return nil
}

// advance consumes the current entry of each cursor.
func advance(cs ...*reader.ColumnCursor) error {
	for _, c := range cs {
		if err := c.Advance(); err != nil {
			return err
		}
	}
	return nil
}

func (c *columnSource) skip() error {
	hk, hv := c.env[3], c.env[4]
	for {
		if err := advance(hk, hv); err != nil {
			return err
		}
		if hk.EOF() || hk.Rep() != c.hrep {
			break
		}
	}
	if err := advance(c.env[0], c.env[1], c.env[2]); err != nil {
		return err
	}
	switch {
	case c.raw != nil:
		return c.raw.Advance()
	case c.recs != nil:
		return c.recs.SkipNext()
	}
	return c.json.Skip()
}

func (c *columnSource) release() {
	if c.recs != nil {
		c.recs.Release() // the envelope's cursors too
		return
	}
	if c.json != nil {
		c.json.Release() // the envelope's cursors too
		return
	}
	for _, e := range c.env {
		e.Release()
	}
	c.raw.Release()
}
