package writer

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
)

// TestHeld: what a writer keeps grows with the dictionaries it builds,
// and stays with it after Close, ready for the next file.
func TestHeld(t *testing.T) {
	s, err := schema.Parse("message m { required binary s (STRING); required int64 n; }")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w, err := New(&out, s)
	if err != nil {
		t.Fatal(err)
	}
	empty := w.Held()
	g := rowgroup.New(s)
	sh, err := rowgroup.NewJSONShredder(g)
	if err != nil {
		t.Fatal(err)
	}
	const rows = 20000
	for i := range rows {
		if err := sh.Shred([]byte(`{"s":"value number ` + strconv.Itoa(i) + `","n":` + strconv.Itoa(i%100) + `}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The string dictionary alone holds every distinct value once.
	if held := w.Held(); held < empty+rows*int64(len("value number 0")) {
		t.Errorf("Held %d after %d distinct strings (%d before): the dictionary is not counted", held, rows, empty)
	}
}
