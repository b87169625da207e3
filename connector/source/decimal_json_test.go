package source

import (
	"context"
	"testing"
)

// TestReplayDecimalsAsNumbers: a JSON record's numbers sunk into DECIMAL
// columns (INT32, INT64 and FIXED_LEN_BYTE_ARRAY) come back as JSON
// numbers with the column's scale, on the columnar path and on
// reader.Rows's (which a MAP of integer keys sends the file to).
func TestReplayDecimalsAsNumbers(t *testing.T) {
	const decimals = `
  optional int32 price (DECIMAL(9,4));
  optional int64 amount (DECIMAL(18,2));
  optional fixed_len_byte_array(16) big (DECIMAL(38,10));
  optional group lst (LIST) { repeated group list { optional int32 element (DECIMAL(5,1)); } }`
	values := []string{
		`{"price":1.5,"amount":-0.01,"big":12345678901234567890.5,"lst":[1,2.5,null]}`,
		`{"price":-0.0001,"amount":0,"big":-1e-10,"lst":[]}`,
		`{"price":0}`,
	}
	want := []string{
		`{"price":1.5000,"amount":-0.01,"big":12345678901234567890.5000000000,"lst":[1.0,2.5,null]}`,
		`{"price":-0.0001,"amount":0.00,"big":-0.0000000001,"lst":[]}`,
		`{"price":0.0000}`,
	}
	for _, path := range []struct {
		name, extra string
	}{
		{"columnar", ""},
		{"rows", "\n  optional group m (MAP) { repeated group key_value { required int32 key; optional int32 value; } }"},
	} {
		t.Run(path.name, func(t *testing.T) {
			dir := t.TempDir()
			var recs []srcRecord
			for i, v := range values {
				recs = append(recs, srcRecord{topic: "dec", partition: 0, offset: int64(i), ms: int64(1000 + i), value: []byte(v)})
			}
			writeFileWith(t, dir, sinkKey("dec", 0, 0), "message m {"+decimals+path.extra+"\n}", recs, 2)
			c := &collector{}
			a := &archiveDir{dir: dir}
			if _, err := a.run(t, context.Background(), Options{}, openDir(t, dir), c); err != nil {
				t.Fatal(err)
			}
			if len(c.msgs) != len(want) {
				t.Fatalf("%d messages, want %d", len(c.msgs), len(want))
			}
			for i, m := range c.msgs {
				if string(m.Value) != want[i] {
					t.Errorf("message %d: %s, want %s", i, m.Value, want[i])
				}
			}
		})
	}
}
