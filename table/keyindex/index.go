package keyindex

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"slices"
)

// Options configure an Index. The zero value holds the defaults.
type Options struct {
	// Dir is where the index creates a directory of its own for the runs
	// it spills, named after the process (keyindex-PID-…); the directory
	// is removed by Close, and RemoveStale removes those of processes
	// that ended without closing. Defaults to os.TempDir().
	Dir string
	// MemoryLimit bounds the bytes the index keeps in memory: the
	// in-memory table, and the block index and bloom filter of each run
	// spilled. Past it, the in-memory table is spilled as a sorted run.
	// The runs' parts take about 1.5 bytes a key; past three quarters of
	// the limit (some 500k keys a MiB), the index keeps a quarter for the
	// table and goes over. At least MinMemoryLimit. Defaults to 64 MiB.
	MemoryLimit int64
	// MaxRuns is the number of spilled runs past which they are merged
	// into one. Defaults to 8.
	MaxRuns int
	// MaxDeltas is the number of delta snapshots after a full one past
	// which the next snapshot is full again; negative, every snapshot is
	// full. Defaults to 16.
	MaxDeltas int
}

// MinMemoryLimit is the least Options.MemoryLimit.
const MinMemoryLimit = 1 << 20

// memEntryBytes is what a key of the in-memory table costs besides its
// bytes (rounded up to 8, as the allocator does for small keys): the
// map's slot (string header, value, control byte, the load factor's
// slack), measured with runtime.MemStats on Go's swiss-table maps
// (BenchmarkPut reports both the heap's and the accounted bytes a key).
const memEntryBytes = 80

// memCost is what a key costs in the in-memory table.
func memCost(key []byte) int64 { return int64((len(key)+7)&^7) + memEntryBytes }

func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" {
		o.Dir = os.TempDir()
	}
	if o.MemoryLimit == 0 {
		o.MemoryLimit = 64 << 20
	}
	if o.MemoryLimit < MinMemoryLimit {
		return o, fmt.Errorf("keyindex: a memory limit of %d bytes, less than the least, %d", o.MemoryLimit, MinMemoryLimit)
	}
	if o.MaxRuns == 0 {
		o.MaxRuns = 8
	}
	if o.MaxRuns < 1 {
		return o, fmt.Errorf("keyindex: MaxRuns %d, at least 1", o.MaxRuns)
	}
	if o.MaxDeltas == 0 {
		o.MaxDeltas = 16
	}
	if o.MaxDeltas < 0 {
		o.MaxDeltas = 0
	}
	return o, nil
}

// Index maps row keys to the Kafka offset of their live row, for one
// Kafka partition. It is not safe for concurrent use: the partition's
// owner drives it from one goroutine.
type Index struct {
	opts     Options
	dir      string
	seed     maphash.Seed
	mem      map[string]memEntry
	memBytes int64  // the in-memory table's accounted bytes
	runs     []*run // oldest first
	runMem   int64  // the runs' in-memory parts
	disk     int64  // the runs' bytes on disk
	nextRun  int
	live     int64
	epoch    uint64 // the epoch of changes made now
	scratch  []byte
	snap     snapState
	pending  []SnapshotInfo // written since the last commit, oldest first
	closed   bool
}

type memEntry struct {
	off   int64 // < 0: deleted
	epoch uint64
}

// snapState is what the index knows of the last committed snapshot.
type snapState struct {
	seq        uint64 // 0: none
	id         uint32
	epoch      uint64 // changes of this epoch and before are in it
	deltas     int    // delta snapshots since the full one
	fullBytes  int64
	deltaBytes int64
}

// New returns an empty index.
func New(opts Options) (*Index, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(opts.Dir, spillPrefix(os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("keyindex: creating the spill directory: %w", err)
	}
	return &Index{opts: opts, dir: dir, seed: maphash.MakeSeed(), mem: map[string]memEntry{}, epoch: 1}, nil
}

// SetMemoryLimit changes Options.MemoryLimit: an owner that shares its
// memory among the indexes of several partitions gives each its share
// as their number changes. A smaller limit spills at the next change.
func (x *Index) SetMemoryLimit(n int64) error {
	if n < MinMemoryLimit {
		return fmt.Errorf("keyindex: a memory limit of %d bytes, less than the least, %d", n, MinMemoryLimit)
	}
	x.opts.MemoryLimit = n
	return nil
}

// Stats describes an index's size.
type Stats struct {
	// Keys is the number of live keys.
	Keys int64
	// MemoryBytes is the bytes accounted in memory (the in-memory table,
	// the runs' block indexes and bloom filters).
	MemoryBytes int64
	// DiskBytes is the bytes of the runs spilled to disk.
	DiskBytes int64
	// Runs is the number of runs spilled.
	Runs int
}

// Stats returns the index's size.
func (x *Index) Stats() Stats {
	return Stats{Keys: x.live, MemoryBytes: x.memBytes + x.runMem, DiskBytes: x.disk, Runs: len(x.runs)}
}

// Len returns the number of live keys.
func (x *Index) Len() int64 { return x.live }

func checkKey(key []byte) error {
	if len(key) == 0 {
		return errors.New("keyindex: an empty key")
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("keyindex: a key of %d bytes, more than the %d the index takes", len(key), MaxKeyLen)
	}
	return nil
}

// lookup returns a key's latest change, in memory or in the newest run
// that holds it.
func (x *Index) lookup(key []byte) (entry, bool, error) {
	if x.closed {
		return entry{}, false, errors.New("keyindex: the index is closed")
	}
	if e, ok := x.mem[string(key)]; ok {
		return entry{key: key, off: e.off, epoch: e.epoch}, true, nil
	}
	for i := len(x.runs) - 1; i >= 0; i-- {
		e, ok, err := x.runs[i].get(key, &x.scratch)
		if err != nil || ok {
			return e, ok, err
		}
	}
	return entry{}, false, nil
}

// Get returns the offset of a key's live row, and false when the key has
// none.
func (x *Index) Get(key []byte) (int64, bool, error) {
	if err := checkKey(key); err != nil {
		return 0, false, err
	}
	e, ok, err := x.lookup(key)
	if err != nil || !ok || e.off < 0 {
		return 0, false, err
	}
	return e.off, true, nil
}

// Put sets the offset of a key's live row, and returns the offset it
// replaces, if the key had one. offset is a Kafka offset, at least 0.
func (x *Index) Put(key []byte, offset int64) (prev int64, had bool, err error) {
	if err := checkKey(key); err != nil {
		return 0, false, err
	}
	if offset < 0 {
		return 0, false, fmt.Errorf("keyindex: a negative offset, %d", offset)
	}
	return x.set(key, offset)
}

// Delete removes a key, and returns the offset of the live row it had, if
// it had one.
func (x *Index) Delete(key []byte) (prev int64, had bool, err error) {
	if err := checkKey(key); err != nil {
		return 0, false, err
	}
	return x.set(key, -1)
}

func (x *Index) set(key []byte, off int64) (int64, bool, error) {
	e, ok, err := x.lookup(key)
	if err != nil {
		return 0, false, err
	}
	had := ok && e.off >= 0
	if !had && off < 0 {
		return 0, false, nil // nothing to delete
	}
	if _, inMem := x.mem[string(key)]; !inMem {
		x.memBytes += memCost(key)
	}
	x.mem[string(key)] = memEntry{off: off, epoch: x.epoch}
	switch {
	case had && off < 0:
		x.live--
	case !had && off >= 0:
		x.live++
	}
	if x.overLimit() {
		if err := x.spill(); err != nil {
			return 0, false, err
		}
	}
	if had {
		return e.off, true, nil
	}
	return 0, false, nil
}

// overLimit reports whether the in-memory table must be spilled: when it
// and the runs' in-memory parts pass the limit, or, once the runs' parts
// take more than three quarters of it (about 1.5 bytes a key, so past
// some 500k keys a MiB), when the table alone passes a quarter: then the
// index goes over its limit rather than spilling a run at every change.
func (x *Index) overLimit() bool {
	return x.memBytes+x.runMem > x.opts.MemoryLimit && x.memBytes > x.opts.MemoryLimit/4
}

// memSorted returns the in-memory table's entries of minEpoch and after
// in key order.
func (x *Index) memSorted(minEpoch uint64) []entry {
	// Sorted by the keys' first 8 bytes held in the slice first, then by
	// the keys: most comparisons then touch no key, whose bytes lie all
	// over the heap (BenchmarkWriteSnapshot at 1M keys: 2.6 s against
	// 4.3 s sorting by the keys' bytes alone, on a loaded machine).
	type sortEntry struct {
		prefix uint64
		e      entry
	}
	var ses []sortEntry
	for k, e := range x.mem {
		if e.epoch >= minEpoch {
			var p [8]byte
			copy(p[:], k)
			ses = append(ses, sortEntry{prefix: binary.BigEndian.Uint64(p[:]), e: entry{key: []byte(k), off: e.off, epoch: e.epoch}})
		}
	}
	slices.SortFunc(ses, func(a, b sortEntry) int {
		if a.prefix != b.prefix {
			return cmp.Compare(a.prefix, b.prefix)
		}
		return bytes.Compare(a.e.key, b.e.key)
	})
	ents := make([]entry, len(ses))
	for i := range ses {
		ents[i] = ses[i].e
	}
	return ents
}

// spill writes the in-memory table as a run, and merges the runs when
// there are more than MaxRuns.
func (x *Index) spill() error {
	if len(x.mem) == 0 {
		return nil
	}
	ents := x.memSorted(0)
	r, err := x.writeRun(&sliceIter{ents: ents}, uint64(len(ents)), false)
	if err != nil {
		return err
	}
	x.addRun(r)
	clear(x.mem)
	x.mem = map[string]memEntry{} // a cleared map keeps its buckets
	x.memBytes = 0
	if len(x.runs) > x.opts.MaxRuns {
		return x.mergeRuns()
	}
	return nil
}

func (x *Index) addRun(r *run) {
	x.runs = append(x.runs, r)
	x.runMem += r.mem
	x.disk += r.fr.size
}

// mergeRuns merges every run into one. Since the in-memory table is empty
// and the runs are all there is, a deletion already in a committed
// snapshot is dropped.
func (x *Index) mergeRuns() error {
	srcs := make([]source, 0, len(x.runs))
	var n uint64
	for i := len(x.runs) - 1; i >= 0; i-- {
		srcs = append(srcs, x.runs[i].fr.iter())
		n += x.runs[i].fr.meta.count
	}
	r, err := x.writeRun(newMergeIter(srcs), n, true)
	if err != nil {
		return err
	}
	var errs []error
	for _, old := range x.runs {
		errs = append(errs, old.close())
	}
	x.runs, x.runMem, x.disk = nil, 0, 0
	x.addRun(r)
	return errors.Join(errs...)
}

// writeRun writes a run of the entries src gives (at most n), dropping
// committed deletions when dropDeleted.
func (x *Index) writeRun(src source, n uint64, dropDeleted bool) (*run, error) {
	path := filepath.Join(x.dir, fmt.Sprintf("run-%06d.kix", x.nextRun))
	x.nextRun++
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("keyindex: spilling: %w", err)
	}
	fail := func(err error) (*run, error) {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	bl := newBloom(x.seed, n)
	fw := newFileWriter(f, fileMeta{kind: kindRun})
	for {
		e, ok := src.next()
		if !ok {
			break
		}
		if dropDeleted && e.off < 0 && e.epoch <= x.snap.epoch {
			continue
		}
		bl.add(e.key)
		if err := fw.add(e); err != nil {
			return fail(err)
		}
	}
	if err := src.error(); err != nil {
		return fail(err)
	}
	size, _, err := fw.finish()
	if err != nil {
		return fail(fmt.Errorf("keyindex: spilling to %s: %w", path, err))
	}
	fr, err := openFile(f, size)
	if err != nil {
		return fail(fmt.Errorf("keyindex: reading back %s: %w", path, err))
	}
	mem := int64(len(bl.bits) * 8)
	for _, b := range fr.blocks {
		mem += int64(len(b.firstKey)) + 48
	}
	return &run{path: path, f: f, fr: fr, bloom: bl, mem: mem}, nil
}

// Close removes the spilled runs and their directory. The index is not
// usable after.
func (x *Index) Close() error {
	if x.closed {
		return nil
	}
	x.closed = true
	var errs []error
	for _, r := range x.runs {
		errs = append(errs, r.close())
	}
	x.runs, x.mem = nil, nil
	errs = append(errs, os.RemoveAll(x.dir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("keyindex: closing: %w", err)
	}
	return nil
}

// source gives entries in key order.
type source interface {
	next() (entry, bool)
	error() error
}

type sliceIter struct {
	ents []entry
	pos  int
}

func (s *sliceIter) next() (entry, bool) {
	if s.pos >= len(s.ents) {
		return entry{}, false
	}
	s.pos++
	return s.ents[s.pos-1], true
}

func (s *sliceIter) error() error { return nil }

func (it *fileIter) error() error { return it.err }

// mergeIter merges sources, newest first: of a key in several, the first
// source's entry wins.
type mergeIter struct {
	srcs  []source
	heads []entry
	ok    []bool
}

func newMergeIter(srcs []source) *mergeIter {
	m := &mergeIter{srcs: srcs, heads: make([]entry, len(srcs)), ok: make([]bool, len(srcs))}
	for i, s := range srcs {
		m.heads[i], m.ok[i] = s.next()
	}
	return m
}

func (m *mergeIter) next() (entry, bool) {
	best := -1
	for i := range m.srcs {
		if m.ok[i] && (best < 0 || bytes.Compare(m.heads[i].key, m.heads[best].key) < 0) {
			best = i
		}
	}
	if best < 0 {
		return entry{}, false
	}
	e := m.heads[best]
	for i := range m.srcs {
		if m.ok[i] && (i == best || bytes.Equal(m.heads[i].key, e.key)) {
			m.heads[i], m.ok[i] = m.srcs[i].next()
		}
	}
	return e, true
}

func (m *mergeIter) error() error {
	for _, s := range m.srcs {
		if err := s.error(); err != nil {
			return err
		}
	}
	return nil
}
