// Package maintenance is the sink's upkeep of its Iceberg tables
// (table.maintenance): one member of the group at a time maintains each
// table; every compact_every it compacts the table's small files (package
// compact, as `pqsink compact` does), then merges its manifests when the
// current snapshot lists too many, then expires its old snapshots, then
// removes its orphans (package table). Between those runs, every few
// seconds, it compacts the folders of a table that hold more than
// small_files_above small files (tiered, so that a table committed every
// second is not rewritten whole each time), then rewrites manifests and
// expires snapshots likewise. A Scheduler does this in a goroutine
// of its own, apart from the partitions, and takes compaction's memory
// from the sink's budget without holding the partitions back.
//
// Which member maintains a table is decided by a lease in the store, not
// by the group's assignment: the owner of a topic's partition 0 changes at
// every rebalance, and during a cooperative one the old and the new owner
// both run for a moment, while what the store says can be read and proved
// (create-if-absent). Neither the lease nor its clock is what keeps the
// table right: every maintenance commit is a compare-and-swap that checks
// what it replaces, and orphan removal spares what is younger than an age
// longer than any upload-to-commit delay, so two maintainers at once would
// only do the work twice.
//
// The package knows nothing of the sink runtime: the sink (package
// connector) hands a Scheduler what it needs in Options (the settings, the
// store, the tables, its memory budget, its logger) and registers the
// Scheduler, a Prometheus collector, with its metrics.
package maintenance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/compact"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/table"
)

// Maintenance tasks, as the metrics label them.
const (
	taskCompact   = "compact"
	taskManifests = "manifests"
	taskExpire    = "expire"
	taskOrphans   = "orphans"
)

var maintenanceTasks = []string{taskCompact, taskManifests, taskExpire, taskOrphans}

// leaseTTL is how long a lease lasts unless renewed; its holder renews it
// when less than two thirds are left, so a member that dies leaves its
// tables unmaintained for at most leaseTTL. A member leaving cleanly
// gives its leases up at once.
const leaseTTL = time.Minute

// leasePrefix is where the leases of tables lie, under store.url.
const leasePrefix = archive.InternalPrefix + "leases/tables/"

// Memory is the budget that compaction takes its memory from: the sink's
// one memory budget (memory.limit), shared with the partitions.
type Memory interface {
	// Reserve takes n bytes, waiting while they do not fit, until ctx
	// ends.
	Reserve(ctx context.Context, n int64) error
	// Release gives back n bytes that Reserve took.
	Release(n int64)
}

// Options are what a Scheduler needs from the sink.
type Options struct {
	// Settings are table.maintenance.
	Settings config.Maintenance
	// Store is the store of store.url: the leases lie in it, and
	// compaction and orphan removal read, write and delete through it.
	Store objstore.Store
	// StoreURL is store.url: a data file's location in a table is
	// StoreURL/key.
	StoreURL string
	// Tables returns the handles of the tables to maintain. It is called
	// at every round (the sink's tables may grow as topics appear), from
	// the Scheduler's goroutine, and must be safe for that; handles of
	// one table name are maintained once.
	Tables func() []*table.Handle
	// Memory is the budget compaction takes its share from; nil takes
	// nothing from any budget.
	Memory Memory
	// MemoryLimit is memory.limit: compaction takes an eighth of it, and
	// at least 2 MiB.
	MemoryLimit int64
	// Log receives a line per task run and per lease taken or lost; nil
	// logs nothing.
	Log *slog.Logger
}

// Scheduler maintains the tables whose lease it holds. It is also the
// Prometheus collector of the pqsink_table_maintenance_* metrics
// (Describe, Collect), which the caller registers.
type Scheduler struct {
	cfg      config.Maintenance
	store    objstore.Store
	storeURL string
	tables   func() []*table.Handle
	mem      Memory
	memLimit int64
	log      *slog.Logger
	// holder names this member in its leases: host, process and a random
	// tag, different at every start.
	holder string
	// tick is how often runs are started when due and, with
	// small_files_above, the tables held looked at; leaseTick how often
	// the leases are read (a listing and a read of the store per table),
	// checked the last time they were.
	tick, leaseTick time.Duration
	checked         time.Time
	now             func() time.Time

	mu     sync.Mutex
	leases map[string]*lease // by table name
	// seen is, by table name, the snapshot whose small files were last
	// counted and found within small_files_above: the count is not read
	// again until the table has another.
	seen map[string]int64

	// Metrics, by task (maintenanceTasks order).
	runs, errs [4]atomic.Int64
	last       [4]atomic.Int64 // Unix nanoseconds of the last run that succeeded
	// filesRewritten are the data files compaction replaced, filesWritten
	// those it wrote; manifestsRewritten the manifests merged away;
	// snapshotsExpired and orphansRemoved the expiry's and the orphan
	// removal's.
	filesRewritten, filesWritten, manifestsRewritten, snapshotsExpired, orphansRemoved atomic.Int64
	held                                                                               atomic.Int64 // tables whose lease this member holds

	// deletedRows are the rows of other engines' deletes that compaction
	// applied (left out of the files it wrote), deleteFilesRemoved the
	// delete files it removed with them, and takenBack the files another
	// engine rewrote (copy-on-write) that it merged back.
	deletedRows, deleteFilesRemoved, takenBack atomic.Int64

	// triggered are the compactions that small_files_above started
	// between scheduled runs.
	triggered atomic.Int64

	// withDeletes is, by table name, how many data files the member's
	// last compaction of the table left as they are because other
	// engines' delete files may apply to them (an int64).
	withDeletes sync.Map
	descs       map[string]*prometheus.Desc
}

// New returns the Scheduler of the tables o.Tables lists. It starts
// nothing: Run does.
func New(o Options) *Scheduler {
	host, _ := os.Hostname()
	var tag [4]byte
	rand.Read(tag[:])
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tables := o.Tables
	if tables == nil {
		tables = func() []*table.Handle { return nil }
	}
	return &Scheduler{
		cfg:       o.Settings,
		store:     o.Store,
		storeURL:  o.StoreURL,
		tables:    tables,
		mem:       o.Memory,
		memLimit:  o.MemoryLimit,
		log:       log,
		holder:    fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(tag[:])),
		tick:      tick(o.Settings),
		leaseTick: max(min(o.Settings.CompactEvery, 10*time.Second), time.Millisecond),
		now:       time.Now,
		leases:    map[string]*lease{},
		seen:      map[string]int64{},
		descs:     maintenanceDescs(),
	}
}

// smallFilesTick is how often, with small_files_above, each table held is
// looked at for folders with too many small files: a load of the table,
// and a read of its manifests when it has a new snapshot.
const smallFilesTick = 2 * time.Second

// tick is how often a Scheduler with settings c looks at its tables:
// every compact_every, at most every 10s (when it reads the leases too),
// and every smallFilesTick with small_files_above (the leases it holds
// only).
func tick(c config.Maintenance) time.Duration {
	d := min(c.CompactEvery, 10*time.Second)
	if c.SmallFilesAbove > 0 {
		d = min(d, smallFilesTick)
	}
	return max(d, time.Millisecond)
}

// Run maintains the tables until ctx ends, then gives up the leases held.
func (m *Scheduler) Run(ctx context.Context) {
	defer m.release()
	tick := time.NewTicker(m.tick)
	defer tick.Stop()
	for {
		m.round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// round checks the lease of every table the sink knows (every leaseTick),
// maintains those it holds that are due, and, with small_files_above,
// compacts the folders of the others it holds that are over the bound.
func (m *Scheduler) round(ctx context.Context) {
	now := m.now()
	// Between the lease checks (small_files_above's shorter ticks), a
	// lease is taken as held while it was at the last check and has not
	// expired since: it was renewed with more than two thirds to go.
	leases := m.cfg.SmallFilesAbove <= 0 || now.Sub(m.checked) >= m.leaseTick
	if leases {
		m.checked = now
	}
	handles := map[string]*table.Handle{}
	for _, h := range m.tables() {
		handles[h.Name()] = h
	}
	for _, name := range slices.Sorted(maps.Keys(handles)) {
		if ctx.Err() != nil {
			return
		}
		m.mu.Lock()
		l := m.leases[name]
		if l == nil {
			l = &lease{store: m.store, prefix: leasePrefix + name + "/", holder: m.holder}
			m.leases[name] = l
		}
		m.mu.Unlock()
		held := l.held && now.Before(l.doc.Expires)
		if leases {
			var err error
			if held, err = m.hold(ctx, l); err != nil {
				if ctx.Err() == nil {
					m.log.Warn("table maintenance: checking the lease", "table", name, "error", err)
				}
				continue
			}
		}
		if !held {
			continue
		}
		if m.now().Before(l.doc.Last.Add(m.cfg.CompactEvery)) {
			if m.cfg.SmallFilesAbove > 0 {
				m.smallFiles(ctx, handles[name], l)
			}
			continue
		}
		m.maintain(ctx, handles[name], l)
	}
}

// smallFiles compacts, between the scheduled runs, the folders of h that
// hold more than small_files_above small files, then merges the
// manifests and expires the snapshots as a run does (orphan removal,
// which lists the table's objects, waits for the run). The compaction is
// tiered (compact.Options.Tiered): it takes the folder's small files of
// any age, and the small compacted files only while no larger than what
// they join or while more than half the bound would stay, so that a
// table committed every second is not rewritten whole every few seconds. Nothing is recorded in the lease: the
// scheduled run stays due when it was.
func (m *Scheduler) smallFiles(ctx context.Context, h *table.Handle, l *lease) {
	name := h.Name()
	m.mu.Lock()
	seen := m.seen[name]
	m.mu.Unlock()
	small := m.cfg.TargetFileSize / 4 * 3
	counts, err := h.SmallFiles(ctx, small, seen)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, catalog.ErrNoSuchTable) {
			m.log.Warn("table maintenance: counting small files", "table", name, "error", err)
		}
		return
	}
	if counts.ByFolder == nil {
		return // no snapshot, or the one counted last
	}
	over := map[string]bool{}
	most := 0
	for dir, n := range counts.ByFolder {
		if n > m.cfg.SmallFilesAbove {
			over[dir] = true
		}
		most = max(most, n)
	}
	// Counted: the next look reads the manifests again only when the
	// table has another snapshot. A folder over the bound whose files
	// the compaction below cannot take (another engine's, of too many
	// schemas) is planned again at the sinks' next commit, not every
	// tick; one it fails on, likewise.
	m.mu.Lock()
	m.seen[name] = counts.Snapshot
	m.mu.Unlock()
	if len(over) == 0 {
		if m.cfg.MaxSnapshots > 0 && counts.Snapshots > m.cfg.MaxSnapshots {
			m.expireOver(ctx, h, l, counts.Snapshots)
		}
		return
	}
	m.triggered.Add(1)
	m.log.Info("table maintenance: small files", "table", name, "snapshot", counts.Snapshot, "folders_over", len(over),
		"most_in_a_folder", most, "small_files_above", m.cfg.SmallFilesAbove)
	for i, task := range maintenanceTasks {
		if task == taskOrphans || ctx.Err() != nil || !l.held {
			return
		}
		m.runs[i].Add(1)
		err := m.whileHeld(ctx, l, func(ctx context.Context) error {
			switch task {
			case taskCompact:
				return m.compactFolders(ctx, h, over)
			case taskManifests:
				return m.manifests(ctx, h)
			default:
				return m.expire(ctx, h)
			}
		})
		if err != nil {
			m.errs[i].Add(1)
			if ctx.Err() == nil {
				m.log.Error("table maintenance failed", "table", name, "task", task, "error", err)
			}
			continue
		}
		m.last[i].Store(m.now().UnixNano())
	}
}

// expireOver expires h's snapshots, between the scheduled runs, when the
// table holds more than max_snapshots of them (n) and no folder needed a
// compaction (which expires them after it).
func (m *Scheduler) expireOver(ctx context.Context, h *table.Handle, l *lease, n int) {
	i := slices.Index(maintenanceTasks, taskExpire)
	m.log.Info("table maintenance: too many snapshots", "table", h.Name(), "snapshots", n, "max_snapshots", m.cfg.MaxSnapshots)
	m.runs[i].Add(1)
	if err := m.whileHeld(ctx, l, func(ctx context.Context) error { return m.expire(ctx, h) }); err != nil {
		m.errs[i].Add(1)
		if ctx.Err() == nil {
			m.log.Error("table maintenance failed", "table", h.Name(), "task", taskExpire, "error", err)
		}
		return
	}
	m.last[i].Store(m.now().UnixNano())
}

// hold takes or renews l, counting the leases held.
func (m *Scheduler) hold(ctx context.Context, l *lease) (bool, error) {
	was := l.held
	held, err := l.acquire(ctx, m.now())
	switch {
	case held && !was:
		m.held.Add(1)
		m.log.Info("table maintenance: lease taken", "lease", l.prefix, "epoch", l.epoch, "last_run", l.doc.Last)
	case !held && was:
		m.held.Add(-1)
		m.log.Info("table maintenance: lease lost", "lease", l.prefix)
	}
	return held, err
}

// maintain runs the tasks on h, in order, keeping the lease renewed while
// they run; a task that fails is logged and counted, and the next one
// runs all the same. When the lease is lost meanwhile (the store
// unreachable past its expiry) the run stops: another member may hold it
// now.
func (m *Scheduler) maintain(ctx context.Context, h *table.Handle, l *lease) {
	if ok, err := h.Exists(ctx); err != nil || !ok {
		if err != nil && ctx.Err() == nil {
			m.log.Warn("table maintenance: loading the table", "table", h.Name(), "error", err)
		}
		return // not created yet (its first record creates it): nothing to maintain
	}
	start := m.now()
	for i, task := range maintenanceTasks {
		if ctx.Err() != nil || !l.held {
			return
		}
		m.runs[i].Add(1)
		err := m.whileHeld(ctx, l, func(ctx context.Context) error {
			switch task {
			case taskCompact:
				return m.compact(ctx, h)
			case taskManifests:
				return m.manifests(ctx, h)
			case taskExpire:
				return m.expire(ctx, h)
			default:
				return m.orphans(ctx, h)
			}
		})
		if err != nil {
			m.errs[i].Add(1)
			if ctx.Err() == nil {
				m.log.Error("table maintenance failed", "table", h.Name(), "task", task, "error", err)
			}
			continue
		}
		m.last[i].Store(m.now().UnixNano())
	}
	if !l.held {
		return
	}
	// The run is done: the next is due compact_every after it started,
	// whichever member holds the lease then.
	l.doc.Last = start
	if _, err := l.renew(ctx, m.now()); err != nil && ctx.Err() == nil {
		m.log.Warn("table maintenance: recording the run in the lease", "table", h.Name(), "error", err)
	}
}

// whileHeld runs task, renewing l every third of leaseTTL meanwhile, so
// that a long compaction keeps its table; the task's context ends when
// the lease is lost.
func (m *Scheduler) whileHeld(ctx context.Context, l *lease, task func(context.Context) error) error {
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- task(tctx) }()
	tick := time.NewTicker(leaseTTL / 3)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if held, _ := m.hold(ctx, l); !held {
				cancel()
				if err := <-done; err != nil {
					return fmt.Errorf("the lease %s was lost: %w", l.prefix, err)
				}
				return fmt.Errorf("the lease %s was lost", l.prefix)
			}
		}
	}
}

// compact rewrites h's small files, within a share of the memory budget.
func (m *Scheduler) compact(ctx context.Context, h *table.Handle) error {
	return m.run(ctx, h, compact.Options{
		// Files younger than a run's interval wait for the next run.
		OlderThan: min(m.cfg.CompactEvery, 10*time.Minute),
	})
}

// compactFolders rewrites the small files of the folders of h named,
// whatever their age, tiered (see smallFiles).
func (m *Scheduler) compactFolders(ctx context.Context, h *table.Handle, folders map[string]bool) error {
	// At most half the bound in small compacted files, so that a folder
	// just compacted is well within it.
	return m.run(ctx, h, compact.Options{Folders: folders, Tiered: true, KeepCompacted: max(m.cfg.SmallFilesAbove/2, 1)})
}

// run compacts h with o and the settings' target, within a share of the
// memory budget, and counts and logs what it did.
func (m *Scheduler) run(ctx context.Context, h *table.Handle, o compact.Options) error {
	limit := max(m.memLimit/8, 2<<20)
	if m.mem != nil {
		if err := m.mem.Reserve(ctx, limit); err != nil {
			return err
		}
		defer m.mem.Release(limit)
	}
	o.TargetFileSize, o.MemoryLimit = m.cfg.TargetFileSize, limit
	// Its files must be committed long before orphan removal (this
	// member's or another's) may take them for orphans.
	o.CommitWithin = m.cfg.RemoveOrphansOlderThan / 2
	rep, err := compact.Table(ctx, h, m.store, m.storeURL, o)
	if err != nil {
		return err
	}
	m.withDeletes.Store(h.Name(), int64(rep.WithDeletes))
	if rep.Snapshot != 0 {
		m.filesRewritten.Add(int64(rep.FilesIn))
		m.filesWritten.Add(int64(rep.FilesOut))
		m.deletedRows.Add(rep.DeletedRows)
		m.deleteFilesRemoved.Add(int64(rep.DeleteFilesRemoved))
		m.takenBack.Add(int64(rep.TakenBack))
	}
	m.log.Info("table maintenance: compaction", "table", h.Name(), "folders", len(o.Folders), "snapshot", rep.Snapshot, "bins", len(rep.Bins),
		"files_in", rep.FilesIn, "files_out", rep.FilesOut, "bytes_in", rep.BytesIn, "bytes_out", rep.BytesOut,
		"rows", rep.Rows, "deleted_rows", rep.DeletedRows, "delete_files_removed", rep.DeleteFilesRemoved,
		"live_files", rep.LiveFiles, "left_for_deletes", rep.WithDeletes, "left_foreign", rep.Foreign, "taken_back", rep.TakenBack, "converted_millis", rep.Converted, "took", rep.Took)
	return nil
}

// manifests merges h's manifests when the current snapshot lists more
// than rewrite_manifests_above.
func (m *Scheduler) manifests(ctx context.Context, h *table.Handle) error {
	if m.cfg.RewriteManifestsAbove <= 0 {
		return nil
	}
	start := time.Now()
	res, err := h.RewriteManifests(ctx, m.cfg.RewriteManifestsAbove)
	if err != nil {
		return err
	}
	m.manifestsRewritten.Add(int64(res.Rewritten))
	m.log.Info("table maintenance: manifest rewrite", "table", h.Name(), "snapshot", res.Snapshot, "manifests_before", res.Before,
		"manifests_after", res.After, "rewritten", res.Rewritten, "added", res.Added, "attempts", res.Attempts, "took", time.Since(start))
	return nil
}

// expire expires h's old snapshots.
func (m *Scheduler) expire(ctx context.Context, h *table.Handle) error {
	start := time.Now()
	res, err := h.ExpireSnapshotsAtMost(ctx, m.cfg.ExpireSnapshotsOlderThan, m.cfg.KeepSnapshots, m.cfg.MaxSnapshots)
	if err != nil {
		return err
	}
	m.snapshotsExpired.Add(int64(res.Expired))
	m.log.Info("table maintenance: snapshot expiry", "table", h.Name(), "expired", res.Expired, "kept", res.Kept,
		"retained", res.Retained, "attempts", res.Attempts, "took", time.Since(start))
	return nil
}

// orphans removes h's orphans.
func (m *Scheduler) orphans(ctx context.Context, h *table.Handle) error {
	start := time.Now()
	res, err := h.RemoveOrphans(ctx, m.store, table.OrphanOptions{OlderThan: m.cfg.RemoveOrphansOlderThan, Now: m.now})
	m.orphansRemoved.Add(int64(res.Removed))
	if err != nil {
		return err
	}
	m.log.Info("table maintenance: orphan removal", "table", h.Name(), "removed", res.Removed, "bytes", res.Bytes,
		"listed", res.Listed, "referenced", res.Referenced, "young", res.Young, "took", time.Since(start))
	return nil
}

// release gives up the leases held, so that another member takes the
// tables over at its next round rather than after leaseTTL.
func (m *Scheduler) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range m.leases {
		if !l.held {
			continue
		}
		if err := l.release(ctx, m.now()); err != nil {
			m.log.Warn("table maintenance: giving the lease up", "lease", l.prefix, "error", err)
		}
		m.held.Add(-1)
	}
}
