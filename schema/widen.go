package schema

import "github.com/pqsink/pqsink/meta"

// WidenMillis returns s with every INT64 TIMESTAMP(MILLIS) leaf made
// TIMESTAMP(MICROS), the unit Iceberg's timestamp types take in Parquet,
// and reports whether any leaf changed; s itself comes back when none
// did. Whoever fills a widened column writes microseconds.
func WidenMillis(s *Schema) (*Schema, bool, error) {
	if !hasMillis(s.fields) {
		return s, false, nil
	}
	w, err := New(s.name, widenFields(s.fields)...)
	if err != nil {
		return nil, false, err
	}
	return w, true, nil
}

func isMillisTimestamp(n *Node) bool {
	return n.IsLeaf() && n.Physical == meta.TypeInt64 && n.Logical.Kind == Timestamp && n.Logical.Unit == Millis
}

func hasMillis(fields []*Node) bool {
	for _, f := range fields {
		if isMillisTimestamp(f) || hasMillis(f.Fields) {
			return true
		}
	}
	return false
}

// widenFields copies the nodes New needs (it copies them again) with the
// millisecond timestamps in microseconds.
func widenFields(fields []*Node) []*Node {
	out := make([]*Node, len(fields))
	for i, f := range fields {
		c := *f
		switch {
		case isMillisTimestamp(f):
			c.Logical.Unit = Micros
		case len(f.Fields) > 0:
			c.Fields = widenFields(f.Fields)
		}
		out[i] = &c
	}
	return out
}
