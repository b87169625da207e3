package source

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/internal/events"
)

// TestReplayPrunesByBounds replays the data files of a table (Options.Files)
// with the bounds a manifest gives of them (Object.Bounds), under time,
// offset, partition and topic filters: a file whose bounds rule it out is
// never opened, not even to read its footer (one another engine rewrote,
// whose key does not place it), and is counted in
// Stats.FilesPrunedByManifest; a file without bounds is read as before.
// The records produced are those of the same replay without bounds, and
// those of the source that pass the filters.
func TestReplayPrunesByBounds(t *testing.T) {
	gen := events.New(5, time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC) // recordOf's time of record 0
	type file struct {
		key      string
		recs     []srcRecord
		footer   bool
		noBounds bool
	}
	span := func(p int32, lo, hi int64) []srcRecord {
		var out []srcRecord
		for o := lo; o < hi; o++ {
			out = append(out, recordOf(gen, "events", p, o, int(o)))
		}
		return out
	}
	own := func(p int32, first int64) file {
		return file{key: fmt.Sprintf("t/data/events+%d+%020d.parquet", p, first), recs: span(p, first, first+10), footer: true}
	}
	files := []file{
		own(0, 0), own(0, 10), own(0, 20), own(0, 30),
		own(1, 0), own(1, 10), own(1, 20), own(1, 30),
		own(2, 0), own(2, 10),
		{key: "t/data/00000-0-rewritten.parquet", recs: span(2, 20, 40)}, // another engine's: no pqsink footer
		{key: "t/data/events+2+00000000000000000040.parquet", recs: span(2, 40, 50), footer: true, noBounds: true},
	}
	dir := t.TempDir()
	for _, f := range files {
		writeRecords(t, dir, f.key, events.Schema, f.recs, 4, f.footer)
	}
	// boundsOf are a file's exact bounds, as the sink's manifests hold
	// them; truncTopic gives a truncated topic upper bound instead.
	boundsOf := func(recs []srcRecord, truncTopic bool) *Bounds {
		b := &Bounds{}
		for i, r := range recs {
			if i == 0 {
				b.Time = IntRange{Min: r.ms, Max: r.ms, HasMin: true, HasMax: true}
				b.Offset = IntRange{Min: r.offset, Max: r.offset, HasMin: true, HasMax: true}
				b.Partition = IntRange{Min: int64(r.partition), Max: int64(r.partition), HasMin: true, HasMax: true}
				b.Topic = StringRange{Min: r.topic, Max: r.topic, HasMin: true, HasMax: true}
			}
			b.Time.Min, b.Time.Max = min(b.Time.Min, r.ms), max(b.Time.Max, r.ms)
			b.Offset.Min, b.Offset.Max = min(b.Offset.Min, r.offset), max(b.Offset.Max, r.offset)
		}
		if truncTopic {
			b.Topic.Max = b.Topic.Max[:2]
		}
		return b
	}
	at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	tests := []struct {
		name       string
		opts       Options
		truncTopic bool
		wantPruned int64 // files pruned by their bounds
	}{
		{name: "time window", opts: Options{Since: at(15), Until: at(25)}, wantPruned: 5},
		{name: "partition", opts: Options{Partitions: []int32{1}}, wantPruned: 1},
		{name: "end offset", opts: Options{EndOffset: 15}, wantPruned: 1},
		{name: "from offset", opts: Options{FromOffset: 42}, wantPruned: 3},
		{name: "partition and time", opts: Options{Partitions: []int32{2}, Since: at(42)}, wantPruned: 3},
		{name: "a topic the bounds rule out", opts: Options{SourceTopics: []string{"zzz"}}, wantPruned: 1},
		{name: "a truncated topic bound rules out no topic it is a prefix of", truncTopic: true,
			opts: Options{SourceTopics: []string{"events"}, Until: at(5)}, wantPruned: 8},
		{name: "no filter", opts: Options{}, wantPruned: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			replay := func(withBounds bool) (*Replayer, *countingStore, []kafka.Message) {
				opts := tc.opts
				opts.PathTemplate = "{field:table_path}/{topic}+{partition}+{first_offset}.parquet"
				for _, f := range files {
					obj := Object{Key: f.key}
					if withBounds && !f.noBounds {
						obj.Bounds = boundsOf(f.recs, tc.truncTopic)
					}
					opts.Files = append(opts.Files, obj)
				}
				st, c := openDir(t, dir), &collector{}
				r, err := (&archiveDir{dir: dir}).run(t, context.Background(), opts, st, c)
				if err != nil {
					t.Fatal(err)
				}
				return r, st, c.msgs
			}
			pruned, st, got := replay(true)
			plain, plainSt, want := replay(false)

			if !reflect.DeepEqual(byPartition(got), byPartition(want)) {
				t.Errorf("with bounds: %d records, without: %d; they differ", len(got), len(want))
			}
			withFrom := tc.opts
			withFrom.From, withFrom.Topic = "file:///x", "target"
			o, err := withFrom.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			var wantRecs []srcRecord
			for _, f := range files {
				for _, r := range f.recs {
					if o.keepTopic(r.topic) && o.keepPartition(r.partition) && r.offset >= o.FromOffset && r.offset < o.EndOffset && o.keepTime(r.ms) {
						wantRecs = append(wantRecs, r)
					}
				}
			}
			compareRecords(t, wantRecs, got)

			// A file none of whose records pass is never opened when it
			// has bounds, but to lend its footer to a rewritten file as it
			// would without bounds (the first of the sink's files, when the
			// rewritten one is planned); the files it spares are those the
			// replay without bounds opened more.
			var spared int64
			for i, f := range files {
				matches := false
				for _, r := range f.recs {
					matches = matches || o.keepTopic(r.topic) && o.keepPartition(r.partition) && r.offset >= o.FromOffset && r.offset < o.EndOffset && o.keepTime(r.ms)
				}
				donorReads := 0
				if i == 0 && st.opened(files[10].key) > 0 {
					donorReads = 1
				}
				switch {
				case !matches && !f.noBounds && st.opened(f.key) > donorReads:
					t.Errorf("%s holds no record the replay keeps, and was opened %d times despite its bounds", f.key, st.opened(f.key))
				case !matches && !f.noBounds && plainSt.opened(f.key) > st.opened(f.key):
					spared++
				case (f.noBounds || matches) && (st.opened(f.key) > plainSt.opened(f.key) || st.opened(f.key) == 0 && plainSt.opened(f.key) > 0):
					t.Errorf("%s was opened %d times with bounds, %d times without", f.key, st.opened(f.key), plainSt.opened(f.key))
				}
			}
			if spared != tc.wantPruned {
				t.Errorf("the bounds spared %d files an opening, want %d", spared, tc.wantPruned)
			}
			ps, pl := pruned.Stats(), plain.Stats()
			if got := ps.FilesPrunedByManifest.Load(); got != spared {
				t.Errorf("Stats.FilesPrunedByManifest %d, want %d", got, spared)
			}
			if pl.FilesPrunedByManifest.Load() != 0 {
				t.Errorf("without bounds, Stats.FilesPrunedByManifest %d", pl.FilesPrunedByManifest.Load())
			}
			if ps.FilesSkipped.Load() < ps.FilesPrunedByManifest.Load() {
				t.Errorf("Stats.FilesSkipped %d does not count the %d pruned files", ps.FilesSkipped.Load(), ps.FilesPrunedByManifest.Load())
			}
			if ps.FilesOpened.Load() > pl.FilesOpened.Load() {
				t.Errorf("%d files opened with bounds, %d without", ps.FilesOpened.Load(), pl.FilesOpened.Load())
			}
		})
	}
}

// byPartition groups msgs by partition, in the order they were produced.
func byPartition(msgs []kafka.Message) map[int][]kafka.Message {
	out := map[int][]kafka.Message{}
	for _, m := range msgs {
		out[m.Partition] = append(out[m.Partition], m)
	}
	return out
}
