package table

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/objstore"
)

// OrphanOptions configure RemoveOrphans.
type OrphanOptions struct {
	// OlderThan spares the files modified more recently: a file uploaded
	// and not committed yet looks like an orphan until its commit, so the
	// age must exceed the longest time between a file's upload and its
	// commit (config.MinOrphanAge).
	OlderThan time.Duration
	// DryRun finds the orphans without deleting them.
	DryRun bool
	// Now is the time ages are measured from. Defaults to time.Now.
	Now func() time.Time
}

// OrphanResult says what RemoveOrphans did (or, in a dry run, would do).
type OrphanResult struct {
	// Listed is how many objects lie under the table's data/, metadata/
	// and index/ folders and among its state objects; Referenced how many
	// of them the metadata references.
	Listed, Referenced int
	// Young is how many unreferenced objects were spared as too recent.
	Young int
	// Pending is how many unreferenced data files of the sink were spared,
	// however old, because the table's state does not cover their first
	// record yet: a commit may still append them (one that fails until an
	// operator steps in, or a member that restarts and adopts them).
	// Likewise for the key index snapshots of an upsert table that the
	// state's chain of their partition has not reached yet.
	Pending int
	// Orphans are the keys of the unreferenced objects older than the
	// age, deleted unless DryRun; Bytes their total size.
	Orphans []string
	Bytes   int64
	// Removed is how many of them were deleted.
	Removed int
}

// RemoveOrphans deletes the objects under the table's data/, metadata/
// and index/ folders in store (whose root is store.url: a key is a
// location without the warehouse and a slash) that no snapshot still in
// the table's metadata references and that were modified more than
// o.OlderThan ago.
// Referenced are: the current metadata file and those of the metadata log,
// every snapshot's manifest list, every manifest those lists name, every
// file those manifests have an entry for (a deleted entry too), and the
// statistics files, and the state objects that snapshots' summaries name
// (under {store.url}/_pqsink/state/tables/, outside the table's location).
// A state object no snapshot still names is an orphan like the others: the
// states of a table only grow (offsets), so a commit never writes again
// the object of a state that an expired snapshot held, and a commit's new
// object is young until the commit names it. Under data/, metadata/ and
// index/, a key with a _pqsink folder, or a catalog's version-hint.text,
// is left alone.
//
// Under index/ lie the key index snapshots of an upsert table's
// partitions, index/{topic}/{partition}/{seq}-{checksum}.pqkidx: one is
// referenced when the state of some snapshot still in the metadata names
// it in the chain of a partition (Progress.Index, a full snapshot and the
// deltas after it: every object of the chain is referenced). Those states
// are read only when index/ holds objects.
//
// A data file named as the sink names them ({topic}+{partition}+{first
// offset}.parquet) is deleted only when the table's state has the
// partition committed past its first record: the table holds those
// records through other files then, and a commit would refuse or drop this
// one. Otherwise it may still be appended (a commit failing for a while,
// an upload a restarted member adopts), whatever its age, and it stays.
// In the same way, an index snapshot is deleted only when the table's
// state has a chain of its partition that ends at its sequence number or
// past it: the sink numbers a partition's snapshots on from the chain
// committed, so it never writes that number again, while a snapshot
// beyond the chain may be written again under the same name (create if
// absent, which leaves the old object and its age) and named by the next
// commit.
//
// The metadata is read before the listing and again after it, and a file
// either reading references is kept: a file committed while the listing
// ran (a sink adopting an old upload) is spared. A location of the
// metadata that is not under store.url cannot be matched with the store's
// keys: the run then deletes nothing and says so.
func (h *Handle) RemoveOrphans(ctx context.Context, store objstore.Store, o OrphanOptions) (OrphanResult, error) {
	var res OrphanResult
	if o.Now == nil {
		o.Now = time.Now
	}
	refs := &references{seenManifests: map[string]bool{}, keys: map[string]bool{}, states: map[string]bool{}, warehouse: h.warehouse + "/"}
	tbl, err := h.cat.LoadTable(ctx, h.ident)
	if err != nil {
		return res, fmt.Errorf("table %s: %w", h.name, err)
	}
	tableKey, err := refs.key(strings.TrimSuffix(tbl.Location(), "/"))
	if err != nil {
		return res, fmt.Errorf("table %s: its location: %w", h.name, err)
	}
	if err := refs.add(ctx, tbl); err != nil {
		return res, fmt.Errorf("table %s: %w", h.name, err)
	}
	cutoff := o.Now().Add(-o.OlderThan)
	type candidate struct {
		key  string
		size int64
	}
	stateKey, err := refs.key(h.stateLocation(""))
	if err != nil {
		return res, fmt.Errorf("table %s: its state objects: %w", h.name, err)
	}
	indexKey := tableKey + "/index/"
	var candidates []candidate
	indexesRead := false
	for _, prefix := range []string{tableKey + "/data/", tableKey + "/metadata/", stateKey, indexKey} {
		for info, err := range store.List(ctx, prefix) {
			if err != nil {
				return res, fmt.Errorf("table %s: listing %s: %w", h.name, prefix, err)
			}
			if prefix == indexKey && !indexesRead {
				indexesRead = true
				if err := refs.indexes(ctx, tbl); err != nil {
					return res, fmt.Errorf("table %s: %w", h.name, err)
				}
			}
			res.Listed++
			switch {
			case refs.keys[info.Key]:
				res.Referenced++
			case prefix != stateKey && spared(info.Key):
			case info.Modified.IsZero() || info.Modified.After(cutoff):
				res.Young++
			default:
				candidates = append(candidates, candidate{info.Key, info.Size})
			}
		}
	}
	if len(candidates) == 0 {
		return res, nil
	}
	// Again: what was committed while the listing ran is referenced now.
	if tbl, err = h.cat.LoadTable(ctx, h.ident); err != nil {
		return res, fmt.Errorf("table %s: %w", h.name, err)
	}
	if err := refs.add(ctx, tbl); err != nil {
		return res, fmt.Errorf("table %s: %w", h.name, err)
	}
	if slices.ContainsFunc(candidates, func(c candidate) bool { return strings.HasPrefix(c.key, indexKey) }) {
		if err := refs.indexes(ctx, tbl); err != nil {
			return res, fmt.Errorf("table %s: %w", h.name, err)
		}
	}
	state, err := h.state(ctx, tbl)
	if err != nil {
		return res, fmt.Errorf("table %s: %w", h.name, err)
	}
	for _, c := range candidates {
		if refs.keys[c.key] {
			res.Referenced++
			continue
		}
		if topic, partition, first, ok := sinkFileName(c.key); ok && !committedPast(state, topic, partition, first) {
			res.Pending++
			continue
		}
		if topic, partition, seq, ok := indexFileName(c.key, indexKey); ok && !indexedPast(state, topic, partition, seq) {
			res.Pending++
			continue
		}
		res.Orphans = append(res.Orphans, c.key)
		res.Bytes += c.size
	}
	if o.DryRun {
		return res, nil
	}
	for _, key := range res.Orphans {
		if err := store.Delete(ctx, key); err != nil {
			return res, fmt.Errorf("table %s: deleting the orphan %s: %w", h.name, key, err)
		}
		res.Removed++
	}
	return res, nil
}

// sinkFileName reads the topic, partition and first offset from the name
// of a data file the sink wrote: {topic}+{partition}+{first}.parquet (a
// topic name has no '+').
func sinkFileName(key string) (topic string, partition int32, first int64, ok bool) {
	name, ok := strings.CutSuffix(path.Base(key), ".parquet")
	if !ok || !strings.Contains(key, "/data/") {
		return "", 0, 0, false
	}
	parts := strings.Split(name, "+")
	if len(parts) != 3 || parts[0] == "" {
		return "", 0, 0, false
	}
	p, err1 := strconv.ParseInt(parts[1], 10, 32)
	f, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || p < 0 || f < 0 {
		return "", 0, 0, false
	}
	return parts[0], int32(p), f, true
}

// committedPast reports whether the state of some group has topic's
// partition committed past offset first.
func committedPast(state State, topic string, partition int32, first int64) bool {
	for k, p := range state {
		if k.Topic == topic && k.Partition == partition && p.Committed > first {
			return true
		}
	}
	return false
}

// indexFileName reads the topic, partition and sequence number from the
// key of a key index snapshot the sink wrote, under the table's index/
// folder (indexKey): {topic}/{partition}/{seq}-{checksum}.pqkidx.
func indexFileName(key, indexKey string) (topic string, partition int32, seq uint64, ok bool) {
	rest, ok := strings.CutPrefix(key, indexKey)
	if !ok {
		return "", 0, 0, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[0] == "" {
		return "", 0, 0, false
	}
	p, err := strconv.ParseInt(parts[1], 10, 32)
	if err != nil || p < 0 {
		return "", 0, 0, false
	}
	if seq, ok = snapshotSeq(parts[2]); !ok {
		return "", 0, 0, false
	}
	return parts[0], int32(p), seq, true
}

// snapshotSeq is the sequence number in the name of a key index snapshot,
// {seq}-{checksum}.pqkidx, of the last element of key.
func snapshotSeq(key string) (uint64, bool) {
	name, ok := strings.CutSuffix(path.Base(key), ".pqkidx")
	if !ok {
		return 0, false
	}
	n, sum, ok := strings.Cut(name, "-")
	if !ok || sum == "" {
		return 0, false
	}
	seq, err := strconv.ParseUint(n, 10, 64)
	if err != nil {
		return 0, false
	}
	return seq, true
}

// indexedPast reports whether the state of some group has a key index
// chain of topic's partition whose last snapshot is numbered seq or more.
func indexedPast(state State, topic string, partition int32, seq uint64) bool {
	for k, p := range state {
		if k.Topic != topic || k.Partition != partition || len(p.Index) == 0 {
			continue
		}
		if last, ok := snapshotSeq(p.Index[len(p.Index)-1]); ok && last >= seq {
			return true
		}
	}
	return false
}

// spared reports keys RemoveOrphans never deletes, referenced or not.
func spared(key string) bool {
	return strings.HasPrefix(key, archive.InternalPrefix) || strings.Contains(key, "/"+archive.InternalPrefix) ||
		path.Base(key) == "version-hint.text"
}

// references are the store keys of the files a table's metadata
// references.
type references struct {
	warehouse string // store.url and a slash
	keys      map[string]bool
	// seenManifests are the manifests read already (they never change).
	seenManifests map[string]bool
	// states are the snapshots' summary values of the state (inline or
	// naming a state object), true once indexes has read them.
	states map[string]bool
}

// key is a location's key in the store.
func (r *references) key(loc string) (string, error) {
	k, ok := strings.CutPrefix(loc, r.warehouse)
	if !ok || k == "" {
		return "", fmt.Errorf("%s is not under store.url %s, so the store's objects cannot be matched with the table's files: no orphan is removed", loc, strings.TrimSuffix(r.warehouse, "/"))
	}
	return k, nil
}

func (r *references) ref(loc string) error {
	if loc == "" {
		return nil
	}
	k, err := r.key(loc)
	if err != nil {
		return err
	}
	r.keys[k] = true
	return nil
}

// add adds what tbl's metadata references.
func (r *references) add(ctx context.Context, tbl *itable.Table) error {
	md := tbl.Metadata()
	if err := r.ref(tbl.MetadataLocation()); err != nil {
		return err
	}
	for e := range md.PreviousFiles() {
		if err := r.ref(e.MetadataFile); err != nil {
			return err
		}
	}
	for s := range md.Statistics() {
		if err := r.ref(s.StatisticsPath); err != nil {
			return err
		}
	}
	for s := range md.PartitionStatistics() {
		if err := r.ref(s.StatisticsPath); err != nil {
			return err
		}
	}
	snaps := md.Snapshots()
	if len(snaps) == 0 {
		return nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	for i := range snaps {
		snap := &snaps[i]
		if err := r.ref(snap.ManifestList); err != nil {
			return err
		}
		if snap.Summary != nil {
			if v, ok := snap.Summary.Properties[SummaryState]; ok {
				if _, seen := r.states[v]; !seen {
					r.states[v] = false
				}
			}
			if v, ok := strings.CutPrefix(snap.Summary.Properties[SummaryState], archive.CommitState); ok {
				if err := r.ref(v); err != nil {
					return err
				}
			}
		}
		manifests, err := snap.Manifests(fsys)
		if err != nil {
			return fmt.Errorf("snapshot %d: reading its manifest list: %w", snap.SnapshotID, err)
		}
		for _, m := range manifests {
			if err := r.manifest(fsys, m); err != nil {
				return fmt.Errorf("snapshot %d: %w", snap.SnapshotID, err)
			}
		}
	}
	return nil
}

// indexes adds the key index snapshots that the states of the snapshots
// added name (Progress.Index), reading each state not read yet. The keys
// of a chain are store keys already.
func (r *references) indexes(ctx context.Context, tbl *itable.Table) error {
	for v, read := range r.states {
		if read {
			continue
		}
		state, err := readState(ctx, tbl, v)
		if err != nil {
			return fmt.Errorf("the state of a snapshot, for its key index chains: %w", err)
		}
		for _, p := range state {
			for _, k := range p.Index {
				r.keys[k] = true
			}
		}
		r.states[v] = true
	}
	return nil
}

// manifest adds a manifest and every file it lists as live (added or
// existing). A deleted entry names a file that the manifest's snapshot
// removed: only the snapshots before it read that file, and they list it
// live in manifests of their own while they are kept.
func (r *references) manifest(fsys icebergio.IO, m iceberg.ManifestFile) error {
	loc := m.FilePath()
	if r.seenManifests[loc] {
		return nil
	}
	if err := r.ref(loc); err != nil {
		return err
	}
	for e, err := range m.Entries(fsys, true) {
		if err != nil {
			return fmt.Errorf("reading manifest %s: %w", loc, err)
		}
		if err := r.ref(e.DataFile().FilePath()); err != nil {
			return err
		}
	}
	r.seenManifests[loc] = true
	return nil
}
