package compact

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/archive/envelope"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/table"
)

// placeRewritten places a file without Kafka ranges in its footer by its
// envelope columns (envelope.Place): what another engine's copy-on-write
// rewrite of the sink's files holds of each partition, as Kafka ranges in
// the order of its rows. A file that has no envelope, whose rows are not
// one run per partition in offset order, or whose envelope columns do not
// read, gives nil: the plan leaves it as it is.
func placeRewritten(ctx context.Context, f *reader.File) ([]archive.Range, error) {
	ps, err := envelope.Place(ctx, f)
	if errors.Is(err, envelope.ErrUnplaceable) || errors.Is(err, reader.ErrCorrupt) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []archive.Range
	for _, p := range ps {
		out = append(out, p.Range())
	}
	return out, nil
}

// byShape splits each bin into bins of files of one Parquet schema, in
// their order, as bySchema does, and puts each file another engine
// rewrote (footer.envelope) in the part of the sink's files whose columns
// it has the shape of (envelope.SameSchema: the same tree, field ids and
// the integer annotations of Arrow writers aside): the merge writes it
// with the sink's schema and footer. Rewritten files that no part of the
// sink's files of their bin fits make parts of their own, which take the
// schema and records' schema of a sink's file of the table that like
// finds; without one, they are left out. A part with fewer than min files
// is dropped. It returns the bins and how many rewritten files it left
// out for want of a sink's file of their shape.
func byShape(bins []Bin, min int, footers map[string]footer, like func(*schema.Schema) (*footer, error)) ([]Bin, int, error) {
	var out []Bin
	left := 0
	for _, b := range bins {
		type part struct {
			Bin
			sch  *schema.Schema
			sink bool
		}
		var parts []part
		index := map[string]int{}
		var rewritten []table.LiveFile
		add := func(p *part, f table.LiveFile) {
			p.Files = append(p.Files, f)
			p.Bytes += f.Size
			p.Records += f.Records
			if len(footers[f.Location].millis) > 0 {
				p.millis = append(p.millis, f.Location)
			}
		}
		for _, f := range b.Files {
			ft := footers[f.Location]
			if ft.envelope != nil {
				rewritten = append(rewritten, f)
				continue
			}
			i, ok := index[ft.schema]
			if !ok {
				i = len(parts)
				index[ft.schema] = i
				parts = append(parts, part{Bin: Bin{Folder: b.Folder}, sch: ft.sch, sink: true})
			}
			add(&parts[i], f)
		}
		for _, f := range rewritten {
			ft := footers[f.Location]
			i := 0
			for i < len(parts) && !envelope.SameSchema(parts[i].sch, ft.sch) {
				i++
			}
			if i == len(parts) {
				parts = append(parts, part{Bin: Bin{Folder: b.Folder}, sch: ft.sch})
			}
			add(&parts[i], f)
		}
		for _, p := range parts {
			var n int
			p.Bin, n = withoutOverlaps(p.Bin, footers)
			left += n
			if !p.sink {
				d, err := like(p.sch)
				if err != nil {
					return nil, 0, err
				}
				if d == nil {
					left += len(p.Files)
					continue
				}
				p.like = d
			}
			if p.enough(min) {
				out = append(out, p.Bin)
			}
		}
	}
	return out, left, nil
}

// withoutOverlaps leaves out of b the rewritten files that hold offsets
// of a partition that another file of b holds too (another engine's
// INSERT of copies of the sink's rows, say): the merge would refuse the
// bin, and the plan leaves them as they are instead. It returns b and how
// many files it left out.
func withoutOverlaps(b Bin, footers map[string]footer) (Bin, int) {
	type held struct {
		r   archive.Range
		loc string
	}
	var all []held
	for _, f := range b.Files {
		for _, r := range footers[f.Location].held {
			all = append(all, held{r, f.Location})
		}
	}
	slices.SortFunc(all, func(a, b held) int { return archive.CompareRanges(a.r, b.r) })
	drop := map[string]bool{}
	for i := 1; i < len(all); i++ {
		for j := i - 1; j >= 0 && all[j].r.Topic == all[i].r.Topic && all[j].r.Partition == all[i].r.Partition; j-- {
			if all[j].r.Last < all[i].r.First || all[j].loc == all[i].loc {
				continue
			}
			for _, loc := range []string{all[i].loc, all[j].loc} {
				if footers[loc].envelope != nil {
					drop[loc] = true
				}
			}
		}
	}
	if len(drop) == 0 {
		return b, 0
	}
	kept := Bin{Folder: b.Folder, like: b.like}
	for _, f := range b.Files {
		if !drop[f.Location] {
			kept.Files = append(kept.Files, f)
			kept.Bytes += f.Size
			kept.Records += f.Records
			if slices.Contains(b.millis, f.Location) {
				kept.millis = append(kept.millis, f.Location)
			}
		}
	}
	return kept, len(drop)
}

// donors finds, for rewritten files that no sink's file of their bin
// fits, a sink's file of the table with their columns' shape: first among
// the footers the plan read, then among the other live files, whose
// footers it reads one by one until one fits.
type donors struct {
	ctx     context.Context
	store   objstore.Store
	keyOf   func(string) (string, error)
	live    []table.LiveFile
	footers map[string]footer
	// read are the footers of live files read here, by location.
	read map[string]*footer
}

// like returns the footer of a sink's file of the table whose schema has
// sch's shape, or nil when none has.
func (d *donors) like(sch *schema.Schema) (*footer, error) {
	for _, f := range d.live {
		ft, ok := d.footers[f.Location]
		if ok && ft.sink && envelope.SameSchema(ft.sch, sch) {
			return &ft, nil
		}
	}
	if d.read == nil {
		d.read = map[string]*footer{}
	}
	for _, f := range d.live {
		if _, ok := d.footers[f.Location]; ok {
			continue
		}
		ft, ok := d.read[f.Location]
		if !ok {
			var err error
			if ft, err = d.readSink(f.Location); err != nil {
				return nil, err
			}
			d.read[f.Location] = ft
		}
		if ft != nil && envelope.SameSchema(ft.sch, sch) {
			return ft, nil
		}
	}
	return nil, nil
}

// readSink reads the footer of the file at loc, or returns nil when it is
// not a sink's file.
func (d *donors) readSink(loc string) (*footer, error) {
	key, err := d.keyOf(loc)
	if err != nil {
		return nil, err
	}
	r, err := d.store.NewReaderAt(d.ctx, key)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", loc, err)
	}
	defer r.Close()
	f, err := reader.Open(r, r.Size())
	if err != nil {
		return nil, fmt.Errorf("reading the footer of %s: %w", loc, err)
	}
	kv := f.Metadata().KeyValueMetadata
	if rs, err := archive.ReadRanges(kv); err != nil || len(rs) == 0 {
		return nil, nil
	}
	wide := widened(f.Schema())
	return &footer{schema: wide.String(), sink: true, sch: wide, lend: envelope.SchemaEntries(kv)}, nil
}
