package source

import (
	"context"
	"errors"
	"fmt"

	"github.com/pqsink/pqsink/archive/envelope"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema"
)

// envelopeRanges places a file that holds the _kafka envelope columns but
// no pqsink.kafka.* footer metadata (a table's data file that another
// engine rewrote, copy-on-write, without the rows it deleted) by reading
// its _kafka.topic, _kafka.partition and _kafka.offset columns
// (envelope.Place): what it holds of each partition. A file whose rows
// replay could not merge by offset is refused with ErrNotPqsink, naming
// the row.
func envelopeRanges(ctx context.Context, f *reader.File) ([]filePartition, error) {
	ps, err := envelope.Place(ctx, f)
	if errors.Is(err, envelope.ErrUnplaceable) {
		return nil, fmt.Errorf("%w: %w", ErrNotPqsink, err)
	}
	if err != nil {
		return nil, err
	}
	out := make([]filePartition, len(ps))
	for i, p := range ps {
		out[i] = filePartition{topic: p.Topic, partition: p.Partition, first: p.First, last: p.Last, rowLo: p.RowLo, rowHi: p.RowHi}
	}
	return out, nil
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
			if envelope.SamePayload(donors[i].schema, sch) {
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
	d.kv = envelope.SchemaEntries(md.KeyValueMetadata)
	if rp := r.replayerOf(d.kv); rp != nil {
		d.kind, d.metaKey = rp.Label(), rp.Claims(d.kv)
	}
	return d, nil
}
