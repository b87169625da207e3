package schema

import "github.com/pqsink/pqsink/meta"

// NarrowNanos returns s with every INT64 TIMESTAMP(NANOS) leaf made
// TIMESTAMP(MICROS), Iceberg's timestamptz and timestamp, which format
// version 2 tables have (their nanosecond types are version 3's), and
// reports whether any leaf changed; s itself comes back when none did.
// Whoever fills a narrowed column writes microseconds, and decides what
// becomes of the nanoseconds below them.
func NarrowNanos(s *Schema) (*Schema, bool, error) {
	if !hasNanos(s.fields) {
		return s, false, nil
	}
	n, err := New(s.name, narrowFields(s.fields)...)
	if err != nil {
		return nil, false, err
	}
	return n, true, nil
}

func isNanosTimestamp(n *Node) bool {
	return n.IsLeaf() && n.Physical == meta.TypeInt64 && n.Logical.Kind == Timestamp && n.Logical.Unit == Nanos
}

func hasNanos(fields []*Node) bool {
	for _, f := range fields {
		if isNanosTimestamp(f) || hasNanos(f.Fields) {
			return true
		}
	}
	return false
}

// narrowFields copies the nodes New needs (it copies them again) with the
// nanosecond timestamps in microseconds.
func narrowFields(fields []*Node) []*Node {
	out := make([]*Node, len(fields))
	for i, f := range fields {
		c := *f
		switch {
		case isNanosTimestamp(f):
			c.Logical.Unit = Micros
		case len(f.Fields) > 0:
			c.Fields = narrowFields(f.Fields)
		}
		out[i] = &c
	}
	return out
}
