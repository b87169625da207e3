package maintenance

import "github.com/prometheus/client_golang/prometheus"

// Describe and Collect make the Scheduler a Prometheus collector of the
// pqsink_table_maintenance_* metrics.
func (m *Scheduler) Describe(ch chan<- *prometheus.Desc) {
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
		"triggered": prometheus.NewDesc("pqsink_table_maintenance_small_files_runs_total", "Compactions started between the scheduled runs because a folder of a table held more than small_files_above small files.", nil, nil),
		"held":      prometheus.NewDesc("pqsink_table_maintenance_leases_held", "Tables whose maintenance lease this member holds.", nil, nil),
		"deletes":   prometheus.NewDesc("pqsink_table_maintenance_files_with_deletes", "Data files that this member's last compaction of the table left as they are because it could not apply other engines' delete files that may apply to them, by table.", []string{"table"}, nil),
	}
}

// Collect exports the metrics.
func (m *Scheduler) Collect(ch chan<- prometheus.Metric) {
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
	ch <- prometheus.MustNewConstMetric(m.descs["triggered"], prometheus.CounterValue, float64(m.triggered.Load()))
	ch <- prometheus.MustNewConstMetric(m.descs["held"], prometheus.GaugeValue, float64(m.held.Load()))
	m.withDeletes.Range(func(name, n any) bool {
		ch <- prometheus.MustNewConstMetric(m.descs["deletes"], prometheus.GaugeValue, float64(n.(int64)), name.(string))
		return true
	})
}
