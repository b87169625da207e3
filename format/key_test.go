package format_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/table/keyindex"
)

const keySchema = `message row {
  required int64 id;
  required int32 small;
  required int32 u (INTEGER(32,false));
  required binary region (STRING);
  required boolean flag;
  required double score;
  required float f32;
  required binary raw;
  required fixed_len_byte_array(16) uid (UUID);
  required int64 at (TIMESTAMP(MICROS,true));
  required int32 day (DATE);
  optional binary name (STRING);
  required int64 big (INTEGER(64,false));
  required fixed_len_byte_array(8) amount (DECIMAL(18,2));
  required group nested { required int64 a; }
  repeated int64 tags;
}`

func mustSchema(t *testing.T, text string) *schema.Schema {
	t.Helper()
	s, err := schema.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestKeyLeaves: key fields must be top-level, required, primitive fields
// of a type the key encoding covers, each named once; the error names
// the field and says why.
func TestKeyLeaves(t *testing.T) {
	s := mustSchema(t, keySchema)
	for _, c := range []struct {
		fields []string
		err    string // "": accepted
	}{
		{[]string{"id"}, ""},
		{[]string{"region", "id", "flag", "score", "f32", "raw", "uid", "at", "day", "small", "u"}, ""},
		{nil, "no key fields"},
		{[]string{"id", "id"}, "key field id: listed twice"},
		{[]string{"missing"}, "key field missing: not a field of the schema"},
		{[]string{"name"}, "key field name: optional"},
		{[]string{"nested"}, "key field nested: not a primitive field"},
		{[]string{"nested.a"}, "key field nested.a: a key field is a top-level field"},
		{[]string{"tags"}, "key field tags: not a primitive field"},
		{[]string{"big"}, "key field big: an unsigned 64-bit integer"},
		{[]string{"amount"}, "key field amount: of type"},
		{[]string{""}, "empty name"},
	} {
		_, err := format.KeyLeaves(s, c.fields)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%v: %v", c.fields, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%v: error %v, want %q", c.fields, err, c.err)
		}
	}
}

// TestJSONKey reads keys from JSON objects as the shredder reads their
// columns, each family to its canonical encoding; a key that cannot be
// read is an error naming the field.
func TestJSONKey(t *testing.T) {
	s := mustSchema(t, keySchema)
	uid := [16]byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0}
	for _, c := range []struct {
		name   string
		fields []string
		text   string
		want   []byte // nil: an error containing err
		err    string
	}{
		{"int", []string{"id"}, `{"name":"x","id":42}`, keyindex.AppendInt(nil, 42), ""},
		{"negative int32", []string{"small"}, `{"small":-7}`, keyindex.AppendInt(nil, -7), ""},
		{"unsigned int32", []string{"u"}, `{"u":4294967295}`, keyindex.AppendInt(nil, 4294967295), ""},
		{"two fields in key order", []string{"region", "id"}, `{"id":1,"region":"eu"}`, keyindex.AppendInt(keyindex.AppendString(nil, "eu"), 1), ""},
		{"string with a NUL", []string{"region"}, `{"region":"a\u0000b"}`, keyindex.AppendString(nil, "a\x00b"), ""},
		{"bool", []string{"flag"}, `{"flag":true}`, keyindex.AppendBool(nil, true), ""},
		{"double", []string{"score"}, `{"score":-2.5}`, keyindex.AppendFloat(nil, -2.5), ""},
		{"float widened", []string{"f32"}, `{"f32":0.5}`, keyindex.AppendFloat(nil, 0.5), ""},
		{"uuid", []string{"uid"}, `{"uid":"12345678-9abc-def0-1234-56789abcdef0"}`, keyindex.AppendUUID(nil, uid), ""},
		{"timestamp as its column holds it", []string{"at"}, `{"at":"2024-01-02T03:04:05.000006Z"}`, keyindex.AppendInt(nil, 1704164645000006), ""},
		{"date", []string{"day"}, `{"day":"1970-01-03"}`, keyindex.AppendInt(nil, 2), ""},
		{"nested members are not the key", []string{"id"}, `{"nested":{"id":1},"id":2}`, keyindex.AppendInt(nil, 2), ""},
		{"missing", []string{"id"}, `{"name":"x"}`, nil, "key field id is missing"},
		{"null", []string{"id"}, `{"id":null}`, nil, "key field id is null"},
		{"wrong type", []string{"id"}, `{"id":"seven"}`, nil, "key field id"},
		{"fraction into an int", []string{"id"}, `{"id":1.5}`, nil, "key field id"},
		{"object", []string{"id"}, `{"id":{"a":1}}`, nil, "key field id is not a scalar"},
		{"twice", []string{"id"}, `{"id":1,"id":2}`, nil, "key field id appears twice"},
		{"not an object", []string{"id"}, `[1]`, nil, "not a JSON object"},
		{"bad JSON", []string{"id"}, `{"id":1`, nil, ""},
		{"trailing value", []string{"id"}, `{"id":1} 2`, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			leaves, err := format.KeyLeaves(s, c.fields)
			if err != nil {
				t.Fatal(err)
			}
			jk, err := format.NewJSONKey(leaves)
			if err != nil {
				t.Fatal(err)
			}
			got, err := jk.Append([]byte("prefix"), []byte(c.text))
			if c.want == nil {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("key %x, error %v, want an error containing %q", got, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, append([]byte("prefix"), c.want...)) {
				t.Errorf("key %x, want prefix+%x", got, c.want)
			}
		})
	}
}

// TestJSONKafkaKey: a tombstone's key from its Kafka key, a JSON object
// (with or without Kafka Connect's schema and payload), or for one field
// its plain bytes; the same key as the value's.
func TestJSONKafkaKey(t *testing.T) {
	s := mustSchema(t, keySchema)
	for _, c := range []struct {
		name   string
		fields []string
		key    string
		want   []byte
		err    string
	}{
		{"object", []string{"id"}, `{"id":1001}`, keyindex.AppendInt(nil, 1001), ""},
		{"connect schema and payload", []string{"id"}, `{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}]},"payload":{"id":1001}}`, keyindex.AppendInt(nil, 1001), ""},
		{"object of two fields", []string{"region", "id"}, ` {"region":"eu","id":3}`, keyindex.AppendInt(keyindex.AppendString(nil, "eu"), 3), ""},
		{"plain digits", []string{"id"}, `1001`, keyindex.AppendInt(nil, 1001), ""},
		{"plain negative int32", []string{"small"}, `-12`, keyindex.AppendInt(nil, -12), ""},
		{"plain string", []string{"region"}, `eu-west`, keyindex.AppendString(nil, "eu-west"), ""},
		{"plain bytes", []string{"raw"}, "\x00\x01", keyindex.AppendBytes(nil, []byte{0, 1}), ""},
		{"plain not digits", []string{"id"}, `x1`, nil, "not the decimal digits of a 64-bit integer"},
		{"plain too large for an int", []string{"small"}, `4294967296`, nil, "32-bit integer"},
		{"plain string not UTF-8", []string{"region"}, "\xff", nil, "not UTF-8"},
		{"plain for a timestamp", []string{"at"}, `1`, nil, "a plain Kafka key cannot be"},
		{"plain for two fields", []string{"region", "id"}, `eu`, nil, "not a JSON object with the key fields region, id"},
		{"no key", []string{"id"}, ``, nil, "no Kafka key"},
		{"object without the field", []string{"id"}, `{"other":1}`, nil, "key field id is missing"},
		{"connect payload without the field", []string{"id"}, `{"schema":{},"payload":{"other":1}}`, nil, "key field id is missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			leaves, err := format.KeyLeaves(s, c.fields)
			if err != nil {
				t.Fatal(err)
			}
			jk, err := format.NewJSONKey(leaves)
			if err != nil {
				t.Fatal(err)
			}
			got, err := jk.AppendKafkaKey(nil, []byte(c.key))
			if c.want == nil {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("key %x, error %v, want an error containing %q", got, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, c.want) {
				t.Errorf("key %x, want %x", got, c.want)
			}
		})
	}
}

// FuzzJSONKey: untrusted values and Kafka keys never panic, and a key
// read is a canonical key of the fields' count.
func FuzzJSONKey(f *testing.F) {
	for _, s := range []string{`{"id":1,"region":"eu"}`, `{"schema":{},"payload":{"id":-1,"region":"\u0000"}}`, `7`, `{"id":1e3,"region":1}`, `{"id":1,"id":2}`, ``} {
		f.Add([]byte(s))
	}
	s, err := schema.Parse(`message m { required int64 id; required binary region (STRING); }`)
	if err != nil {
		f.Fatal(err)
	}
	leaves, err := format.KeyLeaves(s, []string{"id", "region"})
	if err != nil {
		f.Fatal(err)
	}
	one, err := format.KeyLeaves(s, []string{"region"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, l := range [][]*schema.Node{leaves, one} {
			jk, err := format.NewJSONKey(l)
			if err != nil {
				t.Fatal(err)
			}
			for _, read := range []func([]byte, []byte) ([]byte, error){jk.Append, jk.AppendKafkaKey} {
				key, err := read(nil, b)
				if err != nil {
					continue
				}
				vals, err := keyindex.DecodeKey(key)
				if err != nil || len(vals) != len(l) {
					t.Fatalf("key %x of %q: %v, %v", key, b, vals, err)
				}
			}
		}
	})
}
