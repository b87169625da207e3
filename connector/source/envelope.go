package source

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema"
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

// lendFooters gives each planned file that was placed by its envelope
// columns (rewritten by another engine, which kept the columns but not the
// sink's footer) the footer metadata of one of the sink's own files of the
// replay whose payload columns have the same shape: the records' schema
// (Avro, Protobuf, JSON Schema), so that its records are produced in the
// registry's wire format like the others, not as JSON beside them. The
// sink's files are opened in plan order until one fits (their schemas
// change only with the records' schema). A table whose own files carry no
// schema (JSON, VARIANT, raw bytes) lends nothing: its rewritten files are
// produced from their columns as its own are. A rewritten file that no
// own file fits is refused, naming both kinds.
func (r *Replayer) lendFooters(ctx context.Context, parts []*partitionPlan) error {
	var rewritten, own []*fileRef
	seen := map[string]bool{}
	for _, p := range parts {
		for _, f := range p.files {
			if seen[f.key] {
				continue
			}
			seen[f.key] = true
			if f.scanned {
				rewritten = append(rewritten, f)
			} else {
				own = append(own, f)
			}
		}
	}
	if len(rewritten) == 0 {
		return nil
	}
	// The candidates: the sink's files of the replay, then those the
	// table's rewrites replaced (Options.Earlier), which may be gone.
	keys := make([]string, 0, len(own)+len(r.opts.Earlier))
	for _, f := range own {
		keys = append(keys, f.key)
	}
	for _, o := range r.opts.Earlier {
		if !seen[o.Key] {
			keys = append(keys, o.Key)
		}
	}
	var donors []footerDonor
	next := 0 // the next candidate to open
	nextDonor := func() (*footerDonor, error) {
		for ; next < len(keys); next++ {
			d, err := r.readDonor(ctx, keys[next])
			if errors.Is(err, objstore.ErrNotExist) && next >= len(own) {
				continue
			}
			if err != nil {
				return nil, err
			}
			next++
			donors = append(donors, d)
			return &donors[len(donors)-1], nil
		}
		return nil, nil
	}
	donorFor := func(sch *schema.Schema) (*footerDonor, error) {
		for i := 0; ; i++ {
			if i == len(donors) {
				if d, err := nextDonor(); d == nil || err != nil {
					return nil, err
				}
			}
			if samePayload(donors[i].schema, sch) {
				return &donors[i], nil
			}
		}
	}
	first, err := nextDonor()
	if err != nil {
		return err
	}
	// The sink's files of a table all come from one format: one without
	// a records' schema (JSON, VARIANT, raw bytes) lends nothing, and the
	// rewritten files are produced from their columns as its own are.
	if first == nil || first.kind == "" {
		return nil
	}
	lent := map[string][]meta.KeyValue{}
	for _, f := range rewritten {
		file, closeFile, err := r.open(ctx, f.key)
		if err != nil {
			return err
		}
		sch := file.Schema()
		closeFile()
		d, err := donorFor(sch)
		if err != nil {
			return err
		}
		if d == nil || d.kind == "" {
			return fmt.Errorf("%s: %w: another engine rewrote it without the sink's footer metadata, and none of the sink's files of the replay has its payload columns, to lend it the records' schema: the sink's files hold %s records (%s in the footer of %s), produced in the registry's wire format, and replay refuses to produce this file's as JSON beside them",
				f.key, ErrNotPqsink, first.kind, first.metaKey, first.key)
		}
		lent[f.key] = d.kv
		r.stats.FootersLent.Add(1)
	}
	for _, p := range parts {
		for _, f := range p.files {
			if kv, ok := lent[f.key]; ok {
				f.lentKV = kv
			}
		}
	}
	return nil
}

// footerDonor is what one of the sink's own files can lend a rewritten
// one: its footer's key-value metadata, and the kind of records schema it
// names ("" for none).
type footerDonor struct {
	key, kind, metaKey string
	schema             *schema.Schema
	kv                 []meta.KeyValue
}

func (r *Replayer) readDonor(ctx context.Context, key string) (footerDonor, error) {
	file, closeFile, err := r.open(ctx, key)
	if err != nil {
		return footerDonor{}, err
	}
	defer closeFile()
	md := file.Metadata()
	d := footerDonor{key: key, schema: file.Schema()}
	// Only the records' schema is lent: the rest of the footer (the Kafka
	// ranges above all) is the donor's own.
	for _, e := range md.KeyValueMetadata {
		if e.Key == avro.MetadataKey || strings.HasPrefix(e.Key, jsonschema.MetadataKey) || strings.HasPrefix(e.Key, "pqsink.protobuf.") {
			d.kv = append(d.kv, e)
		}
	}
	for _, e := range d.kv {
		switch {
		case e.Value == nil:
		case e.Key == avro.MetadataKey:
			d.kind, d.metaKey = "Avro", e.Key
		case e.Key == jsonschema.MetadataKey && d.kind == "":
			d.kind, d.metaKey = "JSON Schema", e.Key
		}
	}
	if protoFooter(d.kv) != nil {
		d.kind, d.metaKey = "Protobuf", protobuf.MessageKey
	}
	return d, nil
}

// samePayload reports whether a and b have the same payload fields (all
// but the envelope) in the same order and shape: names, repetition,
// physical and logical types, field ids aside (a table assigns them). A
// signed integer annotation of the column's own width is no annotation:
// Arrow-based writers (iceberg-go's, Spark's) put INTEGER(64,true) on
// every long, which the sink leaves bare, as the two mean the same.
func samePayload(a, b *schema.Schema) bool {
	payload := func(s *schema.Schema) []*schema.Node {
		var out []*schema.Node
		for _, f := range s.Fields() {
			if f.Name != envField {
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
		if !sameShape(pa[i], pb[i]) {
			return false
		}
	}
	return true
}

// sameShape is schema.Node.SameShape, with plainLogical's leniency.
func sameShape(a, b *schema.Node) bool {
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
		if !sameShape(a.Fields[i], b.Fields[i]) {
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
