package rowgroup

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/pqsink/pqsink/internal/jsonscan"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// JSONTimestampUnits says that the JSON of some TIMESTAMP columns is in
// another unit than the row group's column: units maps a leaf's path (as
// schema.Node.PathString gives it) to the unit of its JSON, schema.Millis
// or schema.Nanos, and the column must be an INT64 TIMESTAMP(MICROS): the
// columns schema.WidenMillis and schema.NarrowNanos make of a schema
// file's, for a table's files, since Iceberg's timestamps are
// microseconds in Parquet (nanoseconds only in format version 3). Such a
// column reads a number in the JSON's unit and a string at that unit's
// precision, exactly as a column of that unit reads the same JSON, and
// writes microseconds: milliseconds times 1000, where a value that
// microseconds cannot hold fails the record; nanoseconds floored, the
// cut ones counted (JSONCountTruncated). A path may also name an INT64
// TIME(MICROS) column with schema.Millis, one schema.WidenTimeMillis made
// of a TIME(MILLIS): a number is milliseconds of the day and a string
// has at most three fraction digits, and the column takes the value
// times 1000. NewJSONShredder and NewScalarConverter refuse a path that
// names a column of another type; a path the schema lacks is ignored.
// Defaults to none: every column's JSON is in its own unit.
func JSONTimestampUnits(units map[string]schema.TimeUnit) JSONOption {
	return func(o *jsonOptions) error {
		for path, u := range units {
			if u != schema.Millis && u != schema.Nanos {
				return fmt.Errorf("rowgroup: JSON timestamps of %s in %s: only MILLIS and NANOS into MICROS columns are supported", path, u)
			}
		}
		o.units = units
		return nil
	}
}

// The conversion and fast kind of a column JSONTimestampUnits names, after
// the others (a constant added to either list beside them is a duplicate
// case in the switches over them, which the compiler refuses).
const (
	convTimestampMillis = convInterval + 1 // TIMESTAMP(MICROS) from JSON in milliseconds
	convTimestampNanos  = convInterval + 2 // TIMESTAMP(MICROS) from JSON in nanoseconds, floored; the walk only
	convTimeMillis      = convInterval + 3 // TIME(MICROS) from JSON in milliseconds; the walk only
	fastTimestampMillis = fastDecimal + 1  // convTimestampMillis, from a number or an RFC 3339 string
)

// JSONCountTruncated makes a JSONShredder add to c, once per record it
// appends whole, the values of the record's JSONTimestampUnits NANOS
// columns whose digits below the microsecond it cut. Defaults to counting
// none.
func JSONCountTruncated(c *atomic.Int64) JSONOption {
	return func(o *jsonOptions) error {
		o.counter = c
		return nil
	}
}

// countCut adds the record's cut timestamps to the JSONCountTruncated
// counter. Records with a NANOS column take the walk only, so a record
// is counted once.
func (s *JSONShredder) countCut() {
	if s.cut > 0 && s.opts.counter != nil {
		s.opts.counter.Add(s.cut)
	}
}

// retimeLeaf makes leaf plan p, when units names it, read its JSON in
// milliseconds (convTimestampMillis, convTimeMillis) or nanoseconds
// (convTimestampNanos).
func retimeLeaf(p *jsonPlan, units map[string]schema.TimeUnit) error {
	path := p.node.PathString()
	u, ok := units[path]
	if !ok {
		return nil
	}
	l := p.node.Logical
	if p.conv == convTime && u == schema.Millis && p.node.Physical == meta.TypeInt64 && l.Unit == schema.Micros {
		p.conv = convTimeMillis
		l.Unit = u
		p.typeName = l.String()
		return nil
	}
	if p.conv != convTimestamp || p.node.Physical != meta.TypeInt64 || l.Unit != schema.Micros {
		return fmt.Errorf("field %s: JSON timestamps in %s need an INT64 TIMESTAMP(MICROS) column, not %s", path, u, p.typeName)
	}
	p.conv = convTimestampMillis
	if u == schema.Nanos {
		p.conv = convTimestampNanos
	}
	l.Unit = u
	p.typeName = l.String() // messages speak of the type the JSON was written for
	return nil
}

// retimePlans applies retimeLeaf to every leaf under p, and gives the
// members and list elements above a changed leaf their fast kinds again.
// It reports whether any leaf changed.
func retimePlans(p *jsonPlan, units map[string]schema.TimeUnit) (bool, error) {
	if len(units) == 0 {
		return false, nil
	}
	switch p.kind {
	case planLeaf:
		if err := retimeLeaf(p, units); err != nil {
			return false, err
		}
		return p.conv == convTimestampMillis || p.conv == convTimestampNanos || p.conv == convTimeMillis, nil
	case planList, planMap:
		changed := false
		for _, c := range []*jsonPlan{p.elem, p.value} {
			if c == nil {
				continue
			}
			ch, err := retimePlans(c, units)
			if err != nil {
				return false, err
			}
			changed = changed || ch
		}
		if changed && p.kind == planList {
			p.elemFast = p.elem.leafFastKind()
		}
		return changed, nil
	case planGroup:
		changed := false
		for _, c := range p.fields {
			ch, err := retimePlans(c, units)
			if err != nil {
				return false, err
			}
			changed = changed || ch
		}
		if changed {
			for i := range p.members {
				p.members[i] = newPlanMember(p.members[i].plan)
			}
			p.prepareMembers()
		}
		return changed, nil
	}
	return false, nil
}

// timestampMillis is leaf's conversion for convTimestampMillis: the
// value a TIMESTAMP(MILLIS) column takes from the JSON, times 1000.
func (s *JSONShredder) timestampMillis(p *jsonPlan, rep uint8, k jsonscan.Kind, b []byte, key bool) error {
	v, ok, err := timestampValue(p, k, b, schema.Millis)
	if !ok {
		return s.mismatch(p, k, key, "RFC 3339 string or number of milliseconds")
	}
	if err != nil {
		return s.convErr(p, b, k, key, err)
	}
	us, ok := millisToMicros(v)
	if !ok {
		return s.valueErr(key, "value %s: %d milliseconds are out of the range of the table's microsecond column (about 292,000 years around 1970)",
			quoteValue(b, k == jsonscan.String || key), v)
	}
	p.col.AppendInt64(rep, us)
	return nil
}

// millisToMicros returns ms·1000, and false when int64 cannot hold it.
func millisToMicros(ms int64) (int64, bool) {
	if ms > math.MaxInt64/1000 || ms < math.MinInt64/1000 {
		return 0, false
	}
	return ms * 1000, true
}

// readTimestampMillis is readScalar for fastTimestampMillis: the number,
// or the string without escapes, at d[i] converted as timestampMillis
// does; anything else, an error included, is left to the walk.
func readTimestampMillis(p *jsonPlan, rep uint8, d []byte, i int) (int, bool) {
	var v int64
	var end int
	if i < len(d) && d[i] == '"' {
		var ok bool
		if t, n, plain := parseTimestampText(d[i+1:], schema.Millis, &p.dates); plain && i+1+n < len(d) && d[i+1+n] == '"' {
			v, end = t, i+n+2
		} else {
			var e int
			if e, ok = jsonscan.PlainString(d, i+1); !ok {
				return 0, false
			}
			t, err := parseTimestamp(d[i+1:e], schema.Millis, p.node.Logical.UTC, &p.dates)
			if err != nil {
				return 0, false
			}
			v, end = t, e+1
		}
	} else {
		var ok bool
		if v, end, ok = readInteger(d, i, int64Range); !ok {
			return 0, false
		}
	}
	us, ok := millisToMicros(v)
	if !ok {
		return 0, false
	}
	p.col.AppendInt64(rep, us)
	return end, true
}

// timestampNanos is leaf's conversion for convTimestampNanos: the value
// a TIMESTAMP(NANOS) column takes from the JSON, floored to the
// microsecond, the cut ones counted in s.cut.
func (s *JSONShredder) timestampNanos(p *jsonPlan, rep uint8, k jsonscan.Kind, b []byte, key bool) error {
	v, ok, err := timestampValue(p, k, b, schema.Nanos)
	if !ok {
		return s.mismatch(p, k, key, "RFC 3339 string or number of nanoseconds")
	}
	if err != nil {
		return s.convErr(p, b, k, key, err)
	}
	us, cut := schema.FloorMicros(v)
	if cut {
		s.cut++
	}
	p.col.AppendInt64(rep, us)
	return nil
}

// timeMillis is leaf's conversion for convTimeMillis: the value a
// TIME(MILLIS) column takes from the JSON, times 1000.
func (s *JSONShredder) timeMillis(p *jsonPlan, rep uint8, k jsonscan.Kind, b []byte, key bool) error {
	v, ok, err := timeValue(p, k, b, schema.Millis)
	if !ok {
		return s.mismatch(p, k, key, `"HH:MM:SS[.fraction]" string or number of milliseconds`)
	}
	if err != nil {
		return s.convErr(p, b, k, key, err)
	}
	p.col.AppendInt64(rep, v*1000)
	return nil
}
