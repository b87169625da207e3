package rowgroup

import (
	"fmt"
	"math"

	"github.com/pqsink/pqsink/internal/jsonscan"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// JSONTimestampUnits says that the JSON of some TIMESTAMP columns is in
// another unit than the row group's column: units maps a leaf's path (as
// schema.Node.PathString gives it) to the unit of its JSON. Only
// schema.Millis into an INT64 TIMESTAMP(MICROS) column is taken: the
// columns schema.WidenMillis made of a schema file's millisecond ones,
// for a table's files, since Iceberg's timestamps are microseconds in
// Parquet. Such a column reads a number as milliseconds and a string at
// a millisecond's precision, exactly as a TIMESTAMP(MILLIS) column of
// the same JSON does, and writes the value times 1000; a value that
// microseconds cannot hold fails the record. NewJSONShredder and
// NewScalarConverter refuse a path that names no such column.
// Defaults to none: every column's JSON is in its own unit.
func JSONTimestampUnits(units map[string]schema.TimeUnit) JSONOption {
	return func(o *jsonOptions) error {
		for path, u := range units {
			if u != schema.Millis {
				return fmt.Errorf("rowgroup: JSON timestamps of %s in %s: only MILLIS into MICROS columns is supported", path, u)
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
	fastTimestampMillis = fastDecimal + 1  // convTimestampMillis, from a number or an RFC 3339 string
)

// retimeLeaf makes leaf plan p, when units names it, read its JSON in
// milliseconds (convTimestampMillis).
func retimeLeaf(p *jsonPlan, units map[string]schema.TimeUnit) error {
	path := p.node.PathString()
	if _, ok := units[path]; !ok {
		return nil
	}
	l := p.node.Logical
	if p.conv != convTimestamp || p.node.Physical != meta.TypeInt64 || l.Unit != schema.Micros {
		return fmt.Errorf("field %s: JSON timestamps in MILLIS need an INT64 TIMESTAMP(MICROS) column, not %s", path, p.typeName)
	}
	p.conv = convTimestampMillis
	l.Unit = schema.Millis
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
		return p.conv == convTimestampMillis, nil
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
	var v int64
	var err error
	switch k {
	case jsonscan.Number:
		v, err = parseInteger(b, int64Range)
	case jsonscan.String:
		if t, n, ok := parseTimestampText(b, schema.Millis, &p.dates); ok && n == len(b) {
			v = t
			break
		}
		v, err = parseTimestamp(b, schema.Millis, p.node.Logical.UTC, &p.dates)
	default:
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
