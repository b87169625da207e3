package fetch

import (
	"bytes"
	"testing"

	"github.com/segmentio/kafka-go"
)

func records(offsets ...int64) []Record {
	rs := make([]Record, len(offsets))
	for i, o := range offsets {
		rs[i] = Record{Offset: o, Value: []byte{byte(o)}}
	}
	return rs
}

func newTestFetcher() *Fetcher {
	return newFetcher(newTestBudget(1<<30), nil, nil)
}

// TestFetcherHandOver checks that batches reach the partition in order,
// whole, and that the slices travel between fetcher and partition instead
// of being allocated for every batch.
func TestFetcherHandOver(t *testing.T) {
	f := newTestFetcher()

	// Into an empty buffer, the batch itself becomes the buffer.
	first := append(make([]Record, 0, 8), records(1, 2, 3)...)
	next, n := f.deliver(first, 30)
	if n != 30 || len(next) != 0 {
		t.Fatalf("deliver: %d bytes buffered and a next batch of %d records, want 30 and 0", n, len(next))
	}
	// Into a buffer with records, it is appended, and comes back emptied.
	second := records(4, 5)
	next, n = f.deliver(second, 20)
	if n != 50 || len(next) != 0 || cap(next) != cap(second) {
		t.Fatalf("deliver: %d bytes, next batch len %d cap %d, want 50, 0, %d", n, len(next), cap(next), cap(second))
	}
	if second[0].Value != nil {
		t.Fatal("an appended batch keeps references to the records' bytes")
	}

	got, bytes := f.Take()
	if bytes != 50 || len(got) != 5 {
		t.Fatalf("take: %d records, %d bytes, want 5 and 50", len(got), bytes)
	}
	for i, r := range got {
		if r.Offset != int64(i+1) {
			t.Fatalf("record %d has offset %d, want %d", i, r.Offset, i+1)
		}
	}
	if &got[0] != &first[0] {
		t.Fatal("the first batch was copied, not handed over")
	}

	// Given back, the slice holds the next records.
	f.GiveBack(got)
	if got[0].Value != nil {
		t.Fatal("a slice given back keeps references to the records' bytes")
	}
	// The partition gave the slice back after it took: the next delivery
	// hands it to the fetcher for the batch after.
	next, _ = f.deliver(records(6), 10)
	if cap(next) == 0 || &next[:1][0] != &got[0] {
		t.Fatal("the slice given back was not reused")
	}
	if again, _ := f.Take(); len(again) != 1 || again[0].Offset != 6 {
		t.Fatalf("Take after GiveBack: %v", again)
	}
}

// TestFetcherDropsOversizedSlices checks that a partition does not keep
// the room of a burst: a slice far larger than what it held is let go.
func TestFetcherDropsOversizedSlices(t *testing.T) {
	tests := []struct {
		name     string
		len, cap int
		kept     bool
	}{
		{"full", 1000, 1000, true},
		{"small", 3, 64, true},
		{"a quarter", 250, 1000, true},
		{"far larger", 10, 100_000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newTestFetcher()
			f.GiveBack(make([]Record, tt.len, tt.cap))
			if kept := f.spare != nil; kept != tt.kept {
				t.Fatalf("kept = %v, want %v", kept, tt.kept)
			}
		})
	}
}

// TestReadRecordsKeepsEmptyApartFromNull checks that an empty key, value
// or header value stays empty and a null one stays null, wherever the
// record falls: first of a fetch (an empty arena), at a block's end, and
// in a block of its own.
func TestReadRecordsKeepsEmptyApartFromNull(t *testing.T) {
	big := bytes.Repeat([]byte{'x'}, minArenaBlock-1) // leaves one byte of the first block
	huge := bytes.Repeat([]byte{'y'}, arenaSize/4+1)  // a block of its own
	type want struct{ key, value, header []byte }
	cases := []want{
		{key: []byte{}, value: []byte{}, header: []byte{}}, // first record: the arena is empty
		{key: nil, value: nil, header: nil},
		{key: []byte{}, value: big, header: []byte{}},
		{key: []byte{}, value: []byte{}, header: nil}, // the first block is full
		{key: nil, value: huge, header: []byte{}},
		{key: []byte{}, value: nil, header: []byte{}},
	}
	for _, arenaFull := range []bool{false, true} {
		var in []kafka.Record // read once: a Bytes is a reader
		for i, c := range cases {
			in = append(in, kafka.Record{Offset: int64(i), Key: kafka.NewBytes(c.key), Value: kafka.NewBytes(c.value),
				Headers: []kafka.Header{{Key: "", Value: c.header}}})
		}
		var arena []byte
		if arenaFull {
			arena = make([]byte, 16, 16) // growth: the next block starts on the first record
		}
		next := int64(0)
		got, _, err := readRecords(kafka.NewRecordReader(in...), &next, &arena, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(cases) || next != int64(len(cases)) {
			t.Fatalf("read %d records up to %d, want %d", len(got), next, len(cases))
		}
		same := func(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }
		for i, c := range cases {
			r := got[i]
			if !same(r.Key, c.key) || !same(r.Value, c.value) || len(r.Headers) != 1 || !same(r.Headers[0].Value, c.header) {
				t.Errorf("arena full %v, record %d: key nil=%v len=%d, value nil=%v len=%d, header %+v; want key nil=%v, value nil=%v, header nil=%v",
					arenaFull, i, r.Key == nil, len(r.Key), r.Value == nil, len(r.Value), r.Headers,
					c.key == nil, c.value == nil, c.header == nil)
			}
		}
	}
}
