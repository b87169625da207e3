package table

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/config"
)

// TestRewriteApplying commits four files (ids 0-9, 10-19 of day 0, 20-29,
// 30-39 of day 1), lets another engine delete id 3, and rewrites inputs
// of day 0 into files without it, applying the delete files Deletes read.
// Deletes finds the deleted row and the delete files; the rewrite commits
// and removes the delete files that may apply to no file left live
// (iceberg-go's v2 position delete file may apply to every file of its
// day; a deletion vector or a position delete names one) and keeps the
// others; the table reads the same rows before and after. A delete
// committed after the plan, even between the rewrite's check and its
// compare-and-swap, still gives the rewrite up (ErrRewriteDeletes), and
// so does a rewrite that did not apply the deletes.
func TestRewriteApplying(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name          string
		version       int
		mode          string // of the delete: a write.delete.mode, or "equality"
		inputs        []int
		unpartitioned bool
		race          bool // another delete (of id 13) before the swap
		// removed: the delete files the plan's rewrite would remove
		// (Deletes' Removable), and removes unless it races; left: those
		// of the snapshot after it.
		removed, left int
	}{
		{"v2, every file of the day", 2, itable.WriteModeMergeOnRead, []int{0, 1}, false, false, 1, 0},
		{"v2, a file of the day", 2, itable.WriteModeMergeOnRead, []int{0}, false, false, 0, 1},
		{"v3 deletion vector", 3, itable.WriteModeMergeOnRead, []int{0}, false, false, 1, 0},
		// An equality delete (of no partition: iceberg-go writes them in
		// unpartitioned tables) applies to every older file.
		{"equality delete, every file", 2, "equality", []int{0, 1, 2, 3}, true, false, 1, 0},
		{"equality delete, some files", 2, "equality", []int{0, 1}, true, false, 0, 1},
		{"v2, a delete before the swap", 2, itable.WriteModeMergeOnRead, []int{0, 1}, false, true, 1, 2},
		{"v3, a delete before the swap", 3, itable.WriteModeMergeOnRead, []int{0, 1}, false, true, 1, 2},
		{"equality delete, another before the swap", 2, "equality", []int{0, 1, 2, 3}, true, true, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var by []config.PartitionField
			if !tc.unpartitioned {
				by = append(by, config.PartitionField{Transform: "day", Column: "_kafka.timestamp"})
			}
			e := newEnv(t, by...)
			e.cfg.Table.FormatVersion = tc.version
			c := e.open(t)
			h, err := c.Table(ctx, "events", eventSchema(t))
			if err != nil {
				t.Fatal(err)
			}
			c2 := e.open(t)
			h2, err := c2.Table(ctx, "events", nil)
			if err != nil {
				t.Fatal(err)
			}
			loc := c.Location("events")
			dayOf := func(o int64) int { return int(o / 20) }
			files := commitEach(t, h, loc, 4, dayOf)
			del := func(id int64) {
				if tc.mode == "equality" {
					otherEngineEqualityDelete(t, c2, h2, id)
				} else {
					otherEngineDelete(t, c2, h2, tc.mode, id)
				}
			}
			del(3)
			want := slices.DeleteFunc(upTo(40), func(id int64) bool { return id == 3 })

			_, snap, err := h.Live(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var inputs []string
			for _, i := range tc.inputs {
				inputs = append(inputs, files[i].Location)
			}
			pd, err := h.Deletes(ctx, snap, inputs)
			if err != nil {
				t.Fatal(err)
			}
			if p := pd.Rows[files[0].Location]; p == nil || !slices.Equal(p.Sorted(), []int64{3}) || len(pd.Rows) != 1 {
				t.Errorf("deleted rows %v, want row 3 of file 0 alone", pd.Rows)
			}
			if len(pd.Applied) != 1 || len(pd.Removable) != tc.removed {
				t.Errorf("delete files applied %v, removable %v; want 1 and %d", pd.Applied, pd.Removable, tc.removed)
			}

			// The inputs' rows but id 3.
			var add []File
			for _, i := range tc.inputs {
				first := 10 * int64(i)
				if i == 0 {
					add = append(add, writeFile(t, h, loc+"/m", "events", 0, 0, 2, dayOf))
					first = 4
				}
				add = append(add, writeFile(t, h, loc+"/m", "events", 0, first, 10*int64(i)+9, dayOf))
			}
			if _, err := h.Rewrite(ctx, inputs, add); !errors.Is(err, ErrRewriteDeletes) {
				t.Errorf("a rewrite applying no delete: %v, want ErrRewriteDeletes", err)
			}
			if tc.race {
				once := false
				h.beforeSwap = func() {
					if !once {
						once = true
						del(13)
					}
				}
				want = slices.DeleteFunc(want, func(id int64) bool { return id == 13 })
			}
			res, err := h.RewriteApplying(ctx, inputs, add, pd.Applied)
			h.beforeSwap = nil
			switch {
			case tc.race && (!errors.Is(err, ErrRewriteDeletes) || !strings.Contains(err.Error(), files[1].Location)):
				t.Errorf("the rewrite: %v; want ErrRewriteDeletes naming %s", err, files[1].Location)
			case !tc.race && err != nil:
				t.Fatal(err)
			case !tc.race && res.DeleteFilesRemoved != tc.removed:
				t.Errorf("the rewrite removed %d delete files, want %d", res.DeleteFilesRemoved, tc.removed)
			}
			if n := len(deleteFiles(t, c, h)); n != tc.left {
				t.Errorf("%d delete files after the rewrite, want %d", n, tc.left)
			}
			live, _, err := h.Live(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range live {
				if strings.Contains(f.Location, "/m/") && f.Deletes > 0 {
					t.Errorf("%d delete files may apply to %s, which the rewrite added", f.Deletes, f.Location)
				}
			}
			if got := scanIDs(t, e, h, 0); !slices.Equal(got, want) {
				t.Errorf("after the rewrite the table reads %v, want %v", got, want)
			}
		})
	}
}
