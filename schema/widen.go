package schema

import (
	"math"

	"github.com/pqsink/pqsink/meta"
)

// WidenMillis returns s with every INT64 TIMESTAMP(MILLIS) leaf made
// TIMESTAMP(MICROS), the unit Iceberg's timestamp types take in Parquet,
// and reports whether any leaf changed; s itself comes back when none
// did. Whoever fills a widened column writes microseconds.
func WidenMillis(s *Schema) (*Schema, bool, error) { return retime(s, Millis) }

// NarrowNanos returns s with every INT64 TIMESTAMP(NANOS) leaf made
// TIMESTAMP(MICROS), Iceberg's timestamptz and timestamp, which format
// version 2 tables have (their nanosecond types are version 3's), and
// reports whether any leaf changed; s itself comes back when none did.
// Whoever fills a narrowed column writes microseconds, and decides what
// becomes of the nanoseconds below them.
func NarrowNanos(s *Schema) (*Schema, bool, error) { return retime(s, Nanos) }

// NanosBack returns us·mul, the nanoseconds of a floored microsecond
// value; the few microseconds below int64's nanoseconds (a value within
// 808 nanoseconds of its least, floored) give its least, the value cut
// to a microsecond being all that is known of it. Replay renders a
// NarrowNanos column's values with it (mul 1000; 1 for a column that was
// not narrowed).
func NanosBack(us, mul int64) int64 {
	if mul == 1 {
		return us
	}
	if us < math.MinInt64/mul {
		return math.MinInt64
	}
	if us > math.MaxInt64/mul {
		return math.MaxInt64
	}
	return us * mul
}

// FloorMicros is the microsecond at or before ns nanoseconds, as a
// narrowed column holds it, and whether digits below the microsecond
// were cut.
func FloorMicros(ns int64) (us int64, cut bool) {
	us = ns / 1000
	rem := ns % 1000
	if rem < 0 {
		us--
	}
	return us, rem != 0
}

// retime returns s with the INT64 timestamps in unit from made
// microseconds, and whether there were any.
func retime(s *Schema, from TimeUnit) (*Schema, bool, error) {
	if !hasTimestamps(s.fields, from) {
		return s, false, nil
	}
	r, err := New(s.name, retimeFields(s.fields, from)...)
	if err != nil {
		return nil, false, err
	}
	return r, true, nil
}

func isTimestampIn(n *Node, u TimeUnit) bool {
	return n.IsLeaf() && n.Physical == meta.TypeInt64 && n.Logical.Kind == Timestamp && n.Logical.Unit == u
}

func hasTimestamps(fields []*Node, u TimeUnit) bool {
	for _, f := range fields {
		if isTimestampIn(f, u) || hasTimestamps(f.Fields, u) {
			return true
		}
	}
	return false
}

// retimeFields copies the nodes New needs (it copies them again) with
// the timestamps in unit from in microseconds.
func retimeFields(fields []*Node, from TimeUnit) []*Node {
	out := make([]*Node, len(fields))
	for i, f := range fields {
		c := *f
		switch {
		case isTimestampIn(f, from):
			c.Logical.Unit = Micros
		case len(f.Fields) > 0:
			c.Fields = retimeFields(f.Fields, from)
		}
		out[i] = &c
	}
	return out
}

// WidenTimeMillis returns s with every INT32 TIME(MILLIS) leaf made INT64
// TIME(MICROS), the unit of Iceberg's time type in Parquet, and reports
// whether any leaf changed; s itself comes back when none did. Whoever
// fills a widened column writes microseconds.
func WidenTimeMillis(s *Schema) (*Schema, bool, error) {
	if !hasTimeMillis(s.fields) {
		return s, false, nil
	}
	r, err := New(s.name, widenTimeFields(s.fields)...)
	if err != nil {
		return nil, false, err
	}
	return r, true, nil
}

func isTimeMillis(n *Node) bool {
	return n.IsLeaf() && n.Physical == meta.TypeInt32 && n.Logical.Kind == Time && n.Logical.Unit == Millis
}

func hasTimeMillis(fields []*Node) bool {
	for _, f := range fields {
		if isTimeMillis(f) || hasTimeMillis(f.Fields) {
			return true
		}
	}
	return false
}

// widenTimeFields is retimeFields for WidenTimeMillis.
func widenTimeFields(fields []*Node) []*Node {
	out := make([]*Node, len(fields))
	for i, f := range fields {
		c := *f
		switch {
		case isTimeMillis(f):
			c.Physical, c.Logical.Unit = meta.TypeInt64, Micros
		case len(f.Fields) > 0:
			c.Fields = widenTimeFields(f.Fields)
		}
		out[i] = &c
	}
	return out
}
