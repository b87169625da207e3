package test

import (
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/connector/metrics"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// scrapeAll reads every sample of the sink's /metrics at addr, by its
// line's name and labels as written: `name{a="x",b="y"}`.
func scrapeAll(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// freshness is what /metrics says of a table's freshness.
type freshness struct {
	oldestCount, newestCount float64 // files observed
	oldestSum, newestSum     float64 // their ages, seconds
	uncommitted              float64 // pqsink_table_oldest_uncommitted_seconds
	appended                 float64 // pqsink_table_files_appended_total
	exported                 bool    // the gauge is there
}

func readFreshness(t *testing.T, addr, table string) freshness {
	t.Helper()
	m := scrapeAll(t, addr)
	h := func(what, record string) float64 {
		return m[`pqsink_table_freshness_seconds_`+what+`{record="`+record+`",table="`+table+`"}`]
	}
	g, ok := m[`pqsink_table_oldest_uncommitted_seconds{table="`+table+`"}`]
	return freshness{
		oldestCount: h("count", "oldest"), newestCount: h("count", "newest"),
		oldestSum: h("sum", "oldest"), newestSum: h("sum", "newest"),
		uncommitted: g, appended: m["pqsink_table_files_appended_total"], exported: ok,
	}
}

// waitCommitted waits until the table holds want rows and the sink's
// gauge says that it holds every record consumed, and returns what
// /metrics says then.
func waitCommitted(t *testing.T, env *tableEnv, addr string, want int) freshness {
	t.Helper()
	env.waitRows(t, want, 2*time.Minute)
	deadline := time.Now().Add(time.Minute)
	for {
		f := readFreshness(t, addr, "kafka."+env.topic)
		if f.exported && f.uncommitted == 0 {
			return f
		}
		if time.Now().After(deadline) {
			t.Fatalf("the table holds its %d rows, and the oldest uncommitted record is still %v s old (exported: %v)", want, f.uncommitted, f.exported)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestTableSinkFreshness: a table sink's freshness metrics agree with the
// records produced. Records go to two of three partitions, the third
// stays idle. Once the table holds them all, the gauge of the oldest
// uncommitted record is back at 0 (the idle partition holds nothing, and
// holds no commit back); each file appended was observed once as its
// oldest and once as its newest record; and the ages observed lie between
// what the Kafka timestamps allow: no file's newest record is younger
// than the newest record produced, no file's oldest older than the oldest
// one. With table.freshness_from: read, the ages count from when the sink
// read the records, which is after the sink started.
func TestTableSinkFreshness(t *testing.T) {
	const partitions, perPartition = 3, 150
	env := newTableEnv(t, "fresh")
	broker := kafkatest.Start(t, partitions, env.topic)
	text := env.config(t, broker.Brokers, "fresh", "1s", 40) // a file every 40 records, or 500 ms
	for p := range 2 {
		produceEventsTo(t, broker.Brokers, env.topic, p, p*perPartition, perPartition)
	}
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	var first, last int64 = 1 << 62, 0
	for _, r := range truth {
		first, last = min(first, r.TimeMs), max(last, r.TimeMs)
	}

	start := time.Now()
	sink, stop := startSink(t, text)
	addr, stopMetrics, err := metrics.Serve("127.0.0.1:0", sink, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	f := waitCommitted(t, env, addr, len(truth))
	end := time.Now()
	stopMetrics()
	stop()
	env.check(t, truth)
	t.Logf("from the Kafka timestamps: %v files, mean age %.0f s (oldest record) / %.0f s (newest)", f.appended, f.oldestSum/f.oldestCount, f.newestSum/f.newestCount)

	// Each file of at least 40 records, or what 500 ms of the partition
	// gave: a few per partition at least, never more than its records.
	if f.oldestCount != f.appended || f.newestCount != f.appended || f.appended < 2*perPartition/40 || f.appended > float64(len(truth)) {
		t.Errorf("observed %v files (oldest) and %v (newest); appended %v, want as many, between %d and %d", f.oldestCount, f.newestCount, f.appended, 2*perPartition/40, len(truth))
	}
	if f.oldestSum < f.newestSum {
		t.Errorf("the oldest records' ages sum to %v s, less than the newest's %v s", f.oldestSum, f.newestSum)
	}
	// Every age is taken between the start and the end of the run.
	youngest := start.Sub(time.UnixMilli(last)).Seconds()
	oldest := end.Sub(time.UnixMilli(first)).Seconds()
	if f.newestSum < f.newestCount*youngest || f.oldestSum > f.oldestCount*oldest {
		t.Errorf("ages: newest sum %v s over %v files, want at least %v s each; oldest sum %v s over %v files, want at most %v s each",
			f.newestSum, f.newestCount, youngest, f.oldestSum, f.oldestCount, oldest)
	}

	// Counted from when the sink read them: a new process, new records.
	text = strings.Replace(text, "  commit_interval: 1s\n", "  commit_interval: 1s\n  freshness_from: read\n", 1)
	if !strings.Contains(text, "freshness_from: read") {
		t.Fatalf("no commit_interval line to put freshness_from after:\n%s", text)
	}
	for p := range 2 {
		produceEventsTo(t, broker.Brokers, env.topic, p, 2*perPartition+p*perPartition, perPartition)
	}
	truth = readTopic(t, broker.Brokers, env.topic, partitions)
	start = time.Now()
	sink, stop = startSink(t, text)
	addr, stopMetrics, err = metrics.Serve("127.0.0.1:0", sink, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	f = waitCommitted(t, env, addr, len(truth))
	run := time.Since(start).Seconds()
	stopMetrics()
	stop()
	env.check(t, truth)
	t.Logf("from the read: %v files, mean age %.3f s (oldest record) / %.3f s (newest)", f.appended, f.oldestSum/f.oldestCount, f.newestSum/f.newestCount)
	if f.oldestCount != f.appended || f.newestCount != f.appended || f.appended < 2*perPartition/40 {
		t.Errorf("second run: observed %v files (oldest) and %v (newest); appended %v, want as many, at least %d", f.oldestCount, f.newestCount, f.appended, 2*perPartition/40)
	}
	if f.oldestSum < f.newestSum || f.oldestSum > f.oldestCount*run {
		t.Errorf("second run, from the read: ages sum to %v s (oldest) and %v s (newest) over %v files, want newest <= oldest <= %v s each (the run)",
			f.oldestSum, f.newestSum, f.oldestCount, run)
	}
}
