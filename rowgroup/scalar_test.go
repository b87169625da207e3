package rowgroup

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/pqsink/pqsink/internal/jsonscan"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// TestScalarConverter: a JSON value converts to the PLAIN bytes of the
// value the shredder writes into the column, and a value the shredder
// refuses is refused.
func TestScalarConverter(t *testing.T) {
	s, err := schema.Parse(`message m {
  required int64 id;
  required int32 small;
  required int64 ts (TIMESTAMP(MILLIS,true));
  required int32 day (DATE);
  required binary name (STRING);
  required fixed_len_byte_array(16) u (UUID);
  required int64 price (DECIMAL(10,2));
  required binary raw;
  required binary doc (JSON);
}`)
	if err != nil {
		t.Fatal(err)
	}
	le64 := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	le32 := func(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }
	for _, tc := range []struct {
		col  string
		kind jsonscan.Kind
		text string
		want []byte // nil: refused
	}{
		{"id", jsonscan.Number, "42", le64(42)},
		{"id", jsonscan.Number, "-9223372036854775808", le64(-9223372036854775808)},
		{"id", jsonscan.Number, "4.2e1", le64(42)},
		{"id", jsonscan.String, "42", nil},
		{"id", jsonscan.Number, "1.5", nil},
		{"small", jsonscan.Number, "2147483648", nil},
		{"small", jsonscan.Number, "-7", le32(-7)},
		{"ts", jsonscan.String, "2026-11-23T10:00:00.123Z", le64(1795428000123)},
		{"ts", jsonscan.Number, "1795428000123", le64(1795428000123)},
		{"day", jsonscan.String, "1970-01-02", le32(1)},
		{"name", jsonscan.String, "DE", []byte("DE")},
		{"name", jsonscan.String, "", []byte{}},
		{"name", jsonscan.Number, "1", nil},
		{"u", jsonscan.String, "f79c3e09-677c-4bbd-a479-3f349cb785e7", []byte{0xf7, 0x9c, 0x3e, 0x09, 0x67, 0x7c, 0x4b, 0xbd, 0xa4, 0x79, 0x3f, 0x34, 0x9c, 0xb7, 0x85, 0xe7}},
		{"price", jsonscan.Number, "12.3", le64(1230)},
		{"price", jsonscan.String, "-0.05", le64(-5)},
		{"price", jsonscan.Number, "0.001", nil},
		{"raw", jsonscan.String, "AAEC", []byte{0, 1, 2}},
		{"raw", jsonscan.String, "!", nil},
	} {
		t.Run(tc.col+" "+tc.text, func(t *testing.T) {
			c, err := NewScalarConverter(s.Lookup(tc.col))
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Plain(tc.kind, []byte(tc.text))
			switch {
			case tc.want == nil && err == nil:
				t.Errorf("converted to %x, want an error", got)
			case tc.want != nil && (err != nil || !bytes.Equal(got, tc.want)):
				t.Errorf("= %x (%v), want %x", got, err, tc.want)
			}
		})
	}
	if _, err := NewScalarConverter(s.Lookup("doc")); err == nil {
		t.Error("a JSON column converted as a scalar")
	}
	// The shredder's options hold: an underflow is refused, unless lossy.
	d := schema.Leaf("d", schema.Required, meta.TypeDouble, schema.Logical{})
	strict, err := NewScalarConverter(d)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := strict.Plain(jsonscan.Number, []byte("1e-400")); err == nil {
		t.Errorf("1e-400 converted to %x without lossy numbers", got)
	}
	lossy, err := NewScalarConverter(d, LossyNumbers())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := lossy.Plain(jsonscan.Number, []byte("1e-400")); err != nil || !bytes.Equal(got, make([]byte, 8)) {
		t.Errorf("1e-400 with lossy numbers = %x (%v), want 0", got, err)
	}
}
