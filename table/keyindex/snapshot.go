package keyindex

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// SnapshotInfo describes a snapshot written by WriteSnapshot.
type SnapshotInfo struct {
	// Seq numbers the snapshots of an index's history: 1 for its first,
	// one more for each committed one after.
	Seq uint64
	// Kind is KindFull (every live key) or KindDelta (the changes since
	// the snapshot BaseSeq, BaseID).
	Kind Kind
	// BaseSeq and BaseID name a delta's base snapshot; 0 for a full one.
	BaseSeq uint64
	BaseID  uint32
	// ID is the snapshot's checksum, which the snapshot after it names.
	ID uint32
	// Entries is the number of keys written (in a delta, deleted keys
	// too), and Bytes the size of the snapshot.
	Entries uint64
	Bytes   int64

	epoch uint64
	// next is the index's snapshot state once this snapshot is
	// committed.
	next snapState
}

// SnapshotMode chooses between a full and a delta snapshot.
type SnapshotMode int

const (
	// Auto writes a delta snapshot unless there is no committed snapshot,
	// MaxDeltas deltas have followed the last full one, or the deltas
	// since add up to half its size; then a full one.
	Auto SnapshotMode = iota
	// Full writes a full snapshot.
	Full
)

// WriteSnapshot writes the index as it is to w: a full snapshot, or a
// delta of the changes since the last committed snapshot, as mode and
// the history say. The snapshot counts as written once Commit is called
// with its info, after the caller made it durable and the table commit
// that references it succeeded; until then the next snapshot is again
// based on the last committed one, so a snapshot that was never committed
// loses nothing. The index must not change while it writes.
func (x *Index) WriteSnapshot(ctx context.Context, w io.Writer, mode SnapshotMode) (SnapshotInfo, error) {
	if x.closed {
		return SnapshotInfo{}, errors.New("keyindex: the index is closed")
	}
	s := x.snap
	full := mode == Full || s.seq == 0 || s.deltas >= x.opts.MaxDeltas || (s.fullBytes > 0 && s.deltaBytes*2 >= s.fullBytes)
	meta := fileMeta{kind: KindDelta, seq: s.seq + 1, baseSeq: s.seq, baseID: s.id}
	if full {
		meta = fileMeta{kind: KindFull, seq: s.seq + 1}
	}
	// A delta reads the changes after the committed snapshot's epoch: in
	// memory, and in the runs that hold any (the others hold no key's
	// latest change after it, since a newer run holds each key's newer
	// changes).
	minEpoch := uint64(0)
	if !full {
		minEpoch = s.epoch + 1
	}
	srcs := []source{&sliceIter{ents: x.memSorted(minEpoch)}}
	for i := len(x.runs) - 1; i >= 0; i-- {
		if x.runs[i].fr.meta.maxEpoch >= minEpoch {
			srcs = append(srcs, x.runs[i].fr.iter())
		}
	}
	m := newMergeIter(srcs)
	fw := newFileWriter(w, meta)
	for n := 0; ; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return SnapshotInfo{}, fmt.Errorf("keyindex: writing a snapshot: %w", err)
			}
		}
		e, ok := m.next()
		if !ok {
			break
		}
		if full && e.off < 0 || !full && e.epoch <= s.epoch {
			continue
		}
		e.epoch = 0 // epochs are the local history's, not the snapshot's
		if err := fw.add(e); err != nil {
			return SnapshotInfo{}, err
		}
	}
	if err := m.error(); err != nil {
		return SnapshotInfo{}, fmt.Errorf("keyindex: writing a snapshot: %w", err)
	}
	size, id, err := fw.finish()
	if err != nil {
		return SnapshotInfo{}, err
	}
	info := SnapshotInfo{Seq: meta.seq, Kind: meta.kind, BaseSeq: meta.baseSeq, BaseID: meta.baseID, ID: id,
		Entries: fw.meta.count, Bytes: size, epoch: x.epoch}
	info.next = snapState{seq: info.Seq, id: info.ID, epoch: info.epoch}
	if full {
		info.next.fullBytes = size
	} else {
		info.next.deltas, info.next.fullBytes, info.next.deltaBytes = s.deltas+1, s.fullBytes, s.deltaBytes+size
	}
	x.epoch++
	x.pending = append(x.pending, info)
	return info, nil
}

// Commit records that a snapshot WriteSnapshot returned is durable and
// referenced by a committed table state: the next delta is based on it.
// A writer whose table commits lag its snapshots (it writes the next
// snapshot before the commit of the last one is known) commits any of
// those written since the last committed one; the snapshots written
// before it can no longer be committed, those written after it can (each
// names its own base, and a chain of them stays whole). A snapshot not
// written since the last commit is refused.
func (x *Index) Commit(info SnapshotInfo) error {
	i := slices.Index(x.pending, info)
	if i < 0 {
		return fmt.Errorf("keyindex: committing snapshot %d (%08x), which is not one written since the last commit", info.Seq, info.ID)
	}
	x.snap = info.next
	x.pending = slices.Delete(x.pending, 0, i+1)
	return nil
}

// Object is a stored snapshot: *io.SectionReader and *bytes.Reader are
// ones.
type Object interface {
	io.ReaderAt
	Size() int64
}

// Load returns the index that a chain of snapshots holds: a full
// snapshot and the deltas after it, in order. Each delta must name the
// snapshot before it as its base; every byte is checked, and an error
// says what is wrong. The loaded state counts as committed.
func Load(ctx context.Context, opts Options, chain ...Object) (*Index, error) {
	if len(chain) == 0 {
		return nil, errors.New("keyindex: loading: no snapshot")
	}
	files := make([]*fileReader, len(chain))
	for i, o := range chain {
		fr, err := openFile(o, o.Size())
		if err != nil {
			return nil, fmt.Errorf("keyindex: snapshot %d of %d: %w", i+1, len(chain), err)
		}
		m := fr.meta
		switch {
		case i == 0 && m.kind != KindFull:
			return nil, fmt.Errorf("keyindex: %w: the first snapshot of a chain is a %s one, not a full one", ErrCorrupt, m.kind)
		case i > 0 && m.kind != KindDelta:
			return nil, fmt.Errorf("keyindex: %w: snapshot %d of the chain is a %s one, not a delta", ErrCorrupt, i+1, m.kind)
		case i > 0 && (m.baseSeq != files[i-1].meta.seq || m.baseID != files[i-1].id || m.seq != m.baseSeq+1):
			return nil, fmt.Errorf("keyindex: %w: snapshot %d (sequence %d) is based on %d (%08x), the snapshot before it is %d (%08x)",
				ErrCorrupt, i+1, m.seq, m.baseSeq, m.baseID, files[i-1].meta.seq, files[i-1].id)
		case m.seq == 0:
			return nil, fmt.Errorf("keyindex: %w: snapshot %d has sequence number 0", ErrCorrupt, i+1)
		}
		files[i] = fr
	}
	x, err := New(opts)
	if err != nil {
		return nil, err
	}
	if err := x.load(ctx, files); err != nil {
		x.Close()
		return nil, err
	}
	last := files[len(files)-1]
	x.snap = snapState{seq: last.meta.seq, id: last.id, epoch: x.epoch, deltas: len(files) - 1, fullBytes: files[0].size}
	for _, f := range files[1:] {
		x.snap.deltaBytes += f.size
	}
	x.epoch++
	return x, nil
}

func (x *Index) load(ctx context.Context, files []*fileReader) error {
	// A full snapshot that the in-memory table could not hold becomes a
	// run as it is (it is sorted, in the runs' format): a copy, not a
	// million inserts and spills.
	if full := files[0]; int64(full.meta.count)*memEntryBytes+full.size > x.opts.MemoryLimit {
		if err := x.loadAsRun(ctx, full); err != nil {
			return err
		}
		files = files[1:]
		return x.loadChanges(ctx, files, 1)
	}
	x.mem = make(map[string]memEntry, files[0].meta.count) // grown once, not by doubling
	return x.loadChanges(ctx, files, 0)
}

// loadAsRun copies a full snapshot into a run, checking every entry as it
// builds the run's bloom filter.
func (x *Index) loadAsRun(ctx context.Context, full *fileReader) error {
	path := filepath.Join(x.dir, fmt.Sprintf("run-%06d.kix", x.nextRun))
	x.nextRun++
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("keyindex: loading: %w", err)
	}
	fail := func(err error) error {
		f.Close()
		os.Remove(path)
		return err
	}
	if _, err := io.Copy(f, io.NewSectionReader(full.r, 0, full.size)); err != nil {
		return fail(fmt.Errorf("keyindex: loading into %s: %w", path, err))
	}
	fr, err := openFile(f, full.size)
	if err != nil {
		return fail(fmt.Errorf("keyindex: snapshot 1: %w", err))
	}
	bl := newBloom(x.seed, fr.meta.count)
	it := fr.iter()
	for n := 0; ; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return fail(fmt.Errorf("keyindex: loading: %w", err))
			}
		}
		e, ok := it.next()
		if !ok {
			break
		}
		if e.off < 0 {
			return fail(fmt.Errorf("keyindex: %w: the full snapshot holds a deleted key", ErrCorrupt))
		}
		bl.add(e.key)
	}
	if err := it.error(); err != nil {
		return fail(fmt.Errorf("keyindex: snapshot 1: %w", err))
	}
	mem := int64(len(bl.bits) * 8)
	for _, b := range fr.blocks {
		mem += int64(len(b.firstKey)) + 48
	}
	x.addRun(&run{path: path, f: f, fr: fr, bloom: bl, mem: mem})
	x.live = int64(fr.meta.count)
	return nil
}

// loadChanges applies snapshots: the first one, when first is 0, is the
// full one, the others deltas; first is the number of files before them.
func (x *Index) loadChanges(ctx context.Context, files []*fileReader, first int) error {
	for j, fr := range files {
		i := j + first
		it := fr.iter()
		for n := 0; ; n++ {
			if n%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("keyindex: loading: %w", err)
				}
			}
			e, ok := it.next()
			if !ok {
				break
			}
			if i == 0 {
				// A full snapshot's keys are distinct and live: no lookup.
				if e.off < 0 {
					return fmt.Errorf("keyindex: %w: the full snapshot holds a deleted key", ErrCorrupt)
				}
				x.mem[string(e.key)] = memEntry{off: e.off, epoch: x.epoch}
				x.memBytes += memCost(e.key)
				x.live++
				if x.overLimit() {
					if err := x.spill(); err != nil {
						return err
					}
				}
				continue
			}
			if _, _, err := x.set(e.key, e.off); err != nil {
				return err
			}
		}
		if err := it.error(); err != nil {
			return fmt.Errorf("keyindex: snapshot %d: %w", i+1, err)
		}
	}
	return nil
}
