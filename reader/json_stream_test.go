package reader

import (
	"bytes"
	"errors"
	"testing"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// tinyWriter takes at most 7 bytes a call, as a pipe may.
type tinyWriter struct{ buf bytes.Buffer }

func (w *tinyWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), 7)
		w.buf.Write(p[:k])
		p = p[k:]
	}
	return n, nil
}

// TestWriteJSONEqualsAppendJSON: every record of the test files streams
// out as the same text AppendJSON builds.
func TestWriteJSONEqualsAppendJSON(t *testing.T) {
	records := 0
	for _, path := range testingFiles(t) {
		data, err := readTestFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Open(bytesReader(data), int64(len(data)))
		if err != nil {
			continue // the corrupt files of the collection
		}
		rows, err := f.Rows()
		if err != nil {
			continue
		}
		for i := 0; i < 200; i++ {
			v, err := rows.Next()
			if err != nil {
				break
			}
			var w tinyWriter
			if err := v.WriteJSON(&w); err != nil {
				t.Fatalf("%s row %d: %v", path, i, err)
			}
			if want := v.AppendJSON(nil); !bytes.Equal(w.buf.Bytes(), want) {
				t.Fatalf("%s row %d: WriteJSON\n%s\nAppendJSON\n%s", path, i, w.buf.Bytes(), want)
			}
			records++
		}
	}
	if records < 100 {
		t.Fatalf("only %d records compared", records)
	}
}

// TestWriteJSONPackedNulls streams packed lists whose nulls come in whole
// words of 64, in part words and between values, and a list of 200,000
// nulls, through WriteJSON's shortcut for all-null words.
func TestWriteJSONPackedNulls(t *testing.T) {
	leaf := &schema.Node{Name: "e", Physical: meta.TypeInt32, Repetition: schema.Optional}
	vals := Values{Type: meta.TypeInt32, Int32: []int32{7, -3}}
	for _, pattern := range []func(i int) bool{
		func(i int) bool { return true },
		func(i int) bool { return i%200 != 199 },
		func(i int) bool { return i < 64 || i >= 130 && i < 300 || i > 1000 },
		func(i int) bool { return i%3 == 0 },
	} {
		r := &Rows{mem: newBudget(DefaultMaxMemory), g: -1}
		pl := &packedList{elem: leaf, vals: Values{Type: meta.TypeInt32}}
		for i := range 200_000 {
			var err error
			if pattern(i) {
				err = r.packNull(pl)
			} else {
				err = r.packValue(pl, &vals, i%2)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := r.finishPacked(pl); err != nil {
			t.Fatal(err)
		}
		v := packedValue(leaf, pl)
		var w tinyWriter
		if err := v.WriteJSON(&w); err != nil {
			t.Fatal(err)
		}
		if want := v.AppendJSON(nil); !bytes.Equal(w.buf.Bytes(), want) {
			t.Fatalf("WriteJSON gives %d bytes, AppendJSON %d; first difference at %d", w.buf.Len(), len(want), firstDiff(w.buf.Bytes(), want))
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// failingWriter fails every write.
type failingWriter struct{ calls int }

func (w *failingWriter) Write([]byte) (int, error) {
	w.calls++
	return 0, errors.New("disk full")
}

// TestWriteJSONError: the writer's first error is returned, and nothing
// more is written after it.
func TestWriteJSONError(t *testing.T) {
	leaf := &schema.Node{Name: "e", Physical: meta.TypeInt32, Repetition: schema.Optional}
	r := &Rows{mem: newBudget(DefaultMaxMemory), g: -1}
	pl := &packedList{elem: leaf, vals: Values{Type: meta.TypeInt32}}
	for range 1 << 20 {
		if err := r.packNull(pl); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.finishPacked(pl); err != nil {
		t.Fatal(err)
	}
	var w failingWriter
	if err := packedValue(leaf, pl).WriteJSON(&w); err == nil || err.Error() != "disk full" {
		t.Fatalf("WriteJSON: %v, want the writer's error", err)
	}
	if w.calls != 1 {
		t.Errorf("%d writes after the first failed", w.calls-1)
	}
}
