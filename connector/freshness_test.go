package connector

import (
	"context"
	"fmt"
	"github.com/pqsink/pqsink/connector/tablecommit"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pqsink/pqsink/config"

	"github.com/prometheus/client_golang/prometheus"
)

// TestRecordTimes: a file keeps the oldest and the newest time of its
// records, whatever their order; 0 stands for none.
func TestRecordTimes(t *testing.T) {
	for _, tc := range []struct {
		name           string
		at             []int64
		oldest, newest int64
	}{
		{"none", nil, 0, 0},
		{"one", []int64{5}, 5, 5},
		{"in order", []int64{1, 2, 3}, 1, 3},
		{"out of order", []int64{7, 2, 9, 4}, 2, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rt tablecommit.RecordTimes
			for _, at := range tc.at {
				rt.Note(at)
			}
			if rt.Oldest != tc.oldest || rt.Newest != tc.newest {
				t.Errorf("oldest %d newest %d, want %d %d", rt.Oldest, rt.Newest, tc.oldest, tc.newest)
			}
		})
	}
	for _, tc := range []struct{ a, b, want int64 }{{0, 0, 0}, {0, 3, 3}, {3, 0, 3}, {2, 3, 2}, {3, 2, 2}} {
		if got := tablecommit.Older(tc.a, tc.b); got != tc.want {
			t.Errorf("tablecommit.Older(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// histogram returns the count and the sum of s's
// pqsink_table_freshness_seconds for table and record.
func histogram(t *testing.T, s *Sink, table, record string) (uint64, float64) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(s.Histograms().TableFreshness); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "pqsink_table_freshness_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["table"] == table && labels["record"] == record {
				return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
			}
		}
	}
	t.Fatalf("no pqsink_table_freshness_seconds{table=%s,record=%s}", table, record)
	return 0, 0
}

// TestTableFreshness: the oldest record not in the table is the oldest
// one a partition or the committer holds, an idle partition holds none,
// a failed commit keeps it, and a commit observes each file's oldest and
// newest record's age once, then forgets them.
func TestTableFreshness(t *testing.T) {
	ctx := context.Background()
	s := tableSink(t, t.TempDir()) // a file per 3 records, of path a (even offsets) or b (odd)
	tc, err := s.tables.ForTopic(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	var c commitLog
	p := newPartitionWithTable(s, "t", 0, 0, skipSet{}, c.commit, tc)
	p.genCtx = ctx
	idle := newPartitionWithTable(s, "t", 1, 0, skipSet{}, c.commit, tc)
	idle.genCtx = ctx
	s.mu.Lock()
	s.consuming[p], s.consuming[idle] = struct{}{}, struct{}{}
	s.mu.Unlock()
	gauge := func() float64 {
		t.Helper()
		return s.Reading(time.Now()).TableAges["kafka.t"].Seconds()
	}
	if g := gauge(); g != 0 {
		t.Fatalf("before any record: %v s", g)
	}
	if n, _ := histogram(t, s, "kafka.t", "oldest"); n != 0 {
		t.Fatalf("before any record: %d observed", n)
	}

	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	at := func(off int64) time.Time { return base.Add(time.Duration(off) * time.Second) }
	handle := func(from, to int64) {
		t.Helper()
		for off := from; off < to; off++ {
			path := "a"
			if off%2 == 1 {
				path = "b"
			}
			// Out of order in time: offset 2 is older than offset 0.
			ts := at(off)
			if off == 2 {
				ts = at(-1)
			}
			r := record{offset: off, time: ts, value: fmt.Appendf(nil, `{"n":%d,"p":%q}`, off, path)}
			if err := p.handle(ctx, &r); err != nil {
				t.Fatalf("offset %d: %v", off, err)
			}
		}
		p.report()
	}
	handle(0, 8) // files a [0 2 4] and b [1 3 5] uploaded, a [6] and b [7] open
	if got, want := p.fresh.pub.Load(), at(6).UnixNano(); got != want {
		t.Errorf("partition: oldest held %v, want offset 6's %v", time.Unix(0, got), at(6))
	}
	if got, want := s.tables.Oldest()["kafka.t"], at(-1).UnixNano(); got != want {
		t.Errorf("committer: oldest held %v, want offset 2's %v", time.Unix(0, got), at(-1))
	}
	if got := idle.fresh.pub.Load(); got != 0 {
		t.Errorf("idle partition: oldest held %v, want none", time.Unix(0, got))
	}
	if least, g := time.Since(at(-1)).Seconds(), gauge(); g < least {
		t.Errorf("gauge %v s, want at least offset 2's age, %v s", g, least)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if s.tables.CommitAll(cancelled) {
		t.Fatal("a commit with a cancelled context succeeded")
	}
	if got := s.tables.Oldest()["kafka.t"]; got != at(-1).UnixNano() {
		t.Errorf("after a failed commit: committer's oldest %v, want offset 2's %v", time.Unix(0, got), at(-1))
	}
	if n, _ := histogram(t, s, "kafka.t", "oldest"); n != 0 {
		t.Errorf("a failed commit observed %d files", n)
	}

	if !s.tables.CommitAll(ctx) {
		t.Fatal(err)
	}
	if got := s.tables.Oldest()["kafka.t"]; got != 0 {
		t.Errorf("after the commit: the committer holds %v", time.Unix(0, got))
	}
	no, so := histogram(t, s, "kafka.t", "oldest")
	nn, sn := histogram(t, s, "kafka.t", "newest")
	// Both ages of a file are taken at one instant: their difference is
	// the span of its records' times, 5 s for a (-1..4) and 4 s for b (1..5).
	if no != 2 || nn != 2 || math.Abs(so-sn-9) > 1e-6 {
		t.Errorf("after committing 2 files: oldest %d (sum %v), newest %d (sum %v), want 2 and 2 with sums 9 s apart", no, so, nn, sn)
	}
	if least, g := time.Since(at(6)).Seconds(), gauge(); g < least || g > time.Since(at(-1)).Seconds() {
		t.Errorf("gauge %v s, want offset 6's age, at least %v s, and less than offset 2's", g, least)
	}

	// Dropped to be read again (a failed upload): the records still
	// count, while the partition waits and once it has read them again.
	p.dropAll(ctx)
	if got := p.fresh.pub.Load(); got != at(6).UnixNano() {
		t.Errorf("dropped to be read again: the partition's oldest %v, want offset 6's %v", time.Unix(0, got), at(6))
	}
	handle(p.next, 8)
	if got := p.fresh.pub.Load(); got != at(6).UnixNano() {
		t.Errorf("read again: the partition's oldest %v, want offset 6's %v", time.Unix(0, got), at(6))
	}

	// The rest, at shutdown: nothing is held any more.
	if err := p.shutdown(ctx, true); err != nil {
		t.Fatal(err)
	}
	if got := p.fresh.pub.Load(); got != 0 {
		t.Errorf("after shutdown: the partition holds %v", time.Unix(0, got))
	}
	if got := s.tables.Oldest()["kafka.t"]; got != at(6).UnixNano() {
		t.Errorf("after shutdown: the committer's oldest %v, want offset 6's %v", time.Unix(0, got), at(6))
	}
	if !s.tables.CommitAll(ctx) {
		t.Fatal(err)
	}
	if no, _ := histogram(t, s, "kafka.t", "oldest"); no != 4 {
		t.Errorf("after committing 4 files: %d observed", no)
	}
	if g := gauge(); g != 0 {
		t.Errorf("every record in the table: gauge %v s", g)
	}
}

// TestFreshnessFromRead: with table.freshness_from: read, and for a
// record without a Kafka timestamp, a record's time is when the sink
// read its batch.
func TestFreshnessFromRead(t *testing.T) {
	read := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()
	stamp := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		fromRead bool
		ts       time.Time
		want     int64
	}{
		{"timestamp", false, stamp, stamp.UnixNano()},
		{"no timestamp", false, time.UnixMilli(-1), read},
		{"zero time", false, time.Time{}, read},
		{"read", true, stamp, read},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &partition{fresh: partFreshness{read: tc.fromRead, readAt: read}}
			if got := p.freshAt(&record{time: tc.ts}); got != tc.want {
				t.Errorf("time %v, want %v", time.Unix(0, got), time.Unix(0, tc.want))
			}
		})
	}
}

// BenchmarkNoteFresh is the freshness work per record written to a
// table's file: its time's min and max on the file and the partition.
func BenchmarkNoteFresh(b *testing.B) {
	p := &partition{table: &tablecommit.Committer{}}
	f := &openFile{}
	base := time.Now()
	recs := make([]record, 1024)
	for i := range recs {
		recs[i].time = base.Add(time.Duration(i%97) * time.Millisecond)
	}
	b.ResetTimer()
	for i := range b.N {
		p.noteFresh(f, &recs[i&1023])
	}
}

// TestTableFreshnessIdleTopic: a topic without records neither holds
// back the commit of another topic's table nor shows an age of its own.
func TestTableFreshnessIdleTopic(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	schemaPath := filepath.Join(dir, "s.schema")
	if err := os.WriteFile(schemaPath, []byte("message m { required int64 n; optional binary p (STRING); }"), 0o644); err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf(`kafka: {brokers: [127.0.0.1:1], group: g, topics: [t, idle]}
store: {url: "file://%s/warehouse"}
format: {type: json, schema_file: %s}
rotate: {records: 3, interval: 1h, bytes: 0}
table: {format: iceberg, catalog: {type: sql, uri: "sqlite://%s/catalog.db"}, namespace: kafka}
`, dir, schemaPath, dir)
	cfg, err := config.Parse([]byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tc, err := s.tables.ForTopic(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	var c commitLog
	p := newPartitionWithTable(s, "t", 0, 0, skipSet{}, c.commit, tc)
	p.genCtx = ctx
	s.mu.Lock()
	s.consuming[p] = struct{}{}
	s.mu.Unlock()
	feed(t, p, 0, 6) // two files of 3 records
	got := s.Reading(time.Now()).TableAges
	if got["kafka.t"] <= 0 || got["kafka.idle"] != 0 {
		t.Errorf("before the commit: ages %v (kafka.t) and %v (kafka.idle), want one above 0 and 0",
			got["kafka.t"], got["kafka.idle"])
	}
	if !s.tables.CommitAll(ctx) {
		t.Fatal("a commit failed")
	}
	if n, _ := histogram(t, s, "kafka.t", "oldest"); n != 2 {
		t.Errorf("kafka.t: %d files observed, want 2", n)
	}
	if n, _ := histogram(t, s, "kafka.idle", "oldest"); n != 0 {
		t.Errorf("kafka.idle: %d files observed, want none", n)
	}
	got = s.Reading(time.Now()).TableAges
	if age, ok := got["kafka.idle"]; got["kafka.t"] != 0 || age != 0 || !ok {
		t.Errorf("after the commit: ages %v (kafka.t) and %v (kafka.idle), want 0",
			got["kafka.t"], got["kafka.idle"])
	}
	if len(c.offsets) != 1 || c.offsets[0] != 6 {
		t.Errorf("Kafka commits %v, want one at 6", c.offsets)
	}
}
