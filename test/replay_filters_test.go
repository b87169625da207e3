package test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector/source"
	"github.com/pqsink/pqsink/objstore"
)

// openCounter is a store that counts the openings of each object.
type openCounter struct {
	objstore.Store
	mu    sync.Mutex
	opens map[string]int
}

func (s *openCounter) NewReaderAt(ctx context.Context, key string) (objstore.ReaderAt, error) {
	s.mu.Lock()
	s.opens[key]++
	s.mu.Unlock()
	return s.Store.NewReaderAt(ctx, key)
}

// TestReplayFiltersOnSinkFiles replays a sink's archive (a path by record
// hour, several files per partition) with each filter: the target gets
// exactly the source records that match, in order, and the files that
// cannot match are never opened.
func TestReplayFiltersOnSinkFiles(t *testing.T) {
	const partitions, n = 3, 3000
	topic := "filter-src"
	targets := []string{"f-partitions", "f-offsets", "f-time", "f-topic"}
	a := archiveTopic(t, "g-filters", topic, targets, partitions, n, 250)
	brokers, truth, text, store := a.brokers, a.truth, a.text, a.store
	rcfg, err := config.ParseReplay([]byte(text), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	files := download(t, store, t.TempDir())

	base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC) // produceReplayEvents' first timestamp
	since, until := base.Add(2*time.Hour), base.Add(3*time.Hour)
	tests := []struct {
		target    string
		opts      source.Options
		keep      func(p produced) bool
		mayOpen   func(f landedFile) bool // files outside are never opened
		wantFewer bool                    // some files must stay closed
	}{
		{
			target:    "f-partitions",
			opts:      source.Options{Partitions: []int32{1}},
			keep:      func(p produced) bool { return p.Partition == 1 },
			mayOpen:   func(f landedFile) bool { return f.rng["pqsink.kafka.partition"] == "1" },
			wantFewer: true,
		},
		{
			target: "f-offsets",
			opts:   source.Options{FromOffset: 600, EndOffset: 801},
			keep:   func(p produced) bool { return p.Offset >= 600 && p.Offset <= 800 },
			mayOpen: func(f landedFile) bool {
				return atoi(t, f.rng["pqsink.kafka.last_offset"]) >= 600 && atoi(t, f.rng["pqsink.kafka.first_offset"]) <= 800 ||
					// a file ending before 600 whose chain successor starts
					// after 600 cannot be told from its key alone
					atoi(t, f.rng["pqsink.kafka.first_offset"]) < 600
			},
			wantFewer: true,
		},
		{
			target:    "f-time",
			opts:      source.Options{Since: since, Until: until, PathTimezone: time.UTC},
			keep:      func(p produced) bool { return p.TimeMs >= since.UnixMilli() && p.TimeMs < until.UnixMilli() },
			mayOpen:   func(f landedFile) bool { return strings.Contains(f.key, "/hr=12/") },
			wantFewer: true,
		},
		{
			target:    "f-topic",
			opts:      source.Options{SourceTopics: []string{"no-such-topic"}},
			keep:      func(produced) bool { return false },
			mayOpen:   func(landedFile) bool { return false },
			wantFewer: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			st := &openCounter{Store: store, opens: map[string]int{}}
			opts := tc.opts
			opts.From, opts.Topic, opts.Store, opts.PathTemplate = a.storeURL, tc.target, st, rcfg.Path
			r, err := source.New(context.Background(), rcfg, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if err := r.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			want := map[string]produced{}
			for id, p := range truth {
				if tc.keep(p) {
					want[id] = p
				}
			}
			if len(want) == 0 && tc.target != "f-topic" {
				t.Fatal("the filter keeps nothing; the test data does not exercise it")
			}
			compareReplayed(t, want, readTopic(t, brokers, tc.target, partitions), 0)
			opened := 0
			for _, f := range files {
				if st.opens[f.key] > 0 {
					opened++
					if tc.mayOpen != nil && !tc.mayOpen(f) {
						t.Errorf("%s (offsets %s..%s of partition %s) was opened; it cannot match", f.key,
							f.rng["pqsink.kafka.first_offset"], f.rng["pqsink.kafka.last_offset"], f.rng["pqsink.kafka.partition"])
					}
				}
			}
			if tc.wantFewer && opened == len(files) {
				t.Errorf("all %d files were opened", len(files))
			}
			t.Logf("%d of %d files opened", opened, len(files))
		})
	}
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("not a number: %q", s)
		}
		n = n*10 + int64(c-'0')
	}
	return n
}
