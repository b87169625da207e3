package table

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/pqsink/pqsink/config"
)

// TestSnapshotFiles reads back the data files of each of two snapshots,
// in a catalog connection of its own: the old snapshot lists the files of
// the first commit, the current one those of both, with their sizes and
// record counts; a table, a snapshot or a first commit that does not exist
// is a clear error.
func TestSnapshotFiles(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, config.PartitionField{Transform: "day", Column: "_kafka.timestamp"})
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	ident := []string{"kafka", "events"}
	if _, err := c.Snapshot(ctx, ident, 0); !errors.Is(err, ErrNoSuchSnapshot) {
		t.Errorf("a table with no commit: err = %v, want ErrNoSuchSnapshot", err)
	}
	loc := c.Location("events")
	first := []File{
		writeFile(t, h, loc, "events", 0, 0, 9, sameDay),
		writeFile(t, h, loc, "events", 1, 0, 4, sameDay),
	}
	r1, err := h.Commit(ctx, "g", first, State{{"g", "events", 0}: {Committed: 10}, {"g", "events", 1}: {Committed: 5}})
	if err != nil {
		t.Fatal(err)
	}
	second := []File{writeFile(t, h, loc, "events", 0, 10, 19, sameDay)}
	r2, err := h.Commit(ctx, "g", second, State{{"g", "events", 0}: {Committed: 20}})
	if err != nil {
		t.Fatal(err)
	}

	other := e.open(t)
	tests := []struct {
		name    string
		id      int64
		wantID  int64
		current bool
		files   []File
	}{
		{"current", 0, r2.SnapshotID, true, append(append([]File{}, first...), second...)},
		{"current by id", r2.SnapshotID, r2.SnapshotID, true, append(append([]File{}, first...), second...)},
		{"first", r1.SnapshotID, r1.SnapshotID, false, first},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := other.Snapshot(ctx, ident, tc.id)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(s.MetadataLocation, loc+"/metadata/") || !strings.HasSuffix(s.MetadataLocation, ".metadata.json") {
				t.Errorf("metadata location %s, want a metadata file under %s/metadata/", s.MetadataLocation, loc)
			}
			if s.ID != tc.wantID || s.Current != tc.current || s.Table != "kafka.events" || s.Location != loc {
				t.Errorf("snapshot %d (current %v) of %s at %s, want %d (current %v) of kafka.events at %s", s.ID, s.Current, s.Table, s.Location, tc.wantID, tc.current, loc)
			}
			want := map[string]File{}
			for _, f := range tc.files {
				want[f.Location] = f
			}
			if len(s.Files) != len(want) {
				t.Errorf("%d files, want %d: %v", len(s.Files), len(want), s.Files)
			}
			for _, f := range s.Files {
				w, ok := want[f.Location]
				if !ok {
					t.Errorf("file %s is not in the snapshot", f.Location)
					continue
				}
				if f.Size != w.Size || f.Records != w.Footer.NumRows {
					t.Errorf("file %s: size %d, %d records, want %d, %d", f.Location, f.Size, f.Records, w.Size, w.Footer.NumRows)
				}
			}
		})
	}

	errTests := []struct {
		name  string
		ident []string
		id    int64
		want  error
	}{
		{"no such table", []string{"kafka", "nope"}, 0, ErrNoSuchTable},
		{"no such namespace", []string{"elsewhere", "events"}, 0, ErrNoSuchTable},
		{"no such snapshot", ident, r2.SnapshotID + 1, ErrNoSuchSnapshot},
	}
	for _, tc := range errTests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := other.Snapshot(ctx, tc.ident, tc.id); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestSnapshotEarlier: a snapshot names, besides its data files, the files
// its ancestors held that a rewrite replaced (Snapshot.Earlier), newest
// first; a table only appended to has none.
func TestSnapshotEarlier(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	loc := e.warehouse + "/kafka/events"
	a := writeFile(t, h, loc, "events", 0, 0, 9, sameDay)
	b := writeFile(t, h, loc, "events", 0, 10, 19, sameDay)
	if _, err := h.Commit(ctx, "g", []File{a}, State{{"g", "events", 0}: {Committed: 10}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Commit(ctx, "g", []File{b}, State{{"g", "events", 0}: {Committed: 20}}); err != nil {
		t.Fatal(err)
	}
	ident := []string{"kafka", "events"}
	s, err := c.Snapshot(ctx, ident, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Files) != 2 || len(s.Earlier) != 0 {
		t.Fatalf("after two appends: %d files, earlier %+v; want 2 and none", len(s.Files), s.Earlier)
	}
	merged := writeFile(t, h, loc+"/m", "events", 0, 0, 19, sameDay)
	if _, err := h.Rewrite(ctx, []string{a.Location, b.Location}, []File{merged}); err != nil {
		t.Fatal(err)
	}
	s, err = c.Snapshot(ctx, ident, 0)
	if err != nil {
		t.Fatal(err)
	}
	var earlier []string
	for _, f := range s.Earlier {
		earlier = append(earlier, f.Location)
	}
	slices.Sort(earlier)
	if want := []string{a.Location, b.Location}; len(s.Files) != 1 || s.Files[0].Location != merged.Location || !slices.Equal(earlier, want) {
		t.Errorf("after the rewrite: files %+v, earlier %v; want %s and %v", s.Files, earlier, merged.Location, want)
	}
}

// TestSnapshotEnvelope: Snapshot gives each of the sink's data files the
// bounds its manifest holds of the envelope columns, by the field ids of
// the table's _kafka columns: timestamps in microseconds, offsets,
// partition, topic.
func TestSnapshotEnvelope(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, config.PartitionField{Transform: "day", Column: "_kafka.timestamp"})
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	loc := c.Location("events")
	nextDay := func(o int64) int { return int(o / 15) } // offsets 15.. a day later
	files := []File{
		writeFile(t, h, loc, "events", 0, 0, 9, nextDay),
		writeFile(t, h, loc, "events", 3, 100, 104, nextDay),
		writeFile(t, h, loc, "events", 0, 10, 19, sameDay),
	}
	if _, err := h.Commit(ctx, "g", files, State{{"g", "events", 0}: {Committed: 20}, {"g", "events", 3}: {Committed: 105}}); err != nil {
		t.Fatal(err)
	}
	micros := func(o int64, dayOf func(int64) int) int64 {
		return day0.AddDate(0, 0, dayOf(o)).Add(time.Duration(o) * time.Second).UnixMicro()
	}
	full := func(lo, hi int64) Range[int64] { return Range[int64]{Min: lo, Max: hi, HasMin: true, HasMax: true} }
	want := map[string]Envelope{
		files[0].Location: {Timestamp: full(micros(0, nextDay), micros(9, nextDay)), Offset: full(0, 9), Partition: full(0, 0),
			Topic: Range[string]{Min: "events", Max: "events", HasMin: true, HasMax: true}},
		files[1].Location: {Timestamp: full(micros(100, nextDay), micros(104, nextDay)), Offset: full(100, 104), Partition: full(3, 3),
			Topic: Range[string]{Min: "events", Max: "events", HasMin: true, HasMax: true}},
		files[2].Location: {Timestamp: full(micros(10, sameDay), micros(19, sameDay)), Offset: full(10, 19), Partition: full(0, 0),
			Topic: Range[string]{Min: "events", Max: "events", HasMin: true, HasMax: true}},
	}
	s, err := e.open(t).Snapshot(ctx, []string{"kafka", "events"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Files) != len(want) {
		t.Fatalf("%d files, want %d", len(s.Files), len(want))
	}
	for _, f := range s.Files {
		if f.Envelope != want[f.Location] {
			t.Errorf("%s: envelope bounds %+v, want %+v", f.Location, f.Envelope, want[f.Location])
		}
	}
}

// TestEnvelopeOfMissingBounds: a bound a manifest lacks, or whose bytes
// do not decode as the column's type, is unknown.
func TestEnvelopeOfMissingBounds(t *testing.T) {
	ts := envelopeField{id: 4, typ: iceberg.PrimitiveTypes.TimestampTz}
	off := envelopeField{id: 3, typ: iceberg.PrimitiveTypes.Int64}
	part := envelopeField{id: 2, typ: iceberg.PrimitiveTypes.Int32}
	topic := envelopeField{id: 1, typ: iceberg.PrimitiveTypes.String}
	le64 := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	tests := []struct {
		name         string
		lower, upper map[int][]byte
		fields       [4]envelopeField
		want         Envelope
	}{
		{"no bounds", nil, nil, [4]envelopeField{ts, off, part, topic}, Envelope{}},
		{"only lower bounds", map[int][]byte{4: le64(5000), 3: le64(7), 2: {2, 0, 0, 0}, 1: []byte("a")}, nil,
			[4]envelopeField{ts, off, part, topic},
			Envelope{Timestamp: Range[int64]{Min: 5000, HasMin: true}, Offset: Range[int64]{Min: 7, HasMin: true},
				Partition: Range[int64]{Min: 2, HasMin: true}, Topic: Range[string]{Min: "a", HasMin: true}}},
		{"bytes of the wrong width", map[int][]byte{4: {1, 2}, 3: {1}}, map[int][]byte{2: le64(1)}, [4]envelopeField{ts, off, part, topic}, Envelope{}},
		{"no such columns in the table", map[int][]byte{4: le64(1)}, map[int][]byte{4: le64(1)}, [4]envelopeField{}, Envelope{}},
		{"nanosecond timestamps are not taken", map[int][]byte{4: le64(1)}, map[int][]byte{4: le64(2)},
			[4]envelopeField{{id: 4, typ: iceberg.PrimitiveTypes.TimestampTzNs}, off, part, topic}, Envelope{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, "file:///x.parquet", iceberg.ParquetFile, nil, nil, nil, 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			b.LowerBoundValues(tc.lower).UpperBoundValues(tc.upper)
			got := envelopeOf(b.Build(), tc.fields[0], tc.fields[1], tc.fields[2], tc.fields[3])
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
