package convert

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/jsonschema"
)

func eventsJSONSchema(tb testing.TB) *jsonschema.Schema {
	tb.Helper()
	text, err := os.ReadFile("testdata/events.schema.json")
	if err != nil {
		tb.Fatal(err)
	}
	s, err := jsonschema.Compile(text)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestEventsJSONSchemaMapping: the JSON Schema of the reference events
// maps to the events' Parquet schema, so that the benchmark below
// compares the same columns.
func TestEventsJSONSchemaMapping(t *testing.T) {
	ps, err := eventsJSONSchema(t).Parquet()
	if err != nil {
		t.Fatal(err)
	}
	want, err := schema.Parse(events.Schema)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.Leaves()) != len(want.Leaves()) {
		t.Fatalf("%d leaves, want %d:\n%s", len(ps.Leaves()), len(want.Leaves()), ps)
	}
	for i, l := range want.Leaves() {
		g := ps.Leaves()[i]
		// level is an INT32 in events.Schema, an INT64 from "integer".
		if g.PathString() != l.PathString() || g.Repetition != l.Repetition || g.Physical != l.Physical && l.Name != "level" {
			t.Errorf("leaf %s %s %s, want %s %s %s", g.PathString(), g.Repetition, g.TypeName(), l.PathString(), l.Repetition, l.TypeName())
		}
	}
}

// BenchmarkJSONSchemaEvents measures what validation adds to the plain
// JSON path on the reference events: "shred" is the JSON shredder alone
// into the schema's columns (format.type json), "validate+shred" is
// format.type json_schema's path, "validate" the validator alone.
func BenchmarkJSONSchemaEvents(b *testing.B) {
	s := eventsJSONSchema(b)
	ps, err := s.Parquet()
	if err != nil {
		b.Fatal(err)
	}
	gen := events.New(1, time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC))
	var lines [][]byte
	size := 0
	for range 4096 {
		l := gen.Append(nil)
		lines = append(lines, l)
		size += len(l)
	}
	for _, mode := range []string{"shred", "validate+shred", "validate"} {
		b.Run(mode, func(b *testing.B) {
			g := rowgroup.New(ps)
			sh, err := rowgroup.NewJSONShredder(g)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size / len(lines)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				line := lines[i%len(lines)]
				if mode != "shred" {
					if err := s.Validate(line); err != nil {
						b.Fatal(err)
					}
				}
				if mode != "validate" {
					if err := sh.Append(line); err != nil {
						b.Fatal(err)
					}
					if g.NumRows() >= 65536 {
						g.Reset()
					}
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// FuzzRunJSONSchema feeds any bytes as JSON Lines of the event schema of
// schema/jsonschema's tests through RunJSONSchema: never a panic, and a
// line is a row or a rejection.
func FuzzRunJSONSchema(f *testing.F) {
	text, err := os.ReadFile("../schema/jsonschema/testdata/event.schema.json")
	if err != nil {
		f.Fatal(err)
	}
	s, err := jsonschema.Compile(text)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"id":"7b1c9a52-8a3e-4e0c-9a51-2f4d1f7e6a10","at":"2026-11-27T08:00:00Z","kind":"click","count":3,"price":1.25,"clock":"10:00:00+02:00"}`))
	f.Add([]byte(`{"id":"7b1c9a52-8a3e-4e0c-9a51-2f4d1f7e6a10","at":"2026-11-27T08:00:00.1234567Z","kind":"view","count":3,"tree":{"children":[{"value":1}]}}` + "\n{}\n"))
	f.Add([]byte("\xff\n[1,2]\n\"s\""))
	f.Fuzz(func(t *testing.T, in []byte) {
		st, err := RunJSONSchema(context.Background(), bytes.NewReader(in), io.Discard, s, Options{Errors: Skip, RowGroupSize: 1 << 12})
		if err != nil && !errors.Is(err, ErrRecordTooLong) {
			t.Fatalf("error with the Skip policy: %v", err)
		}
		if st.Rows+st.Skipped > st.Lines {
			t.Fatalf("%d rows and %d skipped of %d lines", st.Rows, st.Skipped, st.Lines)
		}
	})
}

// TestJSONSchemaValidButUnstorable: values the schema admits but the
// columns cannot hold are bad lines with the shredder's reason, as
// docs/json-schema.md lists them.
func TestJSONSchemaValidButUnstorable(t *testing.T) {
	s, err := jsonschema.Compile([]byte(`{"type":"object","additionalProperties":false,"properties":{
		"n":{"type":"integer"},"at":{"type":"string","format":"date-time"},"d":{"type":"number","multipleOf":0.01}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`{"n":99999999999999999999}`,
		`{"at":"2026-11-27T08:00:00.1234567Z"}`,
		`{"d":1234567890123456789012345678901234567.89}`,
	} {
		if err := s.Validate([]byte(line)); err != nil {
			t.Errorf("%s: the schema refuses it: %v", line, err)
			continue
		}
		var rejects bytes.Buffer
		st, err := RunJSONSchema(context.Background(), bytes.NewReader([]byte(line+"\n{}\n")), io.Discard, s, Options{Errors: Skip, Rejects: &rejects})
		if err != nil {
			t.Fatal(err)
		}
		if st.Rows != 1 || st.Skipped != 1 || !bytes.Contains(rejects.Bytes(), []byte("json record:")) {
			t.Errorf("%s: %d rows, %d skipped: %s", line, st.Rows, st.Skipped, rejects.String())
		}
	}
}
