package writer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
)

// TestPlanFastPaths wants the page plans of required columns, computed
// from the values' sizes alone, to equal the level-by-level plan.
func TestPlanFastPaths(t *testing.T) {
	tests := []struct {
		name      string
		schema    string
		pageSize  int
		rowLimit  int
		maxPage   int
		valueSize func(r *rand.Rand) int
	}{
		{"int64 row limit", `message m { required int64 v; }`, 1 << 20, 20_000, MaxPageBytes, nil},
		{"int64 page size", `message m { required int64 v; }`, 1000, 20_000, MaxPageBytes, nil},
		{"int32 odd page size", `message m { required int32 v; }`, 1001, 7, MaxPageBytes, nil},
		{"fixed over max page", `message m { required fixed_len_byte_array(12) v; }`, 1 << 20, 1 << 20, 100, nil},
		{"strings", `message m { required binary v; }`, 300, 1000, MaxPageBytes, func(r *rand.Rand) int { return r.IntN(40) }},
		{"strings row limit", `message m { required binary v; }`, 1 << 20, 9, MaxPageBytes, func(r *rand.Rand) int { return r.IntN(40) }},
		{"strings max page", `message m { required binary v; }`, 1 << 20, 1000, 64, func(r *rand.Rand) int { return r.IntN(40) }},
		{"string over max page", `message m { required binary v; }`, 1 << 20, 1000, 64, func(r *rand.Rand) int { return r.IntN(100) }},
		{"empty strings", `message m { required binary v; }`, 16, 1000, MaxPageBytes, func(r *rand.Rand) int { return 0 }},
	}
	for _, tt := range tests {
		for _, rows := range []int{0, 1, 2, 999, 5000} {
			t.Run(fmt.Sprintf("%s/%d", tt.name, rows), func(t *testing.T) {
				defer func(m int) { maxPageBytes = m }(maxPageBytes)
				maxPageBytes = tt.maxPage
				s := schema.MustParse(tt.schema)
				g := rowgroup.New(s)
				c := g.Column(0)
				r := rand.New(rand.NewPCG(uint64(rows), 1))
				for range rows {
					switch s.Leaves()[0].Physical.String() {
					case "INT64":
						c.AppendInt64(0, 1)
					case "INT32":
						c.AppendInt32(0, 1)
					case "FIXED_LEN_BYTE_ARRAY":
						c.AppendBytes(0, make([]byte, 12))
					default:
						c.AppendBytes(0, make([]byte, tt.valueSize(r)))
					}
					g.EndRow()
				}
				got, gotErr := planPages(nil, c, tt.pageSize, tt.rowLimit, false)
				width := 0
				if tt.valueSize == nil {
					width = valueSize(c, 0)
				}
				want, wantErr := planLevels(nil, c, width, tt.pageSize, tt.rowLimit, false)
				if (gotErr != nil) != (wantErr != nil) {
					t.Fatalf("error %v, level by level %v", gotErr, wantErr)
				}
				if !slices.Equal(got, want) {
					t.Errorf("pages\n%v\nlevel by level\n%v", got, want)
				}
			})
		}
	}
}

// planLevelsByLevel is the page plan walked level by level, the way
// planLevels planned every page before quickPage: the reference its
// shortcuts are held to.
func planLevelsByLevel(pages []pageRange, c *rowgroup.Column, width, pageSize, rowLimit int, split bool) ([]pageRange, error) {
	n := c.NumLevels()
	p := pageRange{}
	size, v := 0, 0
	maxDef, maxRep := c.MaxDef(), c.MaxRep()
	for l := 0; l < n; l++ {
		vs := 0
		if maxDef == 0 || c.Def[l] == maxDef {
			if width > 0 {
				vs = width
			} else {
				vs = 4 + int(c.Offsets[v+1]-c.Offsets[v])
			}
		}
		if vs > maxPageBytes {
			return pages, fmt.Errorf("value over max page")
		}
		full := size+vs > maxPageBytes
		switch {
		case l == p.l0:
		case maxRep == 0 || c.Rep[l] == 0:
			if size >= pageSize || p.rows >= rowLimit || full {
				p.l1, p.v1 = l, v
				pages = append(pages, p)
				p = pageRange{l0: l, v0: v, first: p.first + p.rows}
				size = 0
			}
		case full && split:
			p.l1, p.v1 = l, v
			pages = append(pages, p)
			p = pageRange{l0: l, v0: v, first: p.first + p.rows}
			size = 0
		case full:
			return pages, fmt.Errorf("record over max page")
		}
		if maxRep == 0 || c.Rep[l] == 0 {
			p.rows++
		}
		if vs > 0 {
			size += vs
			v++
		}
	}
	p.l1, p.v1 = n, v
	return append(pages, p), nil
}

// TestPlanLevels wants the plans of optional and repeated columns, whose
// pages quickPage counts a word at a time where the row limit ends them,
// to equal the level-by-level plan, whichever limit cuts the pages.
func TestPlanLevels(t *testing.T) {
	tests := []struct {
		name     string
		schema   string
		pageSize int
		rowLimit int
		maxPage  int
		split    bool
	}{
		{"optional int64 row limit", `message m { optional int64 v; }`, 1 << 20, 1000, MaxPageBytes, false},
		{"optional int64 page size", `message m { optional int64 v; }`, 2000, 1000, MaxPageBytes, false},
		{"optional int64 row limit 1", `message m { optional int64 v; }`, 1 << 20, 1, MaxPageBytes, false},
		{"optional int64 row limit 0", `message m { optional int64 v; }`, 1 << 20, 0, MaxPageBytes, false},
		{"list row limit 0", `message m { optional group l (LIST) { repeated group list { required binary e; } } }`, 1 << 20, 0, MaxPageBytes, false},
		{"optional strings row limit", `message m { optional binary v; }`, 1 << 20, 777, MaxPageBytes, false},
		{"optional strings page size", `message m { optional binary v; }`, 3000, 777, MaxPageBytes, false},
		{"optional strings max page", `message m { optional binary v; }`, 1 << 20, 777, 200, false},
		{"list row limit", `message m { optional group l (LIST) { repeated group list { required binary e; } } }`, 1 << 20, 300, MaxPageBytes, false},
		{"list row limit 1", `message m { optional group l (LIST) { repeated group list { required binary e; } } }`, 1 << 20, 1, MaxPageBytes, false},
		{"list page size", `message m { optional group l (LIST) { repeated group list { required binary e; } } }`, 500, 300, MaxPageBytes, false},
		{"list split", `message m { optional group l (LIST) { repeated group list { required binary e; } } }`, 1 << 20, 300, 150, true},
		{"nested int32", `message m { optional group g { optional group h { required int32 v; } } }`, 1 << 20, 500, MaxPageBytes, false},
		{"nested int32 page size", `message m { optional group g { optional group h { required int32 v; } } }`, 999, 500, MaxPageBytes, false},
	}
	for _, tt := range tests {
		for _, rows := range []int{0, 1, 7, 999, 5000} {
			t.Run(fmt.Sprintf("%s/%d", tt.name, rows), func(t *testing.T) {
				defer func(m int) { maxPageBytes = m }(maxPageBytes)
				maxPageBytes = tt.maxPage
				s := schema.MustParse(tt.schema)
				g := rowgroup.New(s)
				c := g.Column(0)
				r := rand.New(rand.NewPCG(uint64(rows), 3))
				value := func(rep uint8) {
					switch c.Leaf.Physical.String() {
					case "INT64":
						c.AppendInt64(rep, r.Int64())
					case "INT32":
						c.AppendInt32(rep, r.Int32())
					default:
						c.AppendBytes(rep, make([]byte, r.IntN(40)))
					}
				}
				for i := range rows {
					// Long stretches of values, then of nulls, as well as
					// nulls at random.
					switch {
					case i/300%2 == 1 && r.IntN(4) > 0:
						c.Null(0, uint8(r.IntN(int(c.MaxDef()))))
					case c.MaxRep() > 0:
						k := r.IntN(6)
						if i%500 == 3 {
							k = 40 // a record of many values
						}
						for j := range k {
							value(uint8(min(j, 1)))
						}
						if k == 0 {
							c.Null(0, 1)
						}
					default:
						value(0)
					}
					g.EndRow()
				}
				width := 0
				if c.Leaf.Physical.String() != "BYTE_ARRAY" {
					width = valueSize(c, 0)
				}
				got, gotErr := planLevels(nil, c, width, tt.pageSize, tt.rowLimit, tt.split)
				want, wantErr := planLevelsByLevel(nil, c, width, tt.pageSize, tt.rowLimit, tt.split)
				if (gotErr != nil) != (wantErr != nil) {
					t.Fatalf("error %v, level by level %v", gotErr, wantErr)
				}
				if gotErr == nil && !slices.Equal(got, want) {
					t.Errorf("pages\n%v\nlevel by level\n%v", got, want)
				}
			})
		}
	}
}

// TestLevelWords wants the word-at-a-time level scans to count what a
// byte-at-a-time loop counts, at every alignment and level.
func TestLevelWords(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	for _, tt := range []struct {
		name   string
		levels func(i int) uint8
	}{
		{"random", func(int) uint8 { return uint8(r.IntN(3)) }},
		{"runs", func(i int) uint8 { return uint8(i / 37 % 2) }},
		{"high", func(int) uint8 { return uint8(r.IntN(256)) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			levels := make([]uint8, 300)
			for i := range levels {
				levels[i] = tt.levels(i)
			}
			for l0 := 0; l0 < 40; l0++ {
				for _, v := range []uint8{0, 1, 2, 255} {
					want := 0
					for _, l := range levels[l0:] {
						if l == v {
							want++
						}
					}
					if got := countEqual(levels[l0:], v); got != want {
						t.Fatalf("countEqual(levels[%d:], %d) = %d, want %d", l0, v, got, want)
					}
				}
				for _, limit := range []int{1, 2, 5, 17, 1000} {
					wantEnd, wantRows := len(levels), 0
					for i := l0; i < len(levels); i++ {
						if levels[i] == 0 {
							if i > l0 && wantRows >= limit {
								wantEnd = i
								break
							}
							wantRows++
						}
					}
					if end, rows := recordsEnd(levels, l0, limit); end != wantEnd || rows != wantRows {
						t.Fatalf("recordsEnd(%d, %d) = %d, %d, want %d, %d", l0, limit, end, rows, wantEnd, wantRows)
					}
				}
			}
		})
	}
}
