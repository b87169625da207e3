package source

import (
	"context"
	"fmt"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema/avro"
	"github.com/pqsink/pqsink/schema/jsonschema"
	"github.com/pqsink/pqsink/schema/protobuf"
)

// Paths of the envelope leaves that place a file without the sink's
// footer.
const (
	envTopic     = "_kafka.topic"
	envPartition = "_kafka.partition"
)

// envelopeRanges places a file that holds the _kafka envelope columns but
// no pqsink.kafka.* footer metadata (a table's data file that another
// engine rewrote, copy-on-write, without the rows it deleted) by reading
// its _kafka.topic, _kafka.partition and _kafka.offset columns: what it
// holds of each partition. The rows of each partition must be one run,
// and their offsets must increase along it (gaps are the deleted rows);
// otherwise replay could not merge the file by offset, and the error says
// which rows break the rule.
func envelopeRanges(ctx context.Context, f *reader.File) ([]filePartition, error) {
	sch := f.Schema()
	cols := make([]int, 3)
	for i, c := range []struct {
		path     string
		physical meta.Type
	}{{envTopic, meta.TypeByteArray}, {envPartition, meta.TypeInt32}, {envOffset, meta.TypeInt64}} {
		n := sch.Leaf(c.path)
		switch {
		case n == nil:
			return nil, fmt.Errorf("%w: the footer has no pqsink.kafka.* metadata, and the file has no column %s to place its records by", ErrNotPqsink, c.path)
		case n.Physical != c.physical || n.MaxRep != 0:
			return nil, fmt.Errorf("%w: column %s is %s, want %v", ErrNotPqsink, c.path, n.TypeName(), c.physical)
		}
		cols[i] = n.Column
	}
	var out []filePartition
	seen := map[filePartition]bool{} // by topic and partition alone
	var row int64
	for g := range f.Metadata().RowGroups {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cur, err := f.ColumnCursors(g, cols)
		if err != nil {
			return nil, fmt.Errorf("row group %d: %w", g, err)
		}
		out, row, err = scanEnvelope(cur, out, seen, row)
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

// scanEnvelope extends out with the rows of one row group, from row on
// (its first row's position in the file), and returns the position after
// its last.
func scanEnvelope(cur []*reader.ColumnCursor, out []filePartition, seen map[filePartition]bool, row int64) ([]filePartition, int64, error) {
	topics, parts, offs := cur[0], cur[1], cur[2]
	for !offs.EOF() {
		if topics.EOF() || parts.EOF() {
			return out, row, fmt.Errorf("%w: the envelope columns have different lengths at row %d", reader.ErrCorrupt, row)
		}
		if !topics.HasValue() || !parts.HasValue() || !offs.HasValue() {
			return out, row, fmt.Errorf("%w: row %d has no %s, %s or %s", ErrNotPqsink, row, envTopic, envPartition, envOffset)
		}
		off, p := offs.Int64(), parts.Int32()
		n := len(out)
		if n > 0 && out[n-1].partition == p && out[n-1].topic == string(topics.Bytes()) {
			last := &out[n-1]
			if off <= last.last {
				return out, row, fmt.Errorf("%w: the offsets of topic %q partition %d do not increase: row %d holds offset %d after offset %d; replay needs each partition's rows in offset order",
					ErrNotPqsink, last.topic, p, row, off, last.last)
			}
			last.last, last.rowHi = off, row+1
		} else {
			key := filePartition{topic: string(topics.Bytes()), partition: p}
			if seen[key] {
				return out, row, fmt.Errorf("%w: the rows of topic %q partition %d are not together: they start again at row %d (offset %d) after rows of another partition; replay needs each partition's rows in one run",
					ErrNotPqsink, key.topic, p, row, off)
			}
			seen[key] = true
			out = append(out, filePartition{topic: key.topic, partition: p, first: off, last: off, rowLo: row, rowHi: row + 1})
		}
		if err := advance(topics, parts, offs); err != nil {
			return out, row, fmt.Errorf("row %d: %w", row, err)
		}
		row++
	}
	if !topics.EOF() || !parts.EOF() {
		return out, row, fmt.Errorf("%w: the envelope columns have different lengths at row %d", reader.ErrCorrupt, row)
	}
	return out, row, nil
}

// checkRewritten refuses the planned files that were placed by their
// envelope columns when the sink's own files of the replay keep their
// records' schema in the footer (Avro, Protobuf, JSON Schema): those are
// produced in the registry's wire format, and a rewritten file, which has
// lost that footer, would be produced as JSON beside them. One of the
// sink's files is opened to tell.
func (r *Replayer) checkRewritten(ctx context.Context, parts []*partitionPlan) error {
	var rewritten, own *fileRef
	for _, p := range parts {
		for _, f := range p.files {
			switch {
			case f.scanned && rewritten == nil:
				rewritten = f
			case !f.scanned && own == nil:
				own = f
			}
		}
	}
	if rewritten == nil || own == nil {
		return nil
	}
	file, closeFile, err := r.open(ctx, own.key)
	if err != nil {
		return err
	}
	defer closeFile()
	md := file.Metadata()
	var kind, key string
	for _, e := range md.KeyValueMetadata {
		switch {
		case e.Value == nil:
		case e.Key == avro.MetadataKey:
			kind, key = "Avro", e.Key
		case e.Key == jsonschema.MetadataKey && kind == "":
			kind, key = "JSON Schema", e.Key
		}
	}
	if protoFooter(md) != nil {
		kind, key = "Protobuf", protobuf.MessageKey
	}
	if kind == "" {
		return nil
	}
	return fmt.Errorf("%s: %w: another engine rewrote it without the sink's footer metadata, so its records would be produced as JSON, while the sink's files of the table hold %s records (%s in the footer of %s), produced in the registry's wire format; replay refuses to mix the two in the target topic",
		rewritten.key, ErrNotPqsink, kind, key, own.key)
}
