package connector

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pqsink/pqsink/connector/tablecommit"
)

// Stats counts what a sink did. All methods are safe for concurrent use.
type Stats struct {
	consumed         atomic.Int64 // records fetched and handled
	written          atomic.Int64 // records appended to files
	skippedUploaded  atomic.Int64 // records passed over: already in an uploaded file
	adopted          atomic.Int64 // existing objects adopted
	uploadErrors     atomic.Int64
	openFiles        atomic.Int64
	bytesUploaded    atomic.Int64
	recordsUploaded  atomic.Int64
	memoryFlushes    atomic.Int64 // row groups written early under memory pressure
	s3Retries        atomic.Int64 // S3 requests retried
	deadLetterErrors atomic.Int64 // sends of dead letters that failed (and are tried again)
	reread           atomic.Int64 // records read again: below an offset this process had reached
	rebalances       atomic.Int64 // generations of the group this member took part in

	timestampsTruncated atomic.Int64 // nanosecond timestamps cut to microseconds (table.timestamp_precision: micros)

	// Upsert tables: rows replaced by a later record of their key, and
	// deleted by a tombstone or a Debezium delete, as handed to the
	// commits; the key indexes' live keys, bytes in memory and on disk.
	upsertReplaced, upsertDeleted        atomic.Int64
	upsertKeys, upsertMemory, upsertDisk atomic.Int64

	// With a table: its committers' counters and histograms.
	tables tablecommit.Stats

	uploadSeconds, commitSeconds, rebalanceSeconds prometheus.Histogram

	mu          sync.Mutex
	rejects     map[[2]string]int64 // by reason and action (errors setting)
	oversized   map[string]int64    // dead letters too large for the topic, by what was done (cut, url)
	files       map[string]int64    // by rotation reason
	commits     int64
	commitTotal time.Duration
	rebalanced  map[string]int64 // partitions by what a rebalance did with them
}

func newStats() *Stats {
	buckets := prometheus.ExponentialBuckets(0.005, 2, 14) // 5 ms to 41 s
	st := &Stats{
		files: map[string]int64{}, rejects: map[[2]string]int64{}, oversized: map[string]int64{}, rebalanced: map[string]int64{},
		uploadSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pqsink_upload_seconds", Help: "Time to finish a file: last row group, footer and upload completion.", Buckets: buckets}),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pqsink_commit_seconds", Help: "Time of an offset commit.", Buckets: buckets}),
		rebalanceSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pqsink_rebalance_seconds", Help: "Time from the start of a rebalance until every partition of this member consumes again.", Buckets: buckets}),
	}
	st.tables.CommitSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "pqsink_table_commit_seconds", Help: "Time of a table commit, retries included.", Buckets: buckets})
	st.tables.Freshness = tablecommit.NewFreshness()
	return st
}

// rebalancePartitions counts n partitions that a rebalance kept (with
// their open files), handed over (moved), dropped (open files lost) or
// assigned anew.
func (s *Stats) rebalancePartitions(what string, n int) {
	if n == 0 {
		return
	}
	s.mu.Lock()
	s.rebalanced[what] += int64(n)
	s.mu.Unlock()
}

// reject counts a rejected record.
func (s *Stats) reject(reason, action string) {
	s.mu.Lock()
	s.rejects[[2]string{reason, action}]++
	s.mu.Unlock()
}

// deadLettersOversized counts n durable dead letters that the topic could
// not take whole: cut to fit, or written to dead_letter.url.
func (s *Stats) deadLettersOversized(action string, n int64) {
	s.mu.Lock()
	s.oversized[action] += n
	s.mu.Unlock()
}

func (s *Stats) fileUploaded(reason string, bytes, records int64) {
	s.bytesUploaded.Add(bytes)
	s.recordsUploaded.Add(records)
	s.mu.Lock()
	s.files[reason]++
	s.mu.Unlock()
}

func (s *Stats) commitLatency(d time.Duration) {
	s.commitSeconds.Observe(d.Seconds())
	s.mu.Lock()
	s.commits++
	s.commitTotal += d
	s.mu.Unlock()
}

// Snapshot is a copy of the counters at one moment.
type Snapshot struct {
	Consumed         int64               // records fetched
	Written          int64               // records appended to files (some may be dropped and read again)
	RecordsUploaded  int64               // records in uploaded files
	SkippedUploaded  int64               // records passed over because an uploaded file holds them
	Rejected         int64               // records that did not fit
	Adopted          int64               // objects of an earlier owner adopted
	UploadErrors     int64               // uploads that failed after the store's retries
	OpenFiles        int64               // files being written now
	BytesUploaded    int64               // bytes of uploaded files
	Files            map[string]int64    // uploaded files by rotation reason
	Commits          int64               // offset commits
	MemoryFlushes    int64               // row groups written early under memory pressure
	Rejects          map[[2]string]int64 // rejected records by reason and action (fail, skip, dead_letter)
	S3Retries        int64               // S3 requests retried
	DeadLetterErrors int64               // failed sends of dead letters, each tried again
	// DeadLettersOversized counts dead letters larger than the dead-letter
	// topic takes, by what was done: "cut" (sent with the value cut to
	// fit) or "url" (written to dead_letter.url instead).
	DeadLettersOversized map[string]int64

	Reread     int64 // records read again: below an offset this process had reached on the partition
	Rebalances int64 // generations of the group this member took part in
	// RebalancePartitions counts partitions by what rebalances did with
	// them: "kept" (open files and all), "moved" (finished and handed
	// over), "dropped" (open files dropped, read again by the next
	// owner), "assigned" (taken anew).
	RebalancePartitions map[string]int64

	// With a table section:
	TableCommits        int64 // table commits that succeeded (one snapshot each, or none when the table held every file)
	TableConflicts      int64 // table commits that lost the compare-and-swap and were tried again
	TableRollbacks      int64 // table commits that found the table rolled back behind the sink
	TableSpecConflicts  int64 // table commits that found paths of another partition spec beyond a partition's committed offset
	TableCommitErrors   int64 // table commits that failed (their files wait for the next one)
	TableFilesAppended  int64 // files appended to a table
	TableFilesDropped   int64 // files left out of a commit because the table already held their records
	TablePendingFiles   int64 // files uploaded or adopted, not in a table yet
	TablePendingRecords int64 // records of those files
	TableSchemaUpdates  int64 // table schema updates this sink made (columns added or widened for new record schemas)
	// Upsert tables: rows replaced and deleted by records (handed to the
	// commits), rows the commits deleted, rows a key index named that no
	// file held (table.missing_rows), and the key indexes' live keys and
	// bytes in memory and on local disk.
	UpsertReplaced, UpsertDeleted, TableRowsDeleted, TableMissingRows int64
	IndexKeys, IndexMemory, IndexDisk                                 int64
	// TimestampsTruncated counts the google.protobuf.Timestamp values,
	// Avro timestamp-nanos and local-timestamp-nanos values and values of
	// a schema file's TIMESTAMP(NANOS) columns written in microseconds
	// (table.timestamp_precision: micros) whose nanoseconds below the
	// microsecond were not zero, and were cut.
	TimestampsTruncated int64
	// TableCommitTime and TableCommitMax are the total and the longest
	// time of the table commits that succeeded, their retries included.
	TableCommitTime, TableCommitMax time.Duration
}

// Snapshot returns the current counts.
func (s *Stats) Snapshot() Snapshot {
	s.mu.Lock()
	files := make(map[string]int64, len(s.files))
	for k, v := range s.files {
		files[k] = v
	}
	commits := s.commits
	rejects := make(map[[2]string]int64, len(s.rejects))
	var rejected int64
	for k, v := range s.rejects {
		rejects[k] = v
		rejected += v
	}
	oversized := make(map[string]int64, len(s.oversized))
	for k, v := range s.oversized {
		oversized[k] = v
	}
	rebalanced := map[string]int64{}
	for k, v := range s.rebalanced {
		rebalanced[k] = v
	}
	s.mu.Unlock()
	return Snapshot{
		Consumed:         s.consumed.Load(),
		Written:          s.written.Load(),
		RecordsUploaded:  s.recordsUploaded.Load(),
		SkippedUploaded:  s.skippedUploaded.Load(),
		Rejected:         rejected,
		Adopted:          s.adopted.Load(),
		UploadErrors:     s.uploadErrors.Load(),
		OpenFiles:        s.openFiles.Load(),
		BytesUploaded:    s.bytesUploaded.Load(),
		Files:            files,
		Commits:          commits,
		MemoryFlushes:    s.memoryFlushes.Load(),
		Rejects:          rejects,
		S3Retries:        s.s3Retries.Load(),
		DeadLetterErrors: s.deadLetterErrors.Load(),

		DeadLettersOversized: oversized,

		Reread:              s.reread.Load(),
		Rebalances:          s.rebalances.Load(),
		RebalancePartitions: rebalanced,

		TableCommits:        s.tables.Commits.Load(),
		TableConflicts:      s.tables.Conflicts.Load(),
		TableRollbacks:      s.tables.Rollbacks.Load(),
		TableSpecConflicts:  s.tables.SpecConflicts.Load(),
		TableCommitErrors:   s.tables.CommitErrors.Load(),
		TableFilesAppended:  s.tables.FilesAppended.Load(),
		TableFilesDropped:   s.tables.FilesDropped.Load(),
		TablePendingFiles:   s.tables.PendingFiles.Load(),
		TablePendingRecords: s.tables.PendingRecords.Load(),
		TableSchemaUpdates:  s.tables.SchemaUpdates.Load(),
		UpsertReplaced:      s.upsertReplaced.Load(),
		UpsertDeleted:       s.upsertDeleted.Load(),
		TableRowsDeleted:    s.tables.RowsDeleted.Load(),
		TableMissingRows:    s.tables.MissingRows.Load(),
		IndexKeys:           s.upsertKeys.Load(),
		IndexMemory:         s.upsertMemory.Load(),
		IndexDisk:           s.upsertDisk.Load(),
		TimestampsTruncated: s.timestampsTruncated.Load(),
		TableCommitTime:     time.Duration(s.tables.CommitNanos.Load()),
		TableCommitMax:      time.Duration(s.tables.CommitMaxNanos.Load()),
	}
}
