package pathfields

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/rowgroup/avrorow"
	"github.com/pqsink/pqsink/schema/avro"
)

// pathSchema is the writer schema of TestAvroPathValues: a field of each
// kind a path or a time_field reads.
const pathSchema = `{"type":"record","name":"ev","fields":[
 {"name":"n","type":"int"},
 {"name":"country","type":["null","string"],"default":null},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"amount","type":{"type":"fixed","name":"f5","size":5,"logicalType":"decimal","precision":9,"scale":2}},
 {"name":"kind","type":{"type":"enum","name":"k","symbols":["A","B"]}},
 {"name":"d","type":{"type":"int","logicalType":"date"}},
 {"name":"ok","type":"boolean"},
 {"name":"ms","type":"long"},
 {"name":"text","type":"string"},
 {"name":"raw","type":"bytes"},
 {"name":"p","type":["null",{"type":"record","name":"p","fields":[{"name":"level","type":"string"}]}],"default":null}]}`

// pathRecord is a record of pathSchema in Avro binary; an empty country or
// level is null.
func pathRecord(country, text, level string) []byte {
	b := avro.AppendLong(nil, 7) // n
	if country == "" {
		b = avro.AppendLong(b, 0)
	} else {
		b = avroStr(avro.AppendLong(b, 1), country)
	}
	b = avro.AppendLong(b, time.Date(2024, 5, 1, 12, 30, 0, 0, time.UTC).UnixMilli()) // ts
	b = append(b, 0, 0, 0, 0x04, 0xe2)                                                // amount: 1250, 12.50
	b = avro.AppendLong(b, 1)                                                         // kind B
	b = avro.AppendLong(b, int64(time.Date(2024, 5, 2, 0, 0, 0, 0, time.UTC).Unix()/86400))
	b = append(b, 1)                                                                // ok
	b = avro.AppendLong(b, time.Date(2024, 5, 3, 1, 2, 3, 0, time.UTC).UnixMilli()) // ms
	b = avroStr(b, text)                                                            // text
	if country == "a/b" {
		b = avroStr(b, "\xff\x00") // raw: not UTF-8
	} else {
		b = avroStr(b, "ok")
	}
	if level == "" {
		return avro.AppendLong(b, 0)
	}
	return avroStr(avro.AppendLong(b, 1), level)
}

// TestAvroPathValues: with format avro and no table, a {field} part of the
// path is the field's value in the record, read with its writer schema and
// written as the reader's JSON writes it (strings bare), escaped; a null
// or a field on a null record is the null folder; time_field reads a
// timestamp, a plain long of epoch milliseconds or RFC 3339 text, and a
// field that holds no time is refused with the schema.
func TestAvroPathValues(t *testing.T) {
	w := avro.MustParse(pathSchema)
	fields := [][]string{{"n"}, {"country"}, {"ts"}, {"amount"}, {"kind"}, {"d"}, {"ok"}, {"p", "level"}, {"missing"}, {"raw"}}
	ts := time.Date(2024, 5, 1, 12, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		name                 string
		country, text, level string
		timeField            string
		want                 []string
		wantTime             time.Time
		err                  string
	}{
		{name: "values", country: "DE", text: "x", level: "info", timeField: "ts",
			want:     []string{"7", "DE", archive.Escape("2024-05-01T12:30:00.000Z"), "12.50", "B", "2024-05-02", "true", "info", archive.HiveNull, "ok"},
			wantTime: ts},
		{name: "nulls and escapes", country: "a/b", text: "x", timeField: "ms",
			want:     []string{"7", "a%2Fb", archive.Escape("2024-05-01T12:30:00.000Z"), "12.50", "B", "2024-05-02", "true", archive.HiveNull, archive.HiveNull, archive.Escape("/wA=")},
			wantTime: time.Date(2024, 5, 3, 1, 2, 3, 0, time.UTC)},
		{name: "null country", text: "x", want: []string{"7", archive.HiveNull}},
		{name: "rfc 3339 text", country: "DE", text: "2024-06-01T00:00:00+02:00", timeField: "text",
			wantTime: time.Date(2024, 5, 31, 22, 0, 0, 0, time.UTC)},
		{name: "epoch text", country: "DE", text: "1717200000000", timeField: "text", wantTime: time.UnixMilli(1717200000000)},
		{name: "bad text", country: "DE", text: "yesterday", timeField: "text", err: "neither an RFC 3339 time nor epoch milliseconds"},
		{name: "null time", country: "DE", text: "x", timeField: "p.level", err: "time_field p.level is missing or null"},
		{name: "absent time", country: "DE", text: "x", timeField: "missing", err: "time_field missing is missing or null"},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := &Spec{Paths: fields, Fields: len(fields), TimeField: c.timeField}
			if c.timeField != "" {
				spec.Paths = append(fields[:len(fields):len(fields)], strings.Split(c.timeField, "."))
			}
			pp, err := spec.Lookup(avroSchema(w))
			if err != nil {
				t.Fatal(err)
			}
			vals := make([]string, len(fields))
			got, err := pp.Values(pathRecord(c.country, c.text, c.level), vals)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range c.want {
				if vals[i] != want {
					t.Errorf("{field:%s} = %q, want %q", strings.Join(fields[i], "."), vals[i], want)
				}
			}
			if c.timeField != "" && !got.Equal(c.wantTime) {
				t.Errorf("time %v, want %v", got, c.wantTime)
			}
		})
	}

	t.Run("not a time", func(t *testing.T) {
		for _, f := range []string{"ok", "amount", "p"} {
			spec := &Spec{Paths: [][]string{{f}}, Fields: 0, TimeField: f}
			_, err := spec.Lookup(avroSchema(w))
			if err == nil || (f != "p" && !errors.Is(err, ErrNotTime)) {
				t.Errorf("time_field %s: %v, want an error", f, err)
			}
		}
	})
	t.Run("truncated", func(t *testing.T) {
		spec := &Spec{Paths: [][]string{{"raw"}}, Fields: 1}
		pp, err := spec.Lookup(avroSchema(w))
		if err != nil {
			t.Fatal(err)
		}
		rec := pathRecord("DE", "x", "")
		_, err = pp.Values(rec[:len(rec)-3], make([]string, 1))
		var rej *format.Rejection
		if !errors.As(err, &rej) || rej.Reason != format.RejectDecode {
			t.Errorf("truncated record: %v, want a decode rejection", err)
		}
	})
}

func avroStr(b []byte, s string) []byte { return append(avro.AppendLong(b, int64(len(s))), s...) }

// avroSchema is writer schema w as the Avro format gives it to the sink.
func avroSchema(w *avro.Schema) *format.Schema {
	return &format.Schema{Name: "avro schema", NewLookup: func(paths [][]string, _ bool) (format.Lookup, error) {
		return avrorow.NewLookup(w, paths)
	}}
}
