package protofmt_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/format/formattest"
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

// runKeys checks cases with the change decoders of two (cases with one
// key field: of one), each of the files' fixed schema.
func runKeys(t *testing.T, two, one format.Keyed, casesTwo, casesOne []formattest.Case) {
	t.Helper()
	fixed, err := two.FixedSchema()
	if err != nil {
		t.Fatal(err)
	}
	p := format.Partition{Schema: fixed, Log: slog.New(slog.DiscardHandler)}
	formattest.Check(t, two.NewChangeDecoder(p), casesTwo)
	formattest.Check(t, one.NewChangeDecoder(p), casesOne)
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
	runKeys(t, two, one, []formattest.Case{
		{Name: "value", Value: customer(7, "eu"), Want: euKey},
		{Name: "a proto3 field left out is its default", Value: customer(0, "eu"), Want: keyindex.AppendInt(keyindex.AppendString(nil, "eu"), 0)},
		{Name: "tombstone with a message key", Key: customer(7, "eu"), Want: euKey, Delete: true},
		{Name: "tombstone with a key that is not a message", Key: []byte{0xff}, Reason: format.RejectKey, Err: "the Kafka key as a shop.Customer"},
		{Name: "value that is not a message", Value: []byte{0xff}, Reason: format.RejectKey, Err: "row key"},
	}, []formattest.Case{
		{Name: "tombstone with a plain key", Key: []byte("7"), Want: keyindex.AppendInt(nil, 7), Delete: true},
		{Name: "tombstone with a plain key, not digits", Key: []byte("seven"), Reason: format.RejectKey, Err: "decimal digits"},
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
	runKeys(t, two, one, []formattest.Case{
		{Name: "value", Value: fakeregistry.Wire(1, first, customer(7, "eu")), Want: euKey},
		{Name: "tombstone with a shop.Key", Key: fakeregistry.Wire(1, second, customer(7, "eu")), Want: euKey, Delete: true},
		{Name: "tombstone with a key message without the fields", Key: fakeregistry.Wire(1, third, customer(7, "eu")), Reason: format.RejectKey, Err: "shop.Address): key field region: not a field"},
		{Name: "tombstone with a key of an unknown id", Key: fakeregistry.Wire(9, first, nil), Reason: format.RejectKey, Err: "the Kafka key's protobuf schema id 9"},
		{Name: "tombstone with a key of an Avro schema", Key: fakeregistry.Wire(2, first, nil), Reason: format.RejectKey, Err: "the Kafka key's protobuf schema id 2"},
		{Name: "tombstone with a plain key for two fields", Key: []byte("7"), Reason: format.RejectKey, Err: "not in the Confluent wire format"},
		{Name: "value of a message without the key fields", Value: fakeregistry.Wire(1, third, nil), Reason: format.RejectKey, Err: "key field region: not a field"},
	}, []formattest.Case{
		{Name: "plain key before any value", Key: []byte("7"), Reason: format.RejectKey, Err: "before any value"},
		{Name: "value, one field", Value: fakeregistry.Wire(1, first, customer(7, "eu")), Want: keyindex.AppendInt(nil, 7)},
		{Name: "tombstone with a plain key", Key: []byte("7"), Want: keyindex.AppendInt(nil, 7), Delete: true},
	})
}
