package source

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
)

// fileRef is one object planned for replay.
type fileRef struct {
	key       string
	size      int64
	topic     string
	partition int32
	first     int64
	chain     string
	// From the footer, when it was read while planning.
	footer bool
	last   int64
	// rowLo and rowHi bound the file's rows of this partition, when the
	// file holds several partitions (pqsink.kafka.ranges): the rows of a
	// partition are one run, at the place of its ranges in the footer.
	// Both are 0 for a file whose rows are all of the partition.
	rowLo, rowHi int64
	// deleted are the rows of the file its table deleted, or nil.
	deleted Deletions
	// scanned says that the file has no pqsink footer metadata: it was
	// placed by its envelope columns (envelopeRanges), and rowLo and
	// rowHi bound its rows of the partition even when it holds one.
	scanned bool
	// lentKV is, for a scanned file, the footer metadata of one of the
	// sink's files with the same payload columns (lendFooters): the
	// records' schema its values are produced with.
	lentKV []meta.KeyValue
	// pruned says that the file's Bounds rule it out (Options.boundsMayMatch):
	// it stays in the plan, unopened, as long as it counts in the chain
	// rule and as a donor of lendFooters (so that the plan of the other
	// files is what it would be without the bounds), and is then dropped.
	pruned bool
}

// partitionPlan is the files of one source partition, by first offset.
type partitionPlan struct {
	topic     string
	partition int32
	files     []*fileRef
	bytes     int64
}

// name is the partition's checkpoint key, "topic/partition".
func (p *partitionPlan) name() string {
	return p.topic + "/" + strconv.Itoa(int(p.partition))
}

// plan lists the store and groups the objects that may hold matching
// records by source partition. done gives, per partition, the last offset
// a checkpoint says was produced (records up to it are skipped).
func (r *Replayer) plan(ctx context.Context, done map[string]int64) ([]*partitionPlan, error) {
	o := &r.opts
	parts := map[string]*partitionPlan{}
	add := func(f *fileRef) {
		k := f.topic + "/" + strconv.Itoa(int(f.partition))
		p := parts[k]
		if p == nil {
			p = &partitionPlan{topic: f.topic, partition: f.partition}
			parts[k] = p
		}
		p.files = append(p.files, f)
	}
	// A table may list a file twice (an older pqsink did, when two
	// groups wrote to one table): its records are replayed once.
	listed := map[string]bool{}
	for info, err := range r.objects(ctx) {
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", o.From, err)
		}
		if listed[info.Key] {
			continue
		}
		listed[info.Key] = true
		if o.Files == nil && (strings.HasPrefix(info.Key, archive.InternalPrefix) || !strings.HasSuffix(info.Key, o.Suffix)) {
			continue
		}
		r.stats.FilesListed.Add(1)
		f := &fileRef{key: info.Key, size: info.Size, deleted: r.deleted[info.Key]}
		if b := r.bounds[info.Key]; b != nil {
			f.pruned = !o.boundsMayMatch(b)
		}
		refs := []*fileRef{f}
		k, ok := r.keys.Match(info.Key)
		if ok && k.Topic == "" {
			// A template without {topic} does not say the file's topic:
			// the footer does.
			ok = false
		}
		if ok {
			f.topic, f.partition, f.first, f.chain = k.Topic, k.Partition, k.FirstOffset, k.Identity
		} else {
			if f.pruned {
				// Placing it would open it.
				r.stats.FilesSkipped.Add(1)
				r.stats.FilesPrunedByManifest.Add(1)
				continue
			}
			if refs, err = r.readFooter(ctx, f); err != nil {
				return nil, err
			}
			r.stats.FootersRead.Add(1)
		}
		if from, to, ok := r.keys.TimeBucket(info.Key, o.PathTimezone); ok && !o.timeMayMatch(from.UnixMilli(), to.UnixMilli()-1) {
			r.stats.FilesSkipped.Add(1)
			continue
		}
		kept := false
		for _, f := range refs {
			if !o.keepTopic(f.topic) || !o.keepPartition(f.partition) || f.first >= o.EndOffset ||
				(f.footer && (f.last < o.FromOffset || f.last <= doneOf(done, f))) {
				continue
			}
			add(f)
			kept = true
		}
		if !kept {
			r.stats.FilesSkipped.Add(1)
		}
	}
	out := make([]*partitionPlan, 0, len(parts))
	for _, p := range parts {
		sort.Slice(p.files, func(i, j int) bool {
			a, b := p.files[i], p.files[j]
			if a.first != b.first {
				return a.first < b.first
			}
			return a.key < b.key
		})
		// A file is followed in its chain by one that starts at or before
		// the first offset wanted: it ends before, so it holds nothing.
		from := max(o.FromOffset, doneOf(done, p.files[0])+1)
		nextInChain := map[string]int64{}
		keep := make([]*fileRef, 0, len(p.files))
		for i := len(p.files) - 1; i >= 0; i-- {
			f := p.files[i]
			if f.chain != "" {
				if next, ok := nextInChain[f.chain]; ok && next <= from {
					r.stats.FilesSkipped.Add(1)
					continue
				}
				nextInChain[f.chain] = f.first
			}
			keep = append(keep, f)
		}
		// keep was filled backwards.
		for i, j := 0, len(keep)-1; i < j; i, j = i+1, j-1 {
			keep[i], keep[j] = keep[j], keep[i]
		}
		p.files = keep
		if len(p.files) > 0 {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].topic != out[j].topic {
			return out[i].topic < out[j].topic
		}
		return out[i].partition < out[j].partition
	})
	if err := r.lendFooters(ctx, out); err != nil {
		return nil, err
	}
	return r.dropPruned(out), nil
}

// dropPruned takes the files their bounds rule out out of the plan, and
// the partitions left without files.
func (r *Replayer) dropPruned(parts []*partitionPlan) []*partitionPlan {
	out := parts[:0]
	for _, p := range parts {
		keep := p.files[:0]
		for _, f := range p.files {
			if f.pruned {
				r.stats.FilesSkipped.Add(1)
				r.stats.FilesPrunedByManifest.Add(1)
				continue
			}
			keep = append(keep, f)
			p.bytes += f.size
		}
		p.files = keep
		if len(p.files) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// doneOf is the last offset produced of f's partition by the checkpoint,
// or -1.
func doneOf(done map[string]int64, f *fileRef) int64 {
	if v, ok := done[f.topic+"/"+strconv.Itoa(int(f.partition))]; ok {
		return v
	}
	return -1
}

// readFooter opens f's footer and places the file by its pqsink.kafka.*
// metadata: one reference for each partition it holds records of (a file
// merged from several partitions holds several), each bounded to the rows
// of its partition. A data file of a table (Options.Files) without that
// metadata, which another engine wrote, is placed by its envelope columns
// instead (envelopeRanges).
func (r *Replayer) readFooter(ctx context.Context, f *fileRef) ([]*fileRef, error) {
	file, closeFile, err := r.open(ctx, f.key)
	if err != nil {
		return nil, err
	}
	defer closeFile()
	var parts []filePartition
	_, err = archive.ReadRanges(file.Metadata().KeyValueMetadata)
	scanned := errors.Is(err, archive.ErrForeign) && r.opts.Files != nil
	if scanned {
		if parts, err = envelopeRanges(ctx, file); err != nil {
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
		r.stats.EnvelopesRead.Add(1)
	} else {
		rs, err := footerRanges(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
		parts = partitionsOf(rs)
	}
	refs := make([]*fileRef, len(parts))
	for i, p := range parts {
		g := *f
		g.topic, g.partition, g.first, g.last, g.footer, g.scanned = p.topic, p.partition, p.first, p.last, true, scanned
		if len(parts) > 1 || scanned {
			g.rowLo, g.rowHi = p.rowLo, p.rowHi
		}
		refs[i] = &g
	}
	return refs, nil
}

// filePartition is what a file holds of one partition: the offsets of its
// ranges of the partition, and the run of rows they take.
type filePartition struct {
	topic        string
	partition    int32
	first, last  int64
	rowLo, rowHi int64
}

// partitionsOf groups a file's ranges, in row order, by partition. The
// ranges of a partition are consecutive (archive orders them by topic,
// partition and offset), and the rows of a range follow those of the
// ranges before it.
func partitionsOf(rs []archive.Range) []filePartition {
	var out []filePartition
	var row int64
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1].topic == r.Topic && out[n-1].partition == r.Partition {
			p := &out[n-1]
			p.first, p.last = min(p.first, r.First), max(p.last, r.Last)
			p.rowHi += r.Records
		} else {
			out = append(out, filePartition{topic: r.Topic, partition: r.Partition, first: r.First, last: r.Last, rowLo: row, rowHi: row + r.Records})
		}
		row += r.Records
	}
	return out
}

// footerRanges reads the pqsink.kafka.* entries of a footer: one range,
// or the several ranges of a merged file. A file without them was not
// written by the sink.
func footerRanges(f *reader.File) ([]archive.Range, error) {
	rs, err := archive.ReadRanges(f.Metadata().KeyValueMetadata)
	switch {
	case errors.Is(err, archive.ErrForeign):
		return nil, fmt.Errorf("%w: the footer has no %s or %s metadata; replay reads only files the sink wrote (with their _kafka envelope columns)", ErrNotPqsink, archive.FooterTopic, archive.FooterRanges)
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrNotPqsink, err)
	}
	if len(rs) == 1 {
		return rs, nil
	}
	// The rows of each partition are found by the records of the ranges
	// before it: they must add up.
	var records int64
	for _, r := range rs {
		records += r.Records
	}
	if records != f.NumRows() {
		return nil, fmt.Errorf("%w: the footer's Kafka ranges hold %d records, the file has %d rows", ErrNotPqsink, records, f.NumRows())
	}
	return rs, nil
}

// open opens an object as a Parquet file; the returned function closes it.
func (r *Replayer) open(ctx context.Context, key string) (*reader.File, func(), error) {
	ra, err := r.store.NewReaderAt(ctx, key)
	if err != nil {
		return nil, nil, fmt.Errorf("opening %s: %w", key, err)
	}
	r.stats.FilesOpened.Add(1)
	f, err := reader.Open(ra, ra.Size(), reader.MaxMemory(r.opts.MaxMemory))
	if err != nil {
		ra.Close()
		return nil, nil, fmt.Errorf("%s: %w", key, err)
	}
	return f, func() { ra.Close() }, nil
}
