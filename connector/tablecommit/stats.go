package tablecommit

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Stats count what the committers did. The sink's counters hold them
// (pqsink_table_* metrics); all fields are safe for concurrent use.
type Stats struct {
	Commits       atomic.Int64 // table commits that succeeded
	Conflicts     atomic.Int64 // commits that lost the catalog's compare-and-swap and were tried again
	CommitErrors  atomic.Int64 // commits that failed
	Rollbacks     atomic.Int64 // commits that found the table rolled back behind the sink
	SpecConflicts atomic.Int64 // commits that found paths of another partition spec
	FilesAppended atomic.Int64 // data files appended
	FilesDropped  atomic.Int64 // files left out: the table already held their records
	// PendingFiles and PendingRecords are the files handed to a committer
	// and not in a table yet, and their records.
	PendingFiles, PendingRecords atomic.Int64
	SchemaUpdates                atomic.Int64 // table schema updates made for new record schemas

	// RowsDeleted are the rows an upsert table's commits deleted (rows
	// replaced by a later record of their key, or deleted by a tombstone
	// or a Debezium delete); MissingRows the rows an upsert partition's
	// key index named that no data file held (table.NoLiveRowError).
	RowsDeleted, MissingRows atomic.Int64
	// CommitNanos and CommitMaxNanos are the total and the longest time
	// of the commits that succeeded, their retries included.
	CommitNanos, CommitMaxNanos atomic.Int64

	// CommitSeconds is pqsink_table_commit_seconds, and Freshness
	// pqsink_table_freshness_seconds (NewFreshness).
	CommitSeconds prometheus.Histogram
	Freshness     *prometheus.HistogramVec
}

// NewFreshness returns the histogram pqsink_table_freshness_seconds, by
// table and record (the oldest or the newest of a file).
func NewFreshness() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "pqsink_table_freshness_seconds",
		Help:    "Per data file committed to a table: the age, at the commit of the snapshot that holds it, of its oldest record (record=oldest) and of its newest (record=newest), from the record's Kafka timestamp (or when the sink read it: table.freshness_from). Every record's age lies between the two.",
		Buckets: freshnessBuckets()}, []string{"table", "record"})
}
