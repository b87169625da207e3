package table

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	itable "github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
	"github.com/google/uuid"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
)

// Upsert tables delete a key's previous row when a record replaces or
// deletes it. The key index knows that row by the Kafka offset of its
// record, which every rewrite of the table keeps in the row's
// _kafka.offset column; a commit turns each offset into a data file and a
// row position (resolveDeletes) and deletes the row there: a deletion
// vector on a format version 3 table, a position delete file on version
// 2, added in the snapshot that appends the commit's data files and
// carries its exactly-once state.

// KafkaPartition is one partition of a Kafka topic.
type KafkaPartition struct {
	Topic     string
	Partition int32
}

// ErrNoLiveRow is wrapped by the error of a Commit given, with
// DeleteOffsets, a Kafka offset that no row of the table holds, live or
// deleted (a *NoLiveRowError): the caller's index and the table
// disagree, or another engine removed the row (a copy-on-write DELETE,
// which rewrites the file without it). Nothing was committed.
var ErrNoLiveRow = errors.New("no row of the table holds the Kafka record")

// NoLiveRowError is the error of a Commit given offsets that no row of
// the table holds (ErrNoLiveRow). The caller may commit again without
// them, once it knows why they are missing.
type NoLiveRowError struct {
	// Offsets are the offsets no row holds, sorted, by Kafka partition.
	Offsets map[KafkaPartition][]int64
}

func (e *NoLiveRowError) Error() string {
	var missing []string
	for _, kp := range slices.SortedFunc(maps.Keys(e.Offsets), compareKafkaPartitions) {
		for _, off := range e.Offsets[kp] {
			missing = append(missing, fmt.Sprintf("%s[%d]@%d", kp.Topic, kp.Partition, off))
		}
	}
	more := ""
	if len(missing) > 10 {
		more = fmt.Sprintf(" and %d more", len(missing)-10)
		missing = missing[:10]
	}
	return fmt.Sprintf("%s: %s%s (no live data file holds them, and no delete deleted them: the key index and the table disagree, or another engine removed the rows)", ErrNoLiveRow, strings.Join(missing, ", "), more)
}

// Unwrap makes errors.Is(err, ErrNoLiveRow) hold.
func (e *NoLiveRowError) Unwrap() error { return ErrNoLiveRow }

// DeleteOffsets gives Commit the rows it deletes, by the Kafka offset of
// the record each holds: per Kafka partition, the offsets of the rows that
// the records of the commit replace or delete. Commit finds each offset in
// the _kafka.offset column of the table's live data files of that
// partition whose manifest bounds cover it, and of the files the commit
// appends (a key replaced twice between two commits), and deletes the row
// in the snapshot that appends those files. A row deleted already is left
// as it is (a commit tried again); an offset in no row fails the commit
// with ErrNoLiveRow.
//
// The deletes of a partition go with its state: when the table's state
// already holds the progress that the commit's state gives the partition,
// an earlier attempt of the same commit made it, deletes included, and
// the partition's deletes are not resolved again (a compaction may have
// dropped their rows since). A partition whose offsets are given must
// therefore be in the commit's state, with its progress past the records
// that deleted them.
func DeleteOffsets(offsets map[KafkaPartition][]int64) CommitOption {
	return func(o *commitOptions) { o.deletes = offsets }
}

// pendingDeletes returns, of deletes, the offsets of the partitions whose
// progress the commit moves (their records are not in the table yet),
// sorted and without repeats: view is what the table holds, by group
// (State.As), state what the commit gives group's partitions.
func pendingDeletes(deletes map[KafkaPartition][]int64, group string, state, view State) map[KafkaPartition][]int64 {
	out := map[KafkaPartition][]int64{}
	for kp, offs := range deletes {
		if len(offs) == 0 {
			continue
		}
		k := Partition{group, kp.Topic, kp.Partition}
		if p, ok := state[k]; ok {
			if c, held := view[k]; held && c.equal(c.Merge(p)) {
				continue // the table holds the commit already
			}
		}
		s := slices.Clone(offs)
		slices.Sort(s)
		out[kp] = slices.Compact(s)
	}
	return out
}

// deleteTarget is a data file rows of which a commit deletes.
type deleteTarget struct {
	df iceberg.DataFile
	// deleted are the rows deleted already (nil when none are).
	deleted *Positions
	// vectors are the live deletion vectors of the file: the new one
	// replaces them.
	vectors []iceberg.DataFile
	// rows are the positions the commit deletes, in increasing order.
	rows []int64
}

// candidate is a data file that may hold rows of wanted offsets.
type candidate struct {
	df      iceberg.DataFile
	env     Envelope
	deleted *Positions
	deletes []string // keys of its delete files (deleteKey)
}

// rowDeletes is what resolveDeletes found: the files to delete rows of,
// by location, and how many offsets were deleted already.
type rowDeletes struct {
	targets map[string]*deleteTarget
	// already is how many offsets had all their rows deleted already.
	already int
}

// rows is how many rows the deletes delete.
func (r *rowDeletes) rows() int64 {
	var n int64
	for _, t := range r.targets {
		n += int64(len(t.rows))
	}
	return n
}

// resolveDeletes finds the rows of want (sorted offsets by Kafka
// partition) among the live data files of tbl's current snapshot and the
// files add, which the commit appends (not in the table yet, none of
// their rows deleted).
func (h *Handle) resolveDeletes(ctx context.Context, tbl *itable.Table, want map[KafkaPartition][]int64, add []iceberg.DataFile) (*rowDeletes, error) {
	md := tbl.Metadata()
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	snap := tbl.CurrentSnapshot()
	fieldsOf := snap
	if fieldsOf == nil {
		fieldsOf = &itable.Snapshot{}
	}
	tsF, offF, partF, topicF := envelopeFields(md, fieldsOf)
	if offF.id == 0 {
		return nil, &NoLiveRowError{Offsets: want} // the table has no _kafka.offset column
	}
	var cands []candidate
	var deleteFiles map[string]snapFile
	if snap != nil {
		var live []liveFile
		live, deleteFiles, err = snapshotFiles(ctx, tbl, snap)
		if err != nil {
			return nil, err
		}
		for _, f := range live {
			env := envelopeOf(f.df, tsF, offF, partF, topicF)
			if mayHold(env, want) {
				cands = append(cands, candidate{df: f.df, env: env, deletes: f.deletes})
			}
		}
		// The rows already deleted from the candidates, by the snapshot's
		// delete files as replay applies them.
		seqs := make(map[string]int64, len(live))
		for _, f := range live {
			seqs[f.Location] = f.seq
		}
		var data, dels []snapFile
		seen := map[string]bool{}
		for _, c := range cands {
			data = append(data, snapFile{df: c.df, seq: seqs[c.df.FilePath()]})
			for _, d := range c.deletes {
				if !seen[d] {
					seen[d] = true
					dels = append(dels, deleteFiles[d])
				}
			}
		}
		specs := func(id int32) *iceberg.PartitionSpec { return md.PartitionSpecByID(int(id)) }
		deleted, err := applyDeletes(ctx, fsys, specs, h.name, snap.SnapshotID, data, dels)
		if err != nil {
			return nil, err
		}
		for i := range cands {
			cands[i].deleted = deleted[cands[i].df.FilePath()]
		}
	}
	for _, df := range add {
		env := envelopeOf(df, tsF, offF, partF, topicF)
		if mayHold(env, want) {
			cands = append(cands, candidate{df: df, env: env})
		}
	}

	type hit struct{ live, deleted bool }
	found := map[KafkaPartition]map[int64]*hit{}
	for kp, offs := range want {
		m := make(map[int64]*hit, len(offs))
		for _, o := range offs {
			m[o] = &hit{}
		}
		found[kp] = m
	}
	out := &rowDeletes{targets: map[string]*deleteTarget{}}
	for _, c := range cands {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var rows []int64
		err := scanOffsets(ctx, fsys, c, want, offF, partF, topicF, func(kp KafkaPartition, off, row int64) {
			st := found[kp][off]
			if st == nil {
				return
			}
			if c.deleted != nil && c.deleted.Contains(row) {
				st.deleted = true
				return
			}
			st.live = true
			rows = append(rows, row)
		})
		if err != nil {
			return nil, fmt.Errorf("data file %s: reading its Kafka offsets: %w", c.df.FilePath(), err)
		}
		if len(rows) == 0 {
			continue
		}
		slices.Sort(rows)
		t := &deleteTarget{df: c.df, deleted: c.deleted, rows: slices.Compact(rows)}
		for _, d := range c.deletes {
			if sf, ok := deleteFiles[d]; ok && sf.df.FileFormat() == iceberg.PuffinFile {
				t.vectors = append(t.vectors, sf.df)
			}
		}
		out.targets[c.df.FilePath()] = t
	}
	missing := map[KafkaPartition][]int64{}
	for kp, offs := range want {
		for _, off := range offs {
			switch st := found[kp][off]; {
			case st.live:
			case st.deleted:
				out.already++
			default:
				missing[kp] = append(missing[kp], off)
			}
		}
	}
	if len(missing) > 0 {
		return nil, &NoLiveRowError{Offsets: missing}
	}
	return out, nil
}

func compareKafkaPartitions(a, b KafkaPartition) int {
	return comparePartitions(Partition{"", a.Topic, a.Partition}, Partition{"", b.Topic, b.Partition})
}

// mayHold says whether a data file of envelope bounds env may hold a
// record of want: a partition of want within its topic and partition
// bounds with an offset within its offset bounds. An unknown bound rules
// nothing out.
func mayHold(env Envelope, want map[KafkaPartition][]int64) bool {
	for kp, offs := range want {
		if holdsPartition(env, kp) && anyWithin(env.Offset, offs) {
			return true
		}
	}
	return false
}

// holdsPartition says whether the bounds env may hold records of kp.
func holdsPartition(env Envelope, kp KafkaPartition) bool {
	p := int64(kp.Partition)
	if env.Partition.HasMin && p < env.Partition.Min || env.Partition.HasMax && p > env.Partition.Max {
		return false
	}
	// A lower bound is at most the least topic (a prefix of it when
	// truncated); an upper bound at least the greatest.
	if env.Topic.HasMin && kp.Topic < env.Topic.Min || env.Topic.HasMax && kp.Topic > env.Topic.Max {
		return false
	}
	return true
}

// pinned says whether the bounds env hold records of kp alone: its
// partition and topic columns need not be read.
func pinned(env Envelope, kp KafkaPartition) bool {
	p := int64(kp.Partition)
	return env.Partition.HasMin && env.Partition.HasMax && env.Partition.Min == p && env.Partition.Max == p &&
		env.Topic.HasMin && env.Topic.HasMax && env.Topic.Min == kp.Topic && env.Topic.Max == kp.Topic
}

// anyWithin says whether one of offs (sorted) is within r.
func anyWithin(r Range[int64], offs []int64) bool {
	i := 0
	if r.HasMin {
		i, _ = slices.BinarySearch(offs, r.Min)
	}
	return i < len(offs) && (!r.HasMax || offs[i] <= r.Max)
}

// maxOffsetsMemory bounds what reading one data file's envelope columns
// may hold.
const maxOffsetsMemory = 256 << 20

// scanOffsets reads the _kafka columns of the data file of c and calls
// hit with the Kafka partition, offset and row position of each row whose
// offset want has for its partition. A file without a _kafka.offset column
// holds no Kafka record. Row groups whose offset statistics hold none of
// the offsets wanted are skipped.
func scanOffsets(ctx context.Context, fsys icebergio.IO, c candidate, want map[KafkaPartition][]int64, offF, partF, topicF envelopeField, hit func(kp KafkaPartition, off, row int64)) error {
	// The partitions the file may hold; with one whose bounds pin it,
	// only the offsets are read.
	var kps []KafkaPartition
	for kp, offs := range want {
		if holdsPartition(c.env, kp) && anyWithin(c.env.Offset, offs) {
			kps = append(kps, kp)
		}
	}
	only := len(kps) == 1 && pinned(c.env, kps[0])

	file, err := fsys.Open(c.df.FilePath())
	if err != nil {
		return err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return err
	}
	f, err := reader.Open(file, st.Size(), reader.MaxMemory(maxOffsetsMemory))
	if err != nil {
		return err
	}
	offLeaf := envelopeLeaf(f, offF.id, "_kafka.offset", meta.TypeInt64)
	if offLeaf < 0 {
		return nil
	}
	cols := []int{offLeaf}
	if !only {
		partLeaf := envelopeLeaf(f, partF.id, "_kafka.partition", meta.TypeInt32)
		topicLeaf := envelopeLeaf(f, topicF.id, "_kafka.topic", meta.TypeByteArray)
		if partLeaf < 0 || topicLeaf < 0 {
			return nil // not a file of Kafka records pqsink can place
		}
		cols = append(cols, partLeaf, topicLeaf)
	}
	// The least and greatest offset wanted.
	lo, hi := int64(1<<63-1), int64(-1<<63)
	for _, kp := range kps {
		offs := want[kp]
		lo, hi = min(lo, offs[0]), max(hi, offs[len(offs)-1])
	}
	var base int64
	for g, rg := range f.Metadata().RowGroups {
		if err := ctx.Err(); err != nil {
			return err
		}
		if skipGroup(rg, offLeaf, lo, hi) {
			base += rg.NumRows
			continue
		}
		cur, err := f.ColumnCursors(g, cols)
		if err != nil {
			return fmt.Errorf("row group %d: %w", g, err)
		}
		err = func() error {
			defer func() {
				for _, c := range cur {
					c.Release()
				}
			}()
			for row := base; !cur[0].EOF(); row++ {
				if cur[0].HasValue() {
					off := cur[0].Int64()
					if only {
						kp := kps[0]
						if _, ok := slices.BinarySearch(want[kp], off); ok {
							hit(kp, off, row)
						}
					} else if cur[1].HasValue() && cur[2].HasValue() {
						kp := KafkaPartition{Topic: string(cur[2].Bytes()), Partition: cur[1].Int32()}
						if _, ok := slices.BinarySearch(want[kp], off); ok {
							hit(kp, off, row)
						}
					}
				}
				for _, c := range cur {
					if c.EOF() {
						return fmt.Errorf("row %d: the envelope columns have different lengths", row)
					}
					if err := c.Advance(); err != nil {
						return err
					}
				}
			}
			return nil
		}()
		if err != nil {
			return fmt.Errorf("row group %d: %w", g, err)
		}
		base += rg.NumRows
	}
	return nil
}

// envelopeLeaf finds the column of an envelope field in f: by the
// table's field id id, or by its path when the file has no column of
// that id; -1 when the file has neither, or it is not of the physical
// type typ outside lists and maps.
func envelopeLeaf(f *reader.File, id int, path string, typ meta.Type) int {
	var n = -1
	for i, l := range f.Schema().Leaves() {
		if id != 0 && l.HasFieldID && int(l.FieldID) == id {
			n = i
			break
		}
		if l.PathString() == path && n < 0 {
			n = i
		}
	}
	if n < 0 {
		return -1
	}
	l := f.Schema().Leaves()[n]
	if l.Physical != typ || l.MaxRep != 0 {
		return -1
	}
	return n
}

// skipGroup says whether row group rg's statistics of the offset column
// col exclude every offset from lo to hi.
func skipGroup(rg meta.RowGroup, col int, lo, hi int64) bool {
	if col >= len(rg.Columns) || rg.Columns[col].MetaData == nil {
		return false
	}
	s := rg.Columns[col].MetaData.Statistics
	if s == nil || len(s.MinValue) != 8 || len(s.MaxValue) != 8 {
		return false
	}
	gmin, gmax := int64(binary.LittleEndian.Uint64(s.MinValue)), int64(binary.LittleEndian.Uint64(s.MaxValue))
	return hi < gmin || lo > gmax
}

// deleteFilesFor writes the delete files of d into the table's data
// folder, under names no other attempt takes: deletion vectors (one Puffin
// file, a blob a data file, each holding the file's new and earlier
// deleted rows) on format version 3, position delete files (one a
// partition) on version 2. It returns the delete files to add and the
// deletion vectors they replace.
func deleteFilesFor(ctx context.Context, tbl *itable.Table, d *rowDeletes) (add, replaced []iceberg.DataFile, err error) {
	if len(d.targets) == 0 {
		return nil, nil, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, nil, err
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return nil, nil, errors.New("the table's file system cannot write")
	}
	md := tbl.Metadata()
	locs := slices.Sorted(maps.Keys(d.targets))
	base := strings.TrimSuffix(tbl.Location(), "/") + "/data/"
	if md.Version() >= 3 {
		w := dv.NewDVWriter(wfs, func(id int32) *iceberg.PartitionSpec { return md.PartitionSpecByID(int(id)) })
		for _, loc := range locs {
			t := d.targets[loc]
			if t.deleted != nil {
				w.Load(loc, t.deleted.b, t.df.SpecID(), t.df.Partition())
			}
			if err := w.Add(loc, t.rows, t.df.SpecID(), t.df.Partition()); err != nil {
				return nil, nil, err
			}
			replaced = append(replaced, t.vectors...)
		}
		name := base + deleteFileName("puffin")
		if add, err = w.Flush(ctx, name); err != nil {
			return nil, nil, fmt.Errorf("writing the deletion vectors %s: %w", name, err)
		}
		return add, replaced, nil
	}
	if md.Version() < 2 {
		return nil, nil, fmt.Errorf("deleting rows needs format version 2 or more; the table is version %d", md.Version())
	}
	// One position delete file a partition: the spec applies a position
	// delete to data files of its own partition.
	groups := map[string][]*deleteTarget{}
	var keys []string
	for _, loc := range locs {
		t := d.targets[loc]
		k := fmt.Sprintf("%d/%v", t.df.SpecID(), partitionKey(t.df.Partition()))
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], t)
	}
	for _, k := range keys {
		df, err := writePositionDeletes(ctx, wfs, md, base+deleteFileName("parquet"), groups[k])
		if err != nil {
			return nil, nil, err
		}
		add = append(add, df)
	}
	return add, nil, nil
}

// partitionKey writes a partition tuple in a form equal for equal
// tuples: its fields in id order, values as partitionValue gives them.
func partitionKey(p map[int]any) string {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(p)) {
		fmt.Fprintf(&b, "%d=%#v;", id, partitionValue(p[id]))
	}
	return b.String()
}

// deleteFileName names a delete file of a commit's attempt: random, so
// that an attempt that lost (a conflict, a crash) leaves an orphan that
// no later attempt writes over.
func deleteFileName(ext string) string {
	return "deletes-" + uuid.NewString() + "." + ext
}
