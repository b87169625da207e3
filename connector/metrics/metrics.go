// Package metrics serves a sink's metrics and health over HTTP: /metrics
// (the Prometheus text format), /healthz (the process is alive) and
// /readyz (the sink is ready, or why not). It sees the sink through
// Source: a Reading of its counters and levels, its histograms, the
// maintenance's collector and its readiness; it knows nothing of the
// sink's partitions, files or tables, and the sink knows nothing of it.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pqsink/pqsink/connector"
)

// Source is what the metrics read of a sink. *connector.Sink is one.
type Source interface {
	// Reading is the sink's counters and levels at now.
	Reading(now time.Time) connector.Reading
	// Histograms are the histograms the sink observes.
	Histograms() connector.Histograms
	// MaintenanceCollector is the tables' maintenance collector, nil
	// without one.
	MaintenanceCollector() prometheus.Collector
	// Ready says why the sink is not ready, or nil.
	Ready() error
}

// Serve serves /metrics, /healthz and /readyz of src on listen, until
// the returned function is called, and returns the address it listens
// on. An empty listen serves nothing.
func Serve(listen string, src Source, log *slog.Logger) (addr string, stop func(), err error) {
	if listen == "" {
		return "", func() {}, nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(NewCollector(src))
	if m := src.MaintenanceCollector(); m != nil {
		reg.MustRegister(m)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := src.Ready(); err != nil {
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

// collector exports a sink's Reading and histograms to Prometheus.
type collector struct {
	src   Source
	hist  connector.Histograms
	descs map[string]*prometheus.Desc
}

// NewCollector returns the Prometheus collector of src's pqsink_*
// metrics (the maintenance's aside).
func NewCollector(src Source) prometheus.Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("pqsink_"+name, help, labels, nil)
	}
	return &collector{src: src, hist: src.Histograms(), descs: map[string]*prometheus.Desc{
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
		"ureplaced":  d("upsert_rows_replaced_total", "Upsert tables: rows replaced by a later record of their key, deleted by position in the commit that holds the new row."),
		"udeleted":   d("upsert_rows_deleted_total", "Upsert tables: rows deleted by a tombstone or a Debezium delete event."),
		"tdelrows":   d("table_rows_deleted_total", "Upsert tables: rows the table commits deleted (deletion vectors or position delete files)."),
		"tmissing":   d("table_missing_rows_total", "Upsert tables: rows a key index named that no data file held (another engine removed them); table.missing_rows says what was done."),
		"ikeys":      d("upsert_index_keys", "Upsert tables: live keys in the key indexes of the partitions this member holds."),
		"imem":       d("upsert_index_memory_bytes", "Upsert tables: bytes the key indexes hold in memory (counted in memory.limit)."),
		"idisk":      d("upsert_index_disk_bytes", "Upsert tables: bytes the key indexes spilled to local disk."),
		"tstale":     d("table_oldest_uncommitted_seconds", "Age of the oldest record consumed and not in the table yet (in an open file, or uploaded and waiting for the table commit), from its Kafka timestamp (or when the sink read it: table.freshness_from); 0 when every record consumed is in the table.", "table"),
		"ttrunc":     d("table_timestamps_truncated_total", "Protobuf Timestamps, Avro timestamp-nanos and schema files' TIMESTAMP(NANOS) values written to a table's files in microseconds (table.timestamp_precision: micros) whose digits below the microsecond were cut."),
	}}
}

// Describe sends the descriptions of every metric, the table's included.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	c.hist.Upload.Describe(ch)
	c.hist.Commit.Describe(ch)
	c.hist.TableCommit.Describe(ch)
	c.hist.Rebalance.Describe(ch)
	c.hist.TableFreshness.Describe(ch)
}

// Collect sends the metrics of one Reading; the table's only with a
// table section. Every reason of a counter by reason is sent from the
// start, at 0, so that an alert on an increase fires on the first event.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	r := c.src.Reading(now)
	st := r.Stats
	counter := func(name string, v int64) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.CounterValue, float64(v))
	}
	gauge := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.GaugeValue, v, labels...)
	}
	counter("consumed", st.Consumed)
	counter("reread", st.Reread)
	counter("rebalances", st.Rebalances)
	for _, outcome := range []string{"kept", "moved", "dropped", "assigned"} {
		ch <- prometheus.MustNewConstMetric(c.descs["rebparts"], prometheus.CounterValue, float64(st.RebalancePartitions[outcome]), outcome)
	}
	c.hist.Rebalance.Collect(ch)
	counter("written", st.Written)
	counter("uploaded", st.RecordsUploaded)
	counter("skipped", st.SkippedUploaded)
	// Every reason with the configured action.
	rejects := map[[2]string]int64{}
	dead := map[string]int64{}
	for _, reason := range r.RejectReasons {
		rejects[[2]string{reason, r.Errors}] = 0
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
	for _, action := range []string{"cut", "url"} {
		ch <- prometheus.MustNewConstMetric(c.descs["dlsize"], prometheus.CounterValue, float64(st.DeadLettersOversized[action]), action)
	}
	gauge("memused", float64(r.Memory.Used))
	gauge("memlimit", float64(r.Memory.Limit))
	counter("pauses", r.Memory.FetchPauses)
	counter("memflush", st.MemoryFlushes)
	counter("retries", st.S3Retries)
	for _, l := range r.Lags {
		gauge("lag", float64(l.Records), l.Topic, strconv.Itoa(int(l.Partition)))
	}
	c.hist.Upload.Collect(ch)
	c.hist.Commit.Collect(ch)
	counter("adopted", st.Adopted)
	counter("uperrors", st.UploadErrors)
	counter("bytes", st.BytesUploaded)
	counter("commits", st.Commits)
	gauge("open", float64(st.OpenFiles))
	gauge("failed", float64(r.Stopped))
	gauge("stalled", float64(r.Stalled))
	files := map[string]int64{}
	for _, reason := range r.RotationReasons {
		files[reason] = 0
	}
	for reason, n := range st.Files {
		files[reason] = n
	}
	for reason, n := range files {
		ch <- prometheus.MustNewConstMetric(c.descs["files"], prometheus.CounterValue, float64(n), reason)
	}
	if !r.Tables {
		return
	}
	c.hist.TableCommit.Collect(ch)
	counter("tcommits", st.TableCommits)
	counter("tconflicts", st.TableConflicts)
	counter("trollbacks", st.TableRollbacks)
	counter("tspecconf", st.TableSpecConflicts)
	counter("terrors", st.TableCommitErrors)
	counter("tappended", st.TableFilesAppended)
	counter("tdropped", st.TableFilesDropped)
	counter("tschema", st.TableSchemaUpdates)
	counter("ureplaced", st.UpsertReplaced)
	counter("udeleted", st.UpsertDeleted)
	counter("tdelrows", st.TableRowsDeleted)
	counter("tmissing", st.TableMissingRows)
	gauge("ikeys", float64(st.IndexKeys))
	gauge("imem", float64(st.IndexMemory))
	gauge("idisk", float64(st.IndexDisk))
	counter("ttrunc", st.TimestampsTruncated)
	gauge("tpfiles", float64(st.TablePendingFiles))
	gauge("tprecords", float64(st.TablePendingRecords))
	c.hist.TableFreshness.Collect(ch)
	for name, age := range r.TableAges {
		gauge("tstale", age.Seconds(), name)
	}
}
