package jsonschemafmt_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/internal/testutil/fakeregistry"
	"github.com/pqsink/pqsink/rowgroup"
)

// FuzzDebeziumRegistry: untrusted values and Kafka keys read as Debezium
// events with a registry never panic nor fail; a rejection has a reason
// of the event's (decode, schema, key, change); a change has a key, and a
// row is a JSON object that the buffers of its schema take.
func FuzzDebeziumRegistry(f *testing.F) {
	fm := openRegistry(f, map[uint32]fakeregistry.Schema{1: {Type: "JSON", Text: debeziumEnvelope}})
	k, err := fm.(format.Keyer).Keyed(format.KeyOptions{Fields: []string{"id"}, Envelope: format.EnvelopeDebezium})
	if err != nil {
		f.Fatal(err)
	}
	dec := k.NewChangeDecoder(format.Partition{Log: slog.New(slog.DiscardHandler)})
	dir := filepath.Join("..", "..", "..", "format", "testdata", "debezium")
	for _, name := range []string{"create.json", "read.json", "update.json", "delete.json", "delete_nobefore.json", "truncate.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(`{"id":1001}`), fakeregistry.Wire(1, nil, b), false)
	}
	f.Add([]byte("1001"), []byte(nil), true)
	f.Add([]byte(`{"id":"x"}`), fakeregistry.Wire(1, nil, []byte(`{"op":"c","after":{"id":1,"email":"\u00e9"},"source":{"ts_ms":-1}}`)), false)
	f.Add([]byte(nil), []byte{0, 0, 0, 0, 1, '{'}, false)
	bufs := map[any]*format.Buffers{}
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		}
		ch, rej, err := dec.DecodeChange(context.Background(), key, value, 1)
		if err != nil {
			t.Fatalf("error %v: the registry is reachable", err)
		}
		if rej != nil {
			switch rej.Reason {
			case format.RejectDecode, format.RejectSchema, format.RejectKey, format.RejectChange:
			default:
				t.Fatalf("rejection %s: %v", rej.Reason, rej)
			}
			return
		}
		if len(ch.Key) == 0 {
			t.Fatalf("a change without a key: %+v", ch)
		}
		if ch.Delete {
			return
		}
		var row map[string]any
		if err := json.Unmarshal(ch.Row.Payload, &row); err != nil {
			t.Fatalf("row %q: %v", ch.Row.Payload, err)
		}
		bk := dec.BuffersKey(ch.Row)
		if bufs[bk] == nil {
			if bufs[bk], err = dec.NewBuffers(ch.Row); err != nil {
				t.Fatal(err)
			}
		}
		if err := dec.Fits(bufs[bk], ch.Row).Append(ch.Row.Payload, (*rowgroup.Envelope)(nil)); err != nil {
			t.Fatalf("row %q of a valid event: %v", ch.Row.Payload, err)
		}
	})
}
