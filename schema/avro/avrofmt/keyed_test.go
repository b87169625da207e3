package avrofmt_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/internal/testutil/fakeregistry"
	"github.com/pqsink/pqsink/schema/avro/avrofmt"
	"github.com/pqsink/pqsink/table/keyindex"
)

const (
	valueSchema = `{"type":"record","name":"customers","fields":[{"name":"id","type":"long"},{"name":"region","type":"string"},{"name":"email","type":["null","string"]}]}`
	// The key record as Debezium's AvroConverter registers it: id an int
	// where the value's is a long; the key is the same.
	keySchema      = `{"type":"record","name":"Key","fields":[{"name":"id","type":"int"},{"name":"region","type":"string"}]}`
	optionalSchema = `{"type":"record","name":"customers","fields":[{"name":"id","type":["null","long"]},{"name":"region","type":"string"}]}`
	nestedSchema   = `{"type":"record","name":"customers","fields":[{"name":"id","type":{"type":"record","name":"I","fields":[{"name":"v","type":"long"}]}},{"name":"region","type":"string"}]}`
)

func encode(t *testing.T, id uint32, text string, native map[string]any) []byte {
	t.Helper()
	codec, err := goavro.NewCodec(text)
	if err != nil {
		t.Fatal(err)
	}
	b, err := codec.BinaryFromNative(nil, native)
	if err != nil {
		t.Fatal(err)
	}
	return fakeregistry.Wire(id, nil, b)
}

// TestKeyed reads row keys from Avro values and from Avro Kafka keys in
// the Confluent wire format, each with its schema from the registry, and
// a one-field key's plain bytes; equal values are equal keys whatever the
// width of their integers.
func TestKeyed(t *testing.T) {
	url := fakeregistry.Start(t, map[uint32]fakeregistry.Schema{
		1: {Type: "AVRO", Text: valueSchema},
		2: {Type: "AVRO", Text: keySchema},
		3: {Type: "AVRO", Text: optionalSchema},
		4: {Type: "AVRO", Text: nestedSchema},
		5: {Type: "PROTOBUF", Text: `syntax = "proto3"; message M { int64 id = 1; }`},
	})
	f, err := avrofmt.Open(&config.Config{Format: config.Format{Type: avrofmt.Name, Registry: &config.Registry{URL: url, Timeout: 5 * time.Second}}}, format.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.(format.Keyer).Keyed(format.KeyOptions{Fields: []string{"id"}, Envelope: "maxwell"}); err == nil || !strings.Contains(err.Error(), "does not read it yet") {
		t.Errorf("another envelope: error %v", err)
	}
	two, err := f.(format.Keyer).Keyed(format.KeyOptions{Fields: []string{"region", "id"}})
	if err != nil {
		t.Fatal(err)
	}
	one, err := f.(format.Keyer).Keyed(format.KeyOptions{Fields: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	p := format.Partition{Log: slog.New(slog.DiscardHandler)}
	decTwo, decOne := two.NewChangeDecoder(p), one.NewChangeDecoder(p)
	euKey := keyindex.AppendInt(keyindex.AppendString(nil, "eu"), 1001)
	row := encode(t, 1, valueSchema, map[string]any{"id": int64(1001), "region": "eu", "email": map[string]any{"string": "a@b"}})
	for _, c := range []struct {
		name       string
		one        bool
		key, value []byte
		want       []byte
		reason     string
		err        string
	}{
		{name: "plain key before any value", one: true, key: []byte("1001"), reason: format.RejectKey, err: "before any value"},
		{name: "value", value: row, want: euKey},
		{name: "tombstone with an Avro key", key: encode(t, 2, keySchema, map[string]any{"id": int32(1001), "region": "eu"}), want: euKey},
		{name: "value, one field", one: true, value: row, want: keyindex.AppendInt(nil, 1001)},
		{name: "tombstone with a plain key", one: true, key: []byte("1001"), want: keyindex.AppendInt(nil, 1001)},
		{name: "tombstone with a plain key, not digits", one: true, key: []byte("x"), reason: format.RejectKey, err: "decimal digits"},
		{name: "tombstone with a plain key for two fields", key: []byte("1001"), reason: format.RejectKey, err: "not in the Confluent wire format"},
		{name: "tombstone with a key of an unknown schema", key: fakeregistry.Wire(9, nil, []byte{2}), reason: format.RejectKey, err: "the Kafka key's avro schema id 9"},
		{name: "tombstone with a key of a Protobuf schema", key: fakeregistry.Wire(5, nil, []byte{2}), reason: format.RejectKey, err: "the Kafka key's avro schema id 5"},
		{name: "tombstone with a key record that does not decode", key: fakeregistry.Wire(2, nil, []byte{0x80}), reason: format.RejectKey, err: "the Kafka key's avro schema id 2"},
		{name: "tombstone with a key of the value's schema", key: row, want: euKey},
		{name: "tombstone without a key", reason: format.RejectKey, err: "no Kafka key"},
		{name: "value of a schema whose key field is optional", value: encode(t, 3, optionalSchema, map[string]any{"id": map[string]any{"long": int64(1)}, "region": "eu"}),
			reason: format.RejectKey, err: "avro schema id 3: key field id: optional"},
		{name: "value of a schema whose key field is a record", value: encode(t, 4, nestedSchema, map[string]any{"id": map[string]any{"v": int64(1)}, "region": "eu"}),
			reason: format.RejectKey, err: "avro schema id 4"},
		{name: "value that does not decode", value: fakeregistry.Wire(1, nil, []byte{0x80}), reason: format.RejectKey, err: "row key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dec := decTwo
			if c.one {
				dec = decOne
			}
			ch, rej, err := dec.DecodeChange(context.Background(), c.key, c.value, 5)
			if err != nil {
				t.Fatal(err)
			}
			if c.reason != "" {
				if rej == nil || rej.Reason != c.reason || !strings.Contains(rej.Error(), c.err) {
					t.Fatalf("change %+v, rejection %v, want reason %s containing %q", ch, rej, c.reason, c.err)
				}
				return
			}
			if rej != nil {
				t.Fatalf("%s: %v", rej.Reason, rej)
			}
			if !bytes.Equal(ch.Key, c.want) || ch.Delete != (c.value == nil) {
				t.Fatalf("key %x delete %v, want %x", ch.Key, ch.Delete, c.want)
			}
			if !ch.Delete {
				buf, err := dec.NewBuffers(ch.Row)
				if err != nil {
					t.Fatal(err)
				}
				if err := dec.Fits(buf, ch.Row).Append(ch.Row.Payload, nil); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
