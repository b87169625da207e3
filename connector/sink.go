package connector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pqsink/pqsink/table/keyindex"

	"github.com/pqsink/pqsink/internal/backoff"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/bloom"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector/budget"
	"github.com/pqsink/pqsink/connector/deadletter"
	"github.com/pqsink/pqsink/connector/fetch"
	"github.com/pqsink/pqsink/connector/group"
	"github.com/pqsink/pqsink/connector/health"
	"github.com/pqsink/pqsink/connector/maintenance"
	"github.com/pqsink/pqsink/connector/tablecommit"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/format/all"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/objstore/fromconfig"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// Sink archives Kafka topics into an object store as Parquet files, as one
// member of a consumer group. Run it with Run; several sinks (in one
// process or many) with the same group split the partitions between them.
type Sink struct {
	cfg     *config.Config
	log     *slog.Logger
	store   objstore.Store
	kafka   *kafkaClients
	format  format.Format    // format.type's, from formats
	formats *format.Registry // nil: format/all's
	schema  *schema.Schema   // nil when each partition infers its own
	tmpl    *archive.Template
	loc     *time.Location
	regex   *regexp.Regexp

	writers       *writerPool
	rowGroupBytes int64
	sampleWait    time.Duration
	tick          time.Duration
	stats         *Stats

	joined atomic.Bool // a generation of the group has started

	deadLetters deadletter.Destination // nil without a dead-letter destination
	mem         *budget.Budget
	mux         *fetch.Mux             // fetches every partition
	tables      *tablecommit.Tables    // nil without a table section
	maint       *maintenance.Scheduler // nil without table.maintenance

	storeErr atomic.Pointer[error] // the store's last failure (a probe's or a retried request's), nil when reachable
	// bucketErr is why the last listing of the store failed (a missing
	// bucket, refused credentials), which a probe's HEAD cannot tell from
	// a missing key; kafkaErr why the group's last request failed;
	// topicsErr which configured topics do not exist. For /readyz.
	bucketErr atomic.Pointer[error]
	kafkaErr  atomic.Pointer[error]
	topicsErr atomic.Pointer[error]
	// unfinished counts the partitions whose files a shutdown could not
	// finish; Run's error says so.
	unfinished atomic.Int64
	// tablesUnfinished says that the shutdown's last table commit failed.
	tablesUnfinished atomic.Bool

	// uploadFailingSince is when uploads started to fail (Unix
	// nanoseconds), 0 while the last one succeeded; uploadErr is the last
	// failure. For /readyz.
	uploadFailingSince atomic.Int64
	uploadErr          atomic.Pointer[error]

	mu        sync.Mutex
	failed    map[string]error        // partitions stopped by errors: fail, by "topic[partition]"
	consuming map[*partition]struct{} // the Kafka partitions being consumed, for the pressure relief
	// reachedAt is the highest offset reached on each partition this
	// process held, to count the records it reads again.
	reachedAt map[topicPartition]int64

	checkOnly  bool     // New only checks (CheckOnly)
	offline    bool     // a check contacts nothing (Offline)
	checkNotes []string // what a check found absent that the sink creates

	// upserts counts the member's upsert partitions with a key index:
	// they share a quarter of memory.limit (indexMemory).
	upserts atomic.Int64
}

// Option configures New.
type Option func(*Sink)

// CheckOnly makes New check what the sink depends on without changing it:
// the tables of a table section are looked at (their schema and partition
// spec against the configuration), never created, adopted or evolved. A
// sink made so is for `pqsink run --check`, not for Run.
func CheckOnly() Option { return func(s *Sink) { s.checkOnly = true } }

// Offline makes a CheckOnly check contact nothing: the catalog is not
// opened, and Check does not reach the brokers, the store or the
// dead-letter destination. Only the configuration itself is checked.
func Offline() Option { return func(s *Sink) { s.offline = true } }

// Formats makes the sink open format.type from r instead of the registry
// of every format (format/all).
func Formats(r *format.Registry) Option { return func(s *Sink) { s.formats = r } }

// New checks the configuration, opens the store and prepares the files'
// schema and paths. Nothing is consumed before Run.
func New(ctx context.Context, cfg *config.Config, log *slog.Logger, opts ...Option) (*Sink, error) {
	s := &Sink{cfg: cfg, log: log, loc: cfg.Timezone, stats: newStats(), failed: map[string]error{}, consuming: map[*partition]struct{}{}, reachedAt: map[topicPartition]int64{}}
	for _, o := range opts {
		o(s)
	}
	s.mem = budget.New(cfg.Memory.Limit)
	if s.loc == nil {
		s.loc = time.UTC
	}
	var err error
	if cfg.Kafka.TopicRegex != "" {
		if s.regex, err = regexp.Compile(cfg.Kafka.TopicRegex); err != nil {
			return nil, fmt.Errorf("kafka.topic_regex: %w", err)
		}
	}
	needTopic := s.regex != nil || len(cfg.Kafka.Topics) > 1
	if s.tmpl, err = archive.Parse(cfg.Path, needTopic); err != nil {
		return nil, fmt.Errorf("path: %w", err)
	}
	if s.formats == nil {
		s.formats = all.Formats()
	}
	if s.format, err = s.formats.Open(cfg, format.Env{Log: log, Truncated: &s.stats.timestampsTruncated}); err != nil {
		return nil, err
	}
	if cfg.Table.Upsert() {
		if s.format, err = keyedFormat(s.format, cfg); err != nil {
			return nil, err
		}
		// A process killed with upsert partitions left their indexes'
		// spill folders, runs and all: nothing else removes them.
		if n, err := keyindex.RemoveStale(""); err != nil {
			log.Warn("upsert table: removing the spill folders of ended processes' key indexes", "error", err, "removed", n)
		} else if n > 0 {
			log.Info("upsert table: removed the spill folders of ended processes' key indexes", "removed", n, "dir", os.TempDir())
		}
	}
	if s.schema, err = s.format.FixedSchema(); err != nil {
		return nil, err
	}
	if fixed := s.format.Fixed(); fixed != nil && fixed.NewLookup != nil && cfg.Table == nil {
		// The one schema: its path fields are checked now, not found
		// wrong by every partition.
		if spec := s.pathFieldSpec(); spec != nil {
			if _, err := spec.Lookup(fixed); err != nil {
				return nil, fmt.Errorf("%s: %w", fixed.Name, err)
			}
		}
	}
	writerOpts, err := writerOptions(&cfg.Parquet, s.schema)
	if err != nil {
		return nil, err
	}
	writerOpts = append(writerOpts, writer.SharedCodecs(writer.NewCodecs()))
	s.writers = newWriterPool(writerOpts, runtime.GOMAXPROCS(0)+1, s.mem)
	s.rowGroupBytes = cfg.Parquet.RowGroupBytes
	if b := cfg.Rotate.Bytes; b > 0 && b < s.rowGroupBytes {
		s.rowGroupBytes = b
	}
	s.tick = time.Second
	for _, d := range []time.Duration{cfg.Rotate.Interval, cfg.Rotate.Schedule} {
		if d > 0 {
			s.tick = min(s.tick, max(d/4, 10*time.Millisecond))
		}
	}
	s.sampleWait = 5 * time.Second
	if cfg.Rotate.Interval > 0 {
		s.sampleWait = min(s.sampleWait, cfg.Rotate.Interval)
	}
	if s.kafka, err = newKafkaClients(&cfg.Kafka); err != nil {
		return nil, err
	}
	s.mux = fetch.New(fetch.Options{Client: s.kafka.client, Config: cfg.Kafka.Fetch, Budget: s.mem, Room: s.fetchSize, Log: log})
	onRetry := func(op string, attempt int, err error) {
		// Readiness shows a store failure from its first failed request,
		// not only from the next probe; a probe that succeeds clears it.
		s.storeErr.Store(&err)
		s.stats.s3Retries.Add(1)
		s.log.Debug("retrying a store request", "operation", op, "attempt", attempt, "error", err)
	}
	pool := budget.NewPool(s.mem)
	if s.checkOnly && createdByOpen(cfg.Store.URL) {
		// A check opens no store that opening would create (a missing
		// file:// folder): Check notes it instead.
		if cfg.Table != nil {
			if s.tables, err = openTables(ctx, s); err != nil {
				s.kafka.close()
				return nil, err
			}
		}
		return s, nil
	}
	if s.store, err = openStore(ctx, &cfg.Store, pool, onRetry); err != nil {
		s.kafka.close()
		return nil, err
	}
	// As the store's, a missing dead-letter folder is not made by a check.
	if !s.checkOnly || !createdByOpen(cfg.DeadLetter.URL) {
		if s.deadLetters, err = newDeadLetters(ctx, s, pool, onRetry); err != nil {
			s.store.Close()
			s.kafka.close()
			return nil, err
		}
	}
	if cfg.Table != nil {
		if s.tables, err = openTables(ctx, s); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// createdByOpen says whether opening the store of rawURL would create
// something: a file:// folder that does not exist yet.
func createdByOpen(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "file" {
		return false
	}
	_, err = os.Stat(filepath.FromSlash(u.Path))
	return errors.Is(err, os.ErrNotExist)
}

// writerOptions turns the parquet section into writer options, through
// writer.Settings as pqsink convert does.
func writerOptions(c *config.Parquet, sch *schema.Schema) ([]writer.Option, error) {
	set := writer.DefaultSettings()
	set.Codec = c.Codec
	set.PageBytes = c.PageBytes
	set.PageVersion = c.PageVersion
	set.Dictionary = c.Dictionary
	set.PageIndex = c.PageIndex
	set.Checksums = c.Checksums
	set.StatsTruncate = c.StatsTruncate
	set.BloomFilters = c.BloomFilters
	opts, err := set.Options()
	if err != nil {
		var se *writer.SettingError
		if errors.As(err, &se) && se.Setting == "BloomFilters" {
			return nil, fmt.Errorf("parquet.bloom_filters: %q: %w", se.Value, se.Err)
		}
		if errors.As(err, &se) && se.Setting == "Codec" {
			return nil, fmt.Errorf("parquet.codec: %w", se.Err)
		}
		return nil, err
	}
	if sch != nil {
		for _, b := range c.BloomFilters {
			if col, _, _ := bloom.ParseSetting(b); sch.Leaf(col) == nil {
				return nil, fmt.Errorf("parquet.bloom_filters: the schema has no column %q", col)
			}
		}
	}
	return opts, nil
}

// openStore opens the store of the config, with the part buffers of pool
// and the retry hook onRetry when they are not nil.
func openStore(ctx context.Context, c *config.Store, pool objstore.BufferPool, onRetry func(op string, attempt int, err error)) (objstore.Store, error) {
	var opts []objstore.Option
	if pool != nil {
		opts = append(opts, objstore.Buffers(pool))
	}
	if onRetry != nil {
		opts = append(opts, objstore.OnRetry(onRetry))
	}
	return fromconfig.Open(ctx, c.URL, c, opts...)
}

// Stats returns the sink's counters.
func (s *Sink) Stats() *Stats { return s.stats }

// Store returns the sink's object store.
func (s *Sink) Store() objstore.Store { return s.store }

// Close releases the store and the dead-letter producer.
func (s *Sink) Close() error {
	var err error
	if s.deadLetters != nil {
		err = s.deadLetters.Close()
	}
	if s.tables != nil {
		err = errors.Join(err, s.tables.Close())
	}
	if s.kafka != nil {
		s.kafka.close() // after the dead letters, which produce through it
	}
	if s.store == nil { // a check's (CheckOnly)
		return err
	}
	return errors.Join(err, s.store.Close())
}

// Run consumes until ctx is cancelled, then finishes (or abandons, per the
// shutdown setting) the open files within the shutdown timeout and leaves
// the group. It returns nil after a clean shutdown.
func (s *Sink) Run(ctx context.Context) error {
	// Helpers of the partitions, stopped (and waited for) once they are.
	rctx, stopHelpers := context.WithCancel(context.Background())
	var helpers sync.WaitGroup
	defer s.writers.close() // the partitions are done: nothing encodes any more
	defer helpers.Wait()
	defer stopHelpers()
	helpers.Go(func() { s.memoryRelief().Run(rctx) })
	helpers.Go(func() { s.probeStore(rctx) })
	helpers.Go(func() { s.mux.Run(rctx) })
	if s.tables != nil {
		helpers.Go(func() { s.tables.Run(rctx) })
		if s.maint != nil {
			helpers.Go(func() { s.maint.Run(ctx) })
		}
	}
	s.abortStale(ctx)
	var flog health.FailureLog
	for n := 1; ctx.Err() == nil; n++ {
		topics, err := s.resolveTopics(ctx)
		if err != nil {
			flog.Failed(s.log, "listing the topics failed; retrying with backoff", err, "brokers", s.cfg.Kafka.Brokers)
			health.SetErr(&s.kafkaErr, err)
			backoff.Sleep(ctx, backoff.Doubling(time.Second, n, 30*time.Second))
			continue
		}
		flog.Recovered(s.log, "topics listed")
		health.SetErr(&s.kafkaErr, nil)
		n = 0
		if len(topics) == 0 {
			s.log.Info("no topic matches kafka.topic_regex yet", "regex", s.cfg.Kafka.TopicRegex)
			backoff.Sleep(ctx, 10*time.Second)
			continue
		}
		if err := s.runGroup(ctx, topics); err != nil {
			return err
		}
	}
	return s.shutdownOutcome()
}

// ErrUnfinished is the error of a Run whose shutdown could not finish
// everything: files not uploaded, a last table commit that failed, or
// partitions stopped by errors. Nothing is lost (the next owner reads
// those records again), but the exit status should say it.
var ErrUnfinished = errors.New("the shutdown did not finish everything")

// shutdownOutcome is Run's error after a shutdown: nil when every file
// was finished and no partition was stopped.
func (s *Sink) shutdownOutcome() error {
	var why []string
	if n := s.unfinished.Load(); n > 0 {
		why = append(why, fmt.Sprintf("%d partitions could not finish their files (they are read again by the next owner)", n))
	}
	if s.tablesUnfinished.Load() {
		why = append(why, "the last table commit failed (its files are committed by the next one)")
	}
	if failed := s.Failed(); len(failed) > 0 {
		keys := make([]string, 0, len(failed))
		for k := range failed {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		why = append(why, fmt.Sprintf("%d partitions were stopped by errors (first %s: %v)", len(failed), keys[0], failed[keys[0]]))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrUnfinished, strings.Join(why, "; "))
}

// resolveTopics lists the topics to consume.
func (s *Sink) resolveTopics(ctx context.Context) ([]string, error) {
	if s.regex == nil {
		return s.cfg.Kafka.Topics, nil
	}
	all, err := s.kafka.topics(ctx)
	if err != nil {
		return nil, err
	}
	var topics []string
	for _, t := range all {
		if s.regex.MatchString(t) {
			topics = append(topics, t)
		}
	}
	sort.Strings(topics)
	return topics, nil
}

// runGroup is a membership of the consumer group for a set of topics
// (connector/group). It returns when ctx ends, after the shutdown: the open files
// are finished and committed while the member is still in the group.
func (s *Sink) runGroup(ctx context.Context, topics []string) error {
	k := &s.cfg.Kafka
	s.log.Info("joining consumer group", "group", k.Group, "topics", topics)
	mctx, endMembership := context.WithCancel(context.Background())
	defer endMembership()
	commits := group.NewCommitBatcher(s.kafka.client)
	committing := make(chan struct{})
	go func() { defer close(committing); commits.Run(mctx) }()
	h := group.NewHoldings(ctx, mctx, &pipeline{s: s, ctx: ctx, mctx: mctx, commits: commits}, commits, s.log)
	// A failed join or heartbeat is an ERROR at growing intervals
	// (health.FailureLog), and makes /readyz not ready until the next success.
	var flog health.FailureLog
	report := func(msg string, err error) {
		if err != nil {
			flog.Failed(s.log, msg, err, "group", k.Group, "brokers", k.Brokers)
		} else {
			flog.Recovered(s.log, "consumer group reachable again", "group", k.Group)
		}
		health.SetErr(&s.kafkaErr, err)
	}
	m := group.NewMembership(group.Options{Client: s.kafka.client, Config: k, Log: s.log, Topics: topics,
		InstanceID: s.instanceID(), Report: report}, h)
	h.SetMembership(m)
	go h.Clock(mctx, s.tick)
	if s.regex == nil {
		// A listed topic that does not exist has no partition to
		// assign: say so, and rejoin once it exists.
		wctx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		go s.watchTopics(wctx, topics, m.Rejoin)
	}

	// A regex subscription watches for topics that appear or go, and
	// rejoins with them.
	if s.regex != nil {
		go func() {
			for backoff.Sleep(ctx, k.TopicRefresh) {
				now, err := s.resolveTopics(ctx)
				if err == nil && !slices.Equal(now, topics) {
					s.log.Info("topics matching kafka.topic_regex changed; rejoining", "topics", now)
					topics = now
					m.Subscribe(now)
				}
			}
		}()
	}
	// The shutdown: the partitions finish their files (partitionRun.step) as
	// members of the generation, then the tables commit them, and only
	// then does the member leave.
	stopped := make(chan struct{})
	go func() {
		<-ctx.Done()
		h.Drain()
		h.Empty(mctx)
		if s.tables != nil {
			fctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
			if !s.tables.CommitAll(fctx) {
				s.tablesUnfinished.Store(true)
			}
			cancel()
		}
		h.Drained()
		close(stopped)
	}()
	m.Run(mctx, stopped)
	endMembership()
	<-committing
	s.log.Info("left consumer group", "group", k.Group)
	return nil
}

// runPartition takes one partition and prepares its run, which holds it
// across generations until it is handed over, dropped or the sink stops;
// ended is called when the run ends. It returns nil when genCtx (the
// generation that assigned it) ends first.
//
// A partition has no goroutine of its own while it has nothing to do: its
// work (records fetched, a request of the pressure relief, a tick, the end
// of the generation) wakes it, and a goroutine runs until
// the work is done. Ten thousand partitions each waiting in a goroutine of
// their own held 60 to 85 MiB of stacks beside the budget, which left the
// garbage collector no room under the memory limit.
func (s *Sink) runPartition(ctx, genCtx, mctx context.Context, commits *group.CommitBatcher, topic string, id int32, c committed, ended func()) *partitionRun {
	log := s.log.With("topic", topic, "partition", id)
	p, err := s.assign(genCtx, commits, topic, id, c)
	var flog health.FailureLog
	for n := 1; err != nil; n++ {
		flog.Failed(log, "taking partition failed; retrying with backoff", err)
		if !backoff.Sleep(genCtx, backoff.Doubling(time.Second, n, 30*time.Second)) {
			return nil
		}
		p, err = s.assign(genCtx, commits, topic, id, c)
	}
	flog.Recovered(log, "partition taken")
	p.genCtx = mctx
	own, drop := context.WithCancel(mctx)
	r := &partitionRun{s: s, p: p, ctx: ctx, own: own, dropIt: drop, log: log, key: fmt.Sprintf("%s[%d]", topic, id),
		ended: ended, handover: make(chan struct{}), checks: make(chan recheck, 1)}
	r.running.Store(true) // until the first run, started by the caller
	p.relief.wake = r.wake
	s.mu.Lock()
	s.consuming[p] = struct{}{}
	s.mu.Unlock()
	r.f = s.mux.Add(topic, id, p.committed, &p.lag, r.wake)
	return r
}

// partitionRun is one assigned partition and the fetch that feeds it, run by
// whichever goroutine its work woke.
type partitionRun struct {
	s   *Sink
	p   *partition
	f   *fetch.Fetcher
	ctx context.Context // the sink's: its end is a shutdown
	// own ends when the partition is dropped (the member lost it, or an
	// eager rebalance gave it to another); dropIt ends it.
	own    context.Context
	dropIt context.CancelFunc
	log    *slog.Logger
	key    string
	ended  func() // tells the holdings that the run ended

	handover chan struct{} // closed when the partition is handed over: finish it
	checks   chan recheck  // the committed state at a generation that keeps the partition

	running atomic.Bool  // a goroutine is running the partition (or it ended)
	wakes   atomic.Int64 // wake calls so far: work that may have arrived
	ticked  atomic.Bool  // a tick is due
	held    bool         // the partition failed: it consumes no more until the next generation
}

// wake makes sure a goroutine runs the partition's work.
func (r *partitionRun) wake() {
	r.wakes.Add(1)
	if r.running.CompareAndSwap(false, true) {
		go r.run()
	}
}

// Run starts the partition's first run (group.Partition).
func (r *partitionRun) Run() { go r.run() }

// HandOver asks the partition to finish its files and end
// (group.Partition).
func (r *partitionRun) HandOver() {
	close(r.handover)
	r.wake()
}

// Drop asks the partition to drop its files and end (group.Partition).
func (r *partitionRun) Drop() {
	r.dropIt()
	r.wake()
}

// recheck is the committed state of a partition read at a generation
// that keeps it, and that generation's context.
type recheck struct {
	c   committed
	ctx context.Context
}

// Recheck hands the partition the committed state read at a generation
// that keeps it, and that generation's context (group.Partition).
func (r *partitionRun) Recheck(ctx context.Context, gc group.Committed) {
	c := recheck{c: committed{offset: gc.Offset, metadata: gc.Metadata}, ctx: ctx}
	select {
	case r.checks <- c:
	default:
		select { // replace a state not looked at yet
		case <-r.checks:
		default:
		}
		r.checks <- c
	}
	r.wake()
}

// Tick asks the partition for its clock-driven work (group.Partition).
func (r *partitionRun) Tick() {
	r.ticked.Store(true)
	r.wake()
}

// run does the partition's work until there is none, then lets the
// goroutine go; work that arrives meanwhile wakes it again.
func (r *partitionRun) run() {
	for {
		// Whoever brings work makes it visible first and wakes after: a
		// wake counted after this load finds its work in step or runs
		// the partition again below.
		seen := r.wakes.Load()
		if r.step() {
			r.end()
			return // running stays set: nothing wakes an ended partition
		}
		r.running.Store(false)
		if r.wakes.Load() == seen || !r.running.CompareAndSwap(false, true) {
			return
		}
	}
}

// step does all the work there is and returns true when the partition
// is given up: the generation or the sink ended.
func (r *partitionRun) step() bool {
	s, p := r.s, r.p
	for {
		select {
		case <-r.own.Done():
			p.dropAll(context.Background())
			return true
		case <-r.ctx.Done():
			if r.held {
				return true
			}
			r.f.Stop()
			sctx, cancel := context.WithTimeout(r.own, s.cfg.ShutdownTimeout)
			err := p.shutdown(sctx, s.cfg.Shutdown != "abandon")
			cancel()
			if err != nil {
				r.log.Error("shutdown: files not finished; they will be written again by the next owner", "error", err)
				p.dropAll(context.Background())
				s.unfinished.Add(1)
			}
			return true
		case <-r.handover:
			if r.held {
				return true
			}
			r.f.Stop()
			sctx, cancel := context.WithTimeout(r.own, s.cfg.ShutdownTimeout)
			err := p.handOver(sctx)
			cancel()
			if err != nil {
				r.log.Error("handover: files not finished; the next owner reads them again", "error", err)
				p.dropAll(context.Background())
				s.stats.rebalancePartitions("dropped", 1)
			}
			return true
		case rc := <-r.checks:
			c := rc.c
			if r.held || !p.leftAt(rc.ctx, c) {
				// A partition stopped by an error tries again at a
				// rebalance, as it did when every rebalance restarted it.
				// Someone else committed it in between: what it holds may
				// be in their files; read again from the committed state.
				if !r.held {
					r.log.Info("partition kept, but its commit changed since; reading again from the committed offset", "committed", c.offset, "ours", p.committed)
					s.stats.rebalancePartitions("dropped", 1)
				}
				r.f.Stop()
				p.dropAll(r.own)
				skip, err := decodeMetadata(r.own, s.store, c.metadata)
				if err != nil {
					skip = nil
					r.log.Error("reading the committed state; partition stopped", "error", err)
					s.setFailed(r.key, err)
					r.held = true
					return false
				}
				// With a table, its state is the authority, as at
				// assignment: the Kafka commit may lag it, and does not
				// say the spec of its paths.
				var spec *int
				var index []string
				if p.table != nil {
					tp, ok, err := p.table.State(rc.ctx, p.id)
					if err == nil && ok {
						c, skip, spec, index = committed{offset: tp.Committed}, skipSet(tp.Paths), tp.SpecID, tp.Index
					}
					if err != nil && p.up != nil {
						// An upsert table's key index is the one its
						// state names: without it, no commit is right.
						r.log.Error("reading the table's state for the key index; partition stopped", "error", err)
						s.setFailed(r.key, err)
						r.held = true
						return false
					}
				}
				p.restartAt(c.offset, c.metadata, skip)
				p.resetIndex(index)
				if err := p.resumeView(r.own, spec); err != nil {
					r.log.Error("reading the table's partition specs; partition stopped", "error", err)
					s.setFailed(r.key, err)
					r.held = true
					return false
				}
				r.held = false
				r.f = s.mux.Add(p.topic, p.id, p.committed, &p.lag, r.wake)
			}
			continue
		default:
		}
		if r.held {
			return false
		}
		var err error
		select {
		case <-r.f.Ready():
			batch, bytes := r.f.Take()
			err = s.handleBatch(r.own, p, batch)
			r.f.GiveBack(batch)
			s.mem.Add(-bytes) // the records are in row groups now, or dropped
			p.account()
		case req := <-p.relief.ctrl:
			err = p.relieveMemory(r.own, req)
		default:
			if !r.ticked.Swap(false) {
				return false
			}
			err = p.tick(r.own, time.Now())
			p.account()
		}
		switch {
		case err == nil:
		case errors.Is(err, errRestart):
			r.f.Stop()
			p.dropAll(r.own)
			r.f = s.mux.Add(p.topic, p.id, p.committed, &p.lag, r.wake)
		default:
			if !errors.Is(err, errGenerationOver) && r.own.Err() == nil {
				r.log.Error("partition stopped", "error", err)
				s.setFailed(r.key, err)
			}
			p.dropAll(context.Background())
			r.f.Stop()
			// Hold the partition (and its generation) without consuming:
			// giving it up would end the generation for every partition.
			r.held = true
			return false
		}
		if p.stopped != nil {
			s.setFailed(r.key, p.stopped)
		}
	}
}

// end gives the partition up.
func (r *partitionRun) end() {
	r.f.Stop()
	r.s.mu.Lock()
	delete(r.s.consuming, r.p)
	r.s.mu.Unlock()
	r.s.noteReached(r.p.topic, r.p.id, max(r.p.highest, r.p.next))
	r.p.closeUpsert()
	r.p.release()
	r.dropIt()
	r.ended()
}

// abortStale aborts the uploads under the store's prefix that were
// started more than store.stale_upload_age ago and never finished.
func (s *Sink) abortStale(ctx context.Context) {
	if n, err := s.store.AbortStaleUploads(ctx, "", s.cfg.Store.StaleUploadAge); err != nil {
		if ctx.Err() == nil {
			s.log.Warn("aborting stale uploads", "error", err)
		}
	} else if n > 0 {
		s.log.Info("aborted stale uploads", "count", n)
	}
}

// handleBatch hands a fetched batch to the partition, then checks the
// clock-driven rotations.
func (s *Sink) handleBatch(ctx context.Context, p *partition, batch []fetch.Record) error {
	defer p.report()
	var r record // one for the batch: handed by pointer, it lives on the heap
	p.fresh.readAt = time.Now().UnixNano()
	for i := range batch {
		f := &batch[i]
		r = record{offset: f.Offset, time: f.Time, key: f.Key, value: f.Value, headers: f.Headers}
		if err := p.handle(ctx, &r); err != nil {
			return err
		}
	}
	if err := p.sendLetters(ctx); err != nil {
		return err
	}
	return p.tick(ctx, time.Now())
}

// assign prepares a partition from its committed offset and metadata.
func (s *Sink) assign(ctx context.Context, commits *group.CommitBatcher, topic string, id int32, c committed) (*partition, error) {
	commit := func(ctx context.Context, offset int64, md string) error {
		return commits.Commit(ctx, topic, id, offset, md)
	}
	skip, err := decodeMetadata(ctx, s.store, c.metadata)
	if err != nil {
		return nil, fmt.Errorf("%s[%d]: %w", topic, id, err)
	}
	var tc *tablecommit.Committer
	if s.tables != nil {
		if tc, err = s.tables.ForTopic(ctx, topic); err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", topic, id, err)
		}
		// The table, not the Kafka commit, says what is archived: its
		// state wins; a partition it has no state of starts where Kafka
		// says (a group that ran without the table, or a new one).
		tp, ok, err := tc.State(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", topic, id, err)
		}
		if ok {
			if tp.Committed != c.offset {
				s.log.Info("partition resumes from its table's state", "topic", topic, "partition", id, "table", tc.Name(), "table_offset", tp.Committed, "kafka_offset", c.offset)
			}
			c.offset, skip = tp.Committed, skipSet(tp.Paths)
			// The paths it holds beyond the offset follow the spec
			// they were written by, which the state names: so do the
			// partition's files until it can move to the table's
			// (moveToSpec).
			cur := tc
			if tc, err = tc.ViewFor(ctx, skip.paths(), tp.SpecID); err != nil {
				return nil, fmt.Errorf("%s[%d]: %w", topic, id, err)
			}
			if tc != cur {
				s.log.Info("partition resumes by the partition spec of its uploaded files", "topic", topic, "partition", id, "table", tc.Name(), "spec", tc.SpecID(), "table_spec", cur.SpecID(), "by", tablecommit.ResumedBy(tp.SpecID))
			}
		}
	}
	s.log.Debug("partition assigned", "topic", topic, "partition", id, "committed", c.offset, "uploaded_paths_beyond", len(skip))
	p := newPartitionWithTable(s, topic, id, c.offset, skip, commit, tc)
	p.genCtx = ctx
	p.noteCommit(c)
	if s.cfg.Table.Upsert() && tc != nil {
		tp, ok, err := tc.State(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", topic, id, err)
		}
		if ok && tp.Committed > 0 && tp.Index == nil {
			s.log.Warn("upsert table: the table's state of the partition names no key index; the partition starts with an empty one (rows written in append mode are not replaced)", "topic", topic, "partition", id, "table", tc.Name(), "offset", tp.Committed)
		}
		if err := p.startUpsert(ctx, tp.Index); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// reached returns the highest offset this process has reached on a
// partition, 0 when it never held it.
func (s *Sink) reached(topic string, id int32) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reachedAt[topicPartition{topic, id}]
}

// noteReached records the offset a partition reached when it is let go.
func (s *Sink) noteReached(topic string, id int32, next int64) {
	s.mu.Lock()
	k := topicPartition{topic, id}
	s.reachedAt[k] = max(s.reachedAt[k], next)
	s.mu.Unlock()
}

// instanceID is the member's group.instance.id: static membership when
// set.
func (s *Sink) instanceID() string { return s.cfg.Kafka.InstanceID }

func (s *Sink) setFailed(key string, err error) {
	s.mu.Lock()
	s.failed[key] = err
	s.mu.Unlock()
}

// Failed returns the partitions stopped by an error, with their reasons.
func (s *Sink) Failed() map[string]error {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]error, len(s.failed))
	for k, v := range s.failed {
		out[k] = v
	}
	return out
}
