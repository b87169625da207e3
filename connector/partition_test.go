package connector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/reader"
)

// protoSink builds a sink over a directory store for driving partitions
// directly, without Kafka: the exactly-once protocol is all in partition.
func protoSink(t *testing.T, dir string, records int) *Sink {
	t.Helper()
	return protoSinkWith(t, dir, fmt.Sprintf("rotate: {records: %d, interval: 1h, bytes: 0}\n", records))
}

// commitLog records the commits of a partition.
type commitLog struct {
	offsets []int64
	md      []string
	fail    bool
}

func (c *commitLog) commit(_ context.Context, offset int64, md string) error {
	if c.fail {
		return errors.New("commit refused")
	}
	c.offsets = append(c.offsets, offset)
	c.md = append(c.md, md)
	return nil
}

// feed hands records [from, to) to p, record i in path "a" when i is even
// and "b" when odd, following restarts as the partition's loop does.
func feed(t *testing.T, p *partition, from, to int64) {
	t.Helper()
	ctx := context.Background()
	for off := from; off < to; off++ {
		path := "a"
		if off%2 == 1 {
			path = "b"
		}
		r := record{offset: off, time: time.UnixMilli(off), value: fmt.Appendf(nil, `{"n":%d,"p":%q}`, off, path)}
		err := p.handle(ctx, &r)
		if errors.Is(err, errRestart) {
			off = p.committed - 1 // the loop fetches again from the committed offset
			continue
		}
		if err != nil {
			t.Fatalf("offset %d: %v", off, err)
		}
	}
}

// landedOffsets reads every file of dir back and returns the offsets in
// them (column n), sorted, and the keys.
func landedOffsets(t *testing.T, store objstore.Store) ([]int64, []string) {
	t.Helper()
	var offs []int64
	var keys []string
	ctx := context.Background()
	for info, err := range store.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(info.Key, ".parquet") {
			continue
		}
		keys = append(keys, info.Key)
		ra, err := store.NewReaderAt(ctx, info.Key)
		if err != nil {
			t.Fatal(err)
		}
		f, err := reader.Open(ra, ra.Size())
		if err != nil {
			t.Fatal(err)
		}
		rows, err := f.Rows()
		if err != nil {
			t.Fatal(err)
		}
		for {
			v, err := rows.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n, ok := v.Field("n")
			if !ok {
				t.Fatalf("%s: row without n", info.Key)
			}
			offs = append(offs, n.Int64())
		}
		ra.Close()
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	sort.Strings(keys)
	return offs, keys
}

func checkOnce(t *testing.T, offs []int64, n int64) {
	t.Helper()
	if int64(len(offs)) != n {
		t.Errorf("%d records landed, want %d: %v", len(offs), n, offs)
		return
	}
	for i, o := range offs {
		if o != int64(i) {
			t.Fatalf("landed offsets %v, want 0..%d once each", offs, n-1)
		}
	}
}

// TestResumeWithSkipSet: the first owner uploads path a's file while path
// b's stays open, commits b's first offset with a in the skip set, and
// dies; the next owner resumes there, skips a's uploaded records and
// writes the rest once.
func TestResumeWithSkipSet(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()

	first := protoSink(t, dir, 5)
	var c1 commitLog
	p1 := newPartition(first, "t", 0, 0, skipSet{}, c1.commit)
	feed(t, p1, 0, 9) // path a: 0,2,4,6,8 (one file, rotated at 5 records); path b open
	if len(c1.offsets) != 1 || c1.offsets[0] != 1 {
		t.Fatalf("commits %v, want one at offset 1 (path b's open file)", c1.offsets)
	}

	// A second owner, from the same committed state, rotating at 3.
	second := protoSink(t, dir, 3)
	var c2 commitLog
	skip, err := decodeMetadata(ctx, second.store, c1.md[0])
	if err != nil {
		t.Fatal(err)
	}
	p2 := newPartition(second, "t", 0, c1.offsets[0], skip, c2.commit)
	feed(t, p2, c1.offsets[0], 14)
	if err := p2.shutdown(ctx, true); err != nil {
		t.Fatal(err)
	}
	if got := second.stats.adopted.Load(); got != 0 {
		t.Errorf("adopted %d objects; the skip set should have made that unnecessary", got)
	}
	if got := second.stats.skippedUploaded.Load(); got != 4 {
		t.Errorf("skipped %d uploaded records, want 4 (path a's 2, 4, 6, 8)", got)
	}
	offs, keys := landedOffsets(t, second.store)
	checkOnce(t, offs, 14)
	t.Log(keys)
}

// TestAdoptAfterLostCommit: an owner uploads a file, its commit is lost;
// the next owner from the older commit rotates differently and adopts the
// existing file, shorter or longer than its own.
func TestAdoptAfterLostCommit(t *testing.T) {
	for _, c := range []struct {
		name          string
		first, second int
	}{{"existing-longer", 4, 2}, {"existing-shorter", 2, 4}, {"same", 3, 3}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx := context.Background()
			s1 := protoSink(t, dir, c.first)
			var c1 commitLog
			p1 := newPartition(s1, "t", 0, 0, skipSet{}, c1.commit)
			feed(t, p1, 0, 2*int64(c.first)) // path a fills one file and uploads it
			if err := p1.shutdown(ctx, true); err != nil {
				t.Fatal(err)
			}
			// Pretend none of its commits reached Kafka: the next owner
			// starts from nothing.
			s2 := protoSink(t, dir, c.second)
			var c2 commitLog
			p2 := newPartition(s2, "t", 0, 0, skipSet{}, c2.commit)
			feed(t, p2, 0, 20)
			if err := p2.shutdown(ctx, true); err != nil {
				t.Fatal(err)
			}
			if s2.stats.adopted.Load() == 0 {
				t.Error("the second owner adopted nothing")
			}
			offs, keys := landedOffsets(t, s2.store)
			checkOnce(t, offs, 20)
			if last := c2.offsets[len(c2.offsets)-1]; last != 20 {
				t.Errorf("last commit at %d, want 20", last)
			}
			t.Log(keys)
		})
	}
}

// TestCommitMetadataState: a skip set too long for Kafka's metadata limit
// goes to a state object and comes back whole.
func TestCommitMetadataState(t *testing.T) {
	store, err := objstore.Open(context.Background(), "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	small := skipSet{"a/\x00.parquet": 10}
	md, err := encodeMetadata(ctx, store, "g", "t", 1, 5, small)
	if err != nil || !strings.HasPrefix(md, archive.CommitInline) {
		t.Fatalf("small set: %q, %v", md, err)
	}
	big := skipSet{}
	for i := range 300 {
		big[fmt.Sprintf("events/dt=2026-01-%02d/hr=%02d/\x00.parquet", i%28+1, i%24)+strings.Repeat("x", i%7)] = int64(1000 + i)
	}
	md, err = encodeMetadata(ctx, store, "g", "t", 1, 5, big)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(md, archive.CommitState) || len(md) > 300 {
		t.Fatalf("big set: metadata %q", md)
	}
	// Writing the same state twice is harmless.
	if md2, err := encodeMetadata(ctx, store, "g", "t", 1, 5, big); err != nil || md2 != md {
		t.Fatalf("second write: %q, %v", md2, err)
	}
	for _, c := range []struct {
		md   string
		want skipSet
	}{{"", skipSet{}}, {"someone else's", skipSet{}}, {md, big}} {
		got, err := decodeMetadata(ctx, store, c.md)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(c.want) {
			t.Fatalf("%.30q: %d entries, want %d", c.md, len(got), len(c.want))
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Fatalf("%q: %d, want %d", k, got[k], v)
			}
		}
	}
	if _, err := decodeMetadata(ctx, store, archive.CommitInline+"{not json"); err == nil {
		t.Error("corrupt metadata: no error")
	}
}

// protoSinkWith is protoSink with extra configuration lines.
func protoSinkWith(t *testing.T, dir, extra string) *Sink {
	t.Helper()
	schemaPath := filepath.Join(t.TempDir(), "s.schema")
	if err := os.WriteFile(schemaPath, []byte("message m { required int64 n; optional binary p (STRING); }"), 0o644); err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf("kafka: {brokers: [127.0.0.1:1], group: g, topics: [t]}\nstore: {url: \"file://%s\"}\nformat: {type: json, schema_file: %s}\npath: \"p={field:p}/{partition}-{first_offset}.parquet\"\n%s", dir, schemaPath, extra)
	cfg, err := config.Parse([]byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSampleHeldBackIsNotCommitted: with shredding inferred from a sample,
// the partition writes the records it held back once the sample is full;
// a file that rotates while it does (here at 500 records of a 600-record
// sample) must not commit the offsets of the held-back records that are
// not in it yet, or a crash before the next file's upload would lose them.
func TestSampleHeldBackIsNotCommitted(t *testing.T) {
	dir := t.TempDir()
	text := fmt.Sprintf("kafka: {brokers: [127.0.0.1:1], group: g, topics: [t]}\nstore: {url: \"file://%s\"}\nformat: {type: variant, shred: auto, shred_sample: 600}\npath: \"{partition}-{first_offset}.parquet\"\nrotate: {records: 500, interval: 1h, bytes: 0}\n", dir)
	cfg, err := config.Parse([]byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var c commitLog
	p := newPartition(s, "t", 0, 0, skipSet{}, c.commit)
	feed(t, p, 0, 600)
	if len(p.files) != 1 {
		t.Fatalf("%d files open after the sample, want the second", len(p.files))
	}
	for _, off := range c.offsets {
		if off > 500 {
			t.Errorf("committed offset %d while records 500 to 599 are in an open file (commits %v)", off, c.offsets)
		}
	}
	if len(c.offsets) == 0 || c.offsets[len(c.offsets)-1] != 500 {
		t.Errorf("commits %v, want the last at 500 (the first file)", c.offsets)
	}
	if err := p.shutdown(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if last := c.offsets[len(c.offsets)-1]; last != 600 {
		t.Errorf("after the shutdown the last commit is %d, want 600", last)
	}
}

// TestRotationReasons drives each clock-driven rotation with a chosen
// time, and the size-driven ones with data.
func TestRotationReasons(t *testing.T) {
	ctx := context.Background()
	t.Run("interval", func(t *testing.T) {
		s := protoSinkWith(t, t.TempDir(), "rotate: {records: 0, bytes: 0, interval: 1m}\n")
		var c commitLog
		p := newPartition(s, "t", 0, 0, skipSet{}, c.commit)
		feed(t, p, 0, 4)
		if err := p.tick(ctx, time.Now().Add(30*time.Second)); err != nil || len(p.files) != 2 {
			t.Fatalf("before the interval: %v, %d files open", err, len(p.files))
		}
		if err := p.tick(ctx, time.Now().Add(61*time.Second)); err != nil || len(p.files) != 0 {
			t.Fatalf("after the interval: %v, %d files open", err, len(p.files))
		}
		if got := s.stats.Snapshot().Files["interval"]; got != 2 {
			t.Errorf("%d files rotated by interval, want 2", got)
		}
		if c.offsets[len(c.offsets)-1] != 4 {
			t.Errorf("commits %v, want the last at 4", c.offsets)
		}
	})
	t.Run("schedule", func(t *testing.T) {
		s := protoSinkWith(t, t.TempDir(), "rotate: {records: 0, bytes: 0, interval: 0s, schedule: 1h}\ntimezone: Asia/Kolkata\n")
		var c commitLog
		p := newPartition(s, "t", 0, 0, skipSet{}, c.commit)
		feed(t, p, 0, 2)
		deadline := p.files["p=a/0-\x00.parquet"].deadline
		if deadline.In(s.loc).Minute() != 0 || deadline.Sub(time.Now()) > time.Hour {
			t.Fatalf("deadline %v is not the next full hour in Kolkata", deadline.In(s.loc))
		}
		if err := p.tick(ctx, deadline.Add(-time.Millisecond)); err != nil || len(p.files) != 2 {
			t.Fatalf("before the hour: %v, %d files", err, len(p.files))
		}
		if err := p.tick(ctx, deadline); err != nil || len(p.files) != 0 {
			t.Fatalf("at the hour: %v, %d files", err, len(p.files))
		}
		if got := s.stats.Snapshot().Files["schedule"]; got != 2 {
			t.Errorf("%d files rotated by schedule, want 2", got)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		s := protoSinkWith(t, t.TempDir(), "rotate: {records: 0, bytes: 4KiB, interval: 0s}\nparquet: {codec: none}\nmemory: {limit: 64MiB}\n")
		var c commitLog
		p := newPartition(s, "t", 0, 0, skipSet{}, c.commit)
		feed(t, p, 0, 20000)
		files := s.stats.Snapshot().Files["bytes"]
		if files < 4 {
			t.Errorf("%d files rotated by bytes, want many", files)
		}
		if err := p.shutdown(ctx, true); err != nil {
			t.Fatal(err)
		}
		offs, _ := landedOffsets(t, s.store)
		checkOnce(t, offs, 20000)
	})
}

// TestErrorsPolicy: a record that does not fit stops the partition right
// at it (errors: fail), landing what came before, or is skipped and
// counted (errors: skip).
func TestErrorsPolicy(t *testing.T) {
	ctx := context.Background()
	bad := record{offset: 3, value: []byte(`{"n":"three"}`)}
	t.Run("fail", func(t *testing.T) {
		s := protoSinkWith(t, t.TempDir(), "rotate: {records: 100}\nerrors: fail\n")
		var c commitLog
		p := newPartition(s, "t", 0, 0, skipSet{}, c.commit)
		feed(t, p, 0, 3)
		if err := p.handle(ctx, &bad); err != nil {
			t.Fatal(err)
		}
		if p.stopped == nil || !strings.Contains(p.stopped.Error(), "offset 3") {
			t.Fatalf("stopped: %v", p.stopped)
		}
		feed(t, p, 4, 8) // ignored
		if err := p.tick(ctx, time.Now()); err != nil {
			t.Fatal(err)
		}
		if last := c.offsets[len(c.offsets)-1]; last != 3 {
			t.Errorf("committed %v, want to stop at the bad record, 3", c.offsets)
		}
		offs, _ := landedOffsets(t, s.store)
		checkOnce(t, offs, 3)
	})
	t.Run("skip", func(t *testing.T) {
		s := protoSinkWith(t, t.TempDir(), "rotate: {records: 100}\nerrors: skip\nmax_record_bytes: 100\n")
		var c commitLog
		p := newPartition(s, "t", 0, 0, skipSet{}, c.commit)
		feed(t, p, 0, 3)
		big := record{offset: 4, value: fmt.Appendf(nil, `{"n":4,"p":"%0200d"}`, 0)}
		for _, r := range []*record{&bad, &big} {
			if err := p.handle(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.shutdown(ctx, true); err != nil {
			t.Fatal(err)
		}
		if got := s.stats.Snapshot().Rejected; got != 2 {
			t.Errorf("%d rejected, want 2", got)
		}
		if last := c.offsets[len(c.offsets)-1]; last != 5 {
			t.Errorf("commits %v, want the last at 5", c.offsets)
		}
	})
	t.Run("abandon", func(t *testing.T) {
		s := protoSinkWith(t, t.TempDir(), "rotate: {records: 100}\n")
		var c commitLog
		p := newPartition(s, "t", 0, 0, skipSet{}, c.commit)
		feed(t, p, 0, 10)
		if err := p.shutdown(ctx, false); err != nil {
			t.Fatal(err)
		}
		if offs, _ := landedOffsets(t, s.store); len(offs) != 0 || len(c.offsets) != 0 {
			t.Errorf("abandon landed %v and committed %v", offs, c.offsets)
		}
	})
}

// TestRowGroupSize: row groups are written when their rows reach the
// target, not every few rows once the buffers have grown (their capacity
// outlives each row group).
func TestRowGroupSize(t *testing.T) {
	ctx := context.Background()
	s := protoSinkWith(t, t.TempDir(), "rotate: {records: 20000, interval: 0s, bytes: 0}\nparquet: {row_group_bytes: 128KiB, page_bytes: 64KiB}\n")
	var c commitLog
	p := newPartition(s, "t", 0, 0, skipSet{}, c.commit)
	feed(t, p, 0, 80000) // two files per path, 20,000 rows each
	if err := p.shutdown(ctx, true); err != nil {
		t.Fatal(err)
	}
	for info, err := range s.store.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		ra, err := s.store.NewReaderAt(ctx, info.Key)
		if err != nil {
			t.Fatal(err)
		}
		f, err := reader.Open(ra, ra.Size())
		ra.Close()
		if err != nil {
			t.Fatal(err)
		}
		// 20,000 rows of about 30 bytes in memory: a few row groups of
		// 128 KiB, not hundreds.
		if n := f.NumRowGroups(); n < 2 || n > 10 {
			t.Errorf("%s: %d row groups for %d rows", info.Key, n, f.NumRows())
		}
	}
}

// TestRejectionReasons: with a {field:} in the path, a record is rejected
// for what is wrong with it, not for the path it cannot have: bad JSON is
// decode, valid JSON that is not an object is the format's to judge
// (schema for a message schema), and only a field that is there but is no
// value is path. A record is counted once, even when read again.
func TestRejectionReasons(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		value, reason string
	}{
		{`[1,2`, rejectDecode},
		{`[1,2]`, rejectSchema},
		{`"a string"`, rejectSchema},
		{`{"n":1,"p":`, rejectDecode},
		{`{"n":1,"p":{"x":1}}`, rejectPath},
		{`{"n":"one","p":"a"}`, rejectSchema},
	}
	for _, c := range cases {
		s := protoSinkWith(t, t.TempDir(), "rotate: {records: 100}\nerrors: skip\n")
		var log commitLog
		p := newPartition(s, "t", 0, 0, skipSet{}, log.commit)
		r := record{offset: 0, value: []byte(c.value)}
		if err := p.handle(ctx, &r); err != nil {
			t.Fatal(err)
		}
		p.dropAll(ctx) // read again from the committed offset: not counted twice
		if err := p.handle(ctx, &r); err != nil {
			t.Fatal(err)
		}
		st := s.stats.Snapshot()
		if st.Rejected != 1 || st.Rejects[[2]string{c.reason, "skip"}] != 1 {
			t.Errorf("%s: rejects %v, want one %s", c.value, st.Rejects, c.reason)
		}
	}
}

// TestReadyStalls: /readyz says not ready when a partition with lag has
// not reached a new offset for stall_timeout, even while it reads the
// same records again (its position moves, its highest offset does not),
// and when uploads have failed, every one, for 30 seconds.
func TestReadyStalls(t *testing.T) {
	ctx := context.Background()
	s := protoSinkWith(t, t.TempDir(), "rotate: {records: 100}\nmetrics: {stall_timeout: 1m}\n")
	s.joined.Store(true)
	var c commitLog
	p := newPartition(s, "t", 3, 0, skipSet{}, c.commit)
	s.mu.Lock()
	s.consuming[p] = struct{}{}
	s.mu.Unlock()
	if err := s.Ready(); err != nil {
		t.Fatalf("a new partition: %v", err)
	}
	p.lag.Store(10)
	p.advancedAt.Store(time.Now().Add(-2 * time.Minute).UnixNano())
	if err := s.Ready(); err == nil || !strings.Contains(err.Error(), "t[3] has 10 records of lag") {
		t.Fatalf("a stalled partition: %v", err)
	}
	// Reading records it had read before is no progress.
	feed(t, p, 0, 5)
	p.report()
	p.dropAll(ctx)
	old := time.Now().Add(-2 * time.Minute).UnixNano()
	p.advancedAt.Store(old)
	feed(t, p, 0, 5)
	p.report()
	if p.advancedAt.Load() != old || s.Ready() == nil {
		t.Fatal("reading the same records again counted as progress")
	}
	feed(t, p, 5, 6) // a new offset
	p.report()
	if err := s.Ready(); err != nil {
		t.Fatalf("after progress: %v", err)
	}
	p.lag.Store(0)
	p.advancedAt.Store(old)
	if err := s.Ready(); err != nil {
		t.Fatalf("no lag, no stall: %v", err)
	}

	s.uploadFailed(errors.New("507 insufficient storage"))
	if err := s.Ready(); err != nil {
		t.Fatalf("one failed upload: %v", err)
	}
	s.uploadFailingSince.Store(time.Now().Add(-31 * time.Second).UnixNano())
	if err := s.Ready(); err == nil || !strings.Contains(err.Error(), "507 insufficient storage") {
		t.Fatalf("uploads failing for 31s: %v", err)
	}
}

func TestReserveRows(t *testing.T) {
	tests := []struct {
		name         string
		rows         int
		size, target int64
		want         int
	}{
		{"a sixteenth in, the rest extrapolated with 5% margin", 1000, 1 << 20, 16 << 20, 16800},
		{"at the target already", 500, 8 << 20, 8 << 20, 525},
		{"no bytes yet", 10, 0, 1 << 20, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reserveRows(tt.rows, tt.size, tt.target); got != tt.want {
				t.Errorf("reserveRows(%d, %d, %d) = %d, want %d", tt.rows, tt.size, tt.target, got, tt.want)
			}
		})
	}
}
