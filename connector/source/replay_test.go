package source

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/convert"
	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/internal/testutil"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// archiveDir is a directory of sink files and the records they hold.
type archiveDir struct {
	dir  string
	recs map[string]srcRecord // by "topic/partition/offset"
	keys []string             // object keys
}

func recID(topic string, partition int32, offset int64) string {
	return fmt.Sprintf("%s/%d/%d", topic, partition, offset)
}

// newArchive writes, for topic events, partitions 0 to 2 with three files
// of 50 records each (offsets 0-49, 50-99, 100-149, row groups of 20), and
// one file of topic other.
func newArchive(t testing.TB) *archiveDir {
	t.Helper()
	a := &archiveDir{dir: t.TempDir(), recs: map[string]srcRecord{}}
	gen := events.New(1, time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	add := func(topic string, p int32, first int64, n int) {
		var recs []srcRecord
		for i := range n {
			off := first + int64(i)
			r := recordOf(gen, topic, p, off, int(off))
			recs = append(recs, r)
			a.recs[recID(topic, p, off)] = r
		}
		key := sinkKey(topic, p, first)
		writeFile(t, a.dir, key, recs, 20)
		a.keys = append(a.keys, key)
	}
	for p := range int32(3) {
		for f := range 3 {
			add("events", p, int64(50*f), 50)
		}
	}
	add("other", 0, 0, 10)
	return a
}

// run replays with opts into a collector and returns it with the error.
func (a *archiveDir) run(t *testing.T, ctx context.Context, opts Options, st *countingStore, c *collector) (*Replayer, error) {
	t.Helper()
	opts.From = "file://" + a.dir
	if opts.Topic == "" {
		opts.Topic = "target"
	}
	opts.Store, opts.Producer = st, c
	if opts.BatchRecords == 0 {
		opts.BatchRecords = 16
	}
	r, err := New(ctx, &config.Config{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, r.Run(ctx)
}

// check compares the produced messages with the source records: every
// field equal, values as JSON, and per partition in offset order. It
// returns the ids produced.
func (a *archiveDir) check(t *testing.T, msgs []kafka.Message) []string {
	t.Helper()
	var ids []string
	lastOffset := map[int]int64{}
	for i, m := range msgs {
		var env struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(m.Value, &env); err != nil {
			t.Fatalf("message %d: value %q: %v", i, m.Value, err)
		}
		// The generator numbers events in the order they were made; find
		// the record by its partition and value.
		var src *srcRecord
		for _, r := range a.recs {
			if r.partition == int32(m.Partition) && bytes.Contains(r.value, []byte(fmt.Sprintf(`{"id":%d,`, env.ID))) {
				r := r
				src = &r
				break
			}
		}
		if src == nil {
			t.Fatalf("message %d: no source record with id %d in partition %d", i, env.ID, m.Partition)
		}
		if prev, ok := lastOffset[m.Partition]; ok && src.offset <= prev {
			t.Errorf("message %d: partition %d offset %d after %d", i, m.Partition, src.offset, prev)
		}
		lastOffset[m.Partition] = src.offset
		ids = append(ids, recID(src.topic, src.partition, src.offset))
		if !jsonEqual(m.Value, src.value) {
			t.Errorf("%s: value\n got %s\nwant %s", ids[len(ids)-1], m.Value, src.value)
		}
		if (m.Key == nil) != (src.key == nil) || !bytes.Equal(m.Key, src.key) {
			t.Errorf("%s: key %q (nil %v), want %q (nil %v)", ids[len(ids)-1], m.Key, m.Key == nil, src.key, src.key == nil)
		}
		if m.Time.UnixMilli() != src.ms {
			t.Errorf("%s: time %d, want %d", ids[len(ids)-1], m.Time.UnixMilli(), src.ms)
		}
		if !headersEqual(m.Headers, src.headers) {
			t.Errorf("%s: headers %v, want %v", ids[len(ids)-1], m.Headers, src.headers)
		}
	}
	return ids
}

// jsonEqual compares JSON texts as values, numbers as doubles.
func jsonEqual(a, b []byte) bool {
	ok, err := testutil.JSONEqualFunc(a, b, testutil.DoubleNumbers)
	return err == nil && ok
}

func headersEqual(a, b []kafka.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !bytes.Equal(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

func TestReplayAll(t *testing.T) {
	a := newArchive(t)
	st := openDir(t, a.dir)
	c := &collector{}
	r, err := a.run(t, context.Background(), Options{SourceTopics: []string{"events"}}, st, c)
	if err != nil {
		t.Fatal(err)
	}
	ids := a.check(t, c.msgs)
	if len(ids) != 450 {
		t.Errorf("%d records, want 450", len(ids))
	}
	if got := r.Stats().Records.Load(); got != 450 {
		t.Errorf("Stats.Records = %d, want 450", got)
	}
	if n := st.opened(sinkKey("other", 0, 0)); n != 0 {
		t.Errorf("the file of topic other was opened %d times", n)
	}
	if n := r.Stats().RowGroupsByRows.Load(); n != 0 {
		t.Errorf("%d row groups read through Rows; the reference shape is columnar", n)
	}
}

// TestReplayFilters checks which records each filter keeps and that files
// that cannot match are never opened.
func TestReplayFilters(t *testing.T) {
	base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		opts      Options
		keep      func(r srcRecord) bool
		notOpened []string
	}{
		{
			name:      "partitions",
			opts:      Options{Partitions: []int32{1}},
			keep:      func(r srcRecord) bool { return r.partition == 1 },
			notOpened: []string{sinkKey("events", 0, 0), sinkKey("events", 2, 100), sinkKey("other", 0, 0)},
		},
		{
			name:      "topic",
			opts:      Options{SourceTopics: []string{"other"}},
			keep:      func(r srcRecord) bool { return r.topic == "other" },
			notOpened: []string{sinkKey("events", 0, 0), sinkKey("events", 1, 50)},
		},
		{
			name:      "from offset",
			opts:      Options{SourceTopics: []string{"events"}, FromOffset: 100},
			keep:      func(r srcRecord) bool { return r.topic == "events" && r.offset >= 100 },
			notOpened: []string{sinkKey("events", 0, 0), sinkKey("events", 0, 50), sinkKey("events", 2, 50)},
		},
		{
			name:      "offset range",
			opts:      Options{SourceTopics: []string{"events"}, FromOffset: 60, EndOffset: 71},
			keep:      func(r srcRecord) bool { return r.topic == "events" && r.offset >= 60 && r.offset <= 70 },
			notOpened: []string{sinkKey("events", 0, 0), sinkKey("events", 1, 100)},
		},
		{
			name: "time range",
			opts: Options{SourceTopics: []string{"events"}, Since: base.Add(30 * time.Second), Until: base.Add(45 * time.Second)},
			keep: func(r srcRecord) bool {
				return r.topic == "events" && r.ms >= base.Add(30*time.Second).UnixMilli() && r.ms < base.Add(45*time.Second).UnixMilli()
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newArchive(t)
			st := openDir(t, a.dir)
			c := &collector{}
			r, err := a.run(t, context.Background(), tc.opts, st, c)
			if err != nil {
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
			for _, k := range tc.notOpened {
				if n := st.opened(k); n != 0 {
					t.Errorf("%s opened %d times; it cannot match", k, n)
				}
			}
			if tc.name == "time range" && r.Stats().RowGroupsSkipped.Load() == 0 {
				t.Error("no row group skipped by the statistics of _kafka.timestamp")
			}
		})
	}
}

// TestReplayMergesChains replays a partition spread over two chains of
// files (a path by record time) whose offsets interleave: the records come
// out in offset order.
func TestReplayMergesChains(t *testing.T) {
	dir := t.TempDir()
	gen := events.New(3, time.Now())
	recs := map[string]srcRecord{}
	var even, odd []srcRecord
	for off := range int64(60) {
		r := recordOf(gen, "events", 0, off, int(off))
		recs[recID("events", 0, off)] = r
		if off%2 == 0 {
			even = append(even, r)
		} else {
			odd = append(odd, r)
		}
	}
	writeFile(t, dir, "events/hr=10/events+0+00000000000000000000.parquet", even, 7)
	writeFile(t, dir, "events/hr=11/events+0+00000000000000000001.parquet", odd, 7)
	a := &archiveDir{dir: dir, recs: recs}
	st := openDir(t, dir)
	c := &collector{}
	if _, err := a.run(t, context.Background(), Options{PathTemplate: "{topic}/hr={record_time:15}/{topic}+{partition}+{first_offset}.parquet"}, st, c); err != nil {
		t.Fatal(err)
	}
	if ids := a.check(t, c.msgs); len(ids) != 60 {
		t.Errorf("%d records, want 60", len(ids))
	}
}

// TestReplayResume interrupts a replay, checks that the checkpoint holds
// exactly what was produced, and resumes it: every record once.
func TestReplayResume(t *testing.T) {
	for _, tc := range []struct {
		where       string
		parallelism int
	}{{"file", 1}, {"store", 1}, {"file", 3}, {"store", 3}} {
		t.Run(fmt.Sprintf("%s-parallel%d", tc.where, tc.parallelism), func(t *testing.T) {
			a := newArchive(t)
			st := openDir(t, a.dir)
			opts := Options{SourceTopics: []string{"events"}, Parallelism: tc.parallelism}
			ckPath := filepath.Join(t.TempDir(), "replay.checkpoint")
			if tc.where == "file" {
				opts.Checkpoint = ckPath
			} else {
				opts.StoreCheckpoint = "resume-test"
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			first := &collector{stopAfter: 200, cancel: cancel}
			_, err := a.run(t, ctx, opts, st, first)
			if !errors.Is(err, ErrInterrupted) {
				t.Fatalf("interrupted run: %v, want ErrInterrupted", err)
			}
			n1 := len(first.msgs)
			if n1 < 200 || n1 >= 450 {
				t.Fatalf("interrupted run produced %d records", n1)
			}
			// The last offset produced of each partition.
			lastOf := map[string]int64{}
			for _, id := range a.check(t, first.msgs) {
				parts := strings.Split(id, "/")
				off, _ := strconv.ParseInt(parts[2], 10, 64)
				lastOf[parts[0]+"/"+parts[1]] = max(lastOf[parts[0]+"/"+parts[1]], off)
			}
			if tc.where == "file" {
				data, err := os.ReadFile(ckPath)
				if err != nil {
					t.Fatal(err)
				}
				var ck Checkpoint
				if err := json.Unmarshal(data, &ck); err != nil {
					t.Fatal(err)
				}
				if ck.Records != int64(n1) || ck.Complete {
					t.Errorf("checkpoint: %d records, complete %v; want %d, false", ck.Records, ck.Complete, n1)
				}
				if len(ck.Partitions) != len(lastOf) {
					t.Errorf("checkpoint holds %d partitions, %d were produced", len(ck.Partitions), len(lastOf))
				}
				for part, off := range lastOf {
					p := ck.Partitions[part]
					if p.Offset != off || p.Row != off%50 || p.Object != sinkKey("events", int32(part[len(part)-1]-'0'), off/50*50) {
						t.Errorf("checkpoint of %s: %+v, want offset %d, row %d of its file", part, p, off, off%50)
					}
				}
			}
			second := &collector{}
			if _, err := a.run(t, context.Background(), opts, st, second); err != nil {
				t.Fatal(err)
			}
			ids := a.check(t, append(append([]kafka.Message{}, first.msgs...), second.msgs...))
			seen := map[string]int{}
			for _, id := range ids {
				seen[id]++
			}
			for id, r := range a.recs {
				if r.topic == "events" && seen[id] != 1 {
					t.Errorf("%s produced %d times", id, seen[id])
				}
			}
			// Files whose records were all produced are not opened again.
			if tc.parallelism == 1 {
				if n := st.opened(sinkKey("events", 0, 0)); n != 1 {
					t.Errorf("events/0 first file opened %d times over both runs, want 1", n)
				}
			}
			// A third run has nothing left to do.
			third := &collector{}
			if _, err := a.run(t, context.Background(), opts, st, third); err != nil {
				t.Fatal(err)
			}
			if len(third.msgs) != 0 {
				t.Errorf("a completed replay produced %d more records", len(third.msgs))
			}
			// Another replay with different filters refuses the checkpoint.
			other := opts
			other.FromOffset = 5
			if _, err := a.run(t, context.Background(), other, st, &collector{}); err == nil || !strings.Contains(err.Error(), "another replay") {
				t.Errorf("checkpoint of another replay: %v", err)
			}
		})
	}
}

// TestReplayForeignFile: a Parquet file that the sink did not write stops
// the replay with ErrNotPqsink, naming the file, before anything is
// produced.
func TestReplayForeignFile(t *testing.T) {
	a := newArchive(t)
	var out bytes.Buffer
	schemaText := "message m { required int64 id; optional binary name (STRING); }"
	sch, err := schema.Parse(schemaText)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := convert.Run(context.Background(), strings.NewReader("{\"id\":1,\"name\":\"x\"}\n"), &out, convert.Options{Schema: sch}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.dir, "foreign.parquet"), out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	st := openDir(t, a.dir)
	c := &collector{}
	_, err = a.run(t, context.Background(), Options{}, st, c)
	if !errors.Is(err, ErrNotPqsink) || !strings.Contains(err.Error(), "foreign.parquet") {
		t.Fatalf("error %v, want ErrNotPqsink naming foreign.parquet", err)
	}
	if len(c.msgs) != 0 {
		t.Errorf("%d records produced before the error", len(c.msgs))
	}
}

// TestReplayOriginalBytes: a payload of one binary column without a
// logical type is the original value, produced as it is; null is a
// tombstone.
func TestReplayOriginalBytes(t *testing.T) {
	dir := t.TempDir()
	var recs []srcRecord
	want := [][]byte{{0, 1, 2}, nil, {}, []byte(`{"not":"parsed"}`)}
	for i, v := range want {
		r := srcRecord{topic: "raw", partition: 0, offset: int64(i), ms: int64(1000 + i), key: []byte{byte(i)}}
		if v == nil {
			r.value = []byte(`{}`)
		} else {
			r.value = []byte(`{"value":"` + base64.StdEncoding.EncodeToString(v) + `"}`)
		}
		recs = append(recs, r)
	}
	writeFileWith(t, dir, sinkKey("raw", 0, 0), "message m { optional binary value; }", recs, 3)
	st := openDir(t, dir)
	c := &collector{}
	a := &archiveDir{dir: dir}
	if _, err := a.run(t, context.Background(), Options{}, st, c); err != nil {
		t.Fatal(err)
	}
	if len(c.msgs) != len(want) {
		t.Fatalf("%d messages, want %d", len(c.msgs), len(want))
	}
	for i, m := range c.msgs {
		if (m.Value == nil) != (want[i] == nil) || !bytes.Equal(m.Value, want[i]) {
			t.Errorf("message %d: value %q (nil %v), want %q (nil %v)", i, m.Value, m.Value == nil, want[i], want[i] == nil)
		}
	}
}

// TestPartitioning: by default a message goes to the partition it came
// from (the partitionProducer sends each to its Partition: see
// TestPartitionProducer); with KeyHash, to murmur2 of its key.
func TestPartitioning(t *testing.T) {
	tests := []struct {
		keyHash bool
		key     string
		from    int
		want    int
	}{
		{false, "a", 5, 5},
		{false, "b", 0, 0},
		{true, "a", 5, int((&kafka.Murmur2Balancer{}).Balance(kafka.Message{Key: []byte("a")}, 0, 1, 2, 3, 4, 5, 6, 7))},
	}
	for _, tc := range tests {
		p, err := newProducer(&config.Kafka{Brokers: []string{"127.0.0.1:1"}}, Options{Topic: "t", KeyHash: tc.keyHash})
		if err != nil {
			t.Fatal(err)
		}
		got := -1
		switch w := p.(type) {
		case *hashWriter:
			got = w.Balancer.Balance(kafka.Message{Key: []byte(tc.key), Partition: tc.from}, 0, 1, 2, 3, 4, 5, 6, 7)
		case *partitionProducer:
			if !tc.keyHash {
				got = tc.from
			}
		}
		if got != tc.want {
			t.Errorf("keyHash %v (%T), key %q from partition %d: partition %d, want %d", tc.keyHash, p, tc.key, tc.from, got, tc.want)
		}
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestReplayMistypedEnvelope: a file with the footer metadata but an
// envelope of other types is refused, never read as if it were one.
func TestReplayMistypedEnvelope(t *testing.T) {
	dir := t.TempDir()
	sch, err := schema.Parse(`message m { required int64 id;
  required group _kafka { required binary topic (STRING); required int32 partition; required binary offset;
    required int64 timestamp; optional binary key;
    required group headers (MAP) { repeated group key_value { required binary key (STRING); optional binary value; } } } }`)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	in := `{"id":1,"_kafka":{"topic":"t","partition":0,"offset":"AAAA","timestamp":1,"headers":{}}}` + "\n"
	kv := []writer.Option{writer.KeyValue(archive.FooterTopic, "t"), writer.KeyValue(archive.FooterPartition, "0"), writer.KeyValue(archive.FooterFirstOffset, "0"),
		writer.KeyValue(archive.FooterLastOffset, "0"), writer.KeyValue(archive.FooterRecords, "1")}
	if _, err := convert.Run(context.Background(), strings.NewReader(in), &out, convert.Options{Schema: sch, Writer: kv}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mistyped.parquet"), out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &archiveDir{dir: dir}
	c := &collector{}
	_, err = a.run(t, context.Background(), Options{}, openDir(t, dir), c)
	if !errors.Is(err, ErrNotPqsink) || !strings.Contains(err.Error(), "_kafka.offset") {
		t.Fatalf("error %v, want ErrNotPqsink naming _kafka.offset", err)
	}
	if len(c.msgs) != 0 {
		t.Errorf("%d records produced", len(c.msgs))
	}
}
