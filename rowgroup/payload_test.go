package rowgroup

import (
	"errors"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/schema"
)

// listFiller is a Filler of the kind another package writes: it appends an
// id and then a list of tags, one per byte of the value, and fails on a
// byte 'x' after appending what came before it.
type listFiller struct {
	g       *RowGroup
	undo    *Undo
	appends int // calls of Append, which a Builder must not make
}

func (f *listFiller) RowGroup() *RowGroup { return f.g }

func (f *listFiller) Append(value []byte) error {
	f.appends++
	f.undo.Begin()
	if err := f.Fill(value); err != nil {
		f.undo.Rollback()
		return err
	}
	return nil
}

func (f *listFiller) Fill(value []byte) error {
	f.g.Column(0).AppendInt64(0, int64(len(value)))
	tags := f.g.Column(1)
	if len(value) == 0 {
		tags.Null(0, 1)
	}
	for i, b := range value {
		if b == 'x' {
			return NewRecordError("tags", i, errors.New("test record: x is not a tag"))
		}
		rep := uint8(1)
		if i == 0 {
			rep = 0
		}
		tags.AppendBytes(rep, value[i:i+1])
	}
	return nil
}

// TestFiller: a Builder over a Filler of another package calls Fill, not
// Append, and undoes a failed row whole; the same payload's Append undoes
// its own failures with an Undo; a NewRecordError says its reason alone.
func TestFiller(t *testing.T) {
	s := schema.MustParse(`message m {
  required int64 id;
  optional group tags (LIST) { repeated group list { required binary element (STRING); } }
}`)
	cases := []struct {
		name    string
		builder bool
	}{{"builder", true}, {"append", false}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := New(s)
			f := &listFiller{g: g, undo: NewUndo(g)}
			add := func(v string) error {
				if err := f.Append([]byte(v)); err != nil {
					return err
				}
				g.EndRow()
				return nil
			}
			if c.builder {
				b, err := NewBuilder(g, f)
				if err != nil {
					t.Fatal(err)
				}
				add = func(v string) error { return b.Append([]byte(v), nil) }
			}
			for _, v := range []string{"ab", "", "abxd", "c", "x"} {
				err := add(v)
				var re *RecordError
				if strings.Contains(v, "x") != (err != nil) || (err != nil && !errors.As(err, &re)) {
					t.Fatalf("value %q: error %v", v, err)
				}
				if err != nil && (err.Error() != "test record: x is not a tag" || re.Path != "tags" || re.Offset != strings.IndexByte(v, 'x')) {
					t.Fatalf("value %q: error %q, path %q, offset %d", v, err, re.Path, re.Offset)
				}
			}
			if err := g.Check(); err != nil {
				t.Fatal(err)
			}
			if g.NumRows() != 3 || string(g.Column(1).Bytes) != "abc" {
				t.Fatalf("%d rows, tags %q; want 3 rows, tags \"abc\"", g.NumRows(), g.Column(1).Bytes)
			}
			if want := 5; c.builder == (f.appends != 0) || !c.builder && f.appends != want {
				t.Fatalf("%d calls of Append", f.appends)
			}
		})
	}
}
