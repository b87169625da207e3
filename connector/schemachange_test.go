package connector

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/objstore"
)

// TestSchemaChangeCommitStopsAtRecord: a record written with another schema
// than its path's open file finishes that file, and the commit after the
// upload must stop at the record, which is in no file yet. Committing one
// past it lost the record to a crash before its own file was uploaded, and
// with a table made that file overlap the committed state, which dropped
// the record when the partition read again from the table.
func TestSchemaChangeCommitStopsAtRecord(t *testing.T) {
	schemas := map[string]string{
		"1": `{"type":"record","name":"e","fields":[{"name":"n","type":"long"}]}`,
		"2": `{"type":"record","name":"e","fields":[{"name":"n","type":"long"},{"name":"c","type":["null","string"],"default":null}]}`,
	}
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		text, ok := schemas[strings.TrimPrefix(req.URL.Path, "/schemas/ids/")]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]any{"error_code": 40403, "message": "Schema not found"})
			return
		}
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		json.NewEncoder(w).Encode(map[string]any{"schema": text})
	}))
	defer reg.Close()

	dir := t.TempDir()
	text := fmt.Sprintf("kafka: {brokers: [127.0.0.1:1], group: g, topics: [t]}\nstore: {url: \"file://%s\"}\nformat: {type: avro, registry: {url: %q}}\npath: \"{partition}-{first_offset}.parquet\"\nrotate: {records: 1000, interval: 1h, bytes: 0}\n", dir, reg.URL)
	cfg, err := config.Parse([]byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var c commitLog
	p := newPartition(s, "t", 0, 0, skipSet{}, c.commit)

	// Records 0-4 with schema 1, 5-9 with schema 2, 10-14 with schema 1.
	const n = 15
	for off := int64(0); off < n; off++ {
		id := uint32(1 + off/5%2)
		v := schemaregistry.AppendWire(nil, id)
		v = binary.AppendVarint(v, off)
		if id == 2 {
			v = append(v, 0) // c: the union's null branch
		}
		r := record{offset: off, value: v}
		if err := p.handle(ctx, &r); err != nil {
			t.Fatalf("offset %d: %v", off, err)
		}
	}
	if fmt.Sprint(c.offsets) != "[5 10]" {
		t.Errorf("commits %v, want [5 10]: each at the first record of the schema that finished the file before it", c.offsets)
	}
	if err := p.shutdown(ctx, true); err != nil {
		t.Fatal(err)
	}
	store, err := objstore.Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	offs, _ := landedOffsets(t, store)
	checkOnce(t, offs, n)
}
