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
