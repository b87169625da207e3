package keyindex

import (
	"bytes"
	"math"
	"reflect"
	"testing"
)

func TestKeyEncoding(t *testing.T) {
	cases := []struct {
		name string
		key  []byte
		want []any
	}{
		{"int", AppendInt(nil, -5), []any{int64(-5)}},
		{"int min and max", AppendInt(AppendInt(nil, math.MinInt64), math.MaxInt64), []any{int64(math.MinInt64), int64(math.MaxInt64)}},
		{"bool", AppendBool(AppendBool(nil, true), false), []any{true, false}},
		{"float", AppendFloat(nil, -1.5), []any{-1.5}},
		{"string with zero bytes", AppendString(nil, "a\x00b\x00"), []any{"a\x00b\x00"}},
		{"empty string then int", AppendInt(AppendString(nil, ""), 7), []any{"", int64(7)}},
		{"bytes", AppendBytes(nil, []byte{0, 1, 0xFF}), []any{[]byte{0, 1, 0xFF}}},
		{"uuid", AppendUUID(nil, [16]byte{1, 2, 3}), []any{UUID{1, 2, 3}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodeKey(c.key)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("DecodeKey = %#v, want %#v", got, c.want)
			}
		})
	}
}

func TestKeyCanonical(t *testing.T) {
	cases := []struct {
		name string
		a, b []byte
	}{
		{"int and long of one value", AppendInt(nil, int64(int32(-7))), AppendInt(nil, -7)},
		{"float and double of one value", AppendFloat(nil, float64(float32(0.5))), AppendFloat(nil, 0.5)},
		{"-0 and +0", AppendFloat(nil, math.Copysign(0, -1)), AppendFloat(nil, 0)},
		{"NaNs", AppendFloat(nil, math.NaN()), AppendFloat(nil, math.Float64frombits(0xfff0000000000123))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !bytes.Equal(c.a, c.b) {
				t.Errorf("%x != %x", c.a, c.b)
			}
		})
	}
}

// TestKeyOrder: keys order as their values, field by field.
func TestKeyOrder(t *testing.T) {
	ordered := [][]byte{
		AppendInt(nil, math.MinInt64), AppendInt(nil, -1), AppendInt(nil, 0), AppendInt(nil, 1), AppendInt(nil, math.MaxInt64),
		AppendFloat(nil, math.Inf(-1)), AppendFloat(nil, -2), AppendFloat(nil, -1e-300), AppendFloat(nil, 0), AppendFloat(nil, 1e-300), AppendFloat(nil, 3), AppendFloat(nil, math.Inf(1)),
		AppendString(nil, ""), AppendString(nil, "\x00"), AppendString(nil, "\x00\x00"), AppendString(nil, "\x01"), AppendString(nil, "a"), AppendString(nil, "ab"), AppendString(nil, "b"),
		AppendInt(AppendString(nil, "k"), 1), AppendInt(AppendString(nil, "k"), 2), AppendInt(AppendString(nil, "k\x00"), 0),
	}
	for i := 1; i < len(ordered); i++ {
		if bytes.Compare(ordered[i-1], ordered[i]) >= 0 {
			t.Errorf("key %d (%x) is not before key %d (%x)", i-1, ordered[i-1], i, ordered[i])
		}
	}
}

func TestDecodeKeyRejects(t *testing.T) {
	cases := []struct {
		name string
		key  []byte
	}{
		{"empty", nil},
		{"unknown tag", []byte{0x09, 1}},
		{"short int", []byte{tagInt, 1, 2}},
		{"bool of 2", []byte{tagBool, 2}},
		{"unterminated string", []byte{tagString, 'a', 'b'}},
		{"string with a bad escape", []byte{tagString, 'a', 0, 7}},
		{"short uuid", []byte{tagUUID, 1}},
		{"non-canonical NaN", []byte{tagFloat, 0xff, 0xf0, 0, 0, 0, 0, 0x01, 0x23}},
		{"negative zero", []byte{tagFloat, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if vals, err := DecodeKey(c.key); err == nil {
				t.Errorf("DecodeKey(%x) = %v, want an error", c.key, vals)
			}
		})
	}
}

// FuzzDecodeKey: DecodeKey never panics, and a key it accepts is
// canonical: encoding its values again gives its bytes.
func FuzzDecodeKey(f *testing.F) {
	f.Add(AppendInt(AppendString(nil, "user\x00"), 42))
	f.Add(AppendFloat(AppendBool(nil, true), -0.25))
	f.Add(AppendUUID(AppendBytes(nil, []byte{0, 0xFF}), [16]byte{9}))
	f.Fuzz(func(t *testing.T, key []byte) {
		vals, err := DecodeKey(key)
		if err != nil {
			return
		}
		var again []byte
		for _, v := range vals {
			switch v := v.(type) {
			case bool:
				again = AppendBool(again, v)
			case int64:
				again = AppendInt(again, v)
			case float64:
				again = AppendFloat(again, v)
			case string:
				again = AppendString(again, v)
			case []byte:
				again = AppendBytes(again, v)
			case UUID:
				again = AppendUUID(again, v)
			default:
				t.Fatalf("DecodeKey returned a %T", v)
			}
		}
		if !bytes.Equal(again, key) {
			t.Errorf("key %x decodes to %v, which encodes to %x", key, vals, again)
		}
	})
}
