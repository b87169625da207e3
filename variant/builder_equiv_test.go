package variant

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// checkAgainstReference encodes json with the Encoder and with the
// node-tree reference and fails on any difference in bytes or errors.
func checkAgainstReference(t *testing.T, json []byte, lastWins, lossy bool) {
	t.Helper()
	var opts []Option
	if lastWins {
		opts = append(opts, LastKeyWins())
	}
	if lossy {
		opts = append(opts, LossyNumbers())
	}
	e := NewEncoder(opts...)
	// Append after some bytes, as the shredders do, and twice, so that
	// reused buffers are exercised.
	for range 2 {
		m, v, err := e.AppendJSON([]byte{9}, []byte{7, 7}, json)
		rm, rv, rerr := refEncode(json, lastWins, lossy)
		if (err == nil) != (rerr == nil) {
			t.Fatalf("%.200s: error %v, reference %v", json, err, rerr)
		}
		if err != nil {
			if strings.Contains(rerr.Error(), "duplicate") && err.Error() != rerr.Error() {
				t.Fatalf("%.200s: error %v, reference %v", json, err, rerr)
			}
			continue
		}
		if !bytes.Equal(m[1:], rm) || !bytes.Equal(v[2:], rv) {
			i := 0
			for i < len(v)-2 && i < len(rv) && v[2+i] == rv[i] {
				i++
			}
			t.Fatalf("%.200s (lastWins %v): metadata equal %v, value of %d bytes differs from the reference's %d at byte %d: %x, want %x",
				json, lastWins, bytes.Equal(m[1:], rm), len(v)-2, len(rv), i, v[2+i:min(len(v), 2+i+40)], rv[i:min(len(rv), i+40)])
		}
		if err := Validate(m[1:], v[2:]); err != nil {
			t.Fatalf("%.200s: %v", json, err)
		}
	}
}

func TestBuilderAgainstReference(t *testing.T) {
	cases := []string{
		`1`, `"x"`, `null`, `[]`, `{}`, `[[],[[]],{}]`,
		`{"b":1,"a":2}`, `{"a":{"d":1,"c":[1,{"f":2,"e":3}]},"b":[{"y":1,"x":2},{"x":3}]}`,
		`{"a":1,"a":2}`, `{"b":{"x":1,"x":2},"a":{"y":1,"y":2},"b":3}`,
		`{"a":{"z":{"q":1}},"a":{"y":1},"c":[{"k":{"m":1}}]}`,
		`[` + strings.Repeat(`1,`, 300) + `1]`,
		`["` + strings.Repeat("x", 70000) + `",{"b":1,"a":2}]`,
	}
	// An object of 300 names, so that ids need two bytes, beside small
	// objects whose ids fit one byte or not depending on their names.
	var big strings.Builder
	big.WriteString(`{"inner":{"zz":1,"aa":2},`)
	for i := range 300 {
		big.WriteString(strconv.Quote("k" + strconv.Itoa(i)))
		big.WriteString(`:{"x":1},`)
	}
	big.WriteString(`"a":[{"zzz":1},{"b":2}]}`)
	cases = append(cases, big.String())
	for _, c := range cases {
		for _, lw := range []bool{false, true} {
			checkAgainstReference(t, []byte(c), lw, false)
		}
	}
}

// TestBuilderAgainstReferenceRandom is a property test over random JSON
// documents: nested objects with repeated, unsorted and many names.
func TestBuilderAgainstReferenceRandom(t *testing.T) {
	n := 4000
	if testing.Short() {
		n = 400
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		g := docGen{r: r, names: 4 + r.IntN(400)}
		doc := g.value(nil, 0)
		checkAgainstReference(t, doc, i%2 == 0, i%3 == 0)
	}
}

type docGen struct {
	r     *rand.Rand
	names int
}

func (g *docGen) value(dst []byte, depth int) []byte {
	k := g.r.IntN(10)
	if depth > 4 {
		k = g.r.IntN(5)
	}
	switch k {
	case 0:
		return append(dst, "null"...)
	case 1:
		return append(dst, "true"...)
	case 2:
		return strconv.AppendInt(dst, g.r.Int64N(1<<40)-1<<39, 10)
	case 3:
		return strconv.AppendFloat(dst, g.r.Float64()*100, 'f', 3, 64)
	case 4:
		return strconv.AppendQuote(dst, strings.Repeat("s", g.r.IntN(80)))
	case 5, 6:
		dst = append(dst, '[')
		for i := range g.r.IntN(6) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = g.value(dst, depth+1)
		}
		return append(dst, ']')
	}
	dst = append(dst, '{')
	n, next := g.r.IntN(8), depth+1
	if g.r.IntN(20) == 0 {
		n, next = 100+g.r.IntN(300), 6 // many fields of scalars
	}
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendQuote(dst, "n"+strconv.Itoa(g.r.IntN(g.names)))
		dst = append(dst, ':')
		dst = g.value(dst, next)
	}
	return append(dst, '}')
}

// FuzzBuilderAgainstReference checks the Encoder against the node-tree
// reference on any input.
func FuzzBuilderAgainstReference(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[{"d":1,"c":2}]}`, `{"a":1,"a":{"x":1}}`, `[1,[2,{"z":3}]]`} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, json []byte, lastWins bool) {
		checkAgainstReference(t, json, lastWins, false)
	})
}

// TestBuilderReuseAgainstReference encodes a stream of documents with one
// Encoder, many of them with the names of the one before (in the same or
// another order, or a longer or shorter list), which is when the Encoder
// reuses the field orders and ranks of earlier records.
func TestBuilderReuseAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, lastWins := range []bool{false, true} {
		var opts []Option
		if lastWins {
			opts = append(opts, LastKeyWins())
		}
		e := NewEncoder(opts...)
		var pool [][]byte
		for range 300 {
			g := docGen{r: r, names: 3}
			pool = append(pool, g.value(nil, 2))
		}
		for i := range 20000 {
			doc := pool[r.IntN(len(pool))]
			if i%7 == 0 {
				doc = pool[i%5] // runs of the same few
			}
			m, v, err := e.AppendJSON(nil, nil, doc)
			rm, rv, rerr := refEncode(doc, lastWins, false)
			if (err == nil) != (rerr == nil) || err != nil && err.Error() != rerr.Error() {
				t.Fatalf("%s: error %v, reference %v", doc, err, rerr)
			}
			if !bytes.Equal(m, rm) || !bytes.Equal(v, rv) {
				t.Fatalf("%s: differs from the reference: %x %x, want %x %x", doc, m, v, rm, rv)
			}
		}
	}
}

// TestBuilderDropsHugeBuffers checks that a huge value does not leave its
// scratch in the Encoder for the values after it.
func TestBuilderDropsHugeBuffers(t *testing.T) {
	e := NewEncoder()
	huge := []byte(`[{"b":1,"a":[` + strings.Repeat(`{"y":1,"x":2},`, 1<<18) + `1]}]`)
	if _, _, err := e.AppendJSON(nil, nil, huge); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.AppendJSON(nil, nil, []byte(`{"b":1,"a":2}`)); err != nil {
		t.Fatal(err)
	}
	b := &e.b
	if kept := cap(b.data) + cap(b.moved) + cap(b.starts) + cap(b.fields) + cap(b.objs) + cap(b.perm) + cap(b.newOff); kept > 1<<16 {
		t.Errorf("the Encoder keeps %d elements of scratch after a %d-byte value", kept, len(huge))
	}
}
