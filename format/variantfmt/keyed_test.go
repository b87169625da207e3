package variantfmt_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/format/variantfmt"
	"github.com/pqsink/pqsink/rowgroup"
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
	var buf *format.Buffers
	for _, c := range []struct {
		name       string
		two        bool
		key, value string // value "": a tombstone
		want       []byte
		err        string
	}{
		{name: "int", value: `{"id":7,"x":[1,{"id":8}]}`, want: keyindex.AppendInt(nil, 7)},
		{name: "integral float is the int", value: `{"id":7.0}`, want: keyindex.AppendInt(nil, 7)},
		{name: "float", value: `{"id":7.5}`, want: keyindex.AppendFloat(nil, 7.5)},
		{name: "string", value: `{"id":"7"}`, want: keyindex.AppendString(nil, "7")},
		{name: "bool", value: `{"id":false}`, want: keyindex.AppendBool(nil, false)},
		{name: "two fields", two: true, value: `{"id":1,"region":"eu"}`, want: keyindex.AppendInt(keyindex.AppendString(nil, "eu"), 1)},
		{name: "missing", value: `{"x":1}`, err: "key field id is missing"},
		{name: "null", value: `{"id":null}`, err: "key field id is missing or null"},
		{name: "object", value: `{"id":{}}`, err: "not a scalar"},
		{name: "not an object", value: `7`, err: "not a JSON object"},
		{name: "tombstone, JSON number key", key: `7`, want: keyindex.AppendInt(nil, 7)},
		{name: "tombstone, JSON string key", key: `"7"`, want: keyindex.AppendString(nil, "7")},
		{name: "tombstone, text key", key: `user-7`, want: keyindex.AppendString(nil, "user-7")},
		{name: "tombstone, object key", two: true, key: `{"region":"eu","id":1}`, want: keyindex.AppendInt(keyindex.AppendString(nil, "eu"), 1)},
		{name: "tombstone, text key for two fields", two: true, key: `eu`, err: "not a JSON object with the key fields region, id"},
		{name: "tombstone, binary key", key: "\xff\x00", err: "neither JSON nor UTF-8"},
		{name: "tombstone without a key", err: "no Kafka key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dec := decOne
			if c.two {
				dec = decTwo
			}
			var value []byte
			if c.value != "" {
				value = []byte(c.value)
			}
			ch, rej, err := dec.DecodeChange(context.Background(), []byte(c.key), value, 1)
			if err != nil {
				t.Fatal(err)
			}
			if c.err != "" {
				if rej == nil || rej.Reason != format.RejectKey || !strings.Contains(rej.Error(), c.err) {
					t.Fatalf("change %+v, rejection %v, want reason key containing %q", ch, rej, c.err)
				}
				return
			}
			if rej != nil {
				t.Fatal(rej)
			}
			if !bytes.Equal(ch.Key, c.want) || ch.Delete != (value == nil) {
				t.Fatalf("key %x delete %v, want %x", ch.Key, ch.Delete, c.want)
			}
			if ch.Delete {
				return
			}
			if buf == nil {
				if buf, err = dec.NewBuffers(ch.Row); err != nil {
					t.Fatal(err)
				}
			}
			if err := dec.Fits(buf, ch.Row).Append(ch.Row.Payload, (*rowgroup.Envelope)(nil)); err != nil {
				t.Fatal(err)
			}
		})
	}
	if buf == nil || buf.Group.NumRows() != 6 {
		t.Errorf("rows %v, want 6", buf)
	}
}
