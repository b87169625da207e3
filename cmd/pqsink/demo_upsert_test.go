package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/cmd/pqsink/internal/sinkbench"
)

// foldDemoChangelog folds n changes of the demo's generator by their
// bytes, as a compacted topic's reader would: the last value of each key,
// none for a key whose last change is a tombstone. It returns the live
// keys' versions and the count of each kind of change.
func foldDemoChangelog(t *testing.T, keys, n int) (live map[int64]int64, inserts, updates, deletes int64) {
	t.Helper()
	gen := newDemoChangelog(1, keys)
	live = map[int64]int64{}
	for range n {
		key, value := gen.next()
		var k struct{ ID int64 }
		if err := json.Unmarshal(key, &k); err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
		_, was := live[k.ID]
		if value == nil {
			if !was {
				t.Fatalf("a tombstone of key %d, which has no row", k.ID)
			}
			delete(live, k.ID)
			deletes++
			continue
		}
		var row struct{ ID, Version int64 }
		if err := json.Unmarshal(value, &row); err != nil || row.ID != k.ID {
			t.Fatalf("value %q of key %d: %v", value, k.ID, err)
		}
		if was {
			updates++
		} else {
			inserts++
		}
		live[k.ID] = row.Version
	}
	return live, inserts, updates, deletes
}

// TestDemoUpsert runs `pqsink demo --upsert` as a process with a few
// thousand changes of a few hundred keys: its summary's numbers are the
// fold's (changes of each kind, live keys, rows in the table, rows
// replaced and deleted), and a scan of the table in a connection of its
// own finds each live key's last version once.
func TestDemoUpsert(t *testing.T) {
	const records, keys = 3000, 300
	live, inserts, updates, deletes := foldDemoChangelog(t, keys, records)
	if updates == 0 || deletes == 0 || len(live) == 0 {
		t.Fatalf("the changelog has %d updates and %d deletes, and %d live keys: too few to test", updates, deletes, len(live))
	}
	dir := filepath.Join(t.TempDir(), "demo")
	cmd := exec.Command(os.Args[0], "demo", "--upsert", "--records", strconv.Itoa(records), "--keys", strconv.Itoa(keys), "--partitions", "3", "--dir", dir)
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("pqsink demo --upsert: %v\n%s\n%s", err, out, stderr)
	}
	for _, want := range []string{
		fmt.Sprintf("records        %d (%d inserts, %d updates, %d tombstones)\n", records, inserts, updates, deletes),
		fmt.Sprintf("keys live      %d\n", len(live)),
		fmt.Sprintf("rows in table  %d\n", len(live)),
		// Each update replaces its key's row, each tombstone deletes one;
		// the commits mark all of them deleted by position.
		fmt.Sprintf("rows replaced  %d\n", updates),
		fmt.Sprintf("rows deleted   %d\n", deletes),
		fmt.Sprintf("rows marked    %d ", updates+deletes),
		"ok: the table holds one row per live key",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the summary has no %q:\n%s", want, out)
		}
	}
	rows, _, err := scanDemoUpsert(t.Context(), filepath.Join(dir, demoCatalog), "file://"+filepath.Join(dir, demoWarehouse))
	if err != nil {
		t.Fatal(err)
	}
	if d := upsertDiff(rows, live); d != "" {
		t.Errorf("the table (%d rows) is not the fold (%d keys):\n%s", len(rows), len(live), d)
	}
}

// TestDemoUpsertDiff: the check the demo fails on finds a deleted key's
// row, a stale version, a key with two rows and a missing key.
func TestDemoUpsertDiff(t *testing.T) {
	live := map[int64]int64{1: 10, 2: 20, 3: 30}
	for _, tc := range []struct {
		name string
		rows [][2]int64
		want string // in the difference; "" for none
	}{
		{"same", [][2]int64{{1, 10}, {2, 20}, {3, 30}}, ""},
		{"deleted key", [][2]int64{{1, 10}, {2, 20}, {3, 30}, {4, 40}}, "key 4 has a row (version 40) but is deleted"},
		{"stale", [][2]int64{{1, 10}, {2, 19}, {3, 30}}, "key 2 has version 19, want 20"},
		{"twice", [][2]int64{{1, 10}, {1, 10}, {2, 20}, {3, 30}}, "key 1 has 2 rows"},
		{"missing", [][2]int64{{1, 10}, {3, 30}}, "key 2 has no row"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := upsertDiff(tc.rows, live)
			if (tc.want == "") != (d == "") || !strings.Contains(d, tc.want) {
				t.Errorf("diff %q, want %q", d, tc.want)
			}
		})
	}
}

// TestDemoUpsertFormat: --upsert with --format is refused, not ignored.
func TestDemoUpsertFormat(t *testing.T) {
	err := runDemo(t.Context(), []string{"--upsert", "--format", "variant", "--dir", filepath.Join(t.TempDir(), "d")}, nil, os.Stdout, os.Stderr)
	if err == nil || !strings.Contains(err.Error(), "no --format") {
		t.Errorf("err %v, want a usage error naming --format", err)
	}
}

// BenchmarkDemoUpsert lands the same changelog as `pqsink demo --upsert`
// (100,000 changes of 10,000 keys, 4 partitions; PQSINK_BENCH_CHANGES
// sets the count) into an upsert table and into an append table of the
// same rows, and reports each one's records/s from the sink's start to
// its last commit. The append table lands every value as a row and
// rejects the tombstones, which have no row; its rows/s counts the rows.
// It reports numbers, asserting only that every record was handled:
//
//	go test ./cmd/pqsink -run '^$' -bench DemoUpsert -benchtime 1x -count 3
func BenchmarkDemoUpsert(b *testing.B) {
	changes := 100_000
	if v, err := strconv.Atoi(os.Getenv("PQSINK_BENCH_CHANGES")); err == nil && v > 0 {
		changes = v
	}
	for _, mode := range []string{"upsert", "append"} {
		b.Run(mode, func(b *testing.B) {
			var secs, rows float64
			for range b.N {
				b.StopTimer()
				br, err := sinkbench.StartBroker(4, demoUpsertTopic, 0)
				if err != nil {
					b.Fatal(err)
				}
				gen := newDemoChangelog(1, 10_000)
				if err := produceDemoChangelog(b.Context(), br.ListenAddrs(), gen, changes); err != nil {
					b.Fatal(err)
				}
				dir := b.TempDir()
				schema := filepath.Join(dir, "row.schema")
				if err := os.WriteFile(schema, []byte(demoUpsertSchema), 0o644); err != nil {
					b.Fatal(err)
				}
				cfg, err := demoUpsertConfig(br.ListenAddrs(), schema, "file://"+filepath.Join(dir, "wh"), filepath.Join(dir, "catalog.db"), mode == "upsert")
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				st, err := runSinkUntil(b.Context(), cfg, int64(changes), mode == "append")
				secs += time.Since(start).Seconds()
				b.StopTimer()
				br.Close()
				if err != nil {
					b.Fatal(err)
				}
				if st.RecordsUploaded+st.Rejected+st.UpsertDeleted < int64(changes) || st.TablePendingRecords != 0 {
					b.Fatalf("%d rows uploaded, %d rejected, %d deleted, %d not in the table: want %d changes handled", st.RecordsUploaded, st.Rejected, st.UpsertDeleted, st.TablePendingRecords, changes)
				}
				rows += float64(st.RecordsUploaded)
			}
			b.ReportMetric(float64(changes*b.N)/secs, "records/s")
			b.ReportMetric(rows/secs, "rows/s")
		})
	}
}
