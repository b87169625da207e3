package test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/connector"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// maintenanceMetric reads one pqsink_table_maintenance_* sample from a
// member's /metrics, e.g. `runs_total{task="compact"}`; 0 when absent.
func maintenanceMetric(t *testing.T, addr, sample string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	prefix := "pqsink_table_maintenance_" + sample + " "
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return 0
}

// TestTableMaintenance runs two members of a group with table.maintenance
// on a short schedule while records keep arriving: one member holds the
// table's lease and maintains it (its small files compacted into a
// replace snapshot, old snapshots expired, an old orphan removed), the
// other does nothing of it; when the holder leaves, the other takes the
// lease over and maintains in its turn. The table holds every record
// exactly once at the end (iceberg-go reads it).
func TestTableMaintenance(t *testing.T) {
	const partitions = 3
	env := newTableEnv(t, "maintained")
	broker := kafkatest.Start(t, partitions, env.topic)
	text := env.config(t, broker.Brokers, "mnt", "1s", 40) // a file every 40 records
	text = strings.Replace(text, "  format_version: 2\n", "  format_version: 2\n"+
		"  maintenance: {compact_every: 2s, target_file_size: 1MiB, expire_snapshots_older_than: 1s, keep_snapshots: 5, remove_orphans_older_than: 65s}\n", 1)
	if !strings.Contains(text, "maintenance:") {
		t.Fatalf("no maintenance in the config:\n%s", text)
	}

	// An upload no commit took, long ago (a member that died, a
	// compaction that gave up).
	dir := strings.TrimPrefix(env.warehouse, "file://")
	orphan := filepath.Join(dir, "kafka", env.topic, "data", "_kafka_timestamp_day=2026-01-01", "maintained+0+00000000000000000000.parquet")
	if err := os.MkdirAll(filepath.Dir(orphan), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(orphan, []byte("PAR1 left behind"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(orphan, old, old); err != nil {
		t.Fatal(err)
	}

	produced := 0
	produce := func(n int) {
		produceEvents(t, broker.Brokers, env.topic, produced, n)
		produced += n
	}
	produce(1500)
	type member struct {
		addr string
		stop func()
	}
	var members [2]member
	for i := range members {
		sink, stop := startSink(t, text)
		addr, stopMetrics, err := connector.ServeMetrics("127.0.0.1:0", sink, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stopMetrics)
		members[i] = member{addr, stop}
	}
	runs := func(m member, task string) float64 {
		return maintenanceMetric(t, m.addr, `runs_total{task="`+task+`"}`)
	}

	// While records arrive: compaction, expiry and the orphan's removal,
	// all by one member.
	var holder, other member
	deadline := time.Now().Add(3 * time.Minute)
	for {
		produce(150)
		time.Sleep(500 * time.Millisecond)
		a, b := maintenanceMetric(t, members[0].addr, "files_rewritten_total"), maintenanceMetric(t, members[1].addr, "files_rewritten_total")
		_, err := os.Stat(orphan)
		expired := maintenanceMetric(t, members[0].addr, "snapshots_expired_total") + maintenanceMetric(t, members[1].addr, "snapshots_expired_total")
		if (a > 0 || b > 0) && os.IsNotExist(err) && expired > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 3 minutes: files rewritten %v and %v, orphan still there: %v, snapshots expired %v", a, b, err == nil, expired)
		}
	}
	for i, m := range members {
		if maintenanceMetric(t, m.addr, "leases_held") == 1 {
			holder, other = m, members[1-i]
		}
	}
	if holder.addr == "" {
		t.Fatal("no member holds the table's lease")
	}
	if maintenanceMetric(t, other.addr, "leases_held") != 0 {
		t.Error("both members hold the table's lease")
	}
	for _, task := range []string{"compact", "expire", "orphans"} {
		if runs(holder, task) == 0 {
			t.Errorf("the holder ran no %s", task)
		}
		if n := runs(other, task); n != 0 {
			t.Errorf("the member without the lease ran %s %v times", task, n)
		}
		if n := maintenanceMetric(t, holder.addr, `errors_total{task="`+task+`"}`); n != 0 {
			t.Errorf("%v %s runs failed", n, task)
		}
	}
	if maintenanceMetric(t, holder.addr, "orphans_removed_total") < 1 {
		t.Error("the holder counts no orphan removed")
	}
	var replace bool
	for _, s := range env.load(t).Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Operation == "replace" {
			replace = true
		}
	}
	if !replace {
		t.Error("no replace snapshot in the table's history after compaction")
	}
	// The lease names its holder.
	leases, _ := filepath.Glob(filepath.Join(dir, "_pqsink", "leases", "tables", "kafka."+env.topic, "*.json"))
	if len(leases) == 0 || len(leases) > 3 {
		t.Errorf("lease objects %v", leases)
	} else {
		var doc struct {
			Holder  string    `json:"holder"`
			Expires time.Time `json:"expires"`
		}
		body, _ := os.ReadFile(leases[len(leases)-1])
		if err := json.Unmarshal(body, &doc); err != nil || doc.Holder == "" || doc.Expires.IsZero() {
			t.Errorf("the lease in force reads %s (%v)", body, err)
		}
	}

	// The holder leaves and gives the lease up: the other member takes it
	// over and maintains.
	holder.stop()
	deadline = time.Now().Add(2 * time.Minute)
	for runs(other, "compact") == 0 || maintenanceMetric(t, other.addr, "leases_held") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the remaining member did not take the lease over within 2 minutes")
		}
		produce(100)
		time.Sleep(500 * time.Millisecond)
	}
	env.waitRows(t, produced, 2*time.Minute)
	other.stop()
	env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))
	tbl := env.load(t)
	if got := tbl.CurrentSnapshot().Summary.Properties["pqsink.state"]; got == "" {
		t.Error("the current snapshot carries no pqsink.state")
	}
}
