package source

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/internal/events"
)

// rowSet is a Deletions of a few rows.
type rowSet map[int64]bool

func (s rowSet) Contains(row int64) bool { return s[row] }
func (s rowSet) Len() int64              { return int64(len(s)) }

// tableFile is a data file of a table in a test: its records in row
// order, whether it has the sink's footer, and the rows its table deleted.
type tableFile struct {
	key     string
	recs    []srcRecord
	footer  bool
	deleted rowSet
}

// TestReplayTableDeletes replays the data files of a table (Options.Files)
// whose table deleted rows: the sink's own files with deleted positions
// (position deletes, deletion vectors), and files another engine rewrote
// without the deleted rows (copy-on-write: the _kafka columns but no
// pqsink footer), placed by their _kafka columns, with deleted positions
// of their own too. Exactly the rows that are not deleted are produced, in
// offset order per partition, with their keys, headers and timestamps.
// A rewritten file whose partitions' rows are not each one run in offset
// order is refused, naming the file and the rows; so is such a file
// under a prefix, where no table says which files are live, and one
// beside sink files of Avro or JSON Schema records, whose values it would
// produce as JSON instead.
func TestReplayTableDeletes(t *testing.T) {
	gen := events.New(3, time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	records := func(topic string, p int32, offs ...int64) []srcRecord {
		var out []srcRecord
		for _, o := range offs {
			out = append(out, recordOf(gen, topic, p, o, int(o)))
		}
		return out
	}
	span := func(lo, hi int64, skip ...int64) []int64 {
		var out []int64
		for o := lo; o < hi; o++ {
			if !slices.Contains(skip, o) {
				out = append(out, o)
			}
		}
		return out
	}
	own := func(p int32, first int64, n int, deleted ...int64) tableFile {
		f := tableFile{key: "t/data/" + sinkKey("events", p, first)[len("events/"):], recs: records("events", p, span(first, first+int64(n))...), footer: true, deleted: rowSet{}}
		for _, d := range deleted {
			f.deleted[d] = true
		}
		return f
	}
	rewritten := func(key string, recs []srcRecord, deleted ...int64) tableFile {
		f := tableFile{key: "t/data/" + key, recs: recs, deleted: rowSet{}}
		for _, d := range deleted {
			f.deleted[d] = true
		}
		return f
	}
	two := append(records("events", 1, span(0, 30, 3, 4, 17)...), records("events", 2, span(5, 40, 6, 39)...)...)
	tests := []struct {
		name   string
		files  []tableFile
		prefix bool   // replay the prefix, not the files
		err    string // the error, or "" for none
	}{
		{name: "the sink's files with deleted rows", files: []tableFile{
			own(0, 0, 50, 0, 1, 19, 20, 21, 49), // across row groups of 20
			own(0, 50, 50),
			own(1, 0, 45, 44),
		}},
		{name: "every row of a file deleted", files: []tableFile{
			own(0, 0, 20, span(0, 20)...), own(0, 20, 10, 3),
		}},
		{name: "rewritten files beside the sink's", files: []tableFile{
			own(0, 0, 50, 7),
			rewritten("00000-0-a.parquet", records("events", 0, span(50, 100, 51, 60, 61, 99)...)),
			rewritten("00001-0-b.parquet", records("events", 0, span(100, 140, 100)...), 0, 5, 36),
			rewritten("00002-0-c.parquet", two, 29),
		}},
		{name: "a rewritten file in offset order of one partition only", files: []tableFile{
			rewritten("00000-0-a.parquet", records("events", 0, 5, 9, 200, 1000)),
		}},
		{name: "offsets that go back", files: []tableFile{
			rewritten("00000-0-bad.parquet", records("events", 0, 1, 2, 5, 4, 6)),
		}, err: "t/data/00000-0-bad.parquet: not a pqsink file with a Kafka envelope: the offsets of topic \"events\" partition 0 do not increase: row 3 holds offset 4 after offset 5"},
		{name: "a partition in two runs", files: []tableFile{
			rewritten("00000-0-bad.parquet", append(append(records("events", 0, 1, 2), records("events", 1, 1)...), records("events", 0, 3)...)),
		}, err: "t/data/00000-0-bad.parquet: not a pqsink file with a Kafka envelope: the rows of topic \"events\" partition 0 are not together: they start again at row 3 (offset 3)"},
		{name: "a repeated offset", files: []tableFile{
			rewritten("00000-0-bad.parquet", records("events", 0, 1, 2, 2)),
		}, err: "row 2 holds offset 2 after offset 2"},
		// A rewritten file beside the sink's files of Avro, Protobuf or
		// JSON Schema records: TestReplayLendsFooter.
		{name: "a rewritten file under a prefix", prefix: true, files: []tableFile{
			rewritten("00000-0-a.parquet", records("events", 0, 1, 2)),
		}, err: "t/data/00000-0-a.parquet: not a pqsink file with a Kafka envelope: the footer has no pqsink.kafka.topic"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var opts Options
			var want []srcRecord
			for _, f := range tc.files {
				writeRecords(t, dir, f.key, events.Schema, f.recs, 20, f.footer)
				obj := Object{Key: f.key}
				if len(f.deleted) > 0 {
					obj.Deleted = f.deleted
				}
				opts.Files = append(opts.Files, obj)
				for i, r := range f.recs {
					if !f.deleted[int64(i)] {
						want = append(want, r)
					}
				}
			}
			if tc.prefix {
				opts.Files = nil
			}
			opts.PathTemplate = "{field:table_path}/{topic}+{partition}+{first_offset}.parquet"
			st, c := openDir(t, dir), &collector{}
			a := &archiveDir{dir: dir}
			r, err := a.run(t, context.Background(), opts, st, c)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrNotPqsink) {
					t.Fatalf("replay: %v, want an error wrapping ErrNotPqsink saying %q", err, tc.err)
				}
				if len(c.msgs) != 0 {
					t.Errorf("the refused replay produced %d records", len(c.msgs))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			compareRecords(t, want, c.msgs)
			var deleted int64
			for _, f := range tc.files {
				deleted += f.deleted.Len()
			}
			if got := r.Stats().RecordsDeleted.Load(); got != deleted {
				t.Errorf("Stats.RecordsDeleted %d, want %d", got, deleted)
			}
		})
	}
}

// compareRecords checks that msgs are want, partition by partition in
// offset order: each with its key (null apart from empty), headers,
// timestamp and value (as JSON).
func compareRecords(t *testing.T, want []srcRecord, msgs []kafka.Message) {
	t.Helper()
	byPart := map[int32][]srcRecord{}
	for _, r := range want {
		byPart[r.partition] = append(byPart[r.partition], r)
	}
	for _, rs := range byPart {
		slices.SortFunc(rs, func(a, b srcRecord) int { return cmp.Compare(a.offset, b.offset) })
	}
	got := map[int32][]kafka.Message{}
	for _, m := range msgs {
		got[int32(m.Partition)] = append(got[int32(m.Partition)], m)
	}
	if len(msgs) != len(want) {
		t.Errorf("%d records produced, want %d", len(msgs), len(want))
	}
	for p, rs := range byPart {
		ms := got[p]
		if len(ms) != len(rs) {
			t.Errorf("partition %d: %d records produced, want %d", p, len(ms), len(rs))
			continue
		}
		for i, r := range rs {
			m := ms[i]
			var gv, wv any
			if err := json.Unmarshal(m.Value, &gv); err != nil {
				t.Fatalf("partition %d, record %d: value %q: %v", p, i, m.Value, err)
			}
			if err := json.Unmarshal(r.value, &wv); err != nil {
				t.Fatal(err)
			}
			if (m.Key == nil) != (r.key == nil) || !bytes.Equal(m.Key, r.key) || m.Time.UnixMilli() != r.ms ||
				!reflect.DeepEqual(m.Headers, r.headers) && (len(m.Headers) != 0 || len(r.headers) != 0) || !reflect.DeepEqual(gv, wv) {
				t.Errorf("partition %d, record %d (offset %d): got key %q time %d headers %v value %s, want key %q time %d headers %v value %s",
					p, i, r.offset, m.Key, m.Time.UnixMilli(), m.Headers, m.Value, r.key, r.ms, r.headers, r.value)
			}
		}
	}
}
