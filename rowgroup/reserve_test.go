package rowgroup

import (
	"testing"

	"github.com/pqsink/pqsink/schema"
)

func TestReserveKeepsContentAndGrows(t *testing.T) {
	g := New(schema.MustParse(`message m { required int64 a; optional binary b (STRING); }`))
	for i := 0; i < 10; i++ {
		g.Column(0).AppendInt64(0, int64(i))
		g.Column(1).AppendBytes(0, []byte("xyz"))
		g.EndRow()
	}
	g.Reserve(1000)
	a, b := g.Column(0), g.Column(1)
	if cap(a.Int64) < 1000 || cap(b.Bytes) < 3000 || cap(b.Def) < 1000 || cap(b.Offsets) < 1000 {
		t.Errorf("capacities after Reserve(1000): %d %d %d %d", cap(a.Int64), cap(b.Bytes), cap(b.Def), cap(b.Offsets))
	}
	if len(a.Int64) != 10 || a.Int64[9] != 9 || string(b.ByteArray(9)) != "xyz" {
		t.Errorf("Reserve changed the content")
	}
	if err := g.Check(); err != nil {
		t.Error(err)
	}
	empty := New(g.Schema())
	empty.Reserve(1000) // nothing to extrapolate from: a no-op
	if cap(empty.Column(0).Int64) != 0 {
		t.Error("Reserve on an empty row group allocated")
	}
}
