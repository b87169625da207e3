package connector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pqsink/pqsink/internal/backoff"

	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/table/keyindex"
)

// A Kafka partition of an upsert table (table.mode: upsert) reads each
// record as a change to its key's row (format.ChangeDecoder) and keeps
// the partition's key index: the key to the Kafka offset of its live row.
// A record that writes a row Puts its key, one that deletes it (a
// tombstone, a Debezium d) Deletes it and writes no row; the offsets they
// replace are the rows the next table commit deletes (Batch.Deletes).
//
// The index, the deletes and the progress agree on one offset: before a
// commit the partition lands every open file (so that its committed
// offset is the next one), writes a snapshot of the index to the store
// and names it in the progress. A partition that reads again from an
// offset (a failed upload, a rollback, a rebalance) loads the index of
// that offset's progress first.

// upsert is a partition's side of an upsert table.
type upsert struct {
	dec format.ChangeDecoder
	idx *keyindex.Index
	// chain is the index as of the partition's committed offset: the
	// store keys of the snapshots the last progress handed (or read from
	// the table) names. stale says that the index holds changes past it
	// that were dropped: it is loaded again from chain before its next
	// use.
	chain []string
	stale bool
	// base is the chain of the index's last committed snapshot, which a
	// delta extends; written are the snapshots handed to the committer
	// and not known to be committed yet, oldest first.
	base    []string
	written []writtenSnapshot
	// changed says that the index changed since the last snapshot.
	changed bool
	// deletes are the offsets of the rows replaced or deleted since the
	// last commit, replaced and deleted how many of them were a row's
	// replacement or deletion.
	deletes           []int64
	replaced, deleted int64
	// shown is what the partition last added to the sink's index gauges.
	shown keyindex.Stats
}

// writtenSnapshot is an index snapshot handed with a progress.
type writtenSnapshot struct {
	info  keyindex.SnapshotInfo
	chain []string
}

// startUpsert gives p, of an upsert table, its key index: the one the
// table's progress of the partition names (chain), or an empty one.
func (p *partition) startUpsert(ctx context.Context, chain []string) error {
	cd, ok := p.dec.(format.ChangeDecoder)
	if !ok {
		return fmt.Errorf("format.type %s gives no change decoder for an upsert table", p.s.cfg.Format.Type)
	}
	p.up = &upsert{dec: cd, chain: chain, stale: true}
	p.s.upserts.Add(1)
	return p.up.load(ctx, p)
}

// closeUpsert drops the partition's key index.
func (p *partition) closeUpsert() {
	u := p.up
	if u == nil || u.idx == nil {
		return
	}
	p.publishIndex(keyindex.Stats{})
	if err := u.idx.Close(); err != nil {
		p.log.Warn("closing the key index", "error", err)
	}
	u.idx = nil
	p.s.upserts.Add(-1)
}

// indexMemory is each upsert partition's share of memory.limit for its
// key index: a quarter of the limit, shared by the member's upsert
// partitions.
func (s *Sink) indexMemory() int64 {
	n := max(s.upserts.Load(), 1)
	return max(keyindex.MinMemoryLimit, s.cfg.Memory.Limit/4/n)
}

// load makes the index that of u.chain when it is stale.
func (u *upsert) load(ctx context.Context, p *partition) error {
	if !u.stale {
		return nil
	}
	start := time.Now()
	opts := keyindex.Options{MemoryLimit: p.s.indexMemory()}
	var idx *keyindex.Index
	var err error
	if len(u.chain) == 0 {
		idx, err = keyindex.New(opts)
	} else {
		idx, err = loadChain(ctx, p.s.store, opts, u.chain)
	}
	if err != nil {
		return fmt.Errorf("%s[%d]: loading the key index %v: %w", p.topic, p.id, u.chain, err)
	}
	if u.idx != nil {
		u.idx.Close()
	}
	u.idx, u.stale, u.changed = idx, false, false
	u.base, u.written = u.chain, nil
	u.deletes, u.replaced, u.deleted = u.deletes[:0], 0, 0
	st := idx.Stats()
	p.publishIndex(st)
	p.log.Info("key index loaded", "snapshots", len(u.chain), "keys", st.Keys, "memory_bytes", st.MemoryBytes, "disk_bytes", st.DiskBytes,
		"took", time.Since(start).Round(time.Millisecond))
	return nil
}

// loadChain loads the index of the snapshots at keys.
func loadChain(ctx context.Context, store objstore.Store, opts keyindex.Options, keys []string) (*keyindex.Index, error) {
	objs := make([]keyindex.Object, 0, len(keys))
	for _, k := range keys {
		ra, err := store.NewReaderAt(ctx, k)
		if err != nil {
			for _, o := range objs {
				o.(objstore.ReaderAt).Close()
			}
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		objs = append(objs, ra)
	}
	defer func() {
		for _, o := range objs {
			o.(objstore.ReaderAt).Close()
		}
	}()
	return keyindex.Load(ctx, opts, objs...)
}

// change reads r as a change to its key's row. A delete is applied to the
// index at once (it writes no row); a row's key is Put by noteRow once
// the row is written.
func (p *partition) change(ctx context.Context, r *record) (format.Decoded, []byte, bool, *rejection, error) {
	u := p.up
	if err := u.load(ctx, p); err != nil {
		return format.Decoded{}, nil, false, nil, err
	}
	ch, rej, err := u.dec.DecodeChange(ctx, r.key, r.value, r.offset)
	if err != nil || rej != nil {
		return format.Decoded{}, nil, false, rej, err
	}
	if ch.Delete {
		prev, had, err := u.idx.Delete(ch.Key)
		if err != nil {
			return format.Decoded{}, nil, false, nil, fmt.Errorf("%s[%d] offset %d: key index: %w", p.topic, p.id, r.offset, err)
		}
		u.changed = true
		if had {
			u.deletes = append(u.deletes, prev)
			u.deleted++
		}
		return format.Decoded{}, nil, true, nil, nil
	}
	return ch.Row, ch.Key, false, nil, nil
}

// noteRow records that the row of key is the record at offset: in the
// table's files (written, or in an uploaded file the partition passes
// over).
func (p *partition) noteRow(key []byte, offset int64) error {
	u := p.up
	prev, had, err := u.idx.Put(key, offset)
	if err != nil {
		return fmt.Errorf("%s[%d] offset %d: key index: %w", p.topic, p.id, offset, err)
	}
	u.changed = true
	if had && prev != offset {
		u.deletes = append(u.deletes, prev)
		u.replaced++
	}
	return nil
}

// indexSnapshot is, before a commit of the partition at its next offset
// with no file open, the key index chain that the progress names: the
// snapshot written now to the store when the index changed since the
// last one, and the offsets of the rows the commit deletes.
func (p *partition) indexSnapshot(ctx context.Context) ([]string, []int64, error) {
	u := p.up
	if err := u.load(ctx, p); err != nil {
		return nil, nil, err
	}
	p.noteIndexCommitted()
	if err := u.idx.SetMemoryLimit(p.s.indexMemory()); err != nil {
		return nil, nil, err
	}
	deletes := slices.Clone(u.deletes)
	if u.changed {
		var buf bytes.Buffer
		info, err := u.idx.WriteSnapshot(ctx, &buf, keyindex.Auto)
		if err != nil {
			return nil, nil, fmt.Errorf("%s[%d]: key index snapshot: %w", p.topic, p.id, err)
		}
		key := p.table.IndexKey(p.id, info.Seq, info.ID)
		if err := putObject(ctx, p.s.store, key, buf.Bytes()); err != nil {
			return nil, nil, fmt.Errorf("%s[%d]: key index snapshot %s: %w", p.topic, p.id, key, err)
		}
		chain := []string{key}
		if info.Kind == keyindex.KindDelta {
			chain = append(slices.Clip(u.base), key)
		}
		u.written = append(u.written, writtenSnapshot{info: info, chain: chain})
		u.chain, u.changed = chain, false
		p.log.Debug("key index snapshot", "key", key, "kind", info.Kind, "entries", info.Entries, "bytes", info.Bytes)
	}
	p.s.stats.upsertReplaced.Add(u.replaced)
	p.s.stats.upsertDeleted.Add(u.deleted)
	u.deletes, u.replaced, u.deleted = u.deletes[:0], 0, 0
	p.publishIndex(u.idx.Stats())
	return u.chain, deletes, nil
}

// noteIndexCommitted commits (keyindex.Index.Commit) the snapshot that the
// table's last commit of the partition by this member named, when the
// partition wrote it: the next delta is based on it.
func (p *partition) noteIndexCommitted() {
	u := p.up
	chain := p.table.CommittedIndex(p.id)
	if len(chain) == 0 {
		return
	}
	last := chain[len(chain)-1]
	for i, w := range u.written {
		if w.chain[len(w.chain)-1] != last {
			continue
		}
		if err := u.idx.Commit(w.info); err != nil {
			p.log.Warn("key index: committing a snapshot", "error", err)
			return
		}
		u.base = w.chain
		u.written = slices.Delete(u.written, 0, i+1)
		return
	}
}

// putObject stores b under key, create-if-absent: an object already there
// has the same content (its name is a function of it).
func putObject(ctx context.Context, store objstore.Store, key string, b []byte) error {
	up, err := store.Create(ctx, key, objstore.ContentType("application/octet-stream"))
	if err != nil {
		return err
	}
	if _, err := up.Write(b); err != nil {
		up.Abort(context.WithoutCancel(ctx))
		return err
	}
	if _, err := up.Commit(ctx); err != nil && !errors.Is(err, objstore.ErrExists) {
		return err
	}
	return nil
}

// publishIndex adds the change from what the partition last published to
// the sink's key index gauges.
func (p *partition) publishIndex(st keyindex.Stats) {
	u := p.up
	s := p.s.stats
	s.upsertKeys.Add(st.Keys - u.shown.Keys)
	s.upsertMemory.Add(st.MemoryBytes - u.shown.MemoryBytes)
	s.upsertDisk.Add(st.DiskBytes - u.shown.DiskBytes)
	u.shown = st
}

// indexMemoryHeld is the index's bytes in memory, for the budget.
func (p *partition) indexMemoryHeld() int64 {
	if p.up == nil {
		return 0
	}
	return p.up.shown.MemoryBytes
}

// indexFailed handles a key index snapshot that could not be written
// (the store refused it): as a failed upload, the partition reads again
// from its committed offset, after a backoff, with the index of that
// offset; the files uploaded stay in the handoff or are adopted again.
func (p *partition) indexFailed(ctx context.Context, err error) error {
	p.uploadFailures++
	wait := min(30*time.Second, 500*time.Millisecond<<min(p.uploadFailures-1, 6))
	p.log.Error("key index snapshot failed; consuming again from the committed offset", "committed", p.committed,
		"failures_in_a_row", p.uploadFailures, "retry_in", wait, "error", err)
	p.s.stats.uploadErrors.Add(1)
	p.s.uploadFailed(err)
	p.dropAll(ctx)
	if !backoff.Sleep(ctx, wait) {
		return ctx.Err()
	}
	return errRestart
}

// resetIndex makes the partition's key index, before its next use, that
// of chain: the table's progress it reads again from.
func (p *partition) resetIndex(chain []string) {
	if p.up != nil {
		p.up.chain, p.up.stale = chain, true
	}
}
