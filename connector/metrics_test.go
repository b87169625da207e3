package connector

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReadingFromStart: a fresh sink's Reading names every rotation reason
// and every reject reason, with the configured action, so that the
// metrics export them at 0 from the start; the first events count in the
// next Reading.
func TestReadingFromStart(t *testing.T) {
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
			r := s.Reading(time.Now())
			if r.Errors != tc.action {
				t.Errorf("errors action %q, want %q", r.Errors, tc.action)
			}
			for _, reason := range []string{"records", "bytes", "interval", "schedule", "shutdown", "memory", "partition-stopped", "schema", "rebalance", "spec", "upsert"} {
				if !slices.Contains(r.RotationReasons, reason) {
					t.Errorf("rotation reasons %q lack %q", r.RotationReasons, reason)
				}
			}
			if want := []string{"decode", "schema", "too_large", "path", "envelope", "key", "change"}; !slices.Equal(r.RejectReasons, want) {
				t.Errorf("reject reasons %q, want %q", r.RejectReasons, want)
			}
			if r.Stats.Consumed != 0 || len(r.Stats.Files) != 0 || len(r.Stats.Rejects) != 0 || r.Tables || r.TableAges != nil {
				t.Errorf("a fresh sink reads %+v", r)
			}

			var c commitLog
			p := newPartition(s, "t", 0, 0, skipSet{}, c.commit)
			s.mu.Lock()
			s.consuming[p] = struct{}{}
			s.mu.Unlock()
			p.lag.Store(7)
			feed(t, p, 0, 20)
			bad := record{offset: 20, value: []byte(`{"n":"x"}`)}
			if err := p.handle(context.Background(), &bad); err != nil {
				t.Fatal(err)
			}
			if err := p.tick(context.Background(), time.Now()); err != nil {
				t.Fatal(err)
			}
			r = s.Reading(time.Now())
			if got := r.Stats.Files["records"]; got != 2 {
				t.Errorf("files uploaded for records: %d, want 2", got)
			}
			if got := r.Stats.Rejects[[2]string{"schema", tc.action}]; got != 1 {
				t.Errorf("rejected for schema: %d, want 1 (%v)", got, r.Stats.Rejects)
			}
			if want := []Lag{{Topic: "t", Partition: 0, Records: 7}}; !slices.Equal(r.Lags, want) {
				t.Errorf("lags %+v, want %+v", r.Lags, want)
			}
		})
	}
}
