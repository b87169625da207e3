package connector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/objstore"
)

// ServeMetrics serves /metrics (Prometheus text format), /healthz (the
// process is alive) and /readyz (the group is joined and no partition is
// stopped) on listen, until the returned function is called, and returns
// the address it listens on. An empty listen serves nothing.
func ServeMetrics(listen string, s *Sink, log *slog.Logger) (addr string, stop func(), err error) {
	if listen == "" {
		return "", func() {}, nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(s.collector())
	if m := s.maintenanceCollector(); m != nil {
		reg.MustRegister(m)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := s.Ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return "", nil, fmt.Errorf("metrics.listen: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "error", err)
		}
	}()
	log.Info("serving metrics", "address", ln.Addr().String())
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}, nil
}

// Ready says why the sink is not ready, or nil.
func (s *Sink) Ready() error {
	if err := s.kafkaErr.Load(); err != nil {
		return fmt.Errorf("kafka unreachable: %v", *err)
	}
	if !s.joined.Load() {
		return errors.New("not a member of the consumer group yet")
	}
	if err := s.topicsErr.Load(); err != nil {
		return *err
	}
	if err := s.bucketErr.Load(); err != nil {
		return fmt.Errorf("store refuses a listing (store.url): %v", *err)
	}
	if err := s.storeErr.Load(); err != nil {
		return fmt.Errorf("store unreachable: %v", *err)
	}
	now := time.Now()
	if since := s.uploadFailingSince.Load(); since != 0 && now.Sub(time.Unix(0, since)) >= uploadFailingFor {
		msg := "uploads have failed"
		if err := s.uploadErr.Load(); err != nil {
			msg = fmt.Sprintf("uploads have failed: %v", *err)
		}
		return fmt.Errorf("%s, every one for %s", msg, now.Sub(time.Unix(0, since)).Round(time.Second))
	}
	if s.tables != nil {
		// Two intervals: one failed commit that the next one mends is
		// not an outage.
		if err := s.tables.failing(now, max(uploadFailingFor, 2*s.cfg.Table.CommitInterval)); err != nil {
			return err
		}
	}
	if stalled := s.stalled(now); len(stalled) > 0 {
		p := stalled[0]
		return fmt.Errorf("partition %s[%d] has %d records of lag and has not reached a new offset for %s (metrics.stall_timeout); %d partitions stalled",
			p.topic, p.id, p.lag.Load(), now.Sub(time.Unix(0, p.advancedAt.Load())).Round(time.Second), len(stalled))
	}
	failed := s.Failed()
	if len(failed) > 0 {
		keys := make([]string, 0, len(failed))
		for k := range failed {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return fmt.Errorf("partition %s stopped: %v", keys[0], failed[keys[0]])
	}
	return nil
}

// uploadFailingFor is how long uploads must fail, every one, before
// /readyz says not ready: one failure is retried, a run of them is an
// outage.
const uploadFailingFor = 30 * time.Second

// uploadFailed notes a failed upload for /readyz.
func (s *Sink) uploadFailed(err error) {
	s.uploadErr.Store(&err)
	s.uploadFailingSince.CompareAndSwap(0, time.Now().UnixNano())
}

// stalled returns the partitions with lag that have not reached a new
// offset for metrics.stall_timeout, longest stalled first.
func (s *Sink) stalled(now time.Time) []*partition {
	limit := s.cfg.Metrics.StallTimeout
	if limit <= 0 {
		return nil
	}
	var out []*partition
	s.mu.Lock()
	for p := range s.consuming {
		if p.lag.Load() > 0 && now.Sub(time.Unix(0, p.advancedAt.Load())) >= limit {
			out = append(out, p)
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].advancedAt.Load() < out[j].advancedAt.Load() })
	return out
}

// probeStore checks every two seconds that the store answers, for
// /readyz: a HEAD of a key that need not exist. With the failed requests
// of the sink itself, an outage shows within a few seconds. A HEAD cannot
// tell a missing bucket from a missing key: every listEvery probes (the
// first one too) lists at most one key, which can; a failed listing is an
// ERROR (logged at growing intervals while it lasts) and keeps /readyz
// not ready until a listing succeeds.
func (s *Sink) probeStore(ctx context.Context) {
	const listEvery = 15
	var flog failureLog
	for n := 0; ; n++ {
		if n%listEvery == 0 || s.bucketErr.Load() != nil {
			lctx, cancel := context.WithTimeout(ctx, CheckTimeout)
			err := listOne(lctx, s.store)
			cancel()
			if ctx.Err() != nil {
				return
			}
			setErr(&s.bucketErr, err)
			if err != nil {
				flog.failed(s.log, "the store refuses a listing (missing bucket or refused credentials?); files cannot be uploaded", err, "store", s.cfg.Store.URL)
			} else {
				flog.recovered(s.log, "the store lists again", "store", s.cfg.Store.URL)
			}
		}
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := s.store.Head(pctx, archive.ProbeKey)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil || errors.Is(err, objstore.ErrNotExist) {
			s.storeErr.Store(nil)
		} else {
			s.storeErr.Store(&err)
		}
		if !sleep(ctx, 2*time.Second) {
			return
		}
	}
}

// statsCollector exports Stats to Prometheus.
type statsCollector struct {
	s     *Sink
	descs map[string]*prometheus.Desc
}

func (s *Sink) collector() prometheus.Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("pqsink_"+name, help, labels, nil)
	}
	return &statsCollector{s: s, descs: map[string]*prometheus.Desc{
		"consumed": d("records_consumed_total", "Records fetched from Kafka."),
		"written":  d("records_written_total", "Records appended to files, including files later dropped and written again."),
		"uploaded": d("records_uploaded_total", "Records in uploaded files."),
		"skipped":  d("records_skipped_uploaded_total", "Records passed over because an uploaded file already holds them."),
		"rejected": d("records_rejected_total", "Records that could not be written, by reason and by what was done (errors: fail, skip, dead_letter).", "reason", "action"),
		"dead":     d("records_dead_lettered_total", "Records sent to the dead-letter topic, by reason.", "reason"),
		"dlerrors": d("dead_letter_errors_total", "Sends of dead letters that failed; each is tried again with backoff, and the partition waits."),
		"dlsize":   d("dead_letters_oversized_total", "Dead letters larger than the dead-letter topic takes, by what was done: cut (value cut to fit) or url (written to dead_letter.url).", "action"),
		"memused":  d("memory_used_bytes", "Bytes held against the memory budget: fetched records, row groups, upload parts."),
		"memlimit": d("memory_limit_bytes", "The memory budget (memory.limit)."),
		"pauses":   d("fetch_pauses_total", "Fetches that waited for the memory budget."),
		"memflush": d("memory_flushes_total", "Row groups written early to relieve memory pressure."),
		"retries":  d("s3_retries_total", "S3 requests retried after a failure or throttling."),
		"lag":      d("consumer_lag_records", "Records of a partition not fetched yet (high watermark minus fetch position).", "topic", "partition"),
		"adopted":  d("objects_adopted_total", "Objects of an earlier owner adopted instead of uploading."),
		"uperrors": d("upload_errors_total", "Uploads that failed after the store's retries."),
		"open":     d("open_files", "Files being written."),
		"bytes":    d("bytes_uploaded_total", "Bytes of uploaded files."),
		"files":    d("files_uploaded_total", "Uploaded files by rotation reason.", "reason"),
		"commits":  d("offset_commits_total", "Offset commits."),
		"failed":   d("partitions_stopped", "Partitions stopped by a record error (errors: fail)."),
		"stalled":  d("partitions_stalled", "Partitions with lag that have not reached a new offset for metrics.stall_timeout."),

		"rebalances": d("rebalances_total", "Generations of the consumer group this member took part in."),
		"rebparts":   d("rebalance_partitions_total", "Partitions by what a rebalance did with them: kept (open files and all), moved (finished and handed over), dropped (open files dropped, read again), assigned (taken anew).", "outcome"),
		"reread":     d("records_reread_total", "Records read again: below an offset this process had reached on the partition (after a rebalance, or a restart from the committed offset)."),

		"tcommits":   d("table_commits_total", "Table commits that succeeded."),
		"tconflicts": d("table_commit_conflicts_total", "Table commits that lost the catalog's compare-and-swap and were tried again."),
		"trollbacks": d("table_rollbacks_total", "Table commits that found the table holding less than the sink had committed (rolled back to an older snapshot): the partitions it lost are read again from its state."),
		"tspecconf":  d("table_spec_conflicts_total", "Table commits that found, beyond a partition's committed offset, paths of another partition spec than the sink's files, or below it records a file of the sink's holds too from files of another spec (a member fenced off, or its successor, writing by the other spec): the partition is read again from the table's state, by that spec."),
		"terrors":    d("table_commit_errors_total", "Table commits that failed; their files wait for the next commit, and so do the Kafka offsets."),
		"tappended":  d("table_files_appended_total", "Data files appended to a table."),
		"tdropped":   d("table_files_dropped_total", "Files left out of a table commit because the table already held their records."),
		"tpfiles":    d("table_pending_files", "Files uploaded or adopted that are not in a table yet."),
		"tprecords":  d("table_pending_records", "Records uploaded that are not in a table yet."),
		"tschema":    d("table_schema_updates_total", "Table schema updates made for new record schemas (columns added, types widened)."),
		"tstale":     d("table_oldest_uncommitted_seconds", "Age of the oldest record consumed and not in the table yet (in an open file, or uploaded and waiting for the table commit), from its Kafka timestamp (or when the sink read it: table.freshness_from); 0 when every record consumed is in the table.", "table"),
		"ttrunc":     d("table_timestamps_truncated_total", "Protobuf Timestamps, Avro timestamp-nanos and schema files' TIMESTAMP(NANOS) values written to a table's files in microseconds (table.timestamp_precision: micros) whose digits below the microsecond were cut."),
	}}
}

func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	c.s.stats.uploadSeconds.Describe(ch)
	c.s.stats.commitSeconds.Describe(ch)
	c.s.stats.tableCommitSeconds.Describe(ch)
	c.s.stats.rebalanceSeconds.Describe(ch)
	c.s.stats.tableFreshness.Describe(ch)
}

func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.stats.Snapshot()
	counter := func(name string, v int64) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.CounterValue, float64(v))
	}
	counter("consumed", st.Consumed)
	counter("reread", st.Reread)
	counter("rebalances", st.Rebalances)
	for _, outcome := range []string{"kept", "moved", "dropped", "assigned"} { // at 0 from the start
		ch <- prometheus.MustNewConstMetric(c.descs["rebparts"], prometheus.CounterValue, float64(st.RebalancePartitions[outcome]), outcome)
	}
	c.s.stats.rebalanceSeconds.Collect(ch)
	counter("written", st.Written)
	counter("uploaded", st.RecordsUploaded)
	counter("skipped", st.SkippedUploaded)
	// Every reason is exported at 0 from the start, with the configured
	// action, so that an alert on an increase fires on the first event.
	rejects := map[[2]string]int64{}
	dead := map[string]int64{}
	for _, reason := range rejectReasons() {
		rejects[[2]string{reason, c.s.cfg.Errors}] = 0
		dead[reason] = 0
	}
	for k, n := range st.Rejects {
		rejects[k] = n
		if k[1] == "dead_letter" {
			dead[k[0]] = n
		}
	}
	for k, n := range rejects {
		ch <- prometheus.MustNewConstMetric(c.descs["rejected"], prometheus.CounterValue, float64(n), k[0], k[1])
	}
	for reason, n := range dead {
		ch <- prometheus.MustNewConstMetric(c.descs["dead"], prometheus.CounterValue, float64(n), reason)
	}
	counter("dlerrors", st.DeadLetterErrors)
	for _, action := range []string{"cut", "url"} { // at 0 from the start, for alerts
		ch <- prometheus.MustNewConstMetric(c.descs["dlsize"], prometheus.CounterValue, float64(st.DeadLettersOversized[action]), action)
	}
	mem := c.s.Memory()
	ch <- prometheus.MustNewConstMetric(c.descs["memused"], prometheus.GaugeValue, float64(mem.Used))
	ch <- prometheus.MustNewConstMetric(c.descs["memlimit"], prometheus.GaugeValue, float64(mem.Limit))
	counter("pauses", mem.FetchPauses)
	counter("memflush", st.MemoryFlushes)
	counter("retries", st.S3Retries)
	c.s.mu.Lock()
	for p := range c.s.consuming {
		ch <- prometheus.MustNewConstMetric(c.descs["lag"], prometheus.GaugeValue, float64(p.lag.Load()), p.topic, strconv.Itoa(int(p.id)))
	}
	c.s.mu.Unlock()
	c.s.stats.uploadSeconds.Collect(ch)
	c.s.stats.commitSeconds.Collect(ch)
	counter("adopted", st.Adopted)
	counter("uperrors", st.UploadErrors)
	counter("bytes", st.BytesUploaded)
	counter("commits", st.Commits)
	ch <- prometheus.MustNewConstMetric(c.descs["open"], prometheus.GaugeValue, float64(st.OpenFiles))
	ch <- prometheus.MustNewConstMetric(c.descs["failed"], prometheus.GaugeValue, float64(len(c.s.Failed())))
	ch <- prometheus.MustNewConstMetric(c.descs["stalled"], prometheus.GaugeValue, float64(len(c.s.stalled(time.Now()))))
	files := map[string]int64{}
	for _, reason := range rotationReasons() {
		files[reason] = 0
	}
	for reason, n := range st.Files {
		files[reason] = n
	}
	for reason, n := range files {
		ch <- prometheus.MustNewConstMetric(c.descs["files"], prometheus.CounterValue, float64(n), reason)
	}
	if c.s.tables != nil {
		c.s.stats.tableCommitSeconds.Collect(ch)
		counter("tcommits", st.TableCommits)
		counter("tconflicts", st.TableConflicts)
		counter("trollbacks", st.TableRollbacks)
		counter("tspecconf", st.TableSpecConflicts)
		counter("terrors", st.TableCommitErrors)
		counter("tappended", st.TableFilesAppended)
		counter("tdropped", st.TableFilesDropped)
		counter("tschema", st.TableSchemaUpdates)
		counter("ttrunc", st.TimestampsTruncated)
		ch <- prometheus.MustNewConstMetric(c.descs["tpfiles"], prometheus.GaugeValue, float64(st.TablePendingFiles))
		ch <- prometheus.MustNewConstMetric(c.descs["tprecords"], prometheus.GaugeValue, float64(st.TablePendingRecords))
		c.s.stats.tableFreshness.Collect(ch)
		for name, age := range c.s.tables.oldestUncommitted(time.Now()) {
			ch <- prometheus.MustNewConstMetric(c.descs["tstale"], prometheus.GaugeValue, age.Seconds(), name)
		}
	}
}

// rotationReasons are the reasons a file is finished, as
// pqsink_files_uploaded_total counts them.
func rotationReasons() []string {
	return []string{reasonRecords, reasonBytes, reasonInterval, reasonSchedule, reasonShutdown, reasonMemory, reasonStopped, reasonSchema, reasonRebalance, reasonSpec}
}

// rejectReasons are the reasons a record is rejected, as
// pqsink_records_rejected_total and pqsink_records_dead_lettered_total
// count them.
func rejectReasons() []string {
	return []string{rejectDecode, rejectSchema, rejectTooLarge, rejectPath, rejectEnvelope}
}
