package protofmt_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/format/formattest"
	"github.com/pqsink/pqsink/internal/testutil/changelog"
	"github.com/pqsink/pqsink/internal/testutil/fakeregistry"
	"github.com/pqsink/pqsink/schema/protobuf"
	"github.com/pqsink/pqsink/schema/protobuf/protofmt"
)

// itemsProto holds the envelope of the changelog generator's rows, and
// its key.
const itemsProto = `syntax = "proto3";
package shop.items;
import "google/protobuf/wrappers.proto";
message Envelope {
  Value before = 1;
  Value after = 2;
  Source source = 3;
  string op = 4;
  int64 ts_ms = 5;
}
message Value {
  int64 id = 1;
  string name = 2;
  int64 version = 3;
  double score = 4;
  bool active = 5;
  google.protobuf.StringValue note = 6;
}
message Source { int64 ts_ms = 1; }
message Key { int64 id = 1; }
`

// itemRow is the Value bytes of a generator row's JSON object.
func itemRow(t *testing.T, row map[string]any) []byte {
	t.Helper()
	num := func(k string) int64 {
		n, err := row[k].(json.Number).Int64()
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		return n
	}
	b := intField(nil, 1, num("id"))
	b = strField(b, 2, row["name"].(string))
	b = intField(b, 3, num("version"))
	score, err := row["score"].(json.Number).Float64()
	if err != nil {
		t.Fatal(err)
	}
	b = protowire.AppendFixed64(tag(b, 4, protowire.Fixed64Type), math.Float64bits(score))
	if row["active"].(bool) {
		b = intField(b, 5, 1)
	}
	if note, ok := row["note"].(string); ok {
		b = msgField(b, 6, strField(nil, 1, note))
	}
	return b
}

// TestKeyedDebeziumChangelog reads a generated changelog of Debezium
// events in Protobuf, with Debezium's tombstones and Kafka keys in the
// wire format and as plain digits, and compares the table it leaves with
// the changelog's fold.
func TestKeyedDebeziumChangelog(t *testing.T) {
	url := fakeregistry.Start(t, map[uint32]fakeregistry.Schema{4: {Type: "PROTOBUF", Text: itemsProto}})
	f, err := protofmt.Open(&config.Config{Format: config.Format{Type: protofmt.Name, Registry: &config.Registry{URL: url, Timeout: 5 * time.Second}}}, format.Env{})
	if err != nil {
		t.Fatal(err)
	}
	g := changelog.New(3, 30, changelog.Debezium(), changelog.Tombstones(), changelog.Snapshot(10))
	k, err := f.(format.Keyer).Keyed(format.KeyOptions{Fields: g.KeyFields(), Envelope: format.EnvelopeDebezium})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	encode := func(ev changelog.Event) ([]byte, []byte) {
		n++
		id := ev.KeyFields["id"].(int64)
		key := fakeregistry.Wire(4, []byte{2, 6}, intField(nil, 1, id)) // shop.items.Key: indexes [3]
		if n%2 == 0 {
			key = []byte(strconv.FormatInt(id, 10))
		}
		if ev.Value == nil {
			return key, nil
		}
		d := json.NewDecoder(bytes.NewReader(ev.Value))
		d.UseNumber()
		var e map[string]any
		if err := d.Decode(&e); err != nil {
			t.Fatal(err)
		}
		var b []byte
		for i, member := range []string{"before", "after"} {
			if row, ok := e[member].(map[string]any); ok {
				b = msgField(b, protowire.Number(i+1), itemRow(t, row))
			}
		}
		b = msgField(b, 3, intField(nil, 1, ev.TSMillis))
		b = strField(b, 4, e["op"].(string))
		return key, fakeregistry.Wire(4, []byte{0}, b)
	}
	table := formattest.Changelog(t, k.NewChangeDecoder(format.Partition{Log: slog.New(slog.DiscardHandler)}), g, 2000, encode)
	fold := g.Fold()
	if len(fold) == 0 || len(table) != len(fold) {
		t.Fatalf("%d keys read, the fold has %d", len(table), len(fold))
	}
	path := filepath.Join(t.TempDir(), "items.proto")
	if err := os.WriteFile(path, []byte(itemsProto), 0o644); err != nil {
		t.Fatal(err)
	}
	md, err := protobuf.LoadFile(context.Background(), path, nil, "shop.items.Value")
	if err != nil {
		t.Fatal(err)
	}
	fields := md.Fields()
	for _, row := range fold {
		payload, ok := table[string(formattest.FoldKey(t, row, g.KeyFields()))]
		if !ok {
			t.Fatalf("the fold's row %v is not in the table read", row)
		}
		m := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(payload, m); err != nil {
			t.Fatal(err)
		}
		got := map[string]any{
			"id": m.Get(fields.ByName("id")).Int(), "name": m.Get(fields.ByName("name")).String(),
			"version": m.Get(fields.ByName("version")).Int(), "score": m.Get(fields.ByName("score")).Float(),
			"active": m.Get(fields.ByName("active")).Bool(), "note": nil,
		}
		if m.Has(fields.ByName("note")) {
			note := m.Get(fields.ByName("note")).Message()
			got["note"] = note.Get(note.Descriptor().Fields().ByName("value")).String()
		}
		for c, v := range got {
			if row[c] != v {
				t.Fatalf("row %v: %s is %v", row, c, v)
			}
		}
	}
}
