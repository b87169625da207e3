package rowgroup

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/variant"
)

// directShapes are the shapes the direct path is checked with: nested
// objects, arrays of scalars and of objects, every scalar kind JSON can
// give, decimals of each width, and a top-level scalar and array.
var directShapes = []string{
	"$.id int64\n$.tags[*] string\n$.u.n decimal(9,2)\n$.u.x[*][*] boolean",
	"$.id int32\n$.ts string\n$.user string\n$.country string\n$.amount decimal(9,2)\n$.tags[*] string\n" +
		"$.payload.session string\n$.payload.nested.level int32\n$.payload.nested.flag boolean\n$.payload.nested.score decimal(18,17)",
	"$.a double\n$.b.c string\n$.b.d[*].e int8\n$.b.d[*].f decimal(38,4)\n$.g int16",
	"$.k float\n$.l date\n$.m binary\n$.n decimal(18,0)\n$.o[*] int64",
	"$ int64",
	"$[*] string",
	"$[*].a int32",
}

// pair is one shredder of each path over row groups of the same schema.
type directPair struct {
	direct, ref       *VariantShredder
	gDirect, gRef     *RowGroup
	name              string
	optsName          string
	directHits, total int
}

func newDirectPair(t testing.TB, shapeText string, opts ...variant.Option) *directPair {
	t.Helper()
	shape, err := variant.ParseShapePaths(shapeText)
	if err != nil {
		t.Fatal(err)
	}
	node, err := VariantNode("v", schema.Required, shape)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.New("m", node)
	if err != nil {
		t.Fatal(err)
	}
	p := &directPair{name: shape.String(), gDirect: New(s), gRef: New(s)}
	if p.direct, err = NewVariantShredder(p.gDirect, VariantEncoding(opts...)); err != nil {
		t.Fatal(err)
	}
	if p.ref, err = NewVariantShredder(p.gRef, VariantEncoding(opts...), VariantTwoPass()); err != nil {
		t.Fatal(err)
	}
	if shape.Typed() && p.direct.direct == nil || p.ref.direct != nil {
		t.Fatal("VariantTwoPass does not choose the path")
	}
	if p.direct.direct == nil {
		p.direct.direct = &directState{} // for the counters of shred
	}
	return p
}

// shred gives json to both shredders and fails on any difference.
func (p *directPair) shred(t testing.TB, json []byte) {
	t.Helper()
	before := p.direct.direct.misses + p.direct.direct.pause
	errD := p.direct.ShredJSON(json)
	errR := p.ref.ShredJSON(json)
	if fmt.Sprint(errD) != fmt.Sprint(errR) {
		t.Fatalf("%s: %s:\ndirect error %v\nreference    %v", p.name, json, errD, errR)
	}
	p.total++
	if errD == nil && p.direct.direct.misses+p.direct.direct.pause == before {
		p.directHits++
	}
}

// check compares every column of the two row groups.
func (p *directPair) check(t testing.TB) {
	t.Helper()
	if p.gDirect.NumRows() != p.gRef.NumRows() {
		t.Fatalf("%s: %d rows, reference %d", p.name, p.gDirect.NumRows(), p.gRef.NumRows())
	}
	if err := p.gDirect.Check(); err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	for i, c := range p.gDirect.Columns() {
		r := p.gRef.Column(i)
		if d := columnDiff(c, r); d != "" {
			t.Fatalf("%s: column %s: %s", p.name, c.Leaf.PathString(), d)
		}
	}
}

func columnDiff(c, r *Column) string {
	switch {
	case c.levels != r.levels || c.values != r.values:
		return fmt.Sprintf("%d levels and %d values, reference %d and %d", c.levels, c.values, r.levels, r.values)
	case !bytes.Equal(c.Rep, r.Rep):
		return fmt.Sprintf("rep %v, reference %v", c.Rep, r.Rep)
	case !bytes.Equal(c.Def, r.Def):
		return fmt.Sprintf("def %v, reference %v", c.Def, r.Def)
	case !slices.Equal(c.Bool, r.Bool), !slices.Equal(c.Int32, r.Int32), !slices.Equal(c.Int64, r.Int64),
		!slices.Equal(c.Float, r.Float), !slices.Equal(c.Double, r.Double):
		return "typed values differ"
	case !slices.Equal(c.Offsets, r.Offsets) || !bytes.Equal(c.Bytes, r.Bytes):
		for i := 0; i < c.values && i < r.values; i++ {
			if c.Offsets == nil {
				break
			}
			if !bytes.Equal(c.ByteArray(i), r.ByteArray(i)) {
				return fmt.Sprintf("value %d is %x, reference %x", i, c.ByteArray(i), r.ByteArray(i))
			}
		}
		return "bytes differ"
	}
	return ""
}

// TestVariantDirectCases checks records chosen for each way the direct
// path can go: fitting, not fitting, or handing the record to the
// two-pass path.
func TestVariantDirectCases(t *testing.T) {
	tests := []struct {
		shape   string
		records []string
	}{
		{directShapes[0], []string{
			`{"id":7,"tags":["a","b"],"u":{"n":1.5,"x":[[true],[false,true]]}}`,
			`{"u":{"n":1.5,"x":[[true],[false,true]]},"tags":["a","b"],"id":7}`, // another order
			`{"id":7}`, `{}`, `{"id":null,"tags":null,"u":null}`,
			`{"id":"7","tags":"a","u":"x"}`,
			`{"id":7,"tags":["a",3,null,[1,2],["x"]],"u":{"n":1.234,"x":[[1],true,[]]}}`,
			`{"id":7,"tags":[{"k":1}]}`,                         // a non-fitting object
			`{"id":7,"extra":1}`,                                // a residual field
			`{"id":7,"id":8}`,                                   // a repeated name
			`{"id":123456789012345678901234567890123456789012}`, // no exact type
			`{"id":1e400}`, `{"id":-0.0}`, `{"id":1.0}`, `{"id":9223372036854775808}`,
			`{"id":7,"tags":["` + strings.Repeat("é", 40) + `"]}`,
			`{"id":7} x`, `{"id":`, `[1,2]`, `"s"`, `3`, `null`, `true`,
			` { "id" : 7 , "tags" : [ "a" ] } `, `{"i\u0064":7,"tags":["\u00e9\n"]}`,
		}},
		{"$ int64", []string{`1`, `"x"`, `1.5`, `[1]`, `{"a":1}`, `null`, `1e3`}},
		{"", []string{`1`, `{"b":[1,{"c":2}],"a":null}`, `{"a":1,"a":2}`, `[`, `1e400`, `"x"`}}, // not shredded
		{"$[*] string", []string{`["a"]`, `[]`, `[[]]`, `[{}]`, `"a"`, `[1,"b",null]`}},
		{"$[*].a int32", []string{`[{"a":1},{"a":2,"b":3}]`, `[{"a":1},{}]`, `[{"a":1},1]`, `[]`}},
	}
	for _, tt := range tests {
		for _, opts := range [][]variant.Option{nil, {variant.LastKeyWins(), variant.LossyNumbers()}} {
			p := newDirectPair(t, tt.shape, opts...)
			p.direct.direct.noPause = true
			for _, r := range tt.records {
				p.shred(t, []byte(r))
			}
			p.check(t)
		}
	}
}

// TestVariantDirectRandom is a property test: random JSON records, most
// of them near the shape, give the same columns and errors both ways.
func TestVariantDirectRandom(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 500
	}
	for si, text := range directShapes {
		shape, err := variant.ParseShapePaths(text)
		if err != nil {
			t.Fatal(err)
		}
		for oi, opts := range [][]variant.Option{nil, {variant.LastKeyWins(), variant.LossyNumbers()}} {
			rng := rand.New(rand.NewPCG(uint64(si), uint64(oi)))
			p := newDirectPair(t, text, opts...)
			p.direct.direct.noPause = true
			g := jsonGen{r: rng, odd: 10 + 90*oi}
			for range n {
				p.shred(t, g.record(&shape))
			}
			p.check(t)
			t.Logf("%s: %d of %d records by the direct path", p.name, p.directHits, p.total)
			if p.directHits < p.total/5 {
				t.Errorf("%s: only %d of %d records took the direct path", p.name, p.directHits, p.total)
			}
		}
	}
}

// jsonGen writes random JSON, mostly of a given shape.
type jsonGen struct {
	r   *rand.Rand
	odd int // one value in odd is anything, not of the shape
	buf []byte
}

func (g *jsonGen) record(s *variant.Shape) []byte {
	g.buf = g.buf[:0]
	g.value(s, 0)
	switch g.r.IntN(100) {
	case 0:
		g.buf = g.buf[:g.r.IntN(len(g.buf)+1)] // cut short
	case 1:
		g.buf = append(g.buf, " x"...)
	case 2:
		g.buf = append([]byte(" \n"), append(g.buf, ' ')...)
	}
	return slices.Clone(g.buf)
}

func (g *jsonGen) value(s *variant.Shape, depth int) {
	if s == nil || g.r.IntN(g.odd) == 0 || depth > 6 {
		g.any(depth)
		return
	}
	switch s.Type {
	case variant.Object:
		g.buf = append(g.buf, '{')
		fields := g.r.Perm(len(s.Fields))
		n := 0
		for _, i := range fields {
			if g.r.IntN(8) == 0 {
				continue // missing
			}
			g.comma(n)
			n++
			g.buf = strconv.AppendQuote(g.buf, s.Fields[i].Name)
			g.buf = append(g.buf, ':')
			g.value(&s.Fields[i].Shape, depth+1)
			if g.r.IntN(60) == 0 { // repeated
				g.buf = append(g.buf, ',')
				g.buf = strconv.AppendQuote(g.buf, s.Fields[i].Name)
				g.buf = append(g.buf, ":1"...)
			}
		}
		if g.r.IntN(30) == 0 {
			g.comma(n)
			g.buf = append(g.buf, `"zz_extra":`...)
			g.any(depth + 1)
		}
		g.buf = append(g.buf, '}')
	case variant.Array:
		g.buf = append(g.buf, '[')
		for i := range g.r.IntN(5) {
			g.comma(i)
			g.value(s.Element, depth+1)
		}
		g.buf = append(g.buf, ']')
	case variant.String:
		g.str()
	case variant.Boolean:
		g.buf = strconv.AppendBool(g.buf, g.r.IntN(2) == 0)
	default:
		g.number()
	}
}

func (g *jsonGen) comma(i int) {
	if i > 0 {
		g.buf = append(g.buf, ',')
	}
}

func (g *jsonGen) any(depth int) {
	n := 8
	if depth > 4 {
		n = 6
	}
	switch g.r.IntN(n) {
	case 0:
		g.buf = append(g.buf, "null"...)
	case 1:
		g.buf = strconv.AppendBool(g.buf, g.r.IntN(2) == 0)
	case 2, 3:
		g.number()
	case 4, 5:
		g.str()
	case 6:
		g.buf = append(g.buf, '[')
		for i := range g.r.IntN(4) {
			g.comma(i)
			g.any(depth + 1)
		}
		g.buf = append(g.buf, ']')
	case 7:
		g.buf = append(g.buf, '{')
		for i := range g.r.IntN(4) {
			g.comma(i)
			g.buf = strconv.AppendQuote(g.buf, []string{"a", "b", "id", "n", "é", "x"}[g.r.IntN(6)])
			g.buf = append(g.buf, ':')
			g.any(depth + 1)
		}
		g.buf = append(g.buf, '}')
	}
}

func (g *jsonGen) number() {
	switch g.r.IntN(10) {
	case 0:
		g.buf = strconv.AppendInt(g.buf, g.r.Int64()-g.r.Int64(), 10)
	case 1:
		g.buf = strconv.AppendInt(g.buf, int64(g.r.IntN(300)-150), 10)
	case 2:
		g.buf = strconv.AppendFloat(g.buf, g.r.NormFloat64()*1e6, 'g', -1, 64)
	case 3:
		g.buf = strconv.AppendFloat(g.buf, g.r.Float64(), 'f', -1, 64)
	case 4:
		g.buf = append(g.buf, []string{"-0.0", "1e400", "1e-400", "0.10", "1.5e3", "-0", "12345678901234567890123456789012345678901",
			"0.000000000000000000000000000000000000001", "99999999.99", "1E2", "5e-324"}[g.r.IntN(11)]...)
	default:
		g.buf = strconv.AppendFloat(g.buf, float64(g.r.IntN(100000))/100, 'f', -1, 64)
	}
}

func (g *jsonGen) str() {
	switch g.r.IntN(6) {
	case 0:
		g.buf = strconv.AppendQuote(g.buf, strings.Repeat("ab", g.r.IntN(60)))
	case 1:
		g.buf = append(g.buf, `"a\"b\\c\u00e9\ud83d\ude00\n"`...)
	default:
		g.buf = strconv.AppendQuote(g.buf, "s"+strconv.Itoa(g.r.IntN(1000)))
	}
}

// FuzzVariantDirect checks that the direct path and the two-pass path
// give the same columns and errors for any input.
func FuzzVariantDirect(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"tags":["a",2],"u":{"n":1.5,"x":[[true],[1]]}}`,
		`{"id":"x","tags":"y","u":[]}`, `[{"id":1}]`, `null`, `{}`, `{"id":1,"id":2}`,
		`{"id":1,"tags":[[1,2],{"a":1}],"u":{"n":1e400}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, json []byte) {
		p := newDirectPair(t, directShapes[0])
		p.direct.direct.noPause = true
		p.shred(t, json)
		p.shred(t, []byte(`{"id":1,"tags":["a"],"u":{"n":2,"x":[]}}`))
		p.check(t)
	})
}
