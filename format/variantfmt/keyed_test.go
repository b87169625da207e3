package variantfmt_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/format/formattest"
	"github.com/pqsink/pqsink/format/variantfmt"
	"github.com/pqsink/pqsink/table/keyindex"
)

// TestKeyed: a VARIANT value's key is read from its JSON's top level by
// the members' JSON types, a tombstone's from its Kafka key; keys that
// cannot be read are rejections with reason key.
func TestKeyed(t *testing.T) {
	f, err := variantfmt.Open(&config.Config{Format: config.Format{Type: variantfmt.Name, Column: "v", Shred: "none"}}, format.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.(format.Keyer).Keyed(format.KeyOptions{Fields: []string{"id"}, Envelope: format.EnvelopeDebezium}); err == nil || !strings.Contains(err.Error(), "does not read it yet") {
		t.Errorf("debezium: error %v", err)
	}
	if _, err := f.(format.Keyer).Keyed(format.KeyOptions{Fields: []string{"a.b"}}); err == nil || !strings.Contains(err.Error(), "top-level") {
		t.Errorf("a nested key field: error %v", err)
	}
	one, err := f.(format.Keyer).Keyed(format.KeyOptions{Fields: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	two, err := f.(format.Keyer).Keyed(format.KeyOptions{Fields: []string{"region", "id"}})
	if err != nil {
		t.Fatal(err)
	}
	fixed, err := one.FixedSchema()
	if err != nil {
		t.Fatal(err)
	}
	p := format.Partition{Schema: fixed, Log: slog.New(slog.DiscardHandler)}
	decOne, decTwo := one.NewChangeDecoder(p), two.NewChangeDecoder(p)
	rows := formattest.Check(t, decOne, []formattest.Case{
		{Name: "int", Value: []byte(`{"id":7,"x":[1,{"id":8}]}`), Want: keyindex.AppendInt(nil, 7)},
		{Name: "integral float is the int", Value: []byte(`{"id":7.0}`), Want: keyindex.AppendInt(nil, 7)},
		{Name: "float", Value: []byte(`{"id":7.5}`), Want: keyindex.AppendFloat(nil, 7.5)},
		{Name: "string", Value: []byte(`{"id":"7"}`), Want: keyindex.AppendString(nil, "7")},
		{Name: "bool", Value: []byte(`{"id":false}`), Want: keyindex.AppendBool(nil, false)},
		{Name: "missing", Value: []byte(`{"x":1}`), Reason: format.RejectKey, Err: "key field id is missing"},
		{Name: "null", Value: []byte(`{"id":null}`), Reason: format.RejectKey, Err: "key field id is missing or null"},
		{Name: "object", Value: []byte(`{"id":{}}`), Reason: format.RejectKey, Err: "not a scalar"},
		{Name: "not an object", Value: []byte(`7`), Reason: format.RejectKey, Err: "not a JSON object"},
		{Name: "tombstone, JSON number key", Key: []byte(`7`), Want: keyindex.AppendInt(nil, 7), Delete: true},
		{Name: "tombstone, JSON string key", Key: []byte(`"7"`), Want: keyindex.AppendString(nil, "7"), Delete: true},
		{Name: "tombstone, text key", Key: []byte(`user-7`), Want: keyindex.AppendString(nil, "user-7"), Delete: true},
		{Name: "tombstone, binary key", Key: []byte("\xff\x00"), Reason: format.RejectKey, Err: "neither JSON nor UTF-8"},
		{Name: "tombstone without a key", Reason: format.RejectKey, Err: "no Kafka key"},
	}).Rows
	rows += formattest.Check(t, decTwo, []formattest.Case{
		{Name: "two fields", Value: []byte(`{"id":1,"region":"eu"}`), Want: keyindex.AppendInt(keyindex.AppendString(nil, "eu"), 1)},
		{Name: "tombstone, object key", Key: []byte(`{"region":"eu","id":1}`), Want: keyindex.AppendInt(keyindex.AppendString(nil, "eu"), 1), Delete: true},
		{Name: "tombstone, text key for two fields", Key: []byte(`eu`), Reason: format.RejectKey, Err: "not a JSON object with the key fields region, id"},
	}).Rows
	if rows != 6 {
		t.Errorf("rows %d, want 6", rows)
	}
}
