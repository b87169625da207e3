package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	itable "github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pqsink/pqsink/cmd/pqsink/internal/sinkbench"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector"
)

// The upsert demo's topic and the schema of its rows: id is the key.
const (
	demoUpsertTopic  = "customers"
	demoUpsertSchema = `message customer {
  required int64 id;
  required binary name (STRING);
  required int64 version;
  required double balance;
}
`
)

// demoChangelog makes the changes of a keyed table as a compacted topic
// carries them: a key's new row as a JSON value (an insert of a key with
// no row, an update of a live one), or a tombstone (a nil value) that
// deletes a live key. It keeps the fold of what it made: the version of
// each live key's row, which is the number of the change that wrote it.
type demoChangelog struct {
	rng  *rand.Rand
	keys int
	seq  int64
	// live is the fold: key → version of its row.
	live                      map[int64]int64
	inserts, updates, deletes int64
}

func newDemoChangelog(seed uint64, keys int) *demoChangelog {
	return &demoChangelog{rng: rand.New(rand.NewPCG(seed, 0x0c4a)), keys: max(keys, 1), live: map[int64]int64{}}
}

// next returns the next change's Kafka key and value (nil: a tombstone).
// About one change of a live key in six deletes it.
func (c *demoChangelog) next() (key, value []byte) {
	c.seq++
	id := int64(c.rng.IntN(c.keys))
	key = []byte(`{"id":` + strconv.FormatInt(id, 10) + `}`)
	if _, ok := c.live[id]; ok {
		if c.rng.IntN(6) == 0 {
			delete(c.live, id)
			c.deletes++
			return key, nil
		}
		c.updates++
	} else {
		c.inserts++
	}
	c.live[id] = c.seq
	value, err := json.Marshal(map[string]any{
		"id": id, "name": "customer-" + strconv.FormatInt(id, 10), "version": c.seq,
		"balance": float64(c.rng.IntN(1_000_000)) / 100,
	})
	if err != nil {
		panic(err) // a map of strings and numbers always marshals
	}
	return key, value
}

// upsertSummary is what `pqsink demo --upsert` reports.
type upsertSummary struct {
	Records, Inserts, Updates, Deletes int64
	LiveKeys                           int
	TableRows                          int
	Replaced, Deleted, CommitDeleted   int64
	Seconds                            float64
}

func (s upsertSummary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "records        %d (%d inserts, %d updates, %d tombstones)\n", s.Records, s.Inserts, s.Updates, s.Deletes)
	fmt.Fprintf(&b, "keys live      %d\n", s.LiveKeys)
	fmt.Fprintf(&b, "rows in table  %d\n", s.TableRows)
	fmt.Fprintf(&b, "rows replaced  %d\n", s.Replaced)
	fmt.Fprintf(&b, "rows deleted   %d\n", s.Deleted)
	fmt.Fprintf(&b, "rows marked    %d (deleted by position in the table's commits: the replaced and the deleted)\n", s.CommitDeleted)
	fmt.Fprintf(&b, "sink time      %.1fs (%.0f records/s)\n", s.Seconds, float64(s.Records)/s.Seconds)
	return b.String()
}

// runDemoUpsert produces records changes of keys keys into a topic of an
// in-process broker, lands them with the sink into the upsert table
// kafka.customers (key id) under dir, reads the table back with
// iceberg-go's scan (which applies the deletes) and prints a summary. It
// fails when the table is not the fold of the changelog: one row per
// live key, with its last value.
func runDemoUpsert(ctx context.Context, stdout, stderr io.Writer, dir string, records, keys, partitions int) error {
	if records <= 0 || keys <= 0 || partitions <= 0 {
		return usagef("--records, --keys and --partitions must be positive")
	}
	fmt.Fprintf(stderr, "pqsink demo: producing %d changes of %d keys into an in-process Kafka, then upserting them into an Iceberg table in %s\n", records, keys, dir)
	b, err := sinkbench.StartBroker(partitions, demoUpsertTopic, 0)
	if err != nil {
		return err
	}
	defer b.Close()
	gen := newDemoChangelog(1, keys)
	if err := produceDemoChangelog(ctx, b.ListenAddrs(), gen, records); err != nil {
		return err
	}
	schema := filepath.Join(dir, demoUpsertTopic+".schema")
	if err := os.WriteFile(schema, []byte(demoUpsertSchema), 0o644); err != nil {
		return err
	}
	warehouse := "file://" + filepath.Join(dir, demoWarehouse)
	catalog := filepath.Join(dir, demoCatalog)
	cfg, err := demoUpsertConfig(b.ListenAddrs(), schema, warehouse, catalog, true)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "pqsink: %d changes loaded; the sink is upserting them\n", records)
	start := time.Now()
	st, err := runSinkUntil(ctx, cfg, int64(records), false)
	if err != nil {
		if ctx.Err() != nil {
			return demoInterrupted(dir)
		}
		return err
	}
	sum := upsertSummary{
		Records: int64(records), Inserts: gen.inserts, Updates: gen.updates, Deletes: gen.deletes,
		LiveKeys: len(gen.live), Replaced: st.UpsertReplaced, Deleted: st.UpsertDeleted,
		CommitDeleted: st.TableRowsDeleted, Seconds: time.Since(start).Seconds(),
	}
	if st.Rejected != 0 || st.TablePendingRecords != 0 || st.TableCommitErrors != 0 {
		return fmt.Errorf("the sink rejected %d records, and %d records are not in the table (%d table commits failed)", st.Rejected, st.TablePendingRecords, st.TableCommitErrors)
	}
	rows, meta, err := scanDemoUpsert(ctx, catalog, warehouse)
	if err != nil {
		return err
	}
	sum.TableRows = len(rows)
	fmt.Fprintf(stdout, "\n%s", sum)
	fmt.Fprintf(stdout, "table %s.%s (Iceberg, upsert on id): metadata %s\n", demoNamespace, demoUpsertTopic, strings.TrimPrefix(meta, "file://"))
	if d := upsertDiff(rows, gen.live); d != "" {
		return fmt.Errorf("the table (%d rows) is not the fold of the changelog (%d live keys):\n%s", len(rows), len(gen.live), d)
	}
	fmt.Fprintf(stdout, "ok: the table holds one row per live key, each its key's last value\n")
	fmt.Fprintf(stdout, "\nquery it with DuckDB's iceberg extension (INSTALL iceberg once; it applies the deletes):\n")
	fmt.Fprintf(stdout, "  duckdb -c \"LOAD iceberg; SELECT count(*) FROM iceberg_scan('%s')\"\n", strings.TrimPrefix(meta, "file://"))
	return nil
}

// demoUpsertConfig is the sink's configuration of the upsert demo: the
// topic demoUpsertTopic on brokers, JSON rows of the schema file schema,
// into the table kafka.customers of the SQLite catalog file catalog over
// warehouse; an upsert table keyed on id, or with upsert false an append
// table of the same rows that skips the tombstones.
func demoUpsertConfig(brokers []string, schema, warehouse, catalog string, upsert bool) (*config.Config, error) {
	// An append table has no row for a tombstone: it skips them (and
	// counts them as rejected) rather than stopping the partition.
	mode := "  mode: upsert\n  key: [id]\n"
	if !upsert {
		mode = "errors: skip\n"
	}
	return config.Parse([]byte(fmt.Sprintf(`kafka:
  brokers: [%s]
  group: pqsink-demo-upsert
  topics: [%s]
  start: earliest
store:
  url: %q
format:
  type: json
  schema_file: %q
envelope: true
table:
  format: iceberg
  catalog: {type: sql, uri: %q}
  namespace: %s
  commit_interval: 10s
%s`, strings.Join(brokers, ", "), demoUpsertTopic, warehouse, schema, "sqlite://"+catalog, demoNamespace, mode)), os.LookupEnv)
}

// produceDemoChangelog writes n changes of gen to topic demoUpsertTopic,
// each key to one partition (the producer hashes the key), in order.
func produceDemoChangelog(ctx context.Context, brokers []string, gen *demoChangelog, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(demoUpsertTopic),
		kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return fmt.Errorf("producing: %w", err)
	}
	defer cl.Close()
	var first error
	failed := make(chan error, 1)
	for range n {
		key, value := gen.next()
		cl.Produce(ctx, &kgo.Record{Key: key, Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case failed <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("producing: %w", err)
	}
	select {
	case first = <-failed:
		return fmt.Errorf("producing: %w", first)
	default:
	}
	return nil
}

// runSinkUntil runs the sink on cfg until it has consumed n records, then
// shuts it down (which lands the open files and commits them to the
// table) and returns its counts. Unless rejects is true, a record the sink
// rejects is an error at once: with errors: fail its partition stops, and
// the sink would never consume the rest.
func runSinkUntil(ctx context.Context, cfg *config.Config, n int64, rejects bool) (connector.Snapshot, error) {
	sink, err := connector.New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return connector.Snapshot{}, err
	}
	defer sink.Close()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- sink.Run(runCtx) }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		st := sink.Stats().Snapshot()
		if st.Consumed >= n {
			break
		}
		if st.Rejected > 0 && !rejects {
			return st, fmt.Errorf("the sink rejected %d records", st.Rejected)
		}
		select {
		case err := <-done:
			if err == nil {
				err = errors.New("the sink stopped before consuming every record")
			}
			return connector.Snapshot{}, err
		case <-ctx.Done():
			return connector.Snapshot{}, ctx.Err()
		case <-tick.C:
		}
	}
	stop()
	if err := <-done; err != nil {
		return connector.Snapshot{}, err
	}
	return sink.Stats().Snapshot(), nil
}

// scanDemoUpsert reads the demo's upsert table with iceberg-go's scan, in
// a catalog connection of its own: key → version of each row, in a slice
// so that a key with two rows shows. It returns the table's metadata file
// too.
func scanDemoUpsert(ctx context.Context, catalog, warehouse string) ([][2]int64, string, error) {
	db, err := sql.Open("sqlite", "file:"+catalog)
	if err != nil {
		return nil, "", err
	}
	defer db.Close()
	cat, err := sqlcat.NewCatalog("pqsink", db, sqlcat.SQLite, iceberg.Properties{"warehouse": warehouse})
	if err != nil {
		return nil, "", fmt.Errorf("opening the catalog %s: %w", catalog, err)
	}
	tbl, err := cat.LoadTable(ctx, itable.Identifier{demoNamespace, demoUpsertTopic})
	if err != nil {
		return nil, "", fmt.Errorf("loading the table %s.%s: %w", demoNamespace, demoUpsertTopic, err)
	}
	at, err := tbl.Scan(itable.WithSelectedFields("id", "version")).ToArrowTable(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("scanning the table: %w", err)
	}
	defer at.Release()
	col := func(name string) (*arrow.Column, error) {
		for i := range int(at.NumCols()) {
			if at.Column(i).Name() == name {
				return at.Column(i), nil
			}
		}
		return nil, fmt.Errorf("the table has no column %s: %v", name, at.Schema())
	}
	ids, err := col("id")
	if err != nil {
		return nil, "", err
	}
	versions, err := col("version")
	if err != nil {
		return nil, "", err
	}
	var rows [][2]int64
	for ch := range ids.Data().Chunks() {
		ic, ok1 := ids.Data().Chunk(ch).(*array.Int64)
		vc, ok2 := versions.Data().Chunk(ch).(*array.Int64)
		if !ok1 || !ok2 {
			return nil, "", fmt.Errorf("the table's id and version are %s and %s, want int64", ids.DataType(), versions.DataType())
		}
		for i := range ic.Len() {
			rows = append(rows, [2]int64{ic.Value(i), vc.Value(i)})
		}
	}
	return rows, tbl.MetadataLocation(), nil
}

// upsertDiff compares the table's rows (key, version) with the fold:
// "" when they are the same, else the first differences.
func upsertDiff(rows [][2]int64, live map[int64]int64) string {
	var problems []string
	seen := map[int64]int{}
	for _, r := range rows {
		seen[r[0]]++
		want, ok := live[r[0]]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("key %d has a row (version %d) but is deleted", r[0], r[1]))
		case r[1] != want:
			problems = append(problems, fmt.Sprintf("key %d has version %d, want %d", r[0], r[1], want))
		}
	}
	for id, n := range seen {
		if n > 1 {
			problems = append(problems, fmt.Sprintf("key %d has %d rows", id, n))
		}
	}
	for id := range live {
		if seen[id] == 0 {
			problems = append(problems, fmt.Sprintf("key %d has no row", id))
		}
	}
	sort.Strings(problems)
	if len(problems) > 10 {
		problems = append(problems[:10], fmt.Sprintf("and %d more", len(problems)-10))
	}
	return strings.Join(problems, "\n")
}
