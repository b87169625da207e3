package rowgroup

import (
	"strings"
	"testing"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// copyBulk appends every column of src to dst with the bulk appends, each
// in two halves of its slots, as a merge appends page after page.
func copyBulk(t *testing.T, dst, src *RowGroup) {
	t.Helper()
	for i, s := range src.Columns() {
		d := dst.Column(i)
		n := s.NumLevels()
		for _, part := range [][2]int{{0, n / 2}, {n / 2, n}} {
			lo, hi := part[0], part[1]
			var rep, def []uint8
			if s.MaxRep() > 0 {
				rep = s.Rep[lo:hi]
			}
			if s.MaxDef() > 0 {
				def = s.Def[lo:hi]
			}
			v0 := valuesBefore(s, lo)
			nv, err := d.AppendLevels(rep, def, hi-lo)
			if err != nil {
				t.Fatal(err)
			}
			switch s.Leaf.Physical {
			case meta.TypeBoolean:
				d.AppendBools(s.Bool[v0 : v0+nv])
			case meta.TypeInt32:
				d.AppendInt32s(s.Int32[v0 : v0+nv])
			case meta.TypeInt64:
				d.AppendInt64s(s.Int64[v0 : v0+nv])
			case meta.TypeInt96:
				d.AppendInt96s(s.Int96[v0 : v0+nv])
			case meta.TypeFloat:
				d.AppendFloats(s.Float[v0 : v0+nv])
			case meta.TypeDouble:
				d.AppendDoubles(s.Double[v0 : v0+nv])
			case meta.TypeByteArray:
				offs := s.Offsets[v0 : v0+nv+1]
				if err := d.AppendByteArrays(s.Bytes[offs[0]:], offs); err != nil {
					t.Fatal(err)
				}
			case meta.TypeFixedLenByteArray:
				w := int(s.Leaf.Length)
				d.AppendFixed(s.Bytes[v0*w : (v0+nv)*w])
			}
		}
	}
	dst.EndRows(src.NumRows())
}

// valuesBefore counts the values of c in the slots before slot i.
func valuesBefore(c *Column, i int) int {
	if c.MaxDef() == 0 {
		return i
	}
	n := 0
	for _, d := range c.Def[:i] {
		if d == c.MaxDef() {
			n++
		}
	}
	return n
}

func TestBulkAppendCopiesRows(t *testing.T) {
	tests := []struct {
		name, schema string
		// fill appends the rows to g, the same each time.
		fill func(t *testing.T, g *RowGroup)
	}{
		{"flat", `message m { required int64 a; optional binary s (STRING); optional double d; required boolean b; }`,
			shred(`{"a":1,"s":"x","d":1.5,"b":true}`, `{"a":2,"b":false}`, `{"a":3,"s":"","d":-0.0,"b":true}`)},
		{"nested lists", `message m { optional group l (LIST) { repeated group list { optional group element { repeated int32 x; optional binary y (STRING); } } } }`,
			shred(`{"l":[{"x":[1,2],"y":"a"},null,{"x":[]}]}`, `{}`, `{"l":[]}`, `{"l":[{"x":[3]}]}`)},
		{"fixed, int96, float", `message m { optional fixed_len_byte_array(2) f; required int96 t; optional float g; }`,
			func(t *testing.T, g *RowGroup) {
				f, i96, fl := g.Column(0), g.Column(1), g.Column(2)
				f.Null(0, 0)
				i96.AppendInt96(0, [12]byte{1, 2, 3})
				fl.AppendFloat(0, 1.25)
				g.EndRow()
				f.AppendBytes(0, []byte{7, 8})
				i96.AppendInt96(0, [12]byte{11: 9})
				fl.Null(0, 0)
				g.EndRow()
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := schema.MustParse(tt.schema)
			src, want := New(s), New(s)
			tt.fill(t, src)
			tt.fill(t, want)
			tt.fill(t, want)
			dst := New(s)
			copyBulk(t, dst, src)
			copyBulk(t, dst, src)
			if err := dst.Check(); err != nil {
				t.Fatal(err)
			}
			if dst.NumRows() != want.NumRows() {
				t.Errorf("%d rows, want %d", dst.NumRows(), want.NumRows())
			}
			for i, c := range dst.Columns() {
				if got, w := dumpColumn(c), dumpColumn(want.Column(i)); got != w {
					t.Errorf("column %s: %s, want %s", c.Leaf.PathString(), got, w)
				}
			}
		})
	}
}

// shred returns a fill function that shreds the JSON records given.
func shred(records ...string) func(*testing.T, *RowGroup) {
	return func(t *testing.T, g *RowGroup) {
		t.Helper()
		sh, err := NewJSONShredder(g)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range records {
			if err := sh.Shred([]byte(r)); err != nil {
				t.Fatalf("%s: %v", r, err)
			}
		}
	}
}

func TestBulkAppendRefusesBadLevels(t *testing.T) {
	s := schema.MustParse(`message m { optional group l (LIST) { repeated group list { optional binary element (STRING); } } }`)
	leaf := s.Leaves()[0] // max rep 1, max def 3
	tests := []struct {
		name     string
		rep, def []uint8
		n        int
		want     string
	}{
		{"rep too short", []uint8{0}, []uint8{3, 3}, 2, "1 repetition levels for 2 slots"},
		{"def too long", []uint8{0}, []uint8{3, 3}, 1, "2 definition levels for 1 slots"},
		{"rep above max", []uint8{0, 2}, []uint8{3, 3}, 2, "repetition level 2 of slot 1 above the maximum 1"},
		{"def above max", []uint8{0, 1}, []uint8{3, 4}, 2, "definition level 4 of slot 1 above the maximum 3"},
		{"negative", nil, nil, -1, "-1 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := New(s)
			c := g.Column(leaf.Column)
			if _, err := c.AppendLevels(tt.rep, tt.def, tt.n); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("AppendLevels: %v, want %q", err, tt.want)
			}
			if c.NumLevels() != 0 || len(c.Rep) != 0 || len(c.Def) != 0 {
				t.Errorf("a refused append left %d slots", c.NumLevels())
			}
		})
	}
	g := New(s)
	c := g.Column(0)
	n, err := c.AppendLevels([]uint8{0, 1, 0}, []uint8{3, 2, 0}, 3)
	if err != nil || n != 1 {
		t.Fatalf("AppendLevels = %d, %v", n, err)
	}
	for _, bad := range []struct {
		data []byte
		offs []uint32
		want string
	}{
		{[]byte("abc"), []uint32{0, 4}, "span 4 bytes, the data holds 3"},
		{[]byte("abc"), []uint32{2, 1}, "offsets decrease"},
	} {
		if err := c.AppendByteArrays(bad.data, bad.offs); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("AppendByteArrays(%q, %v): %v, want %q", bad.data, bad.offs, err, bad.want)
		}
	}
	if err := c.AppendByteArrays([]byte("xyz"), []uint32{5, 8}); err != nil {
		t.Fatal(err)
	}
	g.EndRows(2)
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	if got := string(c.ByteArray(0)); got != "xyz" {
		t.Errorf("value %q", got)
	}
	// Values that do not match the levels are caught by Check.
	c.AppendBools(nil)
	if _, err := c.AppendLevels([]uint8{0}, []uint8{3}, 1); err != nil {
		t.Fatal(err)
	}
	g.EndRows(1)
	if err := g.Check(); err == nil || !strings.Contains(err.Error(), "1 values stored, 2 counted") {
		t.Errorf("Check: %v", err)
	}
}
