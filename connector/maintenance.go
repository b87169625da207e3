package connector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pqsink/pqsink/connector/maintenance"
	"github.com/pqsink/pqsink/connector/tablecommit"
)

// With table.maintenance set, one member at a time maintains each table,
// under a lease in the store (package maintenance). This is the sink's
// side of it: what the scheduler is handed (the settings, the store, the
// tables the committers know, the memory budget, the logger), started by
// Run with the partitions' helpers, and its collector, registered with
// the sink's metrics (connector/metrics) through MaintenanceCollector.

// newMaintainer returns the maintenance scheduler of t's tables, nil when
// table.maintenance is not set.
func newMaintainer(s *Sink, t *tablecommit.Tables) *maintenance.Scheduler {
	m := s.cfg.Table.Maintenance
	if m == nil {
		return nil
	}
	return maintenance.New(maintenance.Options{
		Settings:    *m,
		Store:       s.store,
		StoreURL:    s.cfg.Store.URL,
		Tables:      t.Handles, // one per topic: the scheduler maintains each table name once
		Memory:      s.mem,     // the budget lends its memory to the compactions
		MemoryLimit: s.cfg.Memory.Limit,
		Log:         s.log,
	})
}

// MaintenanceCollector is the maintenance scheduler's collector of the
// pqsink_table_maintenance_* metrics, nil without table.maintenance.
func (s *Sink) MaintenanceCollector() prometheus.Collector {
	if s.maint == nil {
		return nil
	}
	return s.maint
}
