package schemaregistry

import (
	"errors"
	"testing"
)

// TestWire: AppendWire's header splits back into its id and the body
// after it; a value too short or without the magic byte wraps
// ErrWireFormat.
func TestWire(t *testing.T) {
	v := append(AppendWire(nil, 0x01020304), 'x')
	id, body, err := SplitWire(v)
	if err != nil || id != 0x01020304 || string(body) != "x" {
		t.Fatalf("SplitWire: %d %q %v", id, body, err)
	}
	if id, body, err := SplitWire(AppendWire(nil, 7)); err != nil || id != 7 || len(body) != 0 {
		t.Fatalf("SplitWire of a header alone: %d %q %v", id, body, err)
	}
	cases := []struct {
		name  string
		value []byte
		want  string
	}{
		{"empty", nil, "not in the Confluent wire format: 0 bytes, shorter than the 5-byte header"},
		{"short", []byte{0, 1, 2}, "not in the Confluent wire format: 3 bytes, shorter than the 5-byte header"},
		{"no magic byte", []byte{1, 0, 0, 0, 1}, "not in the Confluent wire format: magic byte is 0x01, want 0x00"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := SplitWire(c.value)
			if !errors.Is(err, ErrWireFormat) || err.Error() != c.want {
				t.Errorf("SplitWire(%x): %v, want %q", c.value, err, c.want)
			}
		})
	}
}
