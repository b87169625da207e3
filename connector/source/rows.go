package source

import (
	"fmt"
	"io"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/internal/jsontext"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema"
)

// timeOfMillis is the time of a Kafka timestamp.
func timeOfMillis(ms int64) time.Time { return time.UnixMilli(ms) }

// rowsSource reads a row group through reader.Rows: for the values of a
// format's encoder that does not read columns (format.ColumnEncoder), and
// for payload shapes the columnar readers do not handle.
type rowsSource struct {
	s    *fileStream
	rows *reader.Rows
	cur  reader.Value
	env  reader.Value
	row  int64
	off  int64
	ts   int64
}

func newRowsSource(s *fileStream, g int) (rowSource, error) {
	rows, err := s.f.Rows(reader.RowGroups(g))
	if err != nil {
		return nil, err
	}
	return &rowsSource{s: s, rows: rows, row: -1}, nil
}

func (r *rowsSource) next() (bool, error) {
	v, err := r.rows.Next()
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	r.row++
	r.cur = v
	env, ok := v.Field(envField)
	if !ok || env.IsNull() {
		return false, fmt.Errorf("%w: record %d has no %s", reader.ErrCorrupt, r.row, envField)
	}
	off, ok1 := env.Field("offset")
	ts, ok2 := env.Field("timestamp")
	if !ok1 || !ok2 || off.Kind() != reader.KindInt64 || ts.Kind() != reader.KindInt64 {
		return false, fmt.Errorf("%w: record %d has no _kafka.offset or _kafka.timestamp", reader.ErrCorrupt, r.row)
	}
	r.env, r.off, r.ts = env, off.Int64(), ts.Int64()/r.s.tsPerMilli
	return true, nil
}

func (r *rowsSource) current() (int64, int64, int64) { return r.off, r.ts, r.row }

func (r *rowsSource) emit(b *batch, m *kafka.Message) error {
	m.Time = timeOfMillis(r.ts)
	if k, ok := r.env.Field("key"); ok && k.Kind() == reader.KindBytes {
		m.Key = b.bytesOf(k.Bytes())
	}
	if h, ok := r.env.Field("headers"); ok && h.Kind() == reader.KindMap {
		start := len(b.headers)
		for k, v := range h.Entries() {
			hd := kafka.Header{Key: string(k.Bytes())}
			if v.Kind() == reader.KindBytes {
				hd.Value = b.bytesOf(v.Bytes())
			}
			b.headers = append(b.headers, hd)
		}
		if len(b.headers) > start {
			m.Headers = b.headers[start:len(b.headers):len(b.headers)]
		}
	}
	start := len(b.arena)
	var err error
	switch r.s.kind {
	case valueRaw:
		if v, _ := r.cur.Field(r.s.payload[0].Name); v.Kind() == reader.KindBytes {
			m.Value = b.bytesOf(v.Bytes())
		}
		return nil
	case valueFormat:
		b.arena, err = r.s.enc.AppendRecord(b.arena, r.cur)
	default:
		if r.s.unwrap {
			v, _ := r.cur.Field(r.s.payload[0].Name)
			b.arena = appendCompactJSON(b.arena, v, r.s.millis)
		} else {
			b.arena = append(b.arena, '{')
			comma := false
			for _, n := range r.s.payload {
				v, _ := r.cur.Field(n.Name)
				if v.IsNull() {
					continue
				}
				if comma {
					b.arena = append(b.arena, ',')
				}
				comma = true
				b.arena = appendKey(b.arena, n.Name)
				b.arena = appendCompactJSON(b.arena, v, r.s.millis)
			}
			b.arena = append(b.arena, '}')
		}
	}
	if err != nil {
		b.arena = b.arena[:start]
		return err
	}
	m.Value = b.arena[start:len(b.arena):len(b.arena)]
	return nil
}

func (r *rowsSource) skip() error { return nil }

func (r *rowsSource) release() {}

// appendKey appends a JSON object key and its colon.
func appendKey(dst []byte, name string) []byte {
	dst = appendJSONString(dst, name)
	return append(dst, ':')
}

// appendJSONString appends s as a JSON string, as the reader renders a
// STRING value.
func appendJSONString(dst []byte, s string) []byte {
	return jsontext.AppendString(dst, s)
}

// appendCompactJSON renders v as reader.Value.AppendJSON does, with the
// null fields of groups left out and DECIMAL values as JSON numbers, as
// reader.JSONAssembler renders them for replay (DecimalsAsNumbers), and
// the values of the columns of units (jsonUnits: a table's file of a
// schema file's milliseconds or nanoseconds, held in microseconds; nil
// for other files) in their unit (appendInUnit).
func appendCompactJSON(dst []byte, v reader.Value, units map[int]schema.TimeUnit) []byte {
	if out, ok := v.AppendDecimalNumber(dst); ok {
		return out
	}
	switch v.Kind() {
	case reader.KindInt64:
		if n := v.Node(); n != nil && units[n.Column] != 0 {
			return appendInUnit(dst, v.Int64(), n, units[n.Column])
		}
	case reader.KindGroup:
		dst = append(dst, '{')
		comma := false
		for name, f := range v.Fields() {
			if f.IsNull() {
				continue
			}
			if comma {
				dst = append(dst, ',')
			}
			comma = true
			dst = appendKey(dst, name)
			dst = appendCompactJSON(dst, f, units)
		}
		return append(dst, '}')
	case reader.KindList:
		dst = append(dst, '[')
		for i, e := range v.List() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendCompactJSON(dst, e, units)
		}
		return append(dst, ']')
	case reader.KindMap:
		k, _ := v.Node().MapKeyValue()
		if k == nil {
			break
		}
		if lk := k.Logical.Kind; lk == schema.String || lk == schema.Enum || lk == schema.JSON {
			dst = append(dst, '{')
			i := 0
			for key, val := range v.Entries() {
				if i > 0 {
					dst = append(dst, ',')
				}
				i++
				dst = appendKey(dst, string(key.Bytes()))
				dst = appendCompactJSON(dst, val, units)
			}
			return append(dst, '}')
		}
		if units == nil {
			break
		}
		// As reader.Value.AppendJSON renders a map of other keys.
		dst = append(dst, '[')
		i := 0
		for key, val := range v.Entries() {
			if i > 0 {
				dst = append(dst, ',')
			}
			i++
			dst = append(dst, `{"key":`...)
			dst = appendCompactJSON(dst, key, units)
			dst = append(dst, `,"value":`...)
			dst = appendCompactJSON(dst, val, units)
			dst = append(dst, '}')
		}
		return append(dst, ']')
	}
	return v.AppendJSON(dst)
}
