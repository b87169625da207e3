package reader

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/jsontext"
	"github.com/pqsink/pqsink/schema"
)

// compactJSON renders v as AppendJSON does, except that null fields of
// groups are left out: the JSONAssembler's form.
func compactJSON(dst []byte, v Value) []byte {
	switch v.kind {
	case KindGroup:
		dst = append(dst, '{')
		comma := false
		for _, f := range v.elems {
			if f.kind == KindNull {
				continue
			}
			if comma {
				dst = append(dst, ',')
			}
			comma = true
			dst = jsontext.AppendString(dst, f.node.Name)
			dst = append(dst, ':')
			dst = compactJSON(dst, f)
		}
		return append(dst, '}')
	case KindList:
		dst = append(dst, '[')
		for i, e := range v.List() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = compactJSON(dst, e)
		}
		return append(dst, ']')
	case KindMap:
		dst = append(dst, '{')
		for i := 0; i+1 < len(v.elems); i += 2 {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsontext.AppendString(dst, string(v.elems[i].bytes))
			dst = append(dst, ':')
			dst = compactJSON(dst, v.elems[i+1])
		}
		return append(dst, '}')
	}
	return v.AppendJSON(dst)
}

// TestJSONAssemblerMatchesRows reads every test file both ways, record by
// record: the columnar assembler must render what Rows assembles.
func TestJSONAssemblerMatchesRows(t *testing.T) {
	compared := 0
	for _, path := range testingFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f := openFile(t, path)
			want, err := readAll(f)
			if err != nil {
				t.Skipf("Rows fails on this file: %v", err)
			}
			var got [][]byte
			for g := range f.NumRowGroups() {
				a, err := NewJSONAssembler(f, g, f.Schema().Fields(), false)
				if errors.Is(err, ErrNotColumnar) {
					t.Skipf("not columnar: %v", err)
				}
				if err != nil {
					t.Fatalf("row group %d: %v", g, err)
				}
				for {
					out, err := a.Append(nil)
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatalf("row group %d, record %d: %v", g, len(got), err)
					}
					got = append(got, out)
				}
				a.Release()
			}
			if len(got) != len(want) {
				t.Fatalf("assembler gave %d records, Rows %d", len(got), len(want))
			}
			for i := range want {
				w := compactJSON(nil, want[i])
				if !bytes.Equal(got[i], w) {
					t.Fatalf("record %d:\n got %s\nwant %s", i, got[i], w)
				}
			}
			compared++
		})
	}
	if compared < 10 {
		t.Errorf("only %d files compared; the assembler should handle most test files", compared)
	}
}

// TestJSONAssemblerUnwrap renders one field as the record.
func TestJSONAssemblerUnwrap(t *testing.T) {
	f := openFile(t, filepath.Join(testingDir, "alltypes_plain.parquet"))
	field := f.Schema().Lookup("id")
	if field == nil {
		t.Fatal("no id column")
	}
	a, err := NewJSONAssembler(f, 0, []*schema.Node{field}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	var ids []string
	for {
		out, err := a.Append(nil)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, string(out))
	}
	if len(ids) != 8 || ids[0] != "4" || ids[7] != "1" {
		t.Errorf("ids = %q, want 8 of them from 4 to 1", ids)
	}
	if _, err := NewJSONAssembler(f, 0, f.Schema().Fields(), true); err == nil {
		t.Error("unwrap of several fields: no error")
	}
}

// TestAppendTimestampMatchesFormat checks the hand-written timestamp
// rendering against time.Format over units, zones and edge years.
func TestAppendTimestampMatchesFormat(t *testing.T) {
	times := []time.Time{
		time.Unix(0, 0).UTC(),
		time.Date(2026, 11, 23, 10, 0, 0, 123456789, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-5, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999000000, time.UTC),
	}
	for _, tm := range times {
		for _, u := range []schema.TimeUnit{schema.Millis, schema.Micros, schema.Nanos} {
			for _, utc := range []bool{true, false} {
				want := `"` + tm.Format(timestampLayout(u, utc)) + `"`
				if got := string(appendTimestamp(nil, tm, u, utc)); got != want {
					t.Errorf("%v unit %v utc %v: %s, want %s", tm, u, utc, got, want)
				}
			}
		}
	}
}

// FuzzJSONAssembler renders whole files column by column. It must never
// panic, whatever the bytes, and when Rows reads a file without an error
// the assembler must render what Rows assembles.
func FuzzJSONAssembler(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(testingDir, "*.parquet"))
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil && len(data) <= fuzzSeedMax {
			f.Add(data)
		}
	}
	f.Add(smallFile(f, nil, nil))
	f.Add(buildFile(f, mustParse(f, smallSchema), 3, smallChunks(true, true), nil, nil))
	for _, seed := range shreddedSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Open(bytesReader(data), int64(len(data)), fuzzOptions...)
		if err != nil {
			return
		}
		// At most fuzzRecords records each way: a few bytes can declare
		// billions of them.
		const fuzzRecords = 1000
		var want []Value
		rows, rowsErr := file.Rows()
		for rowsErr == nil && len(want) < fuzzRecords {
			var v Value
			if v, rowsErr = rows.Next(); rowsErr == nil {
				want = append(want, v)
			}
		}
		if rowsErr == io.EOF || len(want) == fuzzRecords {
			rowsErr = nil
		}
		var got [][]byte
		for g := range file.NumRowGroups() {
			a, err := NewJSONAssembler(file, g, file.Schema().Fields(), false)
			if err != nil {
				return
			}
			for len(got) < fuzzRecords {
				out, err := a.Append(nil)
				if err != nil {
					a.Release()
					if err == io.EOF {
						break
					}
					return
				}
				got = append(got, out)
			}
			a.Release()
		}
		if rowsErr != nil {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("assembler gave %d records, Rows %d", len(got), len(want))
		}
		for i := range want {
			if w := compactJSON(nil, want[i]); !bytes.Equal(got[i], w) {
				t.Fatalf("record %d:\n got %s\nwant %s", i, got[i], w)
			}
		}
	})
}
