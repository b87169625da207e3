package connector

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// scrape gathers the sink's collector into "name{label=value,...}" → value.
func scrape(t *testing.T, s *Sink) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(s.collector()); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			got[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return got
}

// TestMetricsFromStart: a fresh sink exports the counters that alerts watch
// at 0, for every rotation reason and every reject reason under the
// configured action, so that an increase() fires on the first event, and a
// process that never uploaded is seen as one.
func TestMetricsFromStart(t *testing.T) {
	for _, tc := range []struct {
		name, extra, action string
	}{
		{"fail", "errors: fail\n", "fail"},
		{"skip", "errors: skip\n", "skip"},
		{"dead letters", "dead_letter: {url: \"file://%s\"}\n", "dead_letter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			extra := tc.extra
			if strings.Contains(extra, "%s") {
				extra = fmt.Sprintf(extra, t.TempDir())
			}
			s := protoSinkWith(t, t.TempDir(), "rotate: {records: 10}\n"+extra)
			got := scrape(t, s)
			var want []string
			for _, r := range []string{"records", "bytes", "interval", "schedule", "shutdown", "memory", "partition-stopped", "schema"} {
				want = append(want, "pqsink_files_uploaded_total{reason="+r+"}")
			}
			for _, r := range []string{"decode", "schema", "too_large", "path", "envelope"} {
				want = append(want,
					"pqsink_records_rejected_total{action="+tc.action+",reason="+r+"}",
					"pqsink_records_dead_lettered_total{reason="+r+"}")
			}
			want = append(want, "pqsink_records_consumed_total{}", "pqsink_files_uploaded_total{reason=records}")
			for _, k := range want {
				if v, ok := got[k]; !ok || v != 0 {
					t.Errorf("%s: %v (exported %v), want 0", k, v, ok)
				}
			}

			// The first event counts on top of the zeros, without a
			// second series for the same labels.
			var c commitLog
			p := newPartition(s, "t", 0, 0, skipSet{}, c.commit)
			feed(t, p, 0, 20)
			bad := record{offset: 20, value: []byte(`{"n":"x"}`)}
			if err := p.handle(context.Background(), &bad); err != nil {
				t.Fatal(err)
			}
			if err := p.tick(context.Background(), time.Now()); err != nil {
				t.Fatal(err)
			}
			got = scrape(t, s)
			for k, v := range map[string]float64{
				"pqsink_files_uploaded_total{reason=records}":                           2,
				"pqsink_records_rejected_total{action=" + tc.action + ",reason=schema}": 1,
				"pqsink_records_rejected_total{action=" + tc.action + ",reason=decode}": 0,
			} {
				if got[k] != v {
					t.Errorf("after the first events, %s: %v, want %v", k, got[k], v)
				}
			}
		})
	}
}
