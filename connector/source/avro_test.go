package source

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/format/all"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema/avro"
)

// avroAll has every Avro type the sink maps, logical types included.
const avroAll = `{"type":"record","name":"all","namespace":"t","fields":[
 {"name":"l","type":"long"},
 {"name":"i","type":"int"},
 {"name":"s","type":"string"},
 {"name":"b","type":"boolean"},
 {"name":"f","type":"float"},
 {"name":"d","type":"double"},
 {"name":"by","type":"bytes"},
 {"name":"e","type":{"type":"enum","name":"color","symbols":["RED","GREEN","BLUE"]}},
 {"name":"fx","type":{"type":"fixed","name":"four","size":4}},
 {"name":"arr","type":{"type":"array","items":"string"}},
 {"name":"m","type":{"type":"map","values":"long"}},
 {"name":"opt","type":["null","string"]},
 {"name":"optrec","type":["null",{"type":"record","name":"inner","fields":[{"name":"x","type":"int"},{"name":"tags","type":{"type":"array","items":"string"}}]}]},
 {"name":"u","type":["null","string","long"]},
 {"name":"recs","type":{"type":"array","items":"inner"}},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"day","type":{"type":"int","logicalType":"date"}},
 {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
 {"name":"id","type":{"type":"string","logicalType":"uuid"}},
 {"name":"nul","type":"null"}
]}`

// avroNative returns record i of avroAll as goavro's native value.
func avroNative(i int) map[string]any {
	var opt, optrec, u any
	switch i % 3 {
	case 0:
		opt, u = map[string]any{"string": "o" + strconv.Itoa(i)}, map[string]any{"long": int64(i)}
		optrec = map[string]any{"t.inner": map[string]any{"x": int32(i), "tags": []any{"a", "b"}}}
	case 1:
		u = map[string]any{"string": "u"}
		optrec = map[string]any{"t.inner": map[string]any{"x": int32(-i), "tags": []any{}}}
	}
	m := map[string]any{}
	for k := range i % 4 {
		m["k"+strconv.Itoa(k)] = int64(k * i)
	}
	arr := []any{}
	for k := range i % 3 {
		arr = append(arr, fmt.Sprintf("s%d-%d", i, k))
	}
	return map[string]any{
		"l": int64(i) * 1e12, "i": int32(-i), "s": "héllo " + strconv.Itoa(i), "b": i%2 == 0,
		"f": float32(i) / 3, "d": float64(i) / 7, "by": []byte{0, byte(i), 0xff},
		"e": []string{"RED", "GREEN", "BLUE"}[i%3], "fx": []byte{1, 2, 3, byte(i)},
		"arr": arr, "m": m, "opt": opt, "optrec": optrec, "u": u,
		"recs": []any{map[string]any{"x": int32(1), "tags": []any{"z"}}},
		"ts":   int64(1_700_000_000_000 + i), "day": int32(19000 + i),
		"dec": []byte{0x01, byte(i)}, "id": fmt.Sprintf("123e4567-e89b-12d3-a456-4266141740%02d", i%100),
		"nul": nil,
	}
}

// fixedID is a SchemaRegistrar that gives every schema one id.
type fixedID uint32

func (f fixedID) Register(context.Context, string, string) (uint32, error) { return uint32(f), nil }

// avroEncoder is the Avro format's replay encoder of s, as replay opens it
// from the registered formats (format/all), with the schema registered as
// id 7.
func avroEncoder(t *testing.T, s *avro.Schema) format.RecordEncoder {
	t.Helper()
	text := s.String()
	kv := []meta.KeyValue{{Key: avro.MetadataKey, Value: &text}}
	for _, rp := range all.Formats().Replayers(&config.Config{}, format.ReplayEnv{Registry: fixedID(7), Subject: "avro-target-value"}) {
		if rp.Claims(kv) == "" {
			continue
		}
		enc, err := rp.Encoder(context.Background(), format.ReplayFile{KV: kv})
		if err != nil {
			t.Fatal(err)
		}
		return enc
	}
	t.Fatal("no replayer claims a file of an Avro schema")
	return nil
}

// memRegistry is a SchemaRegistrar that hands out ids from 500.
type memRegistry struct {
	mu  sync.Mutex
	ids map[string]uint32
}

func (m *memRegistry) Register(_ context.Context, subject, schema string) (uint32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := subject + "\x00" + schema
	if id, ok := m.ids[k]; ok {
		return id, nil
	}
	id := uint32(500 + len(m.ids))
	m.ids[k] = id
	return id, nil
}

// TestReplayAvro writes records of every Avro type as the sink lands them
// and replays them: each value is the wire header with the registered id
// and the very bytes the producer encoded.
func TestReplayAvro(t *testing.T) {
	s, err := avro.Parse(avroAll)
	if err != nil {
		t.Fatal(err)
	}
	const n = 60
	dir := t.TempDir()
	file, bodies := writeAvroTableFile(t, dir, sinkKey("avro", 0, 0), s, 0, n, avroNative, true)

	reg := &memRegistry{ids: map[string]uint32{}}
	c := &collector{}
	a := &archiveDir{dir: dir}
	r, err := a.run(t, context.Background(), Options{Topic: "avro-target", Registry: reg}, openDir(t, dir), c)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Stats().RowGroupsByRows.Load(); n != 0 {
		t.Errorf("%d row groups read through Rows; the mapping's shapes are columnar", n)
	}
	if len(c.msgs) != n {
		t.Fatalf("%d messages, want %d", len(c.msgs), n)
	}
	wantID := reg.ids["avro-target-value\x00"+s.String()]
	if wantID == 0 {
		t.Fatalf("schema not registered under avro-target-value: %v", reg.ids)
	}
	for i, m := range c.msgs {
		id, body, err := schemaregistry.SplitWire(m.Value)
		if err != nil || id != wantID || !bytes.Equal(body, bodies[i]) {
			t.Errorf("record %d: id %d, body %x (%v); want id %d, body %x", i, id, body, err, wantID, bodies[i])
		}
	}
	// The fallback through reader.Rows encodes the same bytes.
	f, err := reader.Open(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := f.Rows()
	if err != nil {
		t.Fatal(err)
	}
	enc := avroEncoder(t, s)
	for i := range n {
		v, err := rows.Next()
		if err != nil {
			t.Fatal(err)
		}
		got, err := enc.AppendRecord(nil, v)
		if err != nil {
			t.Fatalf("record %d through Rows: %v", i, err)
		}
		if want := append(schemaregistry.AppendWire(nil, 7), bodies[i]...); !bytes.Equal(got, want) {
			t.Errorf("record %d through Rows: %x, want %x", i, got, want)
		}
	}
	// Without a registry, an Avro file is an error that says what to set.
	_, err = a.run(t, context.Background(), Options{Topic: "avro-target"}, openDir(t, dir), &collector{})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("format.registry")) {
		t.Errorf("Avro file without a registry: %v", err)
	}
}
