package connector

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// What the metrics see of a sink (package connector/metrics, which serves
// /metrics, /healthz and /readyz): a Reading of its counters and levels
// at one moment, its Histograms, the maintenance's collector and Ready.
// The sink knows nothing of Prometheus descriptions or HTTP; the metrics
// know nothing of partitions.

// Reading is what a sink has counted and holds at one moment.
type Reading struct {
	Stats  Snapshot    // the counters
	Memory MemoryStats // the memory budget
	// Lags are the records of each partition being consumed that are not
	// fetched yet.
	Lags []Lag
	// Stopped counts the partitions stopped by a record error (errors:
	// fail); Stalled those with lag that have not reached a new offset for
	// metrics.stall_timeout.
	Stopped, Stalled int
	// Errors is the errors setting: what is done with a rejected record
	// (fail, skip, dead_letter).
	Errors string
	// RotationReasons are the reasons a file is finished, and
	// RejectReasons those a record is rejected for: every one is exported
	// from the start, at 0.
	RotationReasons, RejectReasons []string
	// Tables says the sink has a table section; TableAges are then, per
	// table, the age of its oldest record consumed and not in the table
	// yet (0 when none).
	Tables    bool
	TableAges map[string]time.Duration
}

// Lag is the lag of one Kafka partition: records between its fetch
// position and its end.
type Lag struct {
	Topic     string
	Partition int32
	Records   int64
}

// Reading returns the sink's counters and levels at now.
func (s *Sink) Reading(now time.Time) Reading {
	r := Reading{
		Stats:           s.stats.Snapshot(),
		Memory:          s.Memory(),
		Errors:          s.cfg.Errors,
		RotationReasons: rotationReasons(),
		RejectReasons:   rejectReasons(),
		Stopped:         len(s.Failed()),
		Stalled:         len(s.stalled(now)),
		Tables:          s.tables != nil,
	}
	s.mu.Lock()
	for p := range s.consuming {
		r.Lags = append(r.Lags, Lag{Topic: p.topic, Partition: p.id, Records: p.lag.Load()})
	}
	s.mu.Unlock()
	if s.tables != nil {
		r.TableAges = s.oldestUncommitted(now)
	}
	return r
}

// Histograms are the sink's histograms, which it observes itself.
type Histograms struct {
	Upload    prometheus.Histogram // pqsink_upload_seconds
	Commit    prometheus.Histogram // pqsink_commit_seconds
	Rebalance prometheus.Histogram // pqsink_rebalance_seconds
	// With a table section:
	TableCommit    prometheus.Histogram     // pqsink_table_commit_seconds
	TableFreshness *prometheus.HistogramVec // pqsink_table_freshness_seconds
}

// Histograms returns the sink's histograms.
func (s *Sink) Histograms() Histograms {
	st := s.stats
	return Histograms{Upload: st.uploadSeconds, Commit: st.commitSeconds, Rebalance: st.rebalanceSeconds,
		TableCommit: st.tables.CommitSeconds, TableFreshness: st.tables.Freshness}
}

// rotationReasons are the reasons a file is finished, as
// pqsink_files_uploaded_total counts them.
func rotationReasons() []string {
	return []string{reasonRecords, reasonBytes, reasonInterval, reasonSchedule, reasonShutdown, reasonMemory, reasonStopped, reasonSchema, reasonRebalance, reasonSpec, reasonUpsert}
}

// rejectReasons are the reasons a record is rejected, as
// pqsink_records_rejected_total and pqsink_records_dead_lettered_total
// count them.
func rejectReasons() []string {
	return []string{rejectDecode, rejectSchema, rejectTooLarge, rejectPath, rejectEnvelope, rejectKey, rejectChange}
}
