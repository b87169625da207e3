package table

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/apache/iceberg-go"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/linkedin/goavro/v2"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/internal/testutil/postgres"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/rowgrouptest"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// eventSchema is the payload of the test records plus the envelope.
func eventSchema(t *testing.T) *schema.Schema {
	t.Helper()
	str := schema.Logical{Kind: schema.String}
	s, err := schema.New("event",
		schema.Leaf("id", schema.Required, meta.TypeInt64, schema.Logical{}),
		schema.Leaf("name", schema.Optional, meta.TypeByteArray, str),
		schema.Group("tags", schema.Optional, schema.Logical{Kind: schema.List},
			schema.Group("list", schema.Repeated, schema.Logical{},
				schema.Leaf("element", schema.Required, meta.TypeByteArray, str))),
		rowgroup.EnvelopeNode())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type env struct {
	dir       string
	warehouse string
	cfg       *config.Config
}

func newEnv(t *testing.T, partitionBy ...config.PartitionField) *env {
	return newEnvOn(t, "sqlite", partitionBy...)
}

// sqlCatalogs are the databases the SQL catalog tests run on.
var sqlCatalogs = []string{"sqlite", "postgres"}

// newEnvOn makes a warehouse in a temporary folder and a SQL catalog on
// SQLite (a file beside it) or PostgreSQL (a server of the test's own).
func newEnvOn(t *testing.T, db string, partitionBy ...config.PartitionField) *env {
	dir := t.TempDir()
	wh := "file://" + filepath.Join(dir, "warehouse")
	uri := "sqlite://" + filepath.Join(dir, "state", "catalog.db") // a folder Open makes
	if db == "postgres" {
		uri = postgres.Start(t).CreateDatabase(t, "lake")
	}
	return &env{dir: dir, warehouse: wh, cfg: &config.Config{
		Store: config.Store{URL: wh},
		Table: &config.Table{
			Format:         "iceberg",
			Catalog:        config.Catalog{Type: "sql", URI: config.Secret(uri), Name: "pqsink"},
			Namespace:      "kafka",
			Name:           "{topic}",
			CommitInterval: 30 * time.Second,
			PartitionBy:    partitionBy,
			FormatVersion:  2,
		},
	}}
}

func (e *env) open(t *testing.T) *Catalog {
	t.Helper()
	c, err := Open(context.Background(), e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var day0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// writeFile writes the records first..last of topic[partition] with the
// handle's schema into the table's data folder, as the sink would, and
// returns the File to commit. Record o has id o, time day0 + dayOf(o)
// days + o seconds.
func writeFile(t *testing.T, h *Handle, loc, topic string, partition int32, first, last int64, dayOf func(int64) int) File {
	t.Helper()
	// Fields some schemas of TestAdoptEvolvesSchema have, left out by the
	// others.
	g, b := rowgrouptest.JSON(t, h.Schema(), rowgroup.IgnoreUnknownFields())
	for o := first; o <= last; o++ {
		rec := fmt.Sprintf(`{"id":%d,"name":"n%03d","tags":["a","b"],"extra":7,"score":1.5,"price":1.25,"geo":{"lat":1.5}}`, o, o)
		if o%5 == 4 {
			rec = fmt.Sprintf(`{"id":%d,"name":null,"extra":7}`, o)
		}
		ts := day0.AddDate(0, 0, dayOf(o)).Add(time.Duration(o) * time.Second)
		if err := b.Append([]byte(rec), &rowgroup.Envelope{Topic: topic, Partition: partition, Offset: o, Timestamp: ts, Key: []byte("k")}); err != nil {
			t.Fatal(err)
		}
	}
	return writeGroup(t, loc, g, archive.Range{Topic: topic, Partition: partition, First: first, Last: last, Records: last - first + 1})
}

// writeGroup writes g, the records of Kafka range r, as the sink names
// and writes a file in the table's data folder (loc/data), and returns
// the File to commit.
func writeGroup(t *testing.T, loc string, g *rowgroup.RowGroup, r archive.Range) File {
	t.Helper()
	path := strings.TrimPrefix(loc, "file://") + fmt.Sprintf("/data/%s+%d+%020d.parquet", r.Topic, r.Partition, r.First)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w, err := writer.New(out, g.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r.Footer(w.SetKeyValue)
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	md, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return File{Location: "file://" + path, Size: w.Offset(), Footer: md, PathID: "p"}
}

func sameDay(int64) int { return 0 }

// commitEach writes n files of ten records of events[0], file i holding
// offsets 10i to 10i+9 (writeFile, with dayOf), and commits each in a
// snapshot of its own, as a sink does; it returns the files.
func commitEach(t *testing.T, h *Handle, loc string, n int64, dayOf func(int64) int) []File {
	t.Helper()
	var files []File
	for i := range n {
		f := writeFile(t, h, loc, "events", 0, 10*i, 10*i+9, dayOf)
		files = append(files, f)
		if _, err := h.Commit(context.Background(), "g", []File{f}, State{{"g", "events", 0}: {Committed: 10*i + 10}}); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

func TestCommitAndReadBack(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, config.PartitionField{Transform: "day", Column: "_kafka.timestamp"})
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	// Every field carries the table's id.
	for _, n := range h.Schema().Leaves() {
		if !n.HasFieldID {
			t.Errorf("leaf %s has no field id", n.PathString())
		}
	}
	loc := c.Location("events")
	files := []File{
		writeFile(t, h, loc, "events", 0, 0, 9, sameDay),
		writeFile(t, h, loc, "events", 0, 10, 19, sameDay),
		writeFile(t, h, loc, "events", 1, 0, 4, func(int64) int { return 1 }),
	}
	state := State{
		{"g", "events", 0}: {Committed: 20, Paths: map[string]int64{}},
		{"g", "events", 1}: {Committed: 3, Paths: map[string]int64{"p": 4}},
	}
	res, err := h.Commit(ctx, "g", files, state)
	if err != nil {
		t.Fatal(err)
	}
	if res.Appended != 3 || res.Dropped != 0 || res.SnapshotID == 0 {
		t.Fatalf("commit = %+v, want 3 appended", res)
	}

	// A fresh process sees the files, the records and the state.
	c2 := e.open(t)
	h2, err := c2.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := h2.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := State{
		{"g", "events", 0}: {Committed: 20, Paths: map[string]int64{}},
		{"g", "events", 1}: {Committed: 3, Paths: map[string]int64{"p": 4}},
	}
	if !equalState(got, want) {
		t.Errorf("state = %v, want %v", got, want)
	}
	tbl, err := c2.cat.LoadTable(ctx, h2.ident)
	if err != nil {
		t.Fatal(err)
	}
	arrowTable, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer arrowTable.Release()
	if n := arrowTable.NumRows(); n != 25 {
		t.Errorf("iceberg-go scans %d rows, want 25", n)
	}
	var ids []int64
	for i := 0; i < int(arrowTable.NumCols()); i++ {
		if arrowTable.Column(i).Name() != "id" {
			continue
		}
		for _, ch := range arrowTable.Column(i).Data().Chunks() {
			ids = append(ids, ch.(*array.Int64).Int64Values()...)
		}
	}
	slices.Sort(ids)
	var wantIDs []int64
	for o := range int64(20) {
		wantIDs = append(wantIDs, o)
	}
	wantIDs = append(wantIDs, 0, 1, 2, 3, 4)
	slices.Sort(wantIDs)
	if !slices.Equal(ids, wantIDs) {
		t.Errorf("ids = %v, want %v", ids, wantIDs)
	}

	// The same files again: the state covers them, nothing is appended.
	res, err = h2.Commit(ctx, "g", files, state)
	if err != nil {
		t.Fatal(err)
	}
	if res.Appended != 0 || res.Dropped != 3 || res.SnapshotID != 0 {
		t.Errorf("second commit = %+v, want all 3 dropped", res)
	}
	if err := tbl.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Errorf("%d snapshots after a duplicate commit, want 1", n)
	}

	// A file that overlaps the table's records without being covered.
	bad := writeFile(t, h2, loc, "events", 1, 3, 8, func(int64) int { return 1 })
	if _, err := h2.Commit(ctx, "g", []File{bad}, nil); !errors.Is(err, ErrOverlap) {
		t.Errorf("overlapping file: err = %v, want ErrOverlap", err)
	}

	checkManifests(t, tbl.MetadataLocation(), files)
	checkDuckDB(t, files)
}

// checkManifests reads the manifest list and manifests with goavro, not
// iceberg-go, and checks each file's path, record count, partition and
// the bounds of _kafka.offset.
func checkManifests(t *testing.T, metadataLocation string, files []File) {
	t.Helper()
	var md struct {
		CurrentSnapshotID int64 `json:"current-snapshot-id"`
		Snapshots         []struct {
			SnapshotID   int64             `json:"snapshot-id"`
			ManifestList string            `json:"manifest-list"`
			Summary      map[string]string `json:"summary"`
		} `json:"snapshots"`
		Schemas []struct {
			Fields []struct {
				ID   int             `json:"id"`
				Name string          `json:"name"`
				Type json.RawMessage `json:"type"`
			} `json:"fields"`
		} `json:"schemas"`
	}
	readJSON(t, metadataLocation, &md)
	var manifestList string
	for _, s := range md.Snapshots {
		if s.SnapshotID == md.CurrentSnapshotID {
			manifestList = s.ManifestList
			if !strings.HasPrefix(s.Summary[SummaryState], archive.CommitInline) {
				t.Errorf("summary %s = %q", SummaryState, s.Summary[SummaryState])
			}
		}
	}
	// The id of _kafka.offset, from the schema's JSON.
	var offsetID int
	var envelope struct {
		Fields []struct {
			ID   int    `json:"id"`
			Name string `json:"name"`
		} `json:"fields"`
	}
	for _, f := range md.Schemas[len(md.Schemas)-1].Fields {
		if f.Name == "_kafka" {
			if err := json.Unmarshal(f.Type, &envelope); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, f := range envelope.Fields {
		if f.Name == "offset" {
			offsetID = f.ID
		}
	}
	if offsetID == 0 {
		t.Fatal("no _kafka.offset in the table's schema")
	}
	type entry struct {
		records        int64
		lower, upper   int64
		day            any
		size, nullsKey int64
	}
	got := map[string]entry{}
	for _, m := range readOCF(t, manifestList) {
		for _, e := range readOCF(t, m["manifest_path"].(string)) {
			df := e["data_file"].(map[string]any)
			var en entry
			en.records = df["record_count"].(int64)
			en.size = df["file_size_in_bytes"].(int64)
			for _, kv := range df["lower_bounds"].(map[string]any)["array"].([]any) {
				kv := kv.(map[string]any)
				if int(kv["key"].(int32)) == offsetID {
					en.lower = int64(binary.LittleEndian.Uint64(kv["value"].([]byte)))
				}
			}
			for _, kv := range df["upper_bounds"].(map[string]any)["array"].([]any) {
				kv := kv.(map[string]any)
				if int(kv["key"].(int32)) == offsetID {
					en.upper = int64(binary.LittleEndian.Uint64(kv["value"].([]byte)))
				}
			}
			en.day = df["partition"].(map[string]any)["_kafka_timestamp_day"]
			got[df["file_path"].(string)] = en
		}
	}
	if len(got) != len(files) {
		t.Errorf("manifests list %d files, want %d", len(got), len(files))
	}
	for _, f := range files {
		r, _ := archive.ReadRange(f.Footer.KeyValueMetadata)
		en, ok := got[f.Location]
		if !ok {
			t.Errorf("manifests lack %s", f.Location)
			continue
		}
		wantDay := day0
		if r.Partition == 1 {
			wantDay = wantDay.AddDate(0, 0, 1)
		}
		if day, _ := en.day.(map[string]any)["int.date"].(time.Time); !day.Equal(wantDay) {
			t.Errorf("%s: partition day %v, want %s", f.Location, en.day, wantDay.Format(time.DateOnly))
		}
		if en.records != r.Records || en.lower != r.First || en.upper != r.Last || en.size != f.Size {
			t.Errorf("%s: manifest says %+v, want %d records, offsets %d to %d, %d bytes", f.Location, en, r.Records, r.First, r.Last, f.Size)
		}
	}
}

func readJSON(t *testing.T, loc string, v any) {
	t.Helper()
	b, err := os.ReadFile(strings.TrimPrefix(loc, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

func readOCF(t *testing.T, loc string) []map[string]any {
	t.Helper()
	f, err := os.Open(strings.TrimPrefix(loc, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := goavro.NewOCFReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for r.Scan() {
		v, err := r.Read()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v.(map[string]any))
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkDuckDB reads the data files with DuckDB, filtering on a bounded
// column.
func checkDuckDB(t *testing.T, files []File) {
	db := duckdb.Start(t)
	var paths []string
	for _, f := range files {
		paths = append(paths, duckdb.Quote(strings.TrimPrefix(f.Location, "file://")))
	}
	r := db.Query(t, "SELECT count(*) AS n, min(_kafka.\"offset\") AS lo FROM read_parquet(["+strings.Join(paths, ",")+"]) WHERE _kafka.\"offset\" BETWEEN 5 AND 12 AND _kafka.partition = 0")
	if n := fmt.Sprint(r.Value(0, "n")); n != "8" {
		t.Errorf("DuckDB counts %s records of partition 0 at offsets 5 to 12, want 8", n)
	}
}

func equalState(a, b State) bool {
	if len(a) != len(b) {
		return false
	}
	for k, p := range a {
		if q, ok := b[k]; !ok || !p.equal(q) {
			return false
		}
	}
	return true
}

// TestConcurrentCommitters: two members, each with its own catalog
// connection, commit their own partitions to one table at the same time;
// every file and both states end up in the table.
func TestConcurrentCommitters(t *testing.T) {
	for _, db := range sqlCatalogs {
		t.Run(db, func(t *testing.T) { testConcurrentCommitters(t, db) })
	}
}

func testConcurrentCommitters(t *testing.T, db string) {
	ctx := context.Background()
	e := newEnvOn(t, db)
	setup := e.open(t)
	h0, err := setup.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	loc := setup.Location("events")
	const rounds = 4
	var wg sync.WaitGroup
	errs := make(chan error, 2*rounds)
	for p := range int32(2) {
		c := e.open(t)
		h, err := c.Table(ctx, "events", eventSchema(t))
		if err != nil {
			t.Fatal(err)
		}
		var files []File
		for r := range int64(rounds) {
			files = append(files, writeFile(t, h0, loc, "events", p, 10*r, 10*r+9, sameDay))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r, f := range files {
				st := State{{"g", "events", p}: {Committed: 10*int64(r) + 10}}
				if _, err := h.Commit(ctx, "g", []File{f}, st); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, err := h0.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := State{{"g", "events", 0}: {Committed: 10 * rounds}, {"g", "events", 1}: {Committed: 10 * rounds}}
	if !equalState(got, want) {
		t.Errorf("state = %v, want %v", got, want)
	}
	tbl, err := setup.cat.LoadTable(ctx, h0.ident)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var records int64
	for _, task := range tasks {
		records += task.File.Count()
	}
	if len(tasks) != 2*rounds || records != 2*rounds*10 {
		t.Errorf("table holds %d files, %d records; want %d, %d", len(tasks), records, 2*rounds, 2*rounds*10)
	}
}

// TestAdoptEvolvesSchema opens an existing table with schemas that differ
// from its own: what Iceberg allows without rewriting data (a new field, a
// narrower or wider type, an optional field where the table requires one)
// is accepted, evolving the table's schema where needed with new ids and
// without touching the ids or the state it had; anything else is refused
// naming the field, and leaves the table as it was.
func TestAdoptEvolvesSchema(t *testing.T) {
	ctx := context.Background()
	str := schema.Logical{Kind: schema.String}
	dec := func(p int32) schema.Logical { return schema.Logical{Kind: schema.Decimal, Precision: p, Scale: 2} }
	for _, tc := range []struct {
		name string
		// created is the table's first schema, then is the one the sink
		// opens it with; each holds these fields before the others of
		// eventSchema (its id first).
		created, then []*schema.Node
		want          string // the error; "" when accepted
		evolved       bool
		check         func(t *testing.T, is *iceberg.Schema)
	}{
		{name: "same"},
		{name: "narrower int", then: []*schema.Node{schema.Leaf("id", schema.Required, meta.TypeInt32, schema.Logical{})}},
		{name: "other type", then: []*schema.Node{schema.Leaf("id", schema.Required, meta.TypeByteArray, str)},
			want: "field id is long in the table, the records need string"},
		{name: "new field", then: []*schema.Node{schema.Leaf("id", schema.Required, meta.TypeInt64, schema.Logical{}), schema.Leaf("extra", schema.Optional, meta.TypeInt32, schema.Logical{})},
			evolved: true, check: func(t *testing.T, is *iceberg.Schema) {
				f, ok := is.FindFieldByName("extra")
				if !ok || f.Required || f.Type.String() != "int" || f.ID <= 9 {
					t.Errorf("extra = %+v (found %v), want an optional int with a new id", f, ok)
				}
			}},
		{name: "new required field", then: []*schema.Node{schema.Leaf("id", schema.Required, meta.TypeInt64, schema.Logical{}), schema.Leaf("extra", schema.Required, meta.TypeInt32, schema.Logical{})},
			evolved: true, check: func(t *testing.T, is *iceberg.Schema) {
				// Older files lack it: the table can only hold it optional.
				if f, ok := is.FindFieldByName("extra"); !ok || f.Required {
					t.Errorf("extra = %+v (found %v), want optional", f, ok)
				}
			}},
		{name: "new nested field", then: []*schema.Node{schema.Leaf("id", schema.Required, meta.TypeInt64, schema.Logical{}),
			schema.Group("geo", schema.Optional, schema.Logical{}, schema.Leaf("lat", schema.Optional, meta.TypeDouble, schema.Logical{}))},
			evolved: true, check: func(t *testing.T, is *iceberg.Schema) {
				if f, ok := is.FindFieldByName("geo.lat"); !ok || f.Type.String() != "double" {
					t.Errorf("geo.lat = %+v (found %v)", f, ok)
				}
			}},
		{name: "int to long", created: []*schema.Node{schema.Leaf("id", schema.Required, meta.TypeInt32, schema.Logical{})},
			evolved: true, check: func(t *testing.T, is *iceberg.Schema) {
				if f, _ := is.FindFieldByName("id"); f.Type.String() != "long" || f.ID != 1 {
					t.Errorf("id = %+v, want long with id 1", f)
				}
			}},
		{name: "float to double", created: []*schema.Node{schema.Leaf("id", schema.Required, meta.TypeInt64, schema.Logical{}), schema.Leaf("score", schema.Optional, meta.TypeFloat, schema.Logical{})},
			then:    []*schema.Node{schema.Leaf("id", schema.Required, meta.TypeInt64, schema.Logical{}), schema.Leaf("score", schema.Optional, meta.TypeDouble, schema.Logical{})},
			evolved: true, check: func(t *testing.T, is *iceberg.Schema) {
				if f, _ := is.FindFieldByName("score"); f.Type.String() != "double" {
					t.Errorf("score = %+v, want double", f)
				}
			}},
		{name: "wider decimal", created: []*schema.Node{schema.Leaf("id", schema.Required, meta.TypeInt64, schema.Logical{}), schema.Leaf("price", schema.Optional, meta.TypeInt32, dec(9))},
			then:    []*schema.Node{schema.Leaf("id", schema.Required, meta.TypeInt64, schema.Logical{}), schema.Leaf("price", schema.Optional, meta.TypeInt64, dec(18))},
			evolved: true, check: func(t *testing.T, is *iceberg.Schema) {
				if f, _ := is.FindFieldByName("price"); f.Type.String() != "decimal(18, 2)" {
					t.Errorf("price = %+v, want decimal(18, 2)", f)
				}
			}},
		{name: "other scale", created: []*schema.Node{schema.Leaf("id", schema.Required, meta.TypeInt64, schema.Logical{}), schema.Leaf("price", schema.Optional, meta.TypeInt32, dec(9))},
			then: []*schema.Node{schema.Leaf("id", schema.Required, meta.TypeInt64, schema.Logical{}), schema.Leaf("price", schema.Optional, meta.TypeInt64, schema.Logical{Kind: schema.Decimal, Precision: 18, Scale: 3})},
			want: "field price is decimal(9, 2) in the table, the records need decimal(18, 3)"},
		{name: "optional into required", then: []*schema.Node{schema.Leaf("id", schema.Optional, meta.TypeInt64, schema.Logical{})},
			evolved: true, check: func(t *testing.T, is *iceberg.Schema) {
				if f, _ := is.FindFieldByName("id"); f.Required {
					t.Errorf("id is still required")
				}
			}},
		{name: "required field missing", then: []*schema.Node{}, want: "field id is required by the table, the records lack it"},
		{name: "new field and another type", then: []*schema.Node{schema.Leaf("id", schema.Required, meta.TypeByteArray, str), schema.Leaf("extra", schema.Optional, meta.TypeInt32, schema.Logical{})},
			want: "field id is long in the table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			c := e.open(t)
			with := func(fields []*schema.Node) *schema.Schema {
				s := eventSchema(t)
				if fields == nil {
					return s
				}
				s, err := schema.New("event", append(fields[:len(fields):len(fields)], s.Fields()[1:]...)...)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			h, err := c.Table(ctx, "events", with(tc.created))
			if err != nil {
				t.Fatal(err)
			}
			f := writeFile(t, h, e.warehouse+"/kafka/events", "events", 0, 0, 9, sameDay)
			state := State{{"g", "events", 0}: {Committed: 10}}
			if _, err := h.Commit(ctx, "g", []File{f}, state); err != nil {
				t.Fatal(err)
			}
			before, err := c.cat.LoadTable(ctx, h.ident)
			if err != nil {
				t.Fatal(err)
			}

			h2, err := c.Table(ctx, "events", with(tc.then))
			after, lerr := c.cat.LoadTable(ctx, h.ident)
			if lerr != nil {
				t.Fatal(lerr)
			}
			if tc.want != "" {
				if err == nil || !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %v, want %q", err, tc.want)
				}
				if !after.Schema().Equals(before.Schema()) {
					t.Errorf("a refused schema changed the table's: %v", after.Schema())
				}
				return
			}
			if err != nil {
				t.Fatalf("error %v", err)
			}
			if evolved := !after.Schema().Equals(before.Schema()); evolved != tc.evolved {
				t.Errorf("evolved = %v, want %v; table schema %v", evolved, tc.evolved, after.Schema())
			}
			// The ids the table had stay; every field the handle writes has
			// the table's id.
			for _, old := range before.Schema().Fields() {
				if nf, ok := after.Schema().FindFieldByID(old.ID); !ok || nf.Name != old.Name {
					t.Errorf("field %s (id %d) became %+v", old.Name, old.ID, nf)
				}
			}
			for _, n := range h2.Schema().Leaves() {
				if !n.HasFieldID {
					t.Errorf("%s has no field id", n.PathString())
					continue
				}
				if f, ok := after.Schema().FindFieldByID(int(n.FieldID)); !ok || f.Name != n.Name {
					t.Errorf("%s has id %d, which the table gives to %+v", n.PathString(), n.FieldID, f)
				}
			}
			if tc.check != nil {
				tc.check(t, after.Schema())
			}
			// The evolution made no snapshot: the state stands.
			if after.CurrentSnapshot().SnapshotID != before.CurrentSnapshot().SnapshotID {
				t.Errorf("the schema update made a snapshot")
			}
			got, err := h2.State(ctx)
			if err != nil || !equalState(got, state) {
				t.Errorf("state after the update = %v (%v), want %v", got, err, state)
			}
			// A file of the new schema is committed after the first, and
			// iceberg-go reads both.
			f2 := writeFile(t, h2, e.warehouse+"/kafka/events", "events", 0, 10, 19, sameDay)
			if _, err := h2.Commit(ctx, "g", []File{f2}, State{{"g", "events", 0}: {Committed: 20}}); err != nil {
				t.Fatal(err)
			}
			tbl, err := c.cat.LoadTable(ctx, h.ident)
			if err != nil {
				t.Fatal(err)
			}
			at, err := tbl.Scan().ToArrowTable(ctx)
			if err != nil {
				t.Fatalf("scanning: %v", err)
			}
			defer at.Release()
			if at.NumRows() != 20 {
				t.Errorf("the table reads %d rows, want 20", at.NumRows())
			}
		})
	}
}

func TestLargeStateGoesToAnObject(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	st := State{}
	for p := range int32(200) {
		st[Partition{"g", "events", p}] = Progress{Committed: int64(p), Paths: map[string]int64{"2026/11/01": int64(p) + 5}}
	}
	f := writeFile(t, h, c.Location("events"), "events", 0, 0, 9, sameDay)
	st[Partition{"g", "events", 0}] = Progress{Committed: 10}
	if _, err := h.Commit(ctx, "g", []File{f}, st); err != nil {
		t.Fatal(err)
	}
	got, err := h.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !equalState(got, st) {
		t.Errorf("state read back differs")
	}
	matches, _ := filepath.Glob(filepath.Join(e.dir, "warehouse", "_pqsink", "state", "tables", "kafka", "events", "*.json"))
	if len(matches) != 1 {
		t.Errorf("state objects: %v, want one", matches)
	}
}

func TestProgressMerge(t *testing.T) {
	for _, tc := range []struct {
		name    string
		a, b    Progress
		want    Progress
		covered map[string]int64
	}{
		{"later committed wins", Progress{Committed: 5, Paths: map[string]int64{"x": 9}}, Progress{Committed: 12}, Progress{Committed: 12, Paths: map[string]int64{}}, map[string]int64{"x": 11, "y": 11}},
		{"paths beyond committed kept", Progress{Committed: 5, Paths: map[string]int64{"x": 9}}, Progress{Committed: 6, Paths: map[string]int64{"x": 7, "y": 20}}, Progress{Committed: 6, Paths: map[string]int64{"x": 9, "y": 20}}, map[string]int64{"x": 9, "y": 20, "z": 5}},
		{"empty", Progress{}, Progress{}, Progress{Paths: map[string]int64{}}, map[string]int64{"x": -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.a.Merge(tc.b)
			if !got.equal(tc.want) {
				t.Errorf("merge = %+v, want %+v", got, tc.want)
			}
			if back := tc.b.Merge(tc.a); !back.equal(got) {
				t.Errorf("merge is not symmetric: %+v", back)
			}
			for id, c := range tc.covered {
				if g := got.covered(id); g != c {
					t.Errorf("covered(%s) = %d, want %d", id, g, c)
				}
			}
		})
	}
}

// racingMembers opens the table twice, as two members, and writes a file
// of partition 0 (mine) and one of partition 1 (theirs). The first time
// h1 is about to swap, h2 commits theirs with partition 1's state: h1's
// swap then fails on a conflict.
func racingMembers(t *testing.T, e *env) (c2 *Catalog, h1, h2 *Handle, mine, theirs File) {
	t.Helper()
	ctx := context.Background()
	c1 := e.open(t)
	c2 = e.open(t)
	h1, err := c1.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	if h2, err = c2.Table(ctx, "events", eventSchema(t)); err != nil {
		t.Fatal(err)
	}
	loc := c1.Location("events")
	mine = writeFile(t, h1, loc, "events", 0, 0, 9, sameDay)
	theirs = writeFile(t, h1, loc, "events", 1, 0, 9, sameDay)
	var cut int
	h1.beforeSwap = func() {
		if cut++; cut == 1 {
			if _, err := h2.Commit(ctx, "g", []File{theirs}, State{{"g", "events", 1}: {Committed: 10}}); err != nil {
				t.Error(err)
			}
		}
	}
	return c2, h1, h2, mine, theirs
}

// TestConflictMerges: another member commits between this member's read of
// the state and its swap. The swap fails, the commit reloads and retries,
// and the table ends with both members' files and states, and a file of
// the other member that this one also holds (an adopted object) once.
func TestConflictMerges(t *testing.T) {
	for _, db := range sqlCatalogs {
		t.Run(db, func(t *testing.T) { testConflictMerges(t, db) })
	}
}

func testConflictMerges(t *testing.T, db string) {
	ctx := context.Background()
	e := newEnvOn(t, db)
	c2, h1, h2, mine, theirs := racingMembers(t, e)
	// h1 commits its own file and, as an owner that adopted it, theirs.
	res, err := h1.Commit(ctx, "g", []File{mine, theirs}, State{{"g", "events", 0}: {Committed: 10}, {"g", "events", 1}: {Committed: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || res.Appended != 1 || res.Dropped != 1 {
		t.Errorf("commit = %+v, want 2 attempts, 1 appended, 1 dropped", res)
	}
	got, err := h2.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (State{{"g", "events", 0}: {Committed: 10}, {"g", "events", 1}: {Committed: 10}}); !equalState(got, want) {
		t.Errorf("state = %v, want %v", got, want)
	}
	tbl, err := c2.cat.LoadTable(ctx, h2.ident)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, task := range tasks {
		paths = append(paths, task.File.FilePath())
	}
	slices.Sort(paths)
	if want := []string{mine.Location, theirs.Location}; !slices.Equal(paths, want) {
		t.Errorf("table files %q, want %q", paths, want)
	}
	checkJDBCRow(t, e, tbl.MetadataLocation())
}

// checkJDBCRow reads the catalog's database with plain SQL, as Java's
// JdbcCatalog and PyIceberg's SqlCatalog do: the row of kafka.events in
// iceberg_tables points at the table's current metadata.
func checkJDBCRow(t *testing.T, e *env, metadataLocation string) {
	t.Helper()
	uri := e.cfg.Table.Catalog.URI.Value()
	var db *sql.DB
	var err error
	if strings.HasPrefix(uri, "sqlite://") {
		db, err = sql.Open("sqlite", "file:"+strings.TrimPrefix(uri, "sqlite://")+"?mode=ro")
	} else {
		db = sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(uri)))
	}
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var loc string
	err = db.QueryRow("SELECT metadata_location FROM iceberg_tables WHERE catalog_name = 'pqsink' AND table_namespace = 'kafka' AND table_name = 'events'").Scan(&loc)
	if err != nil {
		t.Fatalf("iceberg_tables: %v", err)
	}
	if loc != metadataLocation {
		t.Errorf("iceberg_tables says %s, the table %s", loc, metadataLocation)
	}
}

// TestLibraryRetryRefused: a table on which iceberg-go would replay a
// conflicting commit with a stale state is refused, at adoption and at
// commit.
func TestLibraryRetryRefused(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := c.cat.LoadTable(ctx, h.ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(map[string]string{"commit.retry.num-retries": "4"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	const want = `table property commit.retry.num-retries is "4"`
	if _, err := c.Table(ctx, "events", eventSchema(t)); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("adopting: error %v, want %q", err, want)
	}
	f := writeFile(t, h, c.Location("events"), "events", 0, 0, 9, sameDay)
	if _, err := h.Commit(ctx, "g", []File{f}, nil); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("committing: error %v, want %q", err, want)
	}
}

// TestPartitionBy: a handle reports its table's spec as partition_by
// writes it, the spec the table was created with, and an adopted table's
// own spec whatever the configuration says.
func TestPartitionBy(t *testing.T) {
	ctx := context.Background()
	by := []config.PartitionField{
		{Transform: "day", Column: "_kafka.timestamp"},
		{Transform: "bucket", Param: 8, Column: "id"},
		{Transform: "truncate", Param: 3, Column: "name"},
		{Transform: "identity", Column: "_kafka.partition"},
	}
	e := newEnv(t, by...)
	h, err := e.open(t).Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"day(_kafka.timestamp)", "bucket[8](id)", "truncate[3](name)", "identity(_kafka.partition)"}
	for i, p := range by {
		if p.String() != want[i] {
			t.Fatalf("config writes %s as %q, want %q", p, p.String(), want[i])
		}
	}
	if got := h.PartitionBy(); !slices.Equal(got, want) {
		t.Errorf("created: PartitionBy = %q, want %q", got, want)
	}
	e.cfg.Table.PartitionBy = by[:1]
	h2, err := e.open(t).Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := h2.PartitionBy(); !slices.Equal(got, want) {
		t.Errorf("adopted: PartitionBy = %q, want the table's %q", got, want)
	}
}

// TestConcurrentOpen: members starting at once open a fresh PostgreSQL
// catalog together, each creating its tables when absent; every one of
// them opens it.
func TestConcurrentOpen(t *testing.T) {
	srv := postgres.Start(t)
	for round := range 4 {
		e := newEnv(t)
		e.cfg.Table.Catalog.URI = config.Secret(srv.CreateDatabase(t, fmt.Sprintf("lake%d", round)))
		errs := make(chan error, 4)
		for range cap(errs) {
			go func() {
				c, err := Open(context.Background(), e.cfg)
				if err == nil {
					c.Close()
				}
				errs <- err
			}()
		}
		for range cap(errs) {
			if err := <-errs; err != nil {
				t.Errorf("round %d: %v", round, err)
			}
		}
	}
}

// TestPostgresURISecrets: a postgres:// catalog URI the driver would
// panic on, or whose query would reach the server as a setting carrying a
// secret, is an error naming table.catalog.uri and never the password; a
// server that logs every statement (log_statement=all) logs none of the
// secrets of the URIs tried, while it does log the setting a harmless
// parameter becomes (so the log would show a leak).
func TestPostgresURISecrets(t *testing.T) {
	const secret = "pw-S3CRET-in-uri"
	srv := postgres.Start(t, "log_statement=all")
	lake := srv.CreateDatabase(t, "lake")
	base := strings.TrimSuffix(lake, "?sslmode=disable")
	withPassword := strings.Replace(base, "://"+postgres.User+"@", "://"+postgres.User+":"+secret+"@", 1)
	for _, tc := range []struct{ name, uri, want string }{
		{"password parameter", base + "?sslmode=disable&password=" + secret, `query parameter "password"`},
		{"sslpassword parameter", base + "?sslmode=disable&sslpassword=" + secret, `query parameter "sslpassword"`},
		{"bogus sslmode", withPassword + "?sslmode=bogus", "query parameter sslmode"},
		{"missing sslrootcert", withPassword + "?sslmode=verify-full&sslrootcert=" + filepath.Join(t.TempDir(), "none.pem"), "query parameter sslrootcert"},
		{"connect_timeout", withPassword + "?sslmode=disable&connect_timeout=abc", "query parameter connect_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.cfg.Table.Catalog.URI = config.Secret(tc.uri)
			c, err := Open(context.Background(), e.cfg)
			if err == nil {
				c.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), "table.catalog.uri") || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), secret) {
				t.Errorf("error %q, want one naming table.catalog.uri and %q, without the secret", err, tc.want)
			}
		})
	}
	// A password where it belongs, and a parameter the driver sends as a
	// setting: the catalog opens, and the server logs the setting but not
	// the password.
	e := newEnv(t)
	e.cfg.Table.Catalog.URI = config.Secret(withPassword + "?sslmode=disable&search_path=public")
	c, err := Open(context.Background(), e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	log := srv.Log(t)
	if !strings.Contains(log, "SET search_path") || !strings.Contains(log, "iceberg_tables") {
		t.Fatalf("the server's log lacks the statements it was to log:\n%s", log)
	}
	if strings.Contains(log, secret) {
		t.Errorf("the server's log holds the password:\n%s", log)
	}
}

// TestOpenReadOnly: a read-only open creates nothing: a SQLite file or a
// PostgreSQL database without the catalog's tables opens as an absent
// catalog (a table checks as one to create) and is left as it was; once
// Open made the catalog, a read-only open finds it.
func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	for _, db := range sqlCatalogs {
		t.Run(db, func(t *testing.T) {
			e := newEnvOn(t, db)
			c, err := OpenReadOnly(ctx, e.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if c.Absent() == "" {
				t.Error("a catalog that does not exist: Absent is empty")
			}
			if _, err := c.Check(ctx, "t", eventSchema(t), nil); err != nil {
				t.Errorf("check of a table in an absent catalog: %v", err)
			}
			c.Close()
			if db == "sqlite" {
				if _, err := os.Stat(filepath.Join(e.dir, "state")); !os.IsNotExist(err) {
					t.Errorf("the read-only open made the catalog's folder (%v)", err)
				}
			} else {
				pg := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(e.cfg.Table.Catalog.URI.Value())))
				exists, err := sqlTablesExist(ctx, pg, sqlcat.Postgres)
				pg.Close()
				if err != nil || exists {
					t.Errorf("after the read-only open, the catalog's tables exist: %v (%v)", exists, err)
				}
			}
			// Open creates it; a read-only open now finds it.
			e.open(t)
			c, err = OpenReadOnly(ctx, e.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if a := c.Absent(); a != "" {
				t.Errorf("an existing catalog: Absent says %q", a)
			}
			if _, err := c.Check(ctx, "t", eventSchema(t), nil); err != nil {
				t.Errorf("check of a missing table: %v", err)
			}
		})
	}
}
