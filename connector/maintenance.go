package connector

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/compact"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/table"
)

// With table.maintenance set, one member at a time maintains each table:
// every compact_every it compacts the table's small files (package
// compact, as `pqsink compact` does), then merges its manifests when the
// current snapshot lists too many, then expires its old snapshots, then
// removes its orphans (package table). The work runs in a goroutine of its
// own, apart from the partitions, and takes its memory from the sink's
// budget without holding the partitions back.
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

// maintainer maintains the tables whose lease it holds.
type maintainer struct {
	t   *tables
	cfg config.Maintenance
	// holder names this member in its leases: host, process and a random
	// tag, different at every start.
	holder string
	// tick is how often leases are checked and runs started when due.
	tick time.Duration
	now  func() time.Time

	mu     sync.Mutex
	leases map[string]*lease // by table name

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

	// withDeletes is, by table name, how many data files the member's
	// last compaction of the table left as they are because other
	// engines' delete files may apply to them (an int64).
	withDeletes sync.Map
	descs       map[string]*prometheus.Desc
}

// newMaintainer returns the maintainer of t's tables, nil when
// table.maintenance is not set.
func newMaintainer(t *tables) *maintainer {
	m := t.s.cfg.Table.Maintenance
	if m == nil {
		return nil
	}
	host, _ := os.Hostname()
	var tag [4]byte
	rand.Read(tag[:])
	return &maintainer{
		t:      t,
		cfg:    *m,
		holder: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(tag[:])),
		tick:   min(m.CompactEvery, 10*time.Second),
		now:    time.Now,
		leases: map[string]*lease{},
		descs:  maintenanceDescs(),
	}
}

// run maintains the tables until ctx ends, then gives up the leases held.
func (m *maintainer) run(ctx context.Context) {
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

// round checks the lease of every table the sink knows, and maintains
// those it holds that are due.
func (m *maintainer) round(ctx context.Context) {
	m.t.mu.Lock()
	handles := make(map[string]*table.Handle, len(m.t.byTopic))
	for _, tc := range m.t.byTopic {
		handles[tc.h.Name()] = tc.h
	}
	m.t.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(handles)) {
		if ctx.Err() != nil {
			return
		}
		m.mu.Lock()
		l := m.leases[name]
		if l == nil {
			l = &lease{store: m.t.s.store, prefix: leasePrefix + name + "/", holder: m.holder}
			m.leases[name] = l
		}
		m.mu.Unlock()
		held, err := m.hold(ctx, l)
		if err != nil {
			if ctx.Err() == nil {
				m.t.s.log.Warn("table maintenance: checking the lease", "table", name, "error", err)
			}
			continue
		}
		if !held || m.now().Before(l.doc.Last.Add(m.cfg.CompactEvery)) {
			continue
		}
		m.maintain(ctx, handles[name], l)
	}
}

// hold takes or renews l, counting the leases held.
func (m *maintainer) hold(ctx context.Context, l *lease) (bool, error) {
	was := l.held
	held, err := l.acquire(ctx, m.now())
	switch {
	case held && !was:
		m.held.Add(1)
		m.t.s.log.Info("table maintenance: lease taken", "lease", l.prefix, "epoch", l.epoch, "last_run", l.doc.Last)
	case !held && was:
		m.held.Add(-1)
		m.t.s.log.Info("table maintenance: lease lost", "lease", l.prefix)
	}
	return held, err
}

// maintain runs the three tasks on h, in order, keeping the lease
// renewed while they run; a task that fails is logged and counted, and
// the next one runs all the same. When the lease is lost meanwhile (the
// store unreachable past its expiry) the run stops: another member may
// hold it now.
func (m *maintainer) maintain(ctx context.Context, h *table.Handle, l *lease) {
	if ok, err := h.Exists(ctx); err != nil || !ok {
		if err != nil && ctx.Err() == nil {
			m.t.s.log.Warn("table maintenance: loading the table", "table", h.Name(), "error", err)
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
				m.t.s.log.Error("table maintenance failed", "table", h.Name(), "task", task, "error", err)
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
		m.t.s.log.Warn("table maintenance: recording the run in the lease", "table", h.Name(), "error", err)
	}
}

// whileHeld runs task, renewing l every third of leaseTTL meanwhile, so
// that a long compaction keeps its table; the task's context ends when
// the lease is lost.
func (m *maintainer) whileHeld(ctx context.Context, l *lease, task func(context.Context) error) error {
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
func (m *maintainer) compact(ctx context.Context, h *table.Handle) error {
	s := m.t.s
	limit := max(s.cfg.Memory.Limit/8, 2<<20)
	if err := s.mem.reserve(ctx, limit); err != nil {
		return err
	}
	defer s.mem.add(-limit)
	rep, err := compact.Table(ctx, h, s.store, s.cfg.Store.URL, compact.Options{
		TargetFileSize: m.cfg.TargetFileSize,
		// Files younger than a run's interval wait for the next run.
		OlderThan:   min(m.cfg.CompactEvery, 10*time.Minute),
		MemoryLimit: limit,
		// Its files must be committed long before orphan removal (this
		// member's or another's) may take them for orphans.
		CommitWithin: m.cfg.RemoveOrphansOlderThan / 2,
	})
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
	s.log.Info("table maintenance: compaction", "table", h.Name(), "snapshot", rep.Snapshot, "bins", len(rep.Bins),
		"files_in", rep.FilesIn, "files_out", rep.FilesOut, "bytes_in", rep.BytesIn, "bytes_out", rep.BytesOut,
		"rows", rep.Rows, "deleted_rows", rep.DeletedRows, "delete_files_removed", rep.DeleteFilesRemoved,
		"live_files", rep.LiveFiles, "left_for_deletes", rep.WithDeletes, "left_foreign", rep.Foreign, "taken_back", rep.TakenBack, "converted_millis", rep.Converted, "took", rep.Took)
	return nil
}

// manifests merges h's manifests when the current snapshot lists more
// than rewrite_manifests_above.
func (m *maintainer) manifests(ctx context.Context, h *table.Handle) error {
	if m.cfg.RewriteManifestsAbove <= 0 {
		return nil
	}
	start := time.Now()
	res, err := h.RewriteManifests(ctx, m.cfg.RewriteManifestsAbove)
	if err != nil {
		return err
	}
	m.manifestsRewritten.Add(int64(res.Rewritten))
	m.t.s.log.Info("table maintenance: manifest rewrite", "table", h.Name(), "snapshot", res.Snapshot, "manifests_before", res.Before,
		"manifests_after", res.After, "rewritten", res.Rewritten, "added", res.Added, "attempts", res.Attempts, "took", time.Since(start))
	return nil
}

// expire expires h's old snapshots.
func (m *maintainer) expire(ctx context.Context, h *table.Handle) error {
	start := time.Now()
	res, err := h.ExpireSnapshots(ctx, m.cfg.ExpireSnapshotsOlderThan, m.cfg.KeepSnapshots)
	if err != nil {
		return err
	}
	m.snapshotsExpired.Add(int64(res.Expired))
	m.t.s.log.Info("table maintenance: snapshot expiry", "table", h.Name(), "expired", res.Expired, "kept", res.Kept,
		"retained", res.Retained, "attempts", res.Attempts, "took", time.Since(start))
	return nil
}

// orphans removes h's orphans.
func (m *maintainer) orphans(ctx context.Context, h *table.Handle) error {
	start := time.Now()
	res, err := h.RemoveOrphans(ctx, m.t.s.store, table.OrphanOptions{OlderThan: m.cfg.RemoveOrphansOlderThan, Now: m.now})
	m.orphansRemoved.Add(int64(res.Removed))
	if err != nil {
		return err
	}
	m.t.s.log.Info("table maintenance: orphan removal", "table", h.Name(), "removed", res.Removed, "bytes", res.Bytes,
		"listed", res.Listed, "referenced", res.Referenced, "young", res.Young, "took", time.Since(start))
	return nil
}

// release gives up the leases held, so that another member takes the
// tables over at its next round rather than after leaseTTL.
func (m *maintainer) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range m.leases {
		if !l.held {
			continue
		}
		if err := l.release(ctx, m.now()); err != nil {
			m.t.s.log.Warn("table maintenance: giving the lease up", "lease", l.prefix, "error", err)
		}
		m.held.Add(-1)
	}
}

// lease is the right to maintain one table, proved by the store.
//
// A lease is a sequence of objects {prefix}{epoch}.json, each created
// create-if-absent and never changed: the one of the highest epoch is in
// force, naming its holder and when it expires. The holder renews it by
// creating the next epoch; a member that finds the lease in force expired
// (or given up) takes it over the same way. Two members that both find
// epoch N expired both create N+1, and the store lets exactly one of them
// do so (the other gets ErrExists and goes on without the lease).
//
// Taking over by deleting the expired object and creating it again under
// the same key would race: member A deletes it and creates its own; member
// B, who read the same expired lease a moment before, deletes A's fresh
// one and creates its own, and both believe they hold the lease. With a
// new key for every epoch no lease in force is ever deleted: only epochs
// below the one in force are, by the holder, after it created its own, so
// the highest epoch never goes back.
type lease struct {
	store  objstore.Store
	prefix string
	holder string

	held  bool
	epoch int64    // the epoch in force as last seen (this member's when held)
	doc   leaseDoc // its content
}

// leaseDoc is the content of a lease object.
type leaseDoc struct {
	Holder  string    `json:"holder"`
	Expires time.Time `json:"expires"`
	// Last is when the table's last maintenance run started, so that a
	// member taking the lease over knows when the next one is due.
	Last time.Time `json:"last_run"`
}

func (l *lease) key(epoch int64) string {
	return fmt.Sprintf("%s%020d.json", l.prefix, epoch)
}

// acquire reports whether this member holds the lease after renewing it
// (when less than two thirds of leaseTTL are left) or taking it over (when
// the one in force has expired).
func (l *lease) acquire(ctx context.Context, now time.Time) (bool, error) {
	epoch, doc, err := l.current(ctx)
	if err != nil {
		// The store did not answer: a lease held stays held until it
		// expires.
		l.held = l.held && now.Before(l.doc.Expires)
		return l.held, err
	}
	mine := l.held && epoch == l.epoch && doc.Holder == l.holder
	l.epoch, l.doc, l.held = epoch, doc, false
	switch {
	case mine && doc.Expires.Sub(now) > 2*leaseTTL/3:
		l.held = true
		return true, nil
	case !mine && epoch != 0 && now.Before(doc.Expires):
		return false, nil // another member's
	}
	// Ours to renew, expired, given up, or none yet.
	return l.renew(ctx, now)
}

// renew creates the next epoch of the lease for this member, carrying its
// run time; it reports whether that worked (false: another member created
// that epoch first).
func (l *lease) renew(ctx context.Context, now time.Time) (bool, error) {
	doc := leaseDoc{Holder: l.holder, Expires: now.Add(leaseTTL), Last: l.doc.Last}
	next := l.epoch + 1
	if err := l.create(ctx, next, doc); err != nil {
		l.held = false
		if errors.Is(err, objstore.ErrExists) {
			return false, nil
		}
		return false, err
	}
	l.epoch, l.doc, l.held = next, doc, true
	// The epochs below the one before are no use to anyone.
	for info, err := range l.store.List(ctx, l.prefix) {
		if err != nil {
			break
		}
		if e, ok := l.epochOf(info.Key); ok && e < next-1 {
			l.store.Delete(ctx, info.Key)
		}
	}
	return true, nil
}

// release creates the next epoch, already expired, so that any member may
// take the lease over.
func (l *lease) release(ctx context.Context, now time.Time) error {
	l.held = false
	err := l.create(ctx, l.epoch+1, leaseDoc{Holder: l.holder, Expires: now, Last: l.doc.Last})
	if errors.Is(err, objstore.ErrExists) {
		return nil // taken over already
	}
	return err
}

func (l *lease) create(ctx context.Context, epoch int64, doc leaseDoc) error {
	body, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	if _, err := objstore.Put(ctx, l.store, l.key(epoch), bytes.NewReader(body), objstore.ContentType("application/json")); err != nil {
		return fmt.Errorf("creating the lease %s: %w", l.key(epoch), err)
	}
	return nil
}

// current reads the lease in force: its epoch (0 when there is none) and
// content.
func (l *lease) current(ctx context.Context) (int64, leaseDoc, error) {
	var newest int64
	var key string
	for info, err := range l.store.List(ctx, l.prefix) {
		if err != nil {
			return 0, leaseDoc{}, fmt.Errorf("listing the lease %s: %w", l.prefix, err)
		}
		if e, ok := l.epochOf(info.Key); ok && e > newest {
			newest, key = e, info.Key
		}
	}
	if newest == 0 {
		return 0, leaseDoc{}, nil
	}
	r, _, err := l.store.Get(ctx, key)
	if err != nil {
		return 0, leaseDoc{}, fmt.Errorf("reading the lease %s: %w", key, err)
	}
	defer r.Close()
	body, err := io.ReadAll(io.LimitReader(r, 1<<16))
	if err != nil {
		return 0, leaseDoc{}, fmt.Errorf("reading the lease %s: %w", key, err)
	}
	var doc leaseDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		// Not one of ours: treat it as expired, and take over from it.
		return newest, leaseDoc{}, nil
	}
	return newest, doc, nil
}

// epochOf is the epoch of a lease object's key.
func (l *lease) epochOf(key string) (int64, bool) {
	name, ok := strings.CutPrefix(key, l.prefix)
	if !ok {
		return 0, false
	}
	name, ok = strings.CutSuffix(name, ".json")
	if !ok || strings.Contains(name, "/") {
		return 0, false
	}
	e, err := strconv.ParseInt(name, 10, 64)
	return e, err == nil && e > 0
}

// Describe and Collect make the maintainer a Prometheus collector of the
// pqsink_table_maintenance_* metrics.
func (m *maintainer) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range m.descs {
		ch <- d
	}
}

// maintenanceDescs are the descriptions of the pqsink_table_maintenance_*
// metrics.
func maintenanceDescs() map[string]*prometheus.Desc {
	return map[string]*prometheus.Desc{
		"runs":      prometheus.NewDesc("pqsink_table_maintenance_runs_total", "Table maintenance tasks run by this member, by task (compact, manifests, expire, orphans).", []string{"task"}, nil),
		"errors":    prometheus.NewDesc("pqsink_table_maintenance_errors_total", "Table maintenance tasks that failed, by task.", []string{"task"}, nil),
		"last":      prometheus.NewDesc("pqsink_table_maintenance_last_success_timestamp_seconds", "When a maintenance task of this member last succeeded (Unix seconds; 0 for never), by task.", []string{"task"}, nil),
		"rewritten": prometheus.NewDesc("pqsink_table_maintenance_files_rewritten_total", "Data files that compaction replaced.", nil, nil),
		"written":   prometheus.NewDesc("pqsink_table_maintenance_files_written_total", "Data files that compaction wrote in their place.", nil, nil),
		"manifests": prometheus.NewDesc("pqsink_table_maintenance_manifests_rewritten_total", "Manifests that a manifest rewrite merged into fewer.", nil, nil),
		"expired":   prometheus.NewDesc("pqsink_table_maintenance_snapshots_expired_total", "Snapshots expired.", nil, nil),
		"orphans":   prometheus.NewDesc("pqsink_table_maintenance_orphans_removed_total", "Orphan files deleted.", nil, nil),
		"delrows":   prometheus.NewDesc("pqsink_table_maintenance_deleted_rows_total", "Rows that other engines' delete files delete and that compaction applied, leaving them out of the files it wrote.", nil, nil),
		"delfiles":  prometheus.NewDesc("pqsink_table_maintenance_delete_files_removed_total", "Other engines' delete files that compaction removed, as they applied to no data file left live.", nil, nil),
		"takenback": prometheus.NewDesc("pqsink_table_maintenance_rewritten_files_taken_back_total", "Data files that another engine rewrote (copy-on-write) and that compaction took back, merged with the sink's.", nil, nil),
		"held":      prometheus.NewDesc("pqsink_table_maintenance_leases_held", "Tables whose maintenance lease this member holds.", nil, nil),
		"deletes":   prometheus.NewDesc("pqsink_table_maintenance_files_with_deletes", "Data files that this member's last compaction of the table left as they are because it could not apply other engines' delete files that may apply to them, by table.", []string{"table"}, nil),
	}
}

// Collect exports the metrics.
func (m *maintainer) Collect(ch chan<- prometheus.Metric) {
	for i, task := range maintenanceTasks {
		ch <- prometheus.MustNewConstMetric(m.descs["runs"], prometheus.CounterValue, float64(m.runs[i].Load()), task)
		ch <- prometheus.MustNewConstMetric(m.descs["errors"], prometheus.CounterValue, float64(m.errs[i].Load()), task)
		var last float64
		if ns := m.last[i].Load(); ns != 0 {
			last = float64(ns) / 1e9
		}
		ch <- prometheus.MustNewConstMetric(m.descs["last"], prometheus.GaugeValue, last, task)
	}
	ch <- prometheus.MustNewConstMetric(m.descs["rewritten"], prometheus.CounterValue, float64(m.filesRewritten.Load()))
	ch <- prometheus.MustNewConstMetric(m.descs["written"], prometheus.CounterValue, float64(m.filesWritten.Load()))
	ch <- prometheus.MustNewConstMetric(m.descs["manifests"], prometheus.CounterValue, float64(m.manifestsRewritten.Load()))
	ch <- prometheus.MustNewConstMetric(m.descs["expired"], prometheus.CounterValue, float64(m.snapshotsExpired.Load()))
	ch <- prometheus.MustNewConstMetric(m.descs["orphans"], prometheus.CounterValue, float64(m.orphansRemoved.Load()))
	ch <- prometheus.MustNewConstMetric(m.descs["delrows"], prometheus.CounterValue, float64(m.deletedRows.Load()))
	ch <- prometheus.MustNewConstMetric(m.descs["delfiles"], prometheus.CounterValue, float64(m.deleteFilesRemoved.Load()))
	ch <- prometheus.MustNewConstMetric(m.descs["takenback"], prometheus.CounterValue, float64(m.takenBack.Load()))
	ch <- prometheus.MustNewConstMetric(m.descs["held"], prometheus.GaugeValue, float64(m.held.Load()))
	m.withDeletes.Range(func(name, n any) bool {
		ch <- prometheus.MustNewConstMetric(m.descs["deletes"], prometheus.GaugeValue, float64(n.(int64)), name.(string))
		return true
	})
}

// maintenanceCollector is the maintainer's collector, nil without
// table.maintenance.
func (s *Sink) maintenanceCollector() prometheus.Collector {
	if s.tables == nil || s.tables.maint == nil {
		return nil
	}
	return s.tables.maint
}
