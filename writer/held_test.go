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

// TestSharedScratch: writers that share a Scratch write the same bytes as
// writers of their own, leave the shared working memory out of Held, and
// the Scratch keeps one set per chunk encoded at once, not one per column.
func TestSharedScratch(t *testing.T) {
	s, err := schema.Parse("message m { required binary s (STRING); required int64 n; optional double d; required binary t (STRING); }")
	if err != nil {
		t.Fatal(err)
	}
	g := rowgroup.New(s)
	sh, err := rowgroup.NewJSONShredder(g)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20000 {
		rec := `{"s":"value number ` + strconv.Itoa(i) + `","n":` + strconv.Itoa(i%100) + `,"d":` + strconv.Itoa(i) + `.5,"t":"tag ` + strconv.Itoa(i%7) + `"}`
		if err := sh.Shred([]byte(rec)); err != nil {
			t.Fatal(err)
		}
	}
	write := func(opts ...Option) ([]byte, *Writer) {
		t.Helper()
		var out bytes.Buffer
		w, err := New(&out, s, opts...)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := w.WriteRowGroup(g); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return out.Bytes(), w
	}
	own, ownW := write()
	shared := NewScratch()
	for _, parallel := range []int{1, 3} {
		a, aw := write(SharedScratch(shared), Parallelism(parallel))
		b, _ := write(SharedScratch(shared), Parallelism(parallel))
		if !bytes.Equal(a, own) || !bytes.Equal(b, own) {
			t.Fatalf("parallelism %d: a writer with shared scratch wrote other bytes than one with its own", parallel)
		}
		if aw.Held() >= ownW.Held() {
			t.Errorf("parallelism %d: Held %d with shared scratch, %d with its own: the shared scratch is counted", parallel, aw.Held(), ownW.Held())
		}
	}
	// At most three chunks were encoded at once: three sets, each at most
	// what a writer of its own keeps for all four columns.
	if n := len(shared.free); n < 1 || n > 3 {
		t.Errorf("%d scratch sets after parallelism 1 and 3, want 1 to 3", n)
	}
	if held := shared.Held(); held <= 0 || held > 3*ownW.scratch.Held() {
		t.Errorf("shared scratch holds %d, a writer's own %d", held, ownW.scratch.Held())
	}
}
