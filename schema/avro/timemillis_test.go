package avro

import (
	"testing"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// TestTimeMillisInMicros: a time-millis is in microseconds only in an
// INT64 TIME(MICROS) leaf (schema.WidenTimeMillis's), not in its own
// INT32 TIME(MILLIS) nor in a time-micros's leaf, and other types never.
func TestTimeMillisInMicros(t *testing.T) {
	ms := &Type{Kind: Int, Logical: TimeMillis}
	us := &Type{Kind: Long, Logical: TimeMicros}
	leaf := func(p meta.Type, u schema.TimeUnit) *schema.Node {
		return &schema.Node{Physical: p, Logical: schema.Logical{Kind: schema.Time, Unit: u, UTC: true}}
	}
	wide, own := leaf(meta.TypeInt64, schema.Micros), leaf(meta.TypeInt32, schema.Millis)
	for _, c := range []struct {
		name string
		t    *Type
		n    *schema.Node
		want bool
	}{
		{"widened", ms, wide, true},
		{"own column", ms, own, false},
		{"no column", ms, nil, false},
		{"time-micros", us, wide, false},
		{"timestamp column", ms, &schema.Node{Physical: meta.TypeInt64, Logical: schema.Logical{Kind: schema.Timestamp, Unit: schema.Micros}}, false},
	} {
		if got := TimeMillisInMicros(c.t, c.n); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
