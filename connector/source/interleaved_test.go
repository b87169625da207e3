package source

import (
	"context"
	"reflect"
	"testing"

	"github.com/pqsink/pqsink/archive"
)

// TestReplayInterleavedMergedFiles replays archives in which merged files
// (compactions) hold several runs of one partition with gaps that other
// files fill: two merged files whose runs of partitions 0 and 1
// interleave, a merged file whose gap a sink file fills, and the merge of
// such merged files again (a later compaction). Each partition's records
// come out once, in offset order.
func TestReplayInterleavedMergedFiles(t *testing.T) {
	type step struct {
		out  string
		keys []string
		want []archive.Range // the merged file's ranges
	}
	r := func(p int32, first, last int64) archive.Range {
		return archive.Range{Topic: "events", Partition: p, First: first, Last: last, Records: last - first + 1}
	}
	twoRuns := []step{
		{"compacted/c1.parquet", []string{sinkKey("events", 0, 0), sinkKey("events", 0, 100), sinkKey("events", 1, 0), sinkKey("events", 1, 100)},
			[]archive.Range{r(0, 0, 49), r(0, 100, 149), r(1, 0, 49), r(1, 100, 149)}},
		{"compacted/c2.parquet", []string{sinkKey("events", 0, 50), sinkKey("events", 1, 50), sinkKey("events", 2, 100)},
			[]archive.Range{r(0, 50, 99), r(1, 50, 99), r(2, 100, 149)}},
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"two merged files, runs interleaved", twoRuns},
		{"a merged file's gap filled by a sink file", []step{
			{"compacted/c1.parquet", []string{sinkKey("events", 1, 100), sinkKey("events", 1, 0), sinkKey("events", 2, 0)},
				[]archive.Range{r(1, 0, 49), r(1, 100, 149), r(2, 0, 49)}},
		}},
		{"merged files merged again", append(twoRuns, step{"compacted/c3.parquet", []string{"compacted/c2.parquet", "compacted/c1.parquet", sinkKey("events", 2, 50)},
			[]archive.Range{r(0, 0, 149), r(1, 0, 149), r(2, 50, 149)}})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newArchive(t)
			for _, s := range tc.steps {
				if got := a.mergeKeys(t, s.out, s.keys...); !reflect.DeepEqual(got, s.want) {
					t.Fatalf("%s: ranges %+v, want %+v", s.out, got, s.want)
				}
			}
			c := &collector{}
			if _, err := a.run(t, context.Background(), Options{SourceTopics: []string{"events"}}, openDir(t, a.dir), c); err != nil {
				t.Fatal(err)
			}
			// check fails the test on a record out of offset order in its
			// partition.
			got := a.check(t, c.msgs)
			seen := map[string]bool{}
			for _, id := range got {
				if seen[id] {
					t.Errorf("%s produced twice", id)
				}
				seen[id] = true
			}
			want := 0
			for id, rec := range a.recs {
				if rec.topic != "events" {
					continue
				}
				want++
				if !seen[id] {
					t.Errorf("%s missing", id)
				}
			}
			if len(got) != want {
				t.Errorf("%d records, want %d", len(got), want)
			}
		})
	}
}
