package source

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/merge"
)

// mergeKeys merges the objects at keys of a's directory into one file at
// key out, removes them, and returns the merged file's Kafka ranges.
func (a *archiveDir) mergeKeys(t *testing.T, out string, keys ...string) []archive.Range {
	t.Helper()
	var in []merge.Input
	for _, k := range keys {
		data, err := os.ReadFile(filepath.Join(a.dir, filepath.FromSlash(k)))
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, merge.Input{Name: k, R: bytes.NewReader(data), Size: int64(len(data))})
	}
	var buf bytes.Buffer
	outs, err := merge.Merge(context.Background(), in, func(int) (io.Writer, error) { return &buf, nil })
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(a.dir, filepath.FromSlash(out))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := os.Remove(filepath.Join(a.dir, filepath.FromSlash(k))); err != nil {
			t.Fatal(err)
		}
	}
	return outs[0].Ranges
}

// TestReplayMergedFiles replays an archive in which files were merged
// (compaction): one file of partitions 0 and 1 (two ranges, in
// pqsink.kafka.ranges), and one of partition 2 with a gap that an original
// file fills. Every record comes out once, in offset order per partition,
// as from the original files, with each filter.
func TestReplayMergedFiles(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		keep func(r srcRecord) bool
	}{
		{"all", Options{SourceTopics: []string{"events"}}, func(r srcRecord) bool { return r.topic == "events" }},
		{"one partition of the merged two", Options{Partitions: []int32{1}}, func(r srcRecord) bool { return r.partition == 1 }},
		{"from offset", Options{SourceTopics: []string{"events"}, FromOffset: 60}, func(r srcRecord) bool { return r.topic == "events" && r.offset >= 60 }},
		{"offset range", Options{SourceTopics: []string{"events"}, FromOffset: 45, EndOffset: 105}, func(r srcRecord) bool {
			return r.topic == "events" && r.offset >= 45 && r.offset < 105
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newArchive(t)
			var both []string
			for p := range int32(2) {
				for f := range int64(3) {
					both = append(both, sinkKey("events", p, 50*f))
				}
			}
			rs := a.mergeKeys(t, "compacted/events-0-1.parquet", both...)
			if len(rs) != 2 || rs[0] != (archive.Range{Topic: "events", Partition: 0, First: 0, Last: 149, Records: 150}) || rs[1].Partition != 1 {
				t.Fatalf("merged ranges %+v", rs)
			}
			rs = a.mergeKeys(t, "compacted/events-2.parquet", sinkKey("events", 2, 100), sinkKey("events", 2, 0))
			if len(rs) != 2 || rs[0].Last != 49 || rs[1].First != 100 {
				t.Fatalf("merged ranges %+v", rs)
			}
			st := openDir(t, a.dir)
			c := &collector{}
			if _, err := a.run(t, context.Background(), tc.opts, st, c); err != nil {
				t.Fatal(err)
			}
			got := a.check(t, c.msgs)
			var want []string
			for id, rec := range a.recs {
				if tc.keep(rec) {
					want = append(want, id)
				}
			}
			if len(got) != len(want) || len(want) == 0 {
				t.Fatalf("%d records, want %d", len(got), len(want))
			}
			seen := map[string]bool{}
			for _, id := range got {
				if seen[id] {
					t.Errorf("%s produced twice", id)
				}
				seen[id] = true
			}
			for _, id := range want {
				if !seen[id] {
					t.Errorf("%s missing", id)
				}
			}
		})
	}
}

// TestReplayMergedFileAtSinkKey: a file of several partitions at a key
// that the path template matches would be placed in the key's partition
// alone, and the other partitions' records lost; replay refuses it.
func TestReplayMergedFileAtSinkKey(t *testing.T) {
	a := newArchive(t)
	a.mergeKeys(t, sinkKey("events", 0, 0)+".tmp", sinkKey("events", 0, 0), sinkKey("events", 1, 0))
	if err := os.Rename(filepath.Join(a.dir, filepath.FromSlash(sinkKey("events", 0, 0)+".tmp")), filepath.Join(a.dir, filepath.FromSlash(sinkKey("events", 0, 0)))); err != nil {
		t.Fatal(err)
	}
	_, err := a.run(t, context.Background(), Options{SourceTopics: []string{"events"}}, openDir(t, a.dir), &collector{})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("the file holds records of 2 partitions (%s)", archive.FooterRanges)) {
		t.Errorf("Run: %v", err)
	}
}
