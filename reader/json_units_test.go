package reader

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// microsFile writes JSON records of message text (its columns in
// microseconds) into a file.
func microsFile(t *testing.T, text string, values ...string) *File {
	t.Helper()
	s, err := schema.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	g := rowgroup.New(s)
	sh, err := rowgroup.NewJSONShredder(g)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rowgroup.NewBuilder(g, sh)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if err := b.Append([]byte(v), nil); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
	}
	var out bytes.Buffer
	w, err := writer.New(&out, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := Open(bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

const microsText = `message m {
  optional int64 ts (TIMESTAMP(MICROS,true));
  optional int64 t (TIME(MICROS,true));
  optional int64 n (TIMESTAMP(MICROS,false));
  optional int64 keep (TIMESTAMP(MICROS,true));
  optional group l (LIST) { repeated group list { optional int64 element (TIMESTAMP(MICROS,true)); } }
}`

// TestRenderIn renders microsecond columns in the units RenderIn gives
// them: milliseconds rounded down (before 1970 too), a time of day in
// milliseconds, nanoseconds at int64's ends, list elements and nulls;
// a column not named keeps its microseconds.
func TestRenderIn(t *testing.T) {
	f := microsFile(t, microsText,
		`{"ts":-1,"t":45296789123,"n":9223372036854775807,"keep":-1,"l":[1500,null,-1001]}`,
		`{"ts":1700000000123999,"t":86399999999,"n":-9223372036854775808,"l":[]}`,
		`{}`)
	s := f.Schema()
	a, err := NewJSONAssembler(f, 0, s.Fields(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	units := map[int]schema.TimeUnit{
		s.Leaf("ts").Column: schema.Millis, s.Leaf("t").Column: schema.Millis,
		s.Leaf("n").Column: schema.Nanos, s.Leaf("l.list.element").Column: schema.Millis,
	}
	if err := a.RenderIn(units); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		b, err := a.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	want := []string{
		`{"ts":"1969-12-31T23:59:59.999Z","t":"12:34:56.789","n":"2262-04-11T23:47:16.854775807","keep":"1969-12-31T23:59:59.999999Z","l":["1970-01-01T00:00:00.001Z",null,"1969-12-31T23:59:59.998Z"]}`,
		`{"ts":"2023-11-14T22:13:20.123Z","t":"23:59:59.999","n":"1677-09-21T00:12:43.145224192","l":[]}`,
		`{}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rendered\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The time of day is the one the milliseconds' column renders.
	if w := time.Unix(0, 0).UTC().Add(45296789 * time.Millisecond).Format("15:04:05.000"); !strings.Contains(got[0], w) {
		t.Errorf("time of day %s missing from %s", w, got[0])
	}
}

// TestRenderInRefuses: a unit a column cannot render in, a column that
// is not a microsecond one, or one the assembler does not render, is
// ErrNotColumnar.
func TestRenderInRefuses(t *testing.T) {
	f := microsFile(t, `message m {
  optional int64 ts (TIMESTAMP(MICROS,true));
  optional int64 t (TIME(MICROS,true));
  optional int64 ms (TIMESTAMP(MILLIS,true));
  optional int64 i;
}`, `{}`)
	s := f.Schema()
	for _, c := range []struct {
		name  string
		units map[int]schema.TimeUnit
	}{
		{"a time in nanoseconds", map[int]schema.TimeUnit{s.Leaf("t").Column: schema.Nanos}},
		{"microseconds in microseconds", map[int]schema.TimeUnit{s.Leaf("ts").Column: schema.Micros}},
		{"a millisecond column", map[int]schema.TimeUnit{s.Leaf("ms").Column: schema.Millis}},
		{"an integer", map[int]schema.TimeUnit{s.Leaf("i").Column: schema.Millis}},
		{"no such column", map[int]schema.TimeUnit{99: schema.Millis}},
	} {
		a, err := NewJSONAssembler(f, 0, s.Fields(), false)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.RenderIn(c.units); !errors.Is(err, ErrNotColumnar) {
			t.Errorf("%s: %v, want ErrNotColumnar", c.name, err)
		}
		a.Release()
	}
}
