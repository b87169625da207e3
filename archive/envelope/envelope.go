// Package envelope places a data file that holds the sink's _kafka
// envelope columns but none of its footer metadata: a table's data file
// that another engine rewrote (a copy-on-write DELETE or UPDATE in Spark
// or Trino keeps the columns, the envelope included, and drops the rows it
// deletes, but not the pqsink.kafka.* ranges nor the records' schema). It
// reads what such a file holds of each Kafka partition from its
// _kafka.topic, _kafka.partition and _kafka.offset columns (Place), tells
// whether its payload columns have the shape of one of the sink's files
// (SamePayload), and picks from a sink file's footer the records' schema
// entries such a file lacks (SchemaEntries). Replay (connector/source) and
// compaction (compact, merge) share it.
package envelope

import (
	"context"
	"errors"
	"fmt"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema"
)

// Paths of the envelope.
const (
	// Field is the envelope group's name.
	Field = "_kafka"
	// Topic, PartitionLeaf and Offset are the leaves that place a record.
	Topic         = "_kafka.topic"
	PartitionLeaf = "_kafka.partition"
	Offset        = "_kafka.offset"
)

// ErrUnplaceable is matched (errors.Is) by the error of Place for a file
// whose rows cannot be placed by offset: no envelope columns, a row
// without them, or a partition's rows not one run in increasing offset
// order. Its message is the reason alone, for callers to prefix.
var ErrUnplaceable = errors.New("rows not placeable by their Kafka envelope")

// unplaceable is an error that matches ErrUnplaceable and says why.
type unplaceable string

func (e unplaceable) Error() string        { return string(e) }
func (e unplaceable) Is(target error) bool { return target == ErrUnplaceable }

func refuse(format string, args ...any) error { return unplaceable(fmt.Sprintf(format, args...)) }

// Partition is what a file holds of one Kafka partition: the offsets of
// its first and last records, and the run of rows [RowLo, RowHi) they
// take. Offsets between them that no row holds are gaps (deleted rows).
type Partition struct {
	Topic        string
	Partition    int32
	First, Last  int64
	RowLo, RowHi int64
}

// Range is p as a Kafka range of a footer: its records are its rows.
func (p Partition) Range() archive.Range {
	return archive.Range{Topic: p.Topic, Partition: p.Partition, First: p.First, Last: p.Last, Records: p.RowHi - p.RowLo}
}

// Place reads f's envelope columns and returns what it holds of each
// partition, in row order. The rows of each partition must be one run,
// and their offsets must increase along it (gaps are deleted rows);
// otherwise the file cannot be merged by offset, and the error (matching
// ErrUnplaceable) names the row. A file whose columns do not read wraps
// reader.ErrCorrupt.
func Place(ctx context.Context, f *reader.File) ([]Partition, error) {
	sch := f.Schema()
	cols := make([]int, 3)
	for i, c := range []struct {
		path     string
		physical meta.Type
	}{{Topic, meta.TypeByteArray}, {PartitionLeaf, meta.TypeInt32}, {Offset, meta.TypeInt64}} {
		n := sch.Leaf(c.path)
		switch {
		case n == nil:
			return nil, refuse("the footer has no pqsink.kafka.* metadata, and the file has no column %s to place its records by", c.path)
		case n.Physical != c.physical || n.MaxRep != 0:
			return nil, refuse("column %s is %s, want %v", c.path, n.TypeName(), c.physical)
		}
		cols[i] = n.Column
	}
	var out []Partition
	seen := map[Partition]bool{} // by topic and partition alone
	var row int64
	for g := range f.Metadata().RowGroups {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cur, err := f.ColumnCursors(g, cols)
		if err != nil {
			return nil, fmt.Errorf("row group %d: %w", g, err)
		}
		out, row, err = scan(cur, out, seen, row)
		for _, c := range cur {
			c.Release()
		}
		if err != nil {
			return nil, err // it names the row, in the file
		}
	}
	if row != f.NumRows() {
		return nil, fmt.Errorf("%w: the envelope columns hold %d rows, the file %d", reader.ErrCorrupt, row, f.NumRows())
	}
	return out, nil
}

// scan extends out with the rows of one row group, from row on (its first
// row's position in the file), and returns the position after its last.
func scan(cur []*reader.ColumnCursor, out []Partition, seen map[Partition]bool, row int64) ([]Partition, int64, error) {
	topics, parts, offs := cur[0], cur[1], cur[2]
	for !offs.EOF() {
		if topics.EOF() || parts.EOF() {
			return out, row, fmt.Errorf("%w: the envelope columns have different lengths at row %d", reader.ErrCorrupt, row)
		}
		if !topics.HasValue() || !parts.HasValue() || !offs.HasValue() {
			return out, row, refuse("row %d has no %s, %s or %s", row, Topic, PartitionLeaf, Offset)
		}
		off, p := offs.Int64(), parts.Int32()
		n := len(out)
		if n > 0 && out[n-1].Partition == p && out[n-1].Topic == string(topics.Bytes()) {
			last := &out[n-1]
			if off <= last.Last {
				return out, row, refuse("the offsets of topic %q partition %d do not increase: row %d holds offset %d after offset %d; each partition's rows must be in offset order",
					last.Topic, p, row, off, last.Last)
			}
			last.Last, last.RowHi = off, row+1
		} else {
			key := Partition{Topic: string(topics.Bytes()), Partition: p}
			if seen[key] {
				return out, row, refuse("the rows of topic %q partition %d are not together: they start again at row %d (offset %d) after rows of another partition; each partition's rows must be one run",
					key.Topic, p, row, off)
			}
			seen[key] = true
			out = append(out, Partition{Topic: key.Topic, Partition: p, First: off, Last: off, RowLo: row, RowHi: row + 1})
		}
		for _, c := range cur {
			if err := c.Advance(); err != nil {
				return out, row, fmt.Errorf("row %d: %w", row, err)
			}
		}
		row++
	}
	if !topics.EOF() || !parts.EOF() {
		return out, row, fmt.Errorf("%w: the envelope columns have different lengths at row %d", reader.ErrCorrupt, row)
	}
	return out, row, nil
}

// SchemaEntries returns the entries of a sink file's footer that say its
// records' schema (Avro, JSON Schema, Protobuf: archive.RecordSchemaKey):
// what a rewritten file of the same payload columns is lent, so that its
// records are produced in the registry's wire format like the sink's. The rest of the footer (the
// Kafka ranges above all) is the file's own.
func SchemaEntries(kv []meta.KeyValue) []meta.KeyValue {
	var out []meta.KeyValue
	for _, e := range kv {
		if archive.RecordSchemaKey(e.Key) {
			out = append(out, e)
		}
	}
	return out
}

// SamePayload reports whether a and b have the same payload fields (all
// but the envelope) in the same order and shape (SameShape).
func SamePayload(a, b *schema.Schema) bool {
	payload := func(s *schema.Schema) []*schema.Node {
		var out []*schema.Node
		for _, f := range s.Fields() {
			if f.Name != Field {
				out = append(out, f)
			}
		}
		return out
	}
	pa, pb := payload(a), payload(b)
	if len(pa) != len(pb) {
		return false
	}
	for i := range pa {
		if !SameShape(pa[i], pb[i]) {
			return false
		}
	}
	return true
}

// SameSchema reports whether a and b have the same fields, the envelope
// included, in the same order and shape (SameShape): a file of b's
// columns can be read as a file of a's.
func SameSchema(a, b *schema.Schema) bool {
	fa, fb := a.Fields(), b.Fields()
	if len(fa) != len(fb) {
		return false
	}
	for i := range fa {
		if !SameShape(fa[i], fb[i]) {
			return false
		}
	}
	return true
}

// SameShape reports whether a and b have the same names, repetitions,
// physical and logical types, field ids aside (a table assigns them). A
// signed integer annotation of the column's own width is no annotation:
// Arrow-based writers (iceberg-go's, Spark's) put INTEGER(64,true) on
// every long, which the sink leaves bare, as the two mean the same.
func SameShape(a, b *schema.Node) bool {
	if a.Name != b.Name || a.Repetition != b.Repetition || a.IsLeaf() != b.IsLeaf() || len(a.Fields) != len(b.Fields) {
		return false
	}
	if a.IsLeaf() {
		return a.Physical == b.Physical && a.Length == b.Length && plainLogical(a) == plainLogical(b)
	}
	if a.Logical != b.Logical {
		return false
	}
	for i := range a.Fields {
		if !SameShape(a.Fields[i], b.Fields[i]) {
			return false
		}
	}
	return true
}

// plainLogical is n's logical type, none for a signed integer of the
// physical type's width.
func plainLogical(n *schema.Node) schema.Logical {
	l := n.Logical
	if l.Kind == schema.Int && l.Signed && (n.Physical == meta.TypeInt32 && l.BitWidth == 32 || n.Physical == meta.TypeInt64 && l.BitWidth == 64) {
		return schema.Logical{}
	}
	return l
}
