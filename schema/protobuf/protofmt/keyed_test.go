package protofmt_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/internal/testutil/fakeregistry"
	"github.com/pqsink/pqsink/schema/protobuf/protofmt"
	"github.com/pqsink/pqsink/table/keyindex"
)

const shopProto = `syntax = "proto3";
package shop;
message Customer {
  int64 id = 1;
  string region = 2;
  optional string email = 3;
  Address address = 4;
}
message Key {
  int32 id = 1;
  string region = 2;
}
message Address { string city = 1; }
`

// customer is the wire bytes of a shop.Customer (or a shop.Key: the
// same field numbers).
func customer(id int64, region string) []byte {
	var b []byte
	if id != 0 {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(id))
	}
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	return protowire.AppendString(b, region)
}

type keyCase struct {
	name       string
	one        bool
	key, value []byte
	want       []byte
	reason     string
	err        string
}

func runKeys(t *testing.T, two, one format.Keyed, cases []keyCase) {
	t.Helper()
	fixed, err := two.FixedSchema()
	if err != nil {
		t.Fatal(err)
	}
	p := format.Partition{Schema: fixed, Log: slog.New(slog.DiscardHandler)}
	decTwo, decOne := two.NewChangeDecoder(p), one.NewChangeDecoder(p)
	for _, c := range cases {
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

// TestKeyedProtoFile: with format.proto_file, key fields are checked at
// open; a value's key is read from the message, a tombstone's from a
// Kafka key that is a plain format.message, or for one field its plain
// bytes.
func TestKeyedProtoFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shop.proto")
	if err := os.WriteFile(path, []byte(shopProto), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := protofmt.Open(&config.Config{Format: config.Format{Type: protofmt.Name, Protobuf: &config.Protobuf{ProtoFile: path, Message: "shop.Customer"}}}, format.Env{})
	if err != nil {
		t.Fatal(err)
	}
	kr := f.(format.Keyer)
	for _, c := range []struct {
		fields []string
		err    string
	}{
		{[]string{"email"}, "format.message shop.Customer: key field email: optional"},
		{[]string{"address"}, "key field address: not a primitive field"},
		{[]string{"nope"}, "key field nope: not a field"},
	} {
		if _, err := kr.Keyed(format.KeyOptions{Fields: c.fields}); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%v: error %v, want %q", c.fields, err, c.err)
		}
	}
	two, err := kr.Keyed(format.KeyOptions{Fields: []string{"region", "id"}})
	if err != nil {
		t.Fatal(err)
	}
	one, err := kr.Keyed(format.KeyOptions{Fields: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	euKey := keyindex.AppendInt(keyindex.AppendString(nil, "eu"), 7)
	runKeys(t, two, one, []keyCase{
		{name: "value", value: customer(7, "eu"), want: euKey},
		{name: "a proto3 field left out is its default", value: customer(0, "eu"), want: keyindex.AppendInt(keyindex.AppendString(nil, "eu"), 0)},
		{name: "tombstone with a message key", key: customer(7, "eu"), want: euKey},
		{name: "tombstone with a plain key", one: true, key: []byte("7"), want: keyindex.AppendInt(nil, 7)},
		{name: "tombstone with a plain key, not digits", one: true, key: []byte("seven"), reason: format.RejectKey, err: "decimal digits"},
		{name: "tombstone with a key that is not a message", key: []byte{0xff}, reason: format.RejectKey, err: "the Kafka key as a shop.Customer"},
		{name: "value that is not a message", value: []byte{0xff}, reason: format.RejectKey, err: "row key"},
	})
}

// TestKeyedRegistry: with a registry, values and Kafka keys in the
// Confluent wire format are read with their messages (a shop.Key whose
// id is an int32 and a shop.Customer whose id is an int64 give one key).
func TestKeyedRegistry(t *testing.T) {
	url := fakeregistry.Start(t, map[uint32]fakeregistry.Schema{
		1: {Type: "PROTOBUF", Text: shopProto},
		2: {Type: "AVRO", Text: `"string"`},
	})
	f, err := protofmt.Open(&config.Config{Format: config.Format{Type: protofmt.Name, Registry: &config.Registry{URL: url, Timeout: 5 * time.Second}}}, format.Env{})
	if err != nil {
		t.Fatal(err)
	}
	kr := f.(format.Keyer)
	if _, err := kr.Keyed(format.KeyOptions{Fields: []string{"id"}, Envelope: "maxwell"}); err == nil || !strings.Contains(err.Error(), "does not read it") {
		t.Errorf("another envelope: error %v", err)
	}
	two, err := kr.Keyed(format.KeyOptions{Fields: []string{"region", "id"}})
	if err != nil {
		t.Fatal(err)
	}
	one, err := kr.Keyed(format.KeyOptions{Fields: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	first, second, third := []byte{0}, []byte{2, 2}, []byte{2, 4} // message indexes [0], [1], [2]
	euKey := keyindex.AppendInt(keyindex.AppendString(nil, "eu"), 7)
	runKeys(t, two, one, []keyCase{
		{name: "plain key before any value", one: true, key: []byte("7"), reason: format.RejectKey, err: "before any value"},
		{name: "value", value: fakeregistry.Wire(1, first, customer(7, "eu")), want: euKey},
		{name: "value, one field", one: true, value: fakeregistry.Wire(1, first, customer(7, "eu")), want: keyindex.AppendInt(nil, 7)},
		{name: "tombstone with a shop.Key", key: fakeregistry.Wire(1, second, customer(7, "eu")), want: euKey},
		{name: "tombstone with a plain key", one: true, key: []byte("7"), want: keyindex.AppendInt(nil, 7)},
		{name: "tombstone with a key message without the fields", key: fakeregistry.Wire(1, third, customer(7, "eu")), reason: format.RejectKey, err: "shop.Address): key field region: not a field"},
		{name: "tombstone with a key of an unknown id", key: fakeregistry.Wire(9, first, nil), reason: format.RejectKey, err: "the Kafka key's protobuf schema id 9"},
		{name: "tombstone with a key of an Avro schema", key: fakeregistry.Wire(2, first, nil), reason: format.RejectKey, err: "the Kafka key's protobuf schema id 2"},
		{name: "tombstone with a plain key for two fields", key: []byte("7"), reason: format.RejectKey, err: "not in the Confluent wire format"},
		{name: "value of a message without the key fields", value: fakeregistry.Wire(1, third, nil), reason: format.RejectKey, err: "key field region: not a field"},
	})
}
