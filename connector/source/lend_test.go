package source

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/avrorow"
	"github.com/pqsink/pqsink/schema/avro"
	"github.com/pqsink/pqsink/writer"
)

// writeAvroTableFile writes, under dir/key, the records native(i) of s for
// offsets i in [first, first+n) of partition 0 of topic avro, as the sink
// lands Avro: with its footer (Kafka range and schema) when own, or
// without any, as another engine's copy-on-write rewrite leaves it. It
// returns the file's bytes and the Avro bodies.
func writeAvroTableFile(t *testing.T, dir, key string, s *avro.Schema, first, n int, native func(int) map[string]any, own bool) ([]byte, [][]byte) {
	t.Helper()
	ps, err := s.Parquet(rowgroup.EnvelopeNode())
	if err != nil {
		t.Fatal(err)
	}
	g := rowgroup.New(ps)
	dec, err := avrorow.NewDecoder(g, s)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rowgroup.NewBuilder(g, dec)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w, err := writer.New(&out, ps)
	if err != nil {
		t.Fatal(err)
	}
	var bodies [][]byte
	for i := first; i < first+n; i++ {
		body, err := s.Codec().BinaryFromNative(nil, native(i))
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		bodies = append(bodies, body)
		env := &rowgroup.Envelope{Topic: "avro", Partition: 0, Offset: int64(i), Timestamp: time.UnixMilli(int64(i)), Key: []byte{byte(i)}}
		if err := b.Append(body, env); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	if own {
		for k, v := range map[string]string{archive.FooterTopic: "avro", archive.FooterPartition: "0", archive.FooterFirstOffset: strconv.Itoa(first),
			archive.FooterLastOffset: strconv.Itoa(first + n - 1), archive.FooterRecords: strconv.Itoa(n), avro.MetadataKey: s.String()} {
			w.SetKeyValue(k, v)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), bodies
}

// TestReplayLendsFooter replays a table of Avro records of which another
// engine rewrote a file (copy-on-write: the columns, but no pqsink
// footer): the rewritten file's records are produced in the registry's
// wire format with the schema of the sink's file of the same columns, so
// every record is the producer's bytes again, not JSON. A rewritten file
// whose columns no sink's file of the replay has is refused.
func TestReplayLendsFooter(t *testing.T) {
	s, err := avro.Parse(avroAll)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ownKey, cowKey := "t/data/"+sinkKey("avro", 0, 0), "t/data/00000-0-cow.parquet"
	_, bodies := writeAvroTableFile(t, dir, ownKey, s, 0, 30, avroNative, true)
	_, cow := writeAvroTableFile(t, dir, cowKey, s, 30, 30, avroNative, false)
	bodies = append(bodies, cow...)
	opts := Options{Topic: "avro-target", Files: []Object{{Key: ownKey}, {Key: cowKey}},
		PathTemplate: "{field:table_path}/{topic}+{partition}+{first_offset}.parquet"}

	reg := &memRegistry{ids: map[string]uint32{}}
	c := &collector{}
	a := &archiveDir{dir: dir}
	opts.Registry = reg
	r, err := a.run(t, context.Background(), opts, openDir(t, dir), c)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Stats().FootersLent.Load(); got != 1 {
		t.Errorf("Stats.FootersLent %d, want 1", got)
	}
	wantID := reg.ids["avro-target-value\x00"+s.String()]
	if len(c.msgs) != len(bodies) {
		t.Fatalf("%d messages, want %d", len(c.msgs), len(bodies))
	}
	for i, m := range c.msgs {
		id, body, err := schemaregistry.SplitWire(m.Value)
		if err != nil || id != wantID || !bytes.Equal(body, bodies[i]) {
			t.Errorf("record %d: id %d, body %x (%v); want id %d, body %x", i, id, body, err, wantID, bodies[i])
		}
	}

	// Another schema's rewritten file: no sink's file lends it one.
	other, err := avro.Parse(`{"type":"record","name":"other","fields":[{"name":"id","type":"long"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	otherKey := "t/data/00000-1-cow.parquet"
	writeAvroTableFile(t, dir, otherKey, other, 60, 2, func(i int) map[string]any { return map[string]any{"id": int64(i)} }, false)
	opts.Files = append(opts.Files, Object{Key: otherKey})
	c = &collector{}
	_, err = a.run(t, context.Background(), opts, openDir(t, dir), c)
	if err == nil || !errors.Is(err, ErrNotPqsink) || !strings.Contains(err.Error(), otherKey+": ") ||
		!strings.Contains(err.Error(), "none of the sink's files of the replay has its payload columns") {
		t.Fatalf("replay with a rewritten file of other columns: %v, want ErrNotPqsink naming %s", err, otherKey)
	}
	if len(c.msgs) != 0 {
		t.Errorf("the refused replay produced %d records", len(c.msgs))
	}
}
