package table

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

func le32(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }
func le64(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

func TestBound(t *testing.T) {
	str := schema.Logical{Kind: schema.String}
	millis := schema.Logical{Kind: schema.Timestamp, Unit: schema.Millis, UTC: true}
	dec := schema.Logical{Kind: schema.Decimal, Precision: 9, Scale: 2}
	for _, tc := range []struct {
		name  string
		node  *schema.Node
		typ   iceberg.Type
		in    []byte
		exact bool
		want  []byte // nil: no bound
	}{
		{"int", schema.Leaf("x", schema.Required, meta.TypeInt32, schema.Logical{}), iceberg.PrimitiveTypes.Int32, le32(-7), true, le32(-7)},
		{"int under long", schema.Leaf("x", schema.Required, meta.TypeInt32, schema.Logical{}), iceberg.PrimitiveTypes.Int64, le32(-7), true, le64(-7)},
		{"float under double", schema.Leaf("x", schema.Required, meta.TypeFloat, schema.Logical{}), iceberg.PrimitiveTypes.Float64,
			binary.LittleEndian.AppendUint32(nil, math.Float32bits(1.5)), true, binary.LittleEndian.AppendUint64(nil, math.Float64bits(1.5))},
		{"millis to micros", schema.Leaf("t", schema.Required, meta.TypeInt64, millis), iceberg.PrimitiveTypes.TimestampTz, le64(1700000000123), true, le64(1700000000123000)},
		{"micros kept", schema.Leaf("t", schema.Required, meta.TypeInt64, schema.Logical{Kind: schema.Timestamp, Unit: schema.Micros, UTC: true}), iceberg.PrimitiveTypes.TimestampTz, le64(5), true, le64(5)},
		{"millis overflow", schema.Leaf("t", schema.Required, meta.TypeInt64, millis), iceberg.PrimitiveTypes.TimestampTz, le64(math.MaxInt64), true, nil},
		{"decimal int32", schema.Leaf("d", schema.Required, meta.TypeInt32, dec), iceberg.DecimalTypeOf(9, 2), le32(-129), true, []byte{0xff, 0x7f}},
		{"decimal int64 small", schema.Leaf("d", schema.Required, meta.TypeInt64, dec), iceberg.DecimalTypeOf(9, 2), le64(127), true, []byte{0x7f}},
		{"decimal fixed trimmed", schema.FixedLeaf("d", schema.Required, 8, dec), iceberg.DecimalTypeOf(9, 2), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x80}, true, []byte{0x80}},
		{"string", schema.Leaf("s", schema.Required, meta.TypeByteArray, str), iceberg.PrimitiveTypes.String, []byte("abc"), true, []byte("abc")},
		{"truncated string not UTF-8", schema.Leaf("s", schema.Required, meta.TypeByteArray, str), iceberg.PrimitiveTypes.String, []byte{'a', 0xc3}, false, nil},
		{"truncated string UTF-8", schema.Leaf("s", schema.Required, meta.TypeByteArray, str), iceberg.PrimitiveTypes.String, []byte("ab"), false, []byte("ab")},
		{"binary", schema.Leaf("b", schema.Required, meta.TypeByteArray, schema.Logical{}), iceberg.PrimitiveTypes.Binary, []byte{0, 0xff}, false, []byte{0, 0xff}},
		{"bool", schema.Leaf("b", schema.Required, meta.TypeBoolean, schema.Logical{}), iceberg.PrimitiveTypes.Bool, []byte{1}, true, []byte{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := bound(tc.node, tc.typ, tc.in, tc.exact)
			if ok != (tc.want != nil) || !bytes.Equal(got, tc.want) {
				t.Errorf("bound = %x, %v; want %x", got, ok, tc.want)
			}
			if tc.want == nil {
				return
			}
			// Iceberg reads it back as a literal of the type.
			if _, err := iceberg.LiteralFromBytes(tc.typ, got); err != nil {
				t.Errorf("iceberg-go cannot read the bound: %v", err)
			}
		})
	}
}

func TestTwosComplement(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, -32768, -32769, math.MaxInt64, math.MinInt64} {
		b := toTwos(big.NewInt(v))
		if got := fromTwos(b); got.Int64() != v {
			t.Errorf("%d: round trip gives %s via %x", v, got, b)
		}
		// Shortest: one byte less would not hold it.
		if len(b) > 1 {
			if short := fromTwos(b[1:]); short.Int64() == v {
				t.Errorf("%d: %x is not the shortest form", v, b)
			}
		}
	}
	if c := compareBound(iceberg.DecimalTypeOf(9, 2), toTwos(big.NewInt(-300)), toTwos(big.NewInt(2))); c >= 0 {
		t.Errorf("decimal -3.00 does not sort before 0.02")
	}
}

func TestIcebergSchema(t *testing.T) {
	variant := schema.Group("payload", schema.Optional, schema.Logical{Kind: schema.Variant},
		schema.Leaf("metadata", schema.Required, meta.TypeByteArray, schema.Logical{}),
		schema.Leaf("value", schema.Required, meta.TypeByteArray, schema.Logical{}))
	for _, tc := range []struct {
		name    string
		version int
		fields  []*schema.Node
		want    string // the Iceberg schema's text, or the error's
	}{
		{"map and list", 2, []*schema.Node{
			schema.Group("m", schema.Optional, schema.Logical{Kind: schema.Map},
				schema.Group("key_value", schema.Repeated, schema.Logical{},
					schema.Leaf("key", schema.Required, meta.TypeByteArray, schema.Logical{Kind: schema.String}),
					schema.Leaf("value", schema.Optional, meta.TypeInt32, schema.Logical{Kind: schema.Date}))),
			schema.Group("l", schema.Required, schema.Logical{Kind: schema.List},
				schema.Group("list", schema.Repeated, schema.Logical{},
					schema.FixedLeaf("element", schema.Optional, 16, schema.Logical{Kind: schema.UUID}))),
		}, "map<string, date>"},
		{"variant v3", 3, []*schema.Node{variant}, "variant"},
		{"variant v2", 2, []*schema.Node{variant}, "field payload: a VARIANT column needs table.format_version 3"},
		{"int96", 2, []*schema.Node{schema.Leaf("t", schema.Required, meta.TypeInt96, schema.Logical{})}, "field t: INT96 has no Iceberg type"},
		{"time millis", 2, []*schema.Node{schema.Leaf("t", schema.Required, meta.TypeInt32, schema.Logical{Kind: schema.Time, Unit: schema.Millis, UTC: true})}, "field t: TIME(MILLIS,true) on INT32 has no Iceberg type"},
		{"unsigned 64", 2, []*schema.Node{schema.Leaf("u", schema.Required, meta.TypeInt64, schema.Logical{Kind: schema.Int, BitWidth: 64})}, "field u: INTEGER(64,false) on INT64 has no Iceberg type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := schema.New("m", tc.fields...)
			if err != nil {
				t.Fatal(err)
			}
			is, err := icebergSchema(s, tc.version)
			var got string
			if err != nil {
				got = err.Error()
			} else {
				got = is.String()
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("got %s, want %q in it", got, tc.want)
			}
			if err != nil {
				return
			}
			// The schema with the Iceberg ids converts back to itself.
			ws, err := withFieldIDs(s, is, tc.version)
			if err != nil {
				t.Fatal(err)
			}
			again, err := icebergSchema(ws, tc.version)
			if err != nil || !again.Equals(is) {
				t.Errorf("round trip: %v, %v", again, err)
			}
		})
	}
}
