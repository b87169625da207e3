package rowgroup

import (
	"fmt"
	"testing"

	"github.com/pqsink/pqsink/schema"
)

// TestRelease: a released row group holds nothing and takes rows again
// through the shredder that was built over it.
func TestRelease(t *testing.T) {
	s := schema.MustParse(`message m { required int64 id; optional group tags (LIST) { repeated group list { optional binary element (STRING); } } }`)
	g := New(s)
	shred, err := NewJSONShredder(g)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if err := shred.Shred(fmt.Appendf(nil, `{"id":%d,"tags":["a","bb",null]}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	full := g.Capacity()
	g.Release()
	if g.NumRows() != 0 || g.Capacity() > 16 || g.Capacity() >= full {
		t.Fatalf("after Release: %d rows, capacity %d (was %d)", g.NumRows(), g.Capacity(), full)
	}
	for i := range 3 {
		if err := shred.Shred(fmt.Appendf(nil, `{"id":%d,"tags":[]}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Check(); err != nil || g.NumRows() != 3 {
		t.Fatalf("after refilling: %v, %d rows", err, g.NumRows())
	}
}
