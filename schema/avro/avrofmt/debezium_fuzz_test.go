package avrofmt

import (
	"testing"

	"github.com/pqsink/pqsink/schema/avro"
)

// FuzzReadEvent: untrusted bytes read as a Debezium event never panic,
// and the rows of an event read lie within its bytes.
func FuzzReadEvent(f *testing.F) {
	env := avro.MustParse(`{"type":"record","name":"Envelope","namespace":"d","fields":[
{"name":"before","type":["null",{"type":"record","name":"Value","fields":[{"name":"id","type":"int"},{"name":"tags","type":{"type":"array","items":"string"}},{"name":"m","type":{"type":"map","values":["null","double"]}},{"name":"f","type":{"type":"fixed","name":"F","size":3}}]}]},
{"name":"after","type":["null","Value"]},
{"name":"source","type":{"type":"record","name":"Source","fields":[{"name":"name","type":"string"},{"name":"ts_ms","type":"long"},{"name":"flag","type":"boolean"},{"name":"e","type":{"type":"enum","name":"E","symbols":["a","b"]}},{"name":"x","type":"float"}]}},
{"name":"op","type":"string"},{"name":"ts_ms","type":["null","long"]}]}`)
	for _, native := range []map[string]any{
		{"before": nil, "after": map[string]any{"d.Value": map[string]any{"id": int32(1), "tags": []any{"a", "b"}, "m": map[string]any{"k": map[string]any{"double": 1.5}}, "f": []byte("abc")}},
			"source": map[string]any{"name": "s", "ts_ms": int64(1700000000000), "flag": true, "e": "b", "x": float32(1)}, "op": "c", "ts_ms": map[string]any{"long": int64(5)}},
		{"before": map[string]any{"d.Value": map[string]any{"id": int32(-1), "tags": []any{}, "m": map[string]any{}, "f": []byte("xyz")}}, "after": nil,
			"source": map[string]any{"name": "", "ts_ms": int64(0), "flag": false, "e": "a", "x": float32(0)}, "op": "d", "ts_ms": nil},
	} {
		b, err := env.Codec().BinaryFromNative(nil, native)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{2, 0x80})
	f.Add([]byte{0, 0, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := readEvent(env.Root, b)
		if err != nil {
			return
		}
		for _, row := range [][]byte{ev.before, ev.after} {
			if len(row) > len(b) {
				t.Fatalf("a row of %d bytes in an event of %d", len(row), len(b))
			}
		}
	})
}
