package metrics

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pqsink/pqsink/connector"
)

// fakeSource is a Source whose Reading and readiness a test sets.
type fakeSource struct {
	mu      sync.Mutex
	reading connector.Reading
	ready   error
	hist    connector.Histograms
	maint   prometheus.Collector
}

func newFakeSource(r connector.Reading) *fakeSource {
	h := func(name string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: name})
	}
	return &fakeSource{reading: r, hist: connector.Histograms{
		Upload: h("pqsink_upload_seconds"), Commit: h("pqsink_commit_seconds"), Rebalance: h("pqsink_rebalance_seconds"),
		TableCommit:    h("pqsink_table_commit_seconds"),
		TableFreshness: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "pqsink_table_freshness_seconds", Help: "f"}, []string{"table", "record"}),
	}}
}

func (f *fakeSource) Reading(time.Time) connector.Reading {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reading
}
func (f *fakeSource) Histograms() connector.Histograms           { return f.hist }
func (f *fakeSource) MaintenanceCollector() prometheus.Collector { return f.maint }
func (f *fakeSource) Ready() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ready
}

// scrape gathers src's collector into "name{label=value,...}" → value,
// and the names of the histograms.
func scrape(t *testing.T, src Source) (map[string]float64, map[string]bool) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(NewCollector(src)); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got, hist := map[string]float64{}, map[string]bool{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			if m.GetHistogram() != nil {
				hist[f.GetName()] = true
				continue
			}
			got[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return got, hist
}

// TestCollector: every reason is exported at 0 from the start, under the
// configured action, and the events of a Reading on top of the zeros
// without a second series; the table's metrics only with a table section.
func TestCollector(t *testing.T) {
	base := connector.Reading{
		Errors:          "skip",
		RotationReasons: []string{"records", "bytes", "schema"},
		RejectReasons:   []string{"decode", "schema"},
		Memory:          connector.MemoryStats{Used: 5, Limit: 100, FetchPauses: 2},
		Lags:            []connector.Lag{{Topic: "t", Partition: 3, Records: 9}},
		Stopped:         1,
		Stalled:         2,
	}
	for _, tc := range []struct {
		name   string
		change func(r *connector.Reading)
		want   map[string]float64
		absent []string
		hist   []string
	}{
		{"fresh", func(*connector.Reading) {}, map[string]float64{
			"pqsink_files_uploaded_total{reason=records}":              0,
			"pqsink_files_uploaded_total{reason=schema}":               0,
			"pqsink_records_rejected_total{action=skip,reason=decode}": 0,
			"pqsink_records_rejected_total{action=skip,reason=schema}": 0,
			"pqsink_records_dead_lettered_total{reason=decode}":        0,
			"pqsink_dead_letters_oversized_total{action=cut}":          0,
			"pqsink_rebalance_partitions_total{outcome=dropped}":       0,
			"pqsink_records_consumed_total{}":                          0,
			"pqsink_memory_used_bytes{}":                               5,
			"pqsink_memory_limit_bytes{}":                              100,
			"pqsink_fetch_pauses_total{}":                              2,
			"pqsink_consumer_lag_records{partition=3,topic=t}":         9,
			"pqsink_partitions_stopped{}":                              1,
			"pqsink_partitions_stalled{}":                              2,
		}, []string{"pqsink_table_commits_total{}", "pqsink_table_pending_files{}"},
			[]string{"pqsink_upload_seconds", "pqsink_commit_seconds", "pqsink_rebalance_seconds"}},
		{"events", func(r *connector.Reading) {
			r.Stats.Consumed = 20
			r.Stats.Files = map[string]int64{"records": 2}
			r.Stats.Rejects = map[[2]string]int64{{"schema", "skip"}: 1, {"decode", "dead_letter"}: 3}
		}, map[string]float64{
			"pqsink_records_consumed_total{}":                                 20,
			"pqsink_files_uploaded_total{reason=records}":                     2,
			"pqsink_files_uploaded_total{reason=bytes}":                       0,
			"pqsink_records_rejected_total{action=skip,reason=schema}":        1,
			"pqsink_records_rejected_total{action=skip,reason=decode}":        0,
			"pqsink_records_rejected_total{action=dead_letter,reason=decode}": 3,
			"pqsink_records_dead_lettered_total{reason=decode}":               3,
			"pqsink_records_dead_lettered_total{reason=schema}":               0,
		}, nil, nil},
		{"table", func(r *connector.Reading) {
			r.Tables = true
			r.Stats.TableCommits, r.Stats.TablePendingFiles = 4, 6
			r.TableAges = map[string]time.Duration{"kafka.t": 1500 * time.Millisecond, "kafka.u": 0}
		}, map[string]float64{
			"pqsink_table_commits_total{}":                           4,
			"pqsink_table_pending_files{}":                           6,
			"pqsink_table_oldest_uncommitted_seconds{table=kafka.t}": 1.5,
			"pqsink_table_oldest_uncommitted_seconds{table=kafka.u}": 0,
		}, nil, []string{"pqsink_table_commit_seconds"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := base
			tc.change(&r)
			src := newFakeSource(r)
			src.hist.Upload.Observe(1)
			src.hist.Commit.Observe(1)
			src.hist.Rebalance.Observe(1)
			src.hist.TableCommit.Observe(1)
			got, hist := scrape(t, src)
			for k, v := range tc.want {
				if g, ok := got[k]; !ok || g != v {
					t.Errorf("%s: %v (exported %v), want %v", k, g, ok, v)
				}
			}
			for _, k := range tc.absent {
				if _, ok := got[k]; ok {
					t.Errorf("%s exported without a table", k)
				}
			}
			for _, h := range tc.hist {
				if !hist[h] {
					t.Errorf("histogram %s not exported (%v)", h, hist)
				}
			}
			if !r.Tables && hist["pqsink_table_commit_seconds"] {
				t.Error("pqsink_table_commit_seconds exported without a table")
			}
		})
	}
}

// maintCollector is a stand-in for the maintenance's collector.
type maintCollector struct{ desc *prometheus.Desc }

func (m maintCollector) Describe(ch chan<- *prometheus.Desc) { ch <- m.desc }
func (m maintCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(m.desc, prometheus.CounterValue, 3)
}

// TestServe: /healthz is ok, /readyz says ready or, with status 503, why
// not, and /metrics holds the sink's metrics and the maintenance's.
func TestServe(t *testing.T) {
	src := newFakeSource(connector.Reading{Errors: "fail", RejectReasons: []string{"decode"}, RotationReasons: []string{"records"}})
	src.maint = maintCollector{prometheus.NewDesc("pqsink_table_maintenance_runs_total", "runs", nil, nil)}
	addr, stop, err := Serve("127.0.0.1:0", src, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := get("/readyz"); code != 200 || body != "ready\n" {
		t.Errorf("/readyz: %d %q", code, body)
	}
	src.mu.Lock()
	src.ready = errors.New("not a member of the consumer group yet")
	src.mu.Unlock()
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not a member of the consumer group yet") {
		t.Errorf("/readyz not ready: %d %q", code, body)
	}
	code, body := get("/metrics")
	for _, want := range []string{`pqsink_records_rejected_total{action="fail",reason="decode"} 0`, "pqsink_table_maintenance_runs_total 3", "go_goroutines", "process_"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics (%d) lacks %q", code, want)
		}
	}
	if addr, stop, err := Serve("", src, slog.Default()); addr != "" || err != nil {
		t.Errorf("an empty listen served at %q: %v", addr, err)
	} else {
		stop()
	}
}
