package schema

import (
	"testing"

	"github.com/pqsink/pqsink/meta"
)

// TestNarrowNanos narrows the nanosecond timestamps of a schema, at the
// top, in a group and in a list, and leaves every other leaf, field ids
// and repetitions as they were; a schema without any comes back itself.
func TestNarrowNanos(t *testing.T) {
	ns := func(name string, rep Repetition, utc bool) *Node {
		return Leaf(name, rep, meta.TypeInt64, Logical{Kind: Timestamp, Unit: Nanos, UTC: utc})
	}
	s, err := New("m",
		ns("ts", Optional, true).WithFieldID(1),
		Group("g", Required, Logical{}, ns("local", Required, false).WithFieldID(3),
			Leaf("ms", Optional, meta.TypeInt64, Logical{Kind: Timestamp, Unit: Millis, UTC: true})).WithFieldID(2),
		Group("many", Required, Logical{Kind: List}, Group("list", Repeated, Logical{}, ns("element", Required, true))).WithFieldID(4),
		Leaf("plain", Required, meta.TypeInt64, Logical{}).WithFieldID(5),
	)
	if err != nil {
		t.Fatal(err)
	}
	n, changed, err := NarrowNanos(s)
	if err != nil || !changed {
		t.Fatalf("NarrowNanos: changed %v, %v", changed, err)
	}
	want := map[string]struct {
		unit TimeUnit
		utc  bool
	}{"ts": {Micros, true}, "g.local": {Micros, false}, "g.ms": {Millis, true}, "many.list.element": {Micros, true}}
	for _, leaf := range n.Leaves() {
		old := s.Leaf(leaf.PathString())
		if leaf.FieldID != old.FieldID || leaf.Repetition != old.Repetition || leaf.Physical != old.Physical {
			t.Errorf("%s: field id, repetition or type changed: %+v, was %+v", leaf.PathString(), leaf, old)
		}
		w, ok := want[leaf.PathString()]
		if !ok {
			if leaf.Logical != old.Logical {
				t.Errorf("%s: %s, was %s", leaf.PathString(), leaf.Logical, old.Logical)
			}
			continue
		}
		if leaf.Logical.Kind != Timestamp || leaf.Logical.Unit != w.unit || leaf.Logical.UTC != w.utc {
			t.Errorf("%s: %s, want TIMESTAMP(%v) UTC %v", leaf.PathString(), leaf.Logical, w.unit, w.utc)
		}
	}
	if s.Leaf("ts").Logical.Unit != Nanos {
		t.Error("NarrowNanos changed the schema it was given")
	}
	same, changed, err := NarrowNanos(n)
	if err != nil || changed || same != n {
		t.Errorf("a schema without nanoseconds: changed %v, same %v, %v", changed, same == n, err)
	}
}

// TestWidenTimeMillis makes the INT32 TIME(MILLIS) leaves INT64
// TIME(MICROS), at the top and in a list, and leaves the others; a schema
// without any comes back itself.
func TestWidenTimeMillis(t *testing.T) {
	tm := func(name string, utc bool) *Node {
		return Leaf(name, Optional, meta.TypeInt32, Logical{Kind: Time, Unit: Millis, UTC: utc})
	}
	s, err := New("m",
		tm("at", true).WithFieldID(1),
		Group("many", Required, Logical{Kind: List}, Group("list", Repeated, Logical{}, tm("element", false))).WithFieldID(2),
		Leaf("us", Optional, meta.TypeInt64, Logical{Kind: Time, Unit: Micros, UTC: true}).WithFieldID(3),
		Leaf("ms", Optional, meta.TypeInt64, Logical{Kind: Timestamp, Unit: Millis, UTC: true}).WithFieldID(4),
	)
	if err != nil {
		t.Fatal(err)
	}
	w, changed, err := WidenTimeMillis(s)
	if err != nil || !changed {
		t.Fatalf("WidenTimeMillis: changed %v, %v", changed, err)
	}
	for _, c := range []struct {
		path string
		phys meta.Type
		l    Logical
	}{
		{"at", meta.TypeInt64, Logical{Kind: Time, Unit: Micros, UTC: true}},
		{"many.list.element", meta.TypeInt64, Logical{Kind: Time, Unit: Micros}},
		{"us", meta.TypeInt64, Logical{Kind: Time, Unit: Micros, UTC: true}},
		{"ms", meta.TypeInt64, Logical{Kind: Timestamp, Unit: Millis, UTC: true}},
	} {
		l := w.Leaf(c.path)
		if l.Physical != c.phys || l.Logical != c.l || l.FieldID != s.Leaf(c.path).FieldID {
			t.Errorf("%s: %s %s id %d, want %s %s id %d", c.path, l.Physical, l.Logical, l.FieldID, c.phys, c.l, s.Leaf(c.path).FieldID)
		}
	}
	if s.Leaf("at").Physical != meta.TypeInt32 {
		t.Error("WidenTimeMillis changed the schema it was given")
	}
	if same, changed, err := WidenTimeMillis(w); err != nil || changed || same != w {
		t.Errorf("a schema without TIME(MILLIS): changed %v, same %v, %v", changed, same == w, err)
	}
}
