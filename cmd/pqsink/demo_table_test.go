package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/internal/events"
)

// demoEvent is the part of a reference event the test compares.
type demoEvent struct {
	ID      int64
	TS      time.Time
	User    string
	Country string
	Amount  float64
	Tags    []string
	Payload struct{ Session string }
}

// TestDemoTable runs `pqsink demo --table` as a process in an empty
// folder and reads the table it made back with iceberg-go's scan, in a
// catalog connection of its own: every event the demo produced is in the
// table's current snapshot once, with its fields and Kafka key, and the
// DuckDB query printed names the table's current metadata file.
func TestDemoTable(t *testing.T) {
	const n = 5000
	work := t.TempDir()
	cmd := exec.Command(os.Args[0], "demo", "--table", "--records", strconv.Itoa(n), "--partitions", "3")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("pqsink demo --table: %v\n%s\n%s", err, out, stderr)
	}
	dir := filepath.Join(work, "pqsink-demo")

	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cat, err := sqlcat.NewCatalog("pqsink", db, sqlcat.SQLite, iceberg.Properties{"warehouse": "file://" + filepath.Join(dir, "warehouse")})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, itable.Identifier{"kafka", "events"})
	if err != nil {
		t.Fatalf("the demo's table: %v\n%s", err, out)
	}
	meta := strings.TrimPrefix(tbl.MetadataLocation(), "file://")
	if v := fmt.Sprintf("(Iceberg, format version %d)", tbl.Metadata().Version()); !strings.Contains(string(out), v) {
		t.Errorf("the output does not say %s:\n%s", v, out)
	}
	if !strings.Contains(string(out), "iceberg_scan('"+meta+"')") {
		t.Errorf("the output does not query the table's metadata file %s with iceberg_scan:\n%s", meta, out)
	}
	if _, err := os.Stat(meta); err != nil {
		t.Errorf("the metadata file printed: %v", err)
	}

	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if at.NumRows() != n {
		t.Errorf("the table holds %d rows, the demo produced %d", at.NumRows(), n)
	}
	col := func(name string) *arrow.Column {
		for i := 0; i < int(at.NumCols()); i++ {
			if at.Column(i).Name() == name {
				return at.Column(i)
			}
		}
		t.Fatalf("the table has no column %s: %v", name, at.Schema())
		return nil
	}
	// What the demo produced: the reference events, keyed by their index
	// modulo 10007 (sinkbench.Load).
	want := make([]demoEvent, n)
	gen := events.New(1, time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC))
	for i := range want {
		if err := json.Unmarshal(gen.Append(nil), &want[i]); err != nil {
			t.Fatal(err)
		}
	}
	seen := make([]int, n)
	bad := 0
	ids, ts, users, countries, amounts, tags, payload, kafka := col("id"), col("ts"), col("user"), col("country"), col("amount"), col("tags"), col("payload"), col("_kafka")
	for c := range ids.Data().Chunks() {
		idc := ids.Data().Chunk(c).(*array.Int64)
		tsc := ts.Data().Chunk(c).(*array.Timestamp)
		uc, cc, ac := users.Data().Chunk(c).(*array.String), countries.Data().Chunk(c).(*array.String), amounts.Data().Chunk(c).(*array.Float64)
		tc := tags.Data().Chunk(c).(*array.List)
		pc, kc := payload.Data().Chunk(c).(*array.Struct), kafka.Data().Chunk(c).(*array.Struct)
		session := pc.Field(0).(*array.String)
		keyIdx, _ := kc.DataType().(*arrow.StructType).FieldIdx("key")
		keys := kc.Field(keyIdx).(*array.Binary)
		elems := tc.ListValues().(*array.String)
		for i := 0; i < idc.Len(); i++ {
			id := idc.Value(i)
			if id < 0 || id >= n {
				t.Fatalf("the table holds id %d, the demo produced 0 to %d", id, n-1)
			}
			seen[id]++
			w := want[id]
			var got []string
			from, to := tc.ValueOffsets(i)
			for j := from; j < to; j++ {
				got = append(got, elems.Value(int(j)))
			}
			if tsc.Value(i).ToTime(arrow.Microsecond) != w.TS || uc.Value(i) != w.User || cc.Value(i) != w.Country || ac.Value(i) != w.Amount ||
				strings.Join(got, ",") != strings.Join(w.Tags, ",") || session.Value(i) != w.Payload.Session ||
				string(keys.Value(i)) != strconv.Itoa(int(id%10007)) {
				if bad++; bad <= 5 {
					t.Errorf("id %d: ts %v user %s country %s amount %v tags %v session %s key %q, want %+v key %d",
						id, tsc.Value(i).ToTime(arrow.Microsecond), uc.Value(i), cc.Value(i), ac.Value(i), got, session.Value(i), keys.Value(i), w, id%10007)
				}
			}
		}
	}
	for id, k := range seen {
		if k != 1 {
			if bad++; bad <= 10 {
				t.Errorf("id %d is in the table %d times", id, k)
			}
		}
	}
}
