package protobuf

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/schema"
)

func loadAllTypes(t *testing.T, name string) (*schema.Schema, error) {
	t.Helper()
	md, err := LoadFile(context.Background(), "testdata/all_types.proto", []string{"testdata/imports"}, name)
	if err != nil {
		t.Fatal(err)
	}
	return Parquet(md)
}

// TestParquetSchema: the all-types message maps to the schema in
// testdata/all_types.parquet.txt (message syntax, field numbers as ids).
// With -update the file is written.
func TestParquetSchema(t *testing.T) {
	s, err := loadAllTypes(t, "AllTypes")
	if err != nil {
		t.Fatal(err)
	}
	got := s.String()
	want, err := os.ReadFile("testdata/all_types.parquet.txt")
	if err != nil || got != string(want) {
		os.WriteFile("testdata/all_types.parquet.txt.got", []byte(got), 0o644)
		t.Fatalf("schema differs from testdata/all_types.parquet.txt (%v); see testdata/all_types.parquet.txt.got", err)
	}
	os.Remove("testdata/all_types.parquet.txt.got")
	back, err := schema.Parse(got)
	if err != nil || !back.Equal(s) {
		t.Fatalf("the schema does not parse back to itself: %v", err)
	}
}

// TestRecursive: a message that contains itself is refused, naming it.
func TestRecursive(t *testing.T) {
	_, err := loadAllTypes(t, "Recursive")
	if !errors.Is(err, errRecursive) || !strings.Contains(err.Error(), "pqsink.test.Recursive contains itself") {
		t.Fatalf("got %v", err)
	}
}

func TestFindMessage(t *testing.T) {
	for _, c := range []struct{ name, want, err string }{
		{"pqsink.test.AllTypes", "pqsink.test.AllTypes", ""},
		{"AllTypes", "pqsink.test.AllTypes", ""},
		{"", "pqsink.test.AllTypes", ""},
		{"Nope", "", "has no message Nope"},
		{"AllTypes.CountsEntry", "", "map entry"},
	} {
		md, err := LoadFile(context.Background(), "testdata/all_types.proto", []string{"testdata/imports"}, c.name)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: got %v, want an error with %q", c.name, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.name, err)
		case c.err == "" && string(md.FullName()) != c.want:
			t.Errorf("%q: found %s, want %s", c.name, md.FullName(), c.want)
		}
	}
	// An import that no import path holds is an error naming it.
	_, err := LoadFile(context.Background(), filepath.Join("testdata", "all_types.proto"), nil, "AllTypes")
	if err == nil || !strings.Contains(err.Error(), "pqsink/test/inner.proto") {
		t.Errorf("without the import path: %v", err)
	}
}

func TestWire(t *testing.T) {
	for _, c := range []struct {
		name    string
		value   []byte
		id      uint32
		indexes []int
		body    string
		err     string
	}{
		{"first message", []byte{0, 0, 0, 1, 0, 0, 'x'}, 256, []int{0}, "x", ""},
		{"nested", []byte{0, 0, 0, 0, 7, 4, 2, 6, 'y'}, 7, []int{1, 3}, "y", ""},
		{"empty body", []byte{0, 0, 0, 0, 1, 0}, 1, []int{0}, "", ""},
		{"magic", []byte{1, 0, 0, 0, 1, 0}, 0, nil, "", "magic byte is 0x01"},
		{"short", []byte{0, 0, 0, 0, 1}, 0, nil, "", "shorter than the header"},
		{"negative count", []byte{0, 0, 0, 0, 1, 1}, 0, nil, "", "-1 message indexes"},
		{"cut indexes", []byte{0, 0, 0, 0, 1, 4, 2}, 0, nil, "", "message indexes"},
		{"negative index", []byte{0, 0, 0, 0, 1, 2, 1}, 0, nil, "", "message index -1"},
	} {
		id, idx, body, err := SplitWire(c.value, nil)
		if c.err != "" {
			if !errors.Is(err, ErrWireFormat) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: got %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || id != c.id || !slices.Equal(idx, c.indexes) || string(body) != c.body {
			t.Errorf("%s: got %d %v %q %v", c.name, id, idx, body, err)
			continue
		}
		again := append(AppendWire(nil, id, idx), body...)
		if string(again) != string(c.value) {
			t.Errorf("%s: AppendWire gives % x, want % x", c.name, again, c.value)
		}
	}
}

func TestMessageAt(t *testing.T) {
	md, err := LoadFile(context.Background(), "testdata/all_types.proto", []string{"testdata/imports"}, "")
	if err != nil {
		t.Fatal(err)
	}
	fd := md.ParentFile()
	for _, c := range []struct {
		idx  []int
		want string
	}{{nil, "pqsink.test.AllTypes"}, {[]int{0}, "pqsink.test.AllTypes"}, {[]int{1}, "pqsink.test.Recursive"}, {[]int{2}, ""}, {[]int{0, 0}, ""}} {
		m, err := MessageAt(fd, c.idx)
		if c.want == "" {
			if !errors.Is(err, ErrWireFormat) {
				t.Errorf("%v: got %v, want an error", c.idx, err)
			}
			continue
		}
		if err != nil || string(m.FullName()) != c.want {
			t.Errorf("%v: got %v %v, want %s", c.idx, m, err, c.want)
		}
	}
}
