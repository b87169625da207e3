package protorow

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/pqsink/pqsink/rowgroup"
	"google.golang.org/protobuf/encoding/protowire"
)

// maxVariantDepth bounds the nesting of Struct, Value and ListValue in
// one VARIANT: they nest without end on the wire, and protobuf's own
// parsers stop at 100 too.
const maxVariantDepth = 100

var errTruncated = errors.New("message ends early")

// recordErr returns the RecordError of a message whose bytes fail at
// field path, rest being the bytes not read yet.
func (d *Decoder) recordErr(path string, rest []byte, err error) error {
	off := cap(d.full) - cap(rest)
	if path == "" {
		err = fmt.Errorf("protobuf record: %w (at byte %d)", err, off)
	} else {
		err = fmt.Errorf("protobuf record: %s: %w (at byte %d)", path, err, off)
	}
	return rowgroup.NewRecordError(path, off, err)
}

// parseErr says why protowire could not read a value: it ends early, a
// varint is longer than 10 bytes, a field number is out of range...
func parseErr(n int) error {
	if err := protowire.ParseError(n); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return errTruncated
		}
		return err
	}
	return errTruncated
}

// message reads the fields of one message of m from b, whose first
// value in each column takes repetition level rep.
func (d *Decoder) message(m *msgOp, b []byte, rep uint8) error {
	base := len(d.counts)
	for range m.fields {
		d.counts = append(d.counts, 0)
	}
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return d.recordErr("", b, fmt.Errorf("field tag: %w", parseErr(n)))
		}
		f := m.lookup(num)
		if f == nil { // a field the schema does not have: skipped
			v := protowire.ConsumeFieldValue(num, wt, b[n:])
			if v < 0 {
				return d.recordErr("", b, fmt.Errorf("unknown field %d: %w", num, parseErr(v)))
			}
			b = b[n+v:]
			continue
		}
		b = b[n:]
		cnt := d.counts[base+f.index]
		var err error
		switch f.card {
		case cardList, cardMap:
			if wt == protowire.BytesType && f.packed {
				b, err = d.packed(f, b, rep, base)
				if err != nil {
					return err
				}
				continue
			}
			if wt != f.wire {
				return d.recordErr(f.path, b, fmt.Errorf("wire type %d, want %d", wt, f.wire))
			}
			r := rep
			if cnt > 0 {
				r = f.elemRep
			}
			if b, err = d.value(f, b, r); err != nil {
				return err
			}
		default:
			if wt != f.wire {
				return d.recordErr(f.path, b, fmt.Errorf("wire type %d, want %d", wt, f.wire))
			}
			if cnt > 0 {
				return d.recordErr(f.path, b, errors.New("occurs twice: merged or concatenated messages are not supported"))
			}
			if f.oneof >= 0 {
				for _, i := range m.oneofs[f.oneof] {
					if d.counts[base+i] > 0 {
						return d.recordErr(f.path, b, fmt.Errorf("another member of its oneof, %s, is set too", m.fields[i].path))
					}
				}
			}
			if b, err = d.value(f, b, rep); err != nil {
				return err
			}
		}
		d.counts[base+f.index]++
	}
	for i, f := range m.fields {
		if d.counts[base+i] > 0 {
			continue
		}
		switch f.card {
		case cardImplicit:
			d.zero(f, rep)
		case cardRequired:
			return d.recordErr(f.path, b, errors.New("required field missing"))
		default:
			for _, c := range f.cols {
				c.Null(rep, f.nullDef)
			}
		}
	}
	d.counts = d.counts[:base]
	return nil
}

// packed reads a packed run of a repeated scalar's values.
func (d *Decoder) packed(f *fieldOp, b []byte, rep uint8, base int) ([]byte, error) {
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return b, d.recordErr(f.path, b, fmt.Errorf("packed values: %w", parseErr(n)))
	}
	rest := b[n:]
	b = v
	var err error
	for len(b) > 0 {
		r := rep
		if d.counts[base+f.index] > 0 {
			r = f.elemRep
		}
		if b, err = d.value(f, b, r); err != nil {
			return rest, err
		}
		d.counts[base+f.index]++
	}
	return rest, nil
}

// zero writes the default of an implicit field that is absent.
func (d *Decoder) zero(f *fieldOp, rep uint8) {
	c := f.col
	switch f.code {
	case cBool:
		c.AppendBool(rep, false)
	case cInt32, cUint32, cSint32, cFixed32, cSfixed32:
		c.AppendInt32(rep, 0)
	case cInt64, cUint64, cSint64, cFixed64, cSfixed64:
		c.AppendInt64(rep, 0)
	case cFloat:
		c.AppendFloat(rep, 0)
	case cDouble:
		c.AppendDouble(rep, 0)
	case cString, cBytes:
		c.AppendBytes(rep, nil)
	case cEnum:
		d.enum(f, rep, 0)
	}
}

func (d *Decoder) enum(f *fieldOp, rep uint8, num int32) {
	if name := f.names.name(num); name != nil {
		f.col.AppendBytes(rep, name)
		return
	}
	d.scratch = strconv.AppendInt(d.scratch[:0], int64(num), 10)
	f.col.AppendBytes(rep, d.scratch)
}

// value reads one value of f from the start of b and returns the rest.
func (d *Decoder) value(f *fieldOp, b []byte, rep uint8) ([]byte, error) {
	switch f.wire {
	case protowire.VarintType:
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return b, d.recordErr(f.path, b, parseErr(n))
		}
		c := f.col
		switch f.code {
		case cInt64, cUint64:
			c.AppendInt64(rep, int64(v))
		case cInt32, cUint32:
			c.AppendInt32(rep, int32(v))
		case cSint64:
			c.AppendInt64(rep, protowire.DecodeZigZag(v))
		case cSint32:
			c.AppendInt32(rep, int32(protowire.DecodeZigZag(v&math.MaxUint32)))
		case cBool:
			c.AppendBool(rep, v != 0)
		case cEnum:
			d.enum(f, rep, int32(v))
		}
		return b[n:], nil
	case protowire.Fixed32Type:
		v, n := protowire.ConsumeFixed32(b)
		if n < 0 {
			return b, d.recordErr(f.path, b, parseErr(n))
		}
		if f.code == cFloat {
			f.col.AppendFloat(rep, math.Float32frombits(v))
		} else {
			f.col.AppendInt32(rep, int32(v))
		}
		return b[n:], nil
	case protowire.Fixed64Type:
		v, n := protowire.ConsumeFixed64(b)
		if n < 0 {
			return b, d.recordErr(f.path, b, parseErr(n))
		}
		if f.code == cDouble {
			f.col.AppendDouble(rep, math.Float64frombits(v))
		} else {
			f.col.AppendInt64(rep, int64(v))
		}
		return b[n:], nil
	}
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return b, d.recordErr(f.path, b, parseErr(n))
	}
	var err error
	switch f.code {
	case cString:
		if !utf8.Valid(v) {
			return b, d.recordErr(f.path, b, errors.New("string is not valid UTF-8"))
		}
		f.col.AppendBytes(rep, v)
	case cBytes:
		f.col.AppendBytes(rep, v)
	case cMessage:
		err = d.message(f.msg, v, rep)
	case cTimestamp, cTimestampMicros, cDuration:
		err = d.timestamp(f, v, rep)
	case cVariant:
		err = d.variant(f, v, rep)
	}
	if err != nil {
		return b, err
	}
	return b[n:], nil
}

// Bounds of google.protobuf.Timestamp (0001-01-01 to 9999-12-31) and
// Duration (about 10,000 years), from their .proto files.
const (
	minTimestampSeconds = -62135596800
	maxTimestampSeconds = 253402300799
	maxDurationSeconds  = 315576000000
)

// timestamp reads a Timestamp or a Duration message into nanoseconds,
// or a Timestamp into microseconds (cTimestampMicros): the Timestamp's
// whole range, seconds*1e6 + nanos/1000, floored as nanos is never
// negative, counting a value whose nanoseconds below the microsecond are
// not zero.
func (d *Decoder) timestamp(f *fieldOp, b []byte, rep uint8) error {
	var secs int64
	var nanos int32
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return d.recordErr(f.path, b, parseErr(n))
		}
		b = b[n:]
		switch {
		case num == 1 && wt == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return d.recordErr(f.path+".seconds", b, parseErr(n))
			}
			secs, b = int64(v), b[n:]
		case num == 2 && wt == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return d.recordErr(f.path+".nanos", b, parseErr(n))
			}
			nanos, b = int32(v), b[n:]
		case num == 1 || num == 2:
			return d.recordErr(f.path, b, fmt.Errorf("field %d: wire type %d, want varint", num, wt))
		default:
			v := protowire.ConsumeFieldValue(num, wt, b)
			if v < 0 {
				return d.recordErr(f.path, b, parseErr(v))
			}
			b = b[v:]
		}
	}
	if f.code != cDuration {
		if secs < minTimestampSeconds || secs > maxTimestampSeconds || nanos < 0 || nanos > 999_999_999 {
			return d.recordErr(f.path, b, fmt.Errorf("timestamp %ds %dns is not valid", secs, nanos))
		}
	} else if secs < -maxDurationSeconds || secs > maxDurationSeconds || nanos < -999_999_999 || nanos > 999_999_999 ||
		secs > 0 && nanos < 0 || secs < 0 && nanos > 0 {
		return d.recordErr(f.path, b, fmt.Errorf("duration %ds %dns is not valid", secs, nanos))
	}
	if f.code == cTimestampMicros {
		if nanos%1000 != 0 {
			d.truncated++
		}
		f.col.AppendInt64(rep, secs*1_000_000+int64(nanos/1000))
		return nil
	}
	const limit = math.MaxInt64 / 1_000_000_000
	if secs > limit || secs < -limit {
		return d.recordErr(f.path, b, fmt.Errorf("%ds is beyond what INT64 nanoseconds hold (years 1678 to 2261 for a timestamp, ±292 years for a duration)", secs))
	}
	ns := secs*1e9 + int64(nanos)
	if secs > 0 && ns < 0 || secs < 0 && ns > 0 {
		return d.recordErr(f.path, b, fmt.Errorf("%ds %dns is beyond what INT64 nanoseconds hold", secs, nanos))
	}
	f.col.AppendInt64(rep, ns)
	return nil
}
