package reader

import (
	"bufio"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// hugeListLen is the length of the list of TestHugeListDefaultBudget: a
// list of this many short strings was refused under the default budget
// (a Value of 72 bytes and a group per element: 1.19 GiB charged).
const hugeListLen = 5_000_000

// TestHugeListDefaultBudget reads a record of a 5M-element list of short
// strings, written by convert, under the default budget, and checks its
// elements and what the record was charged: at most twice the bytes of the
// decoded values.
func TestHugeListDefaultBudget(t *testing.T) {
	f := convertLines(t, hugeListSchema, 128<<20, hugeListLines(hugeListLen))
	rows, err := f.Rows()
	if err != nil {
		t.Fatal(err)
	}
	rec, err := rows.Next()
	if err != nil {
		t.Fatal(err)
	}
	tags, _ := rec.Field("tags")
	if tags.Kind() != KindList || tags.Len() != hugeListLen {
		t.Fatalf("tags: %v of %d elements, want a list of %d", tags.Kind(), tags.Len(), hugeListLen)
	}
	var data int64
	for i, e := range tags.Elements() {
		if want := fmt.Sprintf("s%d", i); string(e.Bytes()) != want {
			t.Fatalf("element %d is %q, want %q", i, e.Bytes(), want)
		}
		data += int64(len(e.Bytes()))
	}
	if got := string(tags.Index(hugeListLen - 1).Bytes()); got != fmt.Sprintf("s%d", hugeListLen-1) {
		t.Errorf("last element %q", got)
	}
	decoded := data + 4*(hugeListLen+1) // the values as a page decodes them
	t.Logf("record charged %d bytes for %d bytes of decoded values (%.2fx)", rows.recHeld, decoded, float64(rows.recHeld)/float64(decoded))
	if rows.recHeld > 2*decoded || rows.recHeld < decoded {
		t.Errorf("record charged %d bytes for %d bytes of decoded values: want between 1 and 2 times", rows.recHeld, decoded)
	}
	rec, err = rows.Next()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(rec.AppendJSON(nil)); got != `{"tags":["a",null,"b"]}` {
		t.Errorf("second record %s", got)
	}
	if _, err := rows.Next(); err != io.EOF {
		t.Errorf("after the last record: %v", err)
	}
}

// TestPackedListCharge appends elements one at a time, with no hint of
// the list's length (a record spread over pages), and checks that the
// list is charged what it holds, and holds at most twice its decoded
// values, at every length.
func TestPackedListCharge(t *testing.T) {
	strs := Values{Type: meta.TypeByteArray, Data: []byte("abcdefghij"), Offsets: []uint32{0, 1, 3, 6, 10}}
	tests := []struct {
		name  string
		vals  Values
		nulls int // every nulls-th element is null; 0 for none
	}{
		{"int32", Values{Type: meta.TypeInt32, Int32: []int32{1, 2, 3, 4}}, 0},
		{"int64 with nulls", Values{Type: meta.TypeInt64, Int64: []int64{1, 2, 3, 4}}, 7},
		{"double", Values{Type: meta.TypeDouble, Double: []float64{1, 2, 3, 4}}, 0},
		{"bool", Values{Type: meta.TypeBoolean, Bool: []bool{true, false, true, true}}, 0},
		{"strings", strs, 0},
		{"strings with nulls", strs, 3},
		{"fixed", Values{Type: meta.TypeFixedLenByteArray, Size: 2, Data: []byte("aabbccdd")}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Rows{mem: newBudget(DefaultMaxMemory), g: -1}
			leaf := &schema.Node{Name: "e", Physical: tt.vals.Type, Length: int32(tt.vals.Size), Repetition: schema.Optional}
			pl := &packedList{elem: leaf, vals: Values{Type: tt.vals.Type, Size: tt.vals.Size}}
			r.recHeld, r.mem.used = packedSize, packedSize
			var want []string
			for i := range 100_000 {
				var err error
				if tt.nulls > 0 && i%tt.nulls == 0 {
					err = r.packNull(pl)
					want = append(want, "null")
				} else {
					err = r.packValue(pl, &tt.vals, i%4)
					want = append(want, string(leafValue(leaf, &tt.vals, i%4).AppendJSON(nil)))
				}
				if err != nil {
					t.Fatal(err)
				}
				if held := pl.heldSize(); held != r.recHeld {
					t.Fatalf("%d elements: charged %d bytes, the list holds %d", i+1, r.recHeld, held)
				}
				// The bitmap costs a bit an element besides the values.
				limit := 2*(pl.decodedSize()+int64(len(pl.nulls))*8) + packedSize + 64
				if i >= 64 && pl.heldSize() > limit {
					t.Fatalf("%d elements: the list holds %d bytes for %d bytes of values", i+1, pl.heldSize(), pl.decodedSize())
				}
			}
			if err := r.finishPacked(pl); err != nil {
				t.Fatal(err)
			}
			v := packedValue(leaf, pl)
			if v.Len() != len(want) {
				t.Fatalf("%d elements, want %d", v.Len(), len(want))
			}
			list := v.List()
			for i, w := range want {
				if got := string(v.Index(i).AppendJSON(nil)); got != w {
					t.Fatalf("element %d is %s, want %s", i, got, w)
				}
				if got := string(list[i].AppendJSON(nil)); got != w {
					t.Fatalf("List()[%d] is %s, want %s", i, got, w)
				}
			}
		})
	}
}

// TestLargeStringsHeld reads two records of a 64 MiB string each, the keys
// of maps (the shape of parquet-testing's large_string_map), and checks
// that reading them allocates about once the strings' bytes: each page is
// decompressed into the buffer its values keep and the records refer to,
// where the page was once copied to decoded values and then to the
// record, each string held three times.
func TestLargeStringsHeld(t *testing.T) {
	const size = 64 << 20
	f := convertLines(t, largeStringsSchema, size+1<<20, largeStringsLines(size))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	recs, err := readAll(f)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	for i, rec := range recs {
		m, _ := rec.Field("m")
		n := 0
		for k, v := range m.Entries() {
			b := k.Bytes()
			if len(b) != size+1 || b[0] != 'a' || b[size-1] != 'a' || b[size] != byte('0'+i) || v.Int32() != int32(i) {
				t.Errorf("record %d: key of %d bytes ending %q, value %d", i, len(b), b[max(0, len(b)-2):], v.Int32())
			}
			n++
		}
		if n != 1 {
			t.Errorf("record %d: %d entries", i, n)
		}
	}
	strs := uint64(2 * size)
	allocated := after.TotalAlloc - before.TotalAlloc
	held := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("%d MiB of strings: %d MiB allocated, %d MiB held", strs>>20, allocated>>20, held>>20)
	limit := strs * 3 / 2
	if raceEnabled {
		limit += strs // the decompression buffer's growth, twice
	}
	if allocated > limit {
		t.Errorf("reading %d MiB of strings allocated %d MiB; want at most %d MiB", strs>>20, allocated>>20, limit>>20)
	}
	if held > int64(strs*3/2) {
		t.Errorf("the records hold %d MiB of heap for %d MiB of strings; want at most 1.5 times", held>>20, strs>>20)
	}
	runtime.KeepAlive(recs)
}

// TestPackedShapes reads lists of the shapes that are packed, and one that
// is not, with nulls at every level, and compares their JSON with what
// was written.
func TestPackedShapes(t *testing.T) {
	tests := []struct {
		name, schema string
		in, want     []string
		packed       bool
	}{
		{"three-level LIST of int32", `message m { optional group l (LIST) { repeated group list { optional int32 element; } } }`,
			[]string{`{"l":[1,null,3]}`, `{"l":[]}`, `{"l":null}`, `{}`},
			[]string{`{"l":[1,null,3]}`, `{"l":[]}`, `{"l":null}`, `{"l":null}`}, true},
		{"required strings", `message m { required group l (LIST) { repeated group list { required binary element (STRING); } } }`,
			[]string{`{"l":["x","yz"]}`, `{"l":[]}`},
			[]string{`{"l":["x","yz"]}`, `{"l":[]}`}, true},
		{"inside a group", `message m { optional group g { optional group l (LIST) { repeated group list { optional double element; } } } }`,
			[]string{`{"g":{"l":[1.5,null]}}`, `{"g":null}`, `{"g":{"l":null}}`, `{"g":{"l":[]}}`},
			[]string{`{"g":{"l":[1.5,null]}}`, `{"g":null}`, `{"g":{"l":null}}`, `{"g":{"l":[]}}`}, true},
		{"list of structs", `message m { optional group l (LIST) { repeated group list { optional group element { optional int64 a; } } } }`,
			[]string{`{"l":[{"a":1},null,{"a":null}]}`},
			[]string{`{"l":[{"a":1},null,{"a":null}]}`}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := convertLines(t, tt.schema, 0, func(w *bufio.Writer) { w.WriteString(strings.Join(tt.in, "\n") + "\n") })
			rows, err := f.Rows()
			if err != nil {
				t.Fatal(err)
			}
			if got := rows.leaves[0].pack != nil; got != tt.packed {
				t.Errorf("packed %v, want %v", got, tt.packed)
			}
			var got []string
			for {
				v, err := rows.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(v.AppendJSON(nil)))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
