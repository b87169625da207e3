// Package tablecommit is the sink's table committer: with a table section,
// a topic's files are the data files of its Iceberg table, and the table,
// not the Kafka commit, is the authority on what is archived
// (docs/tables.md). A partition hands each file it uploads (or adopts) to
// its table's Committer together with its exactly-once progress (Add);
// every table.commit_interval the committer appends all the files it
// holds in one snapshot per table, carrying the progress, and only then
// commits the Kafka offsets, with the same state, through the function
// the partition handed with them.
//
// It knows nothing of the partition pipeline (package connector, which
// imports it): it is handed the configuration, the logger, the schema a
// table is created with, whether the files' schema follows the records,
// a check of a view's partition values, and its counters.
package tablecommit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/table"
)

// Options are what the committers are handed.
type Options struct {
	Config *config.Config
	Log    *slog.Logger
	// Create is the schema of a table created at startup; nil when the
	// first file's creates it.
	Create *schema.Schema
	// PerSchema says that the files' schema follows the records (Avro,
	// Protobuf or JSON Schema with a registry): a payload field's column
	// is then each record schema's.
	PerSchema bool
	// CheckView checks that the partitions can compute the values of a
	// view's partition fields from their records, before the view is
	// used; nil checks nothing.
	CheckView func(*Committer) error
	// Stats are the committers' counters and histograms.
	Stats *Stats
}

// Tables are the sink's tables: the catalog, and a committer per topic.
type Tables struct {
	cfg       *config.Config
	log       *slog.Logger
	cat       *table.Catalog
	create    *schema.Schema
	perSchema bool
	checkView func(*Committer) error
	stats     *Stats

	mu      sync.Mutex
	byTopic map[string]*Committer
}

// Committer collects the files of one table and commits them. It is
// also one view of the table: the files' path by one of its partition
// specs (SpecID), which the partitions that hold it write by. The views
// of one table share its commits; a partition moves to the view of a new
// spec (Current) at a clean point.
type Committer struct {
	t     *Tables
	topic string
	h     *table.Handle
	// specID is the id of the table's partition spec that tmpl follows:
	// the files of this view are committed with it.
	specID int
	tmpl   *archive.Template
	// url is the store's URL: a file's location in the table is url/key.
	url string
	// root is the table's location under url: its files' keys start
	// with it.
	root string
	// computed are the partition fields whose values the records give, in
	// the order of tmpl's {field} parts; lookupPaths the distinct columns
	// they read, and lookupAt which one each reads (see setComputed).
	computed    []*table.PathField
	lookupPaths [][]string
	lookupAt    []int
	// spec is the view's partition fields once the table exists, by the
	// text of a fitted schema, for the values of Avro and Protobuf
	// records (see specFields).
	specMu sync.Mutex
	spec   map[string][]table.PathField

	*commits
}

// commits is what the views of one table share: the files and
// progress to commit, the commits' health, the state read per generation,
// and the view new files follow.
type commits struct {
	commitMu sync.Mutex // one commit at a time
	// failingSince is when the table's commits began to fail, every one
	// (Unix nanoseconds; 0 after a commit that succeeded), and failErr
	// the last failure: /readyz reports a table stuck (see failing).
	failingSince atomic.Int64
	failErr      atomic.Pointer[error]
	// committingSince is when the commit in progress started (Unix
	// nanoseconds, 0 when none is); failedSlow says that the last commit
	// failed after commitSlowFor or more (a catalog that timed out). For
	// /readyz: a blocked catalog shows within seconds.
	committingSince atomic.Int64
	failedSlow      atomic.Bool
	// failures counts the commits that failed in a row, and retryAt is
	// when the periodic commits try the table again (Unix nanoseconds; 0
	// when they do not wait): backoff.go.
	failures atomic.Int32
	retryAt  atomic.Int64

	// The table's state as read for the partitions of one generation
	// (stateCtx is its context): read once, not once per partition.
	stateMu  sync.Mutex
	stateCtx context.Context
	state    table.State

	mu    sync.Mutex
	files []table.File
	seen  map[string]bool // locations in files
	parts map[int32]*pendingProgress
	// times are the record times of the files, by location, and oldest
	// the oldest of them (0 when none): the records consumed and not in
	// the table, for the freshness metrics (freshness.go).
	times  map[string]RecordTimes
	oldest atomic.Int64

	// cur is the view new files follow: the table's default spec's, or
	// partition_by's. views are the views made, by spec id (viewsMu).
	cur     atomic.Pointer[Committer]
	viewsMu sync.Mutex
	views   map[int]*Committer
	// noticed is the default spec id last acted upon (viewsMu), and
	// specErr why the sink does not follow it, for /readyz.
	noticed int
	specErr atomic.Pointer[error]

	// rb keeps commits from running past a rollback; shared by the
	// views, as the partitions are.
	rb rollbacks

	// For upsert tables (upsert.go): the key index chain of each
	// partition's last commit this member made, and the partitions a
	// commit failed for good (table.NoLiveRowError).
	upMu    sync.Mutex
	indexes map[int32][]string
	stopped map[int32]error
}

// pendingProgress is what one partition asks the next commit to record.
type pendingProgress struct {
	progress table.Progress
	// commit is the Kafka commit of the partition's generation; ctx is
	// that generation's.
	commit OffsetCommit
	ctx    context.Context
	// deletes are the offsets of the rows the commit deletes (Batch's
	// Deletes, of every batch the progress covers).
	deletes []int64
}

// OffsetCommit commits a partition's Kafka offset with the state p, after
// the table commit that holds it.
type OffsetCommit func(ctx context.Context, p table.Progress) error

// Check looks at the tables of the configured topics without changing
// them (pqsink run --check): each table's schema and partition spec
// against the configuration and create, the schema a table would be
// created with. It returns what it found absent that the sink would
// create.
func Check(ctx context.Context, c *config.Config, create *schema.Schema) (notes []string, err error) {
	cat, err := table.OpenReadOnly(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("table.catalog: %w", err)
	}
	defer cat.Close()
	if a := cat.Absent(); a != "" {
		notes = append(notes, "table.catalog.uri: "+a)
	}
	for _, topic := range c.Kafka.Topics {
		spec, err := cat.Check(ctx, c.Table.TableName(topic), create, partitionSpec(c))
		if err != nil {
			return nil, err
		}
		if err := followSpec(c, c.Table.TableName(topic), spec); err != nil {
			return nil, err
		}
	}
	return notes, nil
}

// Open opens the catalog and the tables of the configured topics, so
// that a table that cannot be created or adopted stops the sink at
// startup.
func Open(ctx context.Context, o Options) (*Tables, error) {
	cat, err := table.Open(ctx, o.Config)
	if err != nil {
		return nil, err
	}
	t := &Tables{cfg: o.Config, log: o.Log, cat: cat, create: o.Create, perSchema: o.PerSchema, checkView: o.CheckView, stats: o.Stats, byTopic: map[string]*Committer{}}
	for _, topic := range o.Config.Kafka.Topics {
		if _, err := t.ForTopic(ctx, topic); err != nil {
			cat.Close()
			return nil, err
		}
	}
	return t, nil
}

// partitionSpec is table.partition_by as a table's spec is written
// (table.Handle.PartitionBy); nil when partition_by is not set, and the
// sink follows an existing table's spec.
func partitionSpec(c *config.Config) []string {
	if !c.Table.PartitionBySet {
		return nil
	}
	spec := make([]string, len(c.Table.PartitionBy))
	for i, p := range c.Table.PartitionBy {
		spec[i] = p.String()
	}
	return spec
}

// followSpec checks that the sink can put each field of spec, an existing
// table's partition spec that partition_by leaves to the table, in its
// files' paths, as it checks partition_by's own fields.
func followSpec(c *config.Config, name string, spec []string) error {
	for _, f := range spec {
		p, err := config.ParsePartitionField(f)
		if err == nil {
			err = checkPartitionField(c, p)
		}
		if err != nil {
			return fmt.Errorf("table %s is partitioned by %q, and the sink cannot put %s in its files' paths: %w", name, spec, f, err)
		}
	}
	return nil
}

// Settings refuses what the sink cannot do with a table yet.
func Settings(c *config.Config) error {
	if c.Path != archive.DefaultPath {
		return errors.New("path: not used with a table: the files' keys follow the table's location and partition spec; remove it")
	}
	if c.TimeField != "" {
		return errors.New("time_field: not supported with a table; partition by a transform of a column (table.partition_by) instead")
	}
	for _, p := range c.Table.PartitionBy {
		if err := checkPartitionField(c, p); err != nil {
			return fmt.Errorf("table.partition_by: %s: %w", p, err)
		}
	}
	return nil
}

// checkPartitionField checks that the sink can put partition field p in
// a file's path: every transform of a column of the _kafka envelope that
// the path can hold (a time transform of _kafka.timestamp, identity of
// _kafka.topic and _kafka.partition), and every transform of a payload
// field with format json, avro or protobuf, whose value the sink computes
// from the record (tablePath; for avro and protobuf, from the payload).
func checkPartitionField(c *config.Config, p config.PartitionField) error {
	switch {
	case p.Column == "_kafka.timestamp":
		if !slices.Contains([]string{"year", "month", "day", "hour"}, p.Transform) {
			return errors.New("_kafka.timestamp takes year, month, day or hour")
		}
	case p.Column == "_kafka.topic" || p.Column == "_kafka.partition":
		if p.Transform != "identity" {
			return fmt.Errorf("%s takes identity only", p.Column)
		}
	case strings.HasPrefix(p.Column, "_kafka."):
		return errors.New("of the _kafka envelope, only timestamp, topic and partition can partition a table")
	case !c.Format.FieldColumns():
		return fmt.Errorf("a payload field partitions a table with format.type json, json_schema, avro or protobuf only (not %s)", c.Format.Type)
	}
	return nil
}

// Path is the template of a table's files' keys,
// {table location}/data/{name=value/ per partition field}{topic}+{partition}+{first_offset}.parquet,
// and the partition fields whose values the partitions compute from their
// records, in the order of the template's {field} parts. perSchema says
// that the files' schema follows the records (Avro, Protobuf with a
// registry): a payload field's column is then each record schema's, and
// fields have no Leaf.
func Path(root string, fields []table.PathField, perSchema bool) (string, []*table.PathField, error) {
	text := root + "/data/"
	layouts := map[string]string{"year": "2006", "month": "2006-01", "day": "2006-01-02", "hour": "2006-01-02-15"}
	var computed []*table.PathField
	for i, f := range fields {
		var value string
		switch {
		case f.Column == "_kafka.timestamp" && layouts[f.Transform] != "":
			// Iceberg's transforms take times in UTC, as the table's
			// partitions write them.
			value = "{record_time:" + layouts[f.Transform] + "}"
		case f.Column == "_kafka.topic" && f.Transform == "identity":
			value = "{topic}"
		case f.Column == "_kafka.partition" && f.Transform == "identity":
			value = "{partition}"
		case strings.HasPrefix(f.Column, "_kafka."):
			return "", nil, fmt.Errorf("partition field %s: %s(%s) cannot be put in a file's path", f.Name, f.Transform, f.Column)
		case f.Leaf == nil && !perSchema:
			return "", nil, fmt.Errorf("partition field %s: %s is not a column of the files", f.Name, f.Column)
		default:
			value = "{field:" + f.Column + "}"
			computed = append(computed, &fields[i])
		}
		if strings.ContainsAny(f.Name, "/{}") || f.Name == "" {
			return "", nil, fmt.Errorf("partition field name %q cannot be a folder name", f.Name)
		}
		text += f.Name + "=" + value + "/"
	}
	return text + table.FileName, computed, nil
}

// ForTopic returns the committer of topic's table, creating or adopting
// the table on first use.
func (t *Tables) ForTopic(ctx context.Context, topic string) (*Committer, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tc := t.byTopic[topic]; tc != nil {
		return tc.cur.Load(), nil
	}
	c := t.cfg
	name := c.Table.TableName(topic)
	h, err := t.cat.Table(ctx, name, t.create)
	if err != nil {
		return nil, err
	}
	// The files' paths follow table.partition_by, so that a file holds one
	// partition tuple of the table: an adopted table partitioned otherwise
	// would get files that hold several.
	if got, want := h.PartitionBy(), partitionSpec(c); want != nil && !slices.Equal(got, want) {
		return nil, fmt.Errorf("table %s is partitioned by %q, and table.partition_by says %q: set partition_by to the table's spec, or leave it out to follow the table's", h.Name(), got, want)
	} else if want == nil {
		if err := followSpec(c, h.Name(), got); err != nil {
			return nil, err
		}
		if len(got) > 0 {
			t.log.Info("table: following its partition spec (table.partition_by is not set)", "table", h.Name(), "partition_by", got)
		}
	}
	spec, err := h.PathSpec(ctx, table.DefaultSpec)
	if err != nil {
		return nil, err
	}
	tc, err := t.newView(ctx, topic, h, &commits{seen: map[string]bool{}, parts: map[int32]*pendingProgress{}, times: map[string]RecordTimes{}, views: map[int]*Committer{}}, spec)
	if err != nil {
		return nil, err
	}
	tc.cur.Store(tc)
	tc.noticed = spec.ID
	// Exported from the start, at 0 observations, for the dashboards.
	t.stats.Freshness.WithLabelValues(h.Name(), "oldest")
	t.stats.Freshness.WithLabelValues(h.Name(), "newest")
	t.byTopic[topic] = tc
	t.log.Info("table", "topic", topic, "table", h.Name(), "files", tc.tmpl.String(), "spec_id", spec.ID)
	return tc, nil
}

// newView makes the view of topic's table h by its partition spec spec,
// sharing commits, and adds it to commits' views.
func (t *Tables) newView(ctx context.Context, topic string, h *table.Handle, commits *commits, spec table.PathSpec) (*Committer, error) {
	c := t.cfg
	url := strings.TrimSuffix(c.Store.URL, "/")
	loc, err := h.Location(ctx)
	if err != nil {
		return nil, err
	}
	root, ok := strings.CutPrefix(strings.TrimSuffix(loc, "/"), url+"/")
	if !ok {
		return nil, fmt.Errorf("table %s: its location %s is not under store.url %s: the sink writes the table's files through the store, so the table must live in it", h.Name(), loc, url)
	}
	// With a registry, the files' schema follows the records: the columns
	// are each schema's.
	text, computed, err := Path(root, spec.Fields, t.perSchema)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", h.Name(), err)
	}
	tmpl, err := archive.Parse(text, true)
	if err != nil {
		return nil, fmt.Errorf("table %s: the files' path: %w", h.Name(), err)
	}
	tc := &Committer{t: t, topic: topic, h: h, specID: spec.ID, tmpl: tmpl, url: url, root: root, commits: commits}
	tc.setComputed(computed)
	if t.checkView != nil {
		if err := t.checkView(tc); err != nil {
			return nil, err
		}
	}
	commits.viewsMu.Lock()
	if commits.views[spec.ID] == nil {
		commits.views[spec.ID] = tc
	}
	tc = commits.views[spec.ID]
	commits.viewsMu.Unlock()
	return tc, nil
}

// Fit gives s, a schema the partition's format learned from its records,
// the table's field ids, evolving the table's schema first when s adds or
// widens columns.
func (tc *Committer) Fit(ctx context.Context, s *schema.Schema) (*schema.Schema, error) {
	fitted, evolved, err := tc.h.Fit(ctx, s)
	if evolved {
		tc.t.stats.SchemaUpdates.Add(1)
		tc.t.log.Info("table schema evolved", "table", tc.h.Name())
	}
	return fitted, err
}

// Close releases the catalog.
func (t *Tables) Close() error { return t.cat.Close() }

// Handles returns the handles of the tables the committers know, one per
// topic.
func (t *Tables) Handles() []*table.Handle {
	t.mu.Lock()
	defer t.mu.Unlock()
	hs := make([]*table.Handle, 0, len(t.byTopic))
	for _, tc := range t.byTopic {
		hs = append(hs, tc.h)
	}
	return hs
}

// Run commits every table each commit_interval until ctx ends; a table
// whose commits fail is tried less often (backoff.go).
func (t *Tables) Run(ctx context.Context) {
	tick := time.NewTicker(t.cfg.Table.CommitInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			t.commitDue(ctx, now)
		}
	}
}

// Failing returns the error of the table whose commits have failed, every
// one, for longest, when that is at least for: its files and the Kafka
// offsets behind them wait, and /readyz says so. A table that commits
// again is not failing. Why the sink does not follow a table's new
// partition spec (noticeSpec) comes first, however long it has held.
func (t *Tables) Failing(now time.Time, atLeast time.Duration) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var worst *Committer
	var longest time.Duration
	for _, tc := range t.byTopic {
		if err := tc.specErr.Load(); err != nil {
			return *err
		}
	}
	for _, tc := range t.byTopic {
		if since := tc.committingSince.Load(); since != 0 && now.Sub(time.Unix(0, since)) >= commitSlowFor {
			return fmt.Errorf("table %s: a commit has been in progress for %s (the catalog is slow, unreachable or locked); its files and the Kafka offsets behind them wait",
				tc.h.Name(), now.Sub(time.Unix(0, since)).Round(time.Second))
		}
		if tc.failedSlow.Load() && tc.failingSince.Load() != 0 {
			msg := "the last commit failed"
			if err := tc.failErr.Load(); err != nil {
				msg = fmt.Sprintf("the last commit failed: %v", *err)
			}
			return fmt.Errorf("table %s: %s, after %s or more (the catalog is slow, unreachable or locked); its files and the Kafka offsets behind them wait", tc.h.Name(), msg, commitSlowFor)
		}
	}
	for _, tc := range t.byTopic {
		since := tc.failingSince.Load()
		if since == 0 {
			continue
		}
		if d := now.Sub(time.Unix(0, since)); d >= atLeast && d > longest {
			worst, longest = tc, d
		}
	}
	if worst == nil {
		return nil
	}
	msg := "commits have failed"
	if err := worst.failErr.Load(); err != nil {
		msg = fmt.Sprintf("commits have failed: %v", *err)
	}
	return fmt.Errorf("table %s: %s, every one for %s; its files and the Kafka offsets behind them wait", worst.h.Name(), msg, longest.Round(time.Second))
}

// commitSlowFor is how long a table commit may take before /readyz says
// not ready: a healthy commit takes milliseconds to a second or two; a
// SQLite catalog locked by another process blocks each commit for its
// 10 s busy timeout.
const commitSlowFor = 5 * time.Second

// CommitAll commits what every table holds, backing off or not (a
// rebalance's and the shutdown's commits); it reports whether all
// commits succeeded.
func (t *Tables) CommitAll(ctx context.Context) bool {
	ok := true
	for _, tc := range t.all() {
		ok = t.commitOne(ctx, tc) && ok
	}
	return ok
}

// all returns the committers, one per topic.
func (t *Tables) all() []*Committer {
	t.mu.Lock()
	defer t.mu.Unlock()
	all := make([]*Committer, 0, len(t.byTopic))
	for _, tc := range t.byTopic {
		all = append(all, tc)
	}
	return all
}

// commitOne commits what tc holds, and logs a failure with the time the
// periodic commits now wait; it reports whether the commit succeeded.
func (t *Tables) commitOne(ctx context.Context, tc *Committer) bool {
	err := tc.commit(ctx)
	if err != nil && ctx.Err() == nil {
		wait := time.Duration(0)
		if at := tc.retryAt.Load(); at != 0 {
			wait = max(time.Until(time.Unix(0, at)), 0)
		}
		t.log.Error("table commit failed; the files stay uploaded and are committed with the next one", "table", tc.h.Name(),
			"failures_in_a_row", tc.failures.Load(), "next_try_in", wait.Round(time.Millisecond), "error", err)
	}
	return err == nil
}

// Batch is what a partition uploaded or adopted since it last handed
// files to its committer: the table's view of each file (File), and the
// times of its records, in the same order.
type Batch struct {
	Files []table.File
	Times []RecordTimes
	// Deletes are, for an upsert table, the Kafka offsets of the rows
	// that the batch's records replace or delete (the rows their keys
	// had, as the partition's key index says): the commit that holds the
	// batch's progress deletes them (table.DeleteOffsets).
	Deletes []int64
}

// Append adds file f, whose records' times are t.
func (b *Batch) Append(f table.File, t RecordTimes) {
	b.Files = append(b.Files, f)
	b.Times = append(b.Times, t)
}

// Add hands the committer the batch of files that Kafka partition
// partition uploaded or adopted, and the partition's progress after them.
// The Kafka commit of that progress (commit, in the generation's ctx)
// follows the table commit that holds them.
func (tc *Committer) Add(ctx context.Context, partition int32, batch Batch, progress table.Progress, commit OffsetCommit) {
	files, times := batch.Files, batch.Times
	if tc.rb.waiting(partition) || tc.failure(partition) != nil {
		// Read before the partition learnt that the table was rolled
		// back: it reads these records again.
		return
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for i, f := range files {
		// A file adopted again (a partition re-read after a rebalance
		// before the commit) is one data file.
		if !tc.seen[f.Location] {
			tc.seen[f.Location] = true
			tc.files = append(tc.files, f)
			tc.pending(f, 1)
			if i < len(times) {
				tc.holdTime(f.Location, times[i])
			}
		}
	}
	if pp := tc.parts[partition]; pp != nil {
		progress = mergeProgress(pp.progress, progress)
		batch.Deletes = append(pp.deletes, batch.Deletes...)
	}
	tc.parts[partition] = &pendingProgress{progress: progress, commit: commit, ctx: ctx, deletes: batch.Deletes}
}

// mergeProgress is the union of what p and q say is uploaded: both were
// true of files the committer holds or the table has (table.Progress's
// Merge, which keeps the spec of the paths it keeps).
func mergeProgress(p, q table.Progress) table.Progress { return p.Merge(q) }

// commit appends the files held to the table with the progress of their
// partitions, then commits the partitions' Kafka offsets with the same
// state. On failure the files and progress are kept for the next commit.
func (tc *Committer) commit(ctx context.Context) error {
	tc.commitMu.Lock()
	defer tc.commitMu.Unlock()
	tc.mu.Lock()
	files, parts, times := tc.files, tc.parts, tc.times
	// tc.oldest stays until the commit is made: the records are not in
	// the table before.
	tc.files, tc.seen, tc.parts, tc.times = nil, map[string]bool{}, map[int32]*pendingProgress{}, map[string]RecordTimes{}
	tc.mu.Unlock()
	if len(files) == 0 && len(parts) == 0 {
		return nil
	}
	group, topic := tc.t.cfg.Kafka.Group, tc.topic
	state := table.State{}
	for id, pp := range parts {
		state[table.Partition{Group: group, Topic: topic, Partition: id}] = pp.progress
	}
	start := time.Now()
	tc.committingSince.Store(start.UnixNano())
	readAgain := false
	opts := []table.CommitOption{table.Seen(tc.rb.seen(group, topic, parts))}
	if deletes := deleteOffsets(topic, parts); deletes != nil {
		opts = append(opts, table.DeleteOffsets(deletes))
	}
	res, err := tc.h.Commit(ctx, group, files, state, opts...)
	var missing *table.NoLiveRowError
	if errors.As(err, &missing) {
		files, parts = tc.missingRows(missing, files, parts)
		readAgain = true
	}
	tc.committingSince.Store(0)
	tc.failedSlow.Store(err != nil && time.Since(start) >= commitSlowFor)
	st := tc.t.stats
	st.CommitSeconds.Observe(time.Since(start).Seconds())
	st.Conflicts.Add(int64(max(res.Attempts-1, 0)))
	var rb *table.RolledBackError
	var sc *table.SpecConflictError
	readAgain = readAgain || errors.As(err, &rb) || errors.As(err, &sc)
	switch {
	case rb != nil:
		files, parts = tc.rolledBack(rb.Held, false, files, parts)
	case sc != nil:
		files, parts = tc.rolledBack(sc.Held, true, files, parts)
	case missing != nil:
	case err != nil:
		st.CommitErrors.Add(1)
		tc.failed(time.Now(), tc.t.cfg.Table.CommitInterval)
		tc.failErr.Store(&err)
		tc.failingSince.CompareAndSwap(0, time.Now().UnixNano())
	}
	if err != nil {
		// Keep everything for the next attempt, before what came since.
		tc.mu.Lock()
		seen := make(map[string]bool, len(files)+len(tc.files))
		for _, f := range files {
			seen[f.Location] = true
		}
		for _, f := range tc.files {
			if !seen[f.Location] {
				seen[f.Location] = true
				files = append(files, f)
			} else {
				tc.pending(f, -1) // added again since; counted twice
			}
		}
		tc.files, tc.seen = files, seen
		for loc, t := range times {
			if _, ok := tc.times[loc]; !ok && seen[loc] {
				tc.times[loc] = t
			}
		}
		tc.refreshOldest()
		for id, pp := range tc.parts {
			if old := parts[id]; old != nil {
				pp.progress = mergeProgress(old.progress, pp.progress)
				pp.deletes = append(old.deletes, pp.deletes...)
			}
			parts[id] = pp
		}
		tc.parts = parts
		tc.mu.Unlock()
		if readAgain {
			return nil // handled: the others commit with the next one
		}
		return err
	}
	committedAt := time.Now()
	tc.mu.Lock()
	tc.refreshOldest() // the files added since
	tc.mu.Unlock()
	oldest, newest := tc.observeFreshness(committedAt, times)
	tc.rb.committed(parts)
	st.Commits.Add(1)
	tc.failingSince.Store(0)
	tc.succeeded()
	took := int64(time.Since(start))
	st.CommitNanos.Add(took)
	for cur := st.CommitMaxNanos.Load(); took > cur && !st.CommitMaxNanos.CompareAndSwap(cur, took); cur = st.CommitMaxNanos.Load() {
	}
	st.FilesAppended.Add(int64(res.Appended))
	st.RowsDeleted.Add(int64(res.RowsDeleted))
	tc.noteIndexes(parts)
	st.FilesDropped.Add(int64(res.Dropped))
	for _, f := range files {
		tc.pending(f, -1)
	}
	attrs := []any{"table", tc.h.Name(), "snapshot", res.SnapshotID, "appended", res.Appended,
		"already_in_table", res.Dropped, "partitions", len(parts), "attempts", res.Attempts,
		"took", time.Since(start).Round(time.Millisecond)}
	if oldest >= 0 {
		// The ages of the oldest and the newest record of the files
		// committed, as pqsink_table_freshness_seconds observes them.
		attrs = append(attrs, "oldest_record_age", oldest.Round(time.Millisecond), "newest_record_age", newest.Round(time.Millisecond))
	}
	tc.t.log.Info("table commit", attrs...)
	// The table holds the files: the Kafka offsets may follow, carrying the
	// same state (a table-less restart and lag monitoring read them).
	var wg sync.WaitGroup
	for id, pp := range parts {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(pp.ctx, 30*time.Second)
			defer cancel()
			if err := pp.commit(cctx, pp.progress); err != nil && pp.ctx.Err() == nil {
				tc.t.log.Warn("offset commit after the table commit failed; the table holds the state", "topic", topic, "partition", id, "offset", pp.progress.Committed, "error", err)
			}
		})
	}
	wg.Wait()
	// The commit read the table: a new default spec shows there.
	tc.noticeSpec(ctx)
	return nil
}

// pending counts f (n = 1) or uncounts it (n = -1) among the files not
// in the table yet.
func (tc *Committer) pending(f table.File, n int64) {
	st := tc.t.stats
	st.PendingFiles.Add(n)
	if f.Footer != nil {
		st.PendingRecords.Add(n * f.Footer.NumRows)
	}
}

// State reads Kafka partition id's exactly-once state from the table:
// its committed offset, the paths of its skip set (a copy) and their
// spec, and whether the table has any.
//
// ctx is the generation's: the partitions assigned in one generation share
// one read of the table, made after the previous generation's last commit.
func (tc *Committer) State(ctx context.Context, id int32) (table.Progress, bool, error) {
	group, topic := tc.t.cfg.Kafka.Group, tc.topic
	tc.stateMu.Lock()
	defer tc.stateMu.Unlock()
	if tc.stateCtx != ctx {
		st, err := tc.h.State(ctx)
		if err != nil {
			return table.Progress{}, false, err
		}
		// Whichever group wrote them, the table's records are read no
		// more: a renamed group resumes where the table is.
		tc.stateCtx, tc.state = ctx, st.As(group)
	}
	p, ok := tc.state[table.Partition{Group: group, Topic: topic, Partition: id}]
	tc.rb.took(id, p)
	tc.clearFailure(id)
	if !ok {
		return table.Progress{}, false, nil
	}
	paths := map[string]int64{}
	maps.Copy(paths, p.Paths)
	p.Paths = paths
	return p, true, nil
}

// File is the table's view of an object the partition uploaded or
// adopted: key in the store, of path identity id.
func (tc *Committer) File(key, id string, size int64, md *meta.FileMetaData) table.File {
	spec := tc.specID
	return table.File{Location: tc.url + "/" + key, Size: size, Footer: md, PathID: id, SpecID: &spec}
}
