package source

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/reader"
)

// FuzzEnvelopeRanges places arbitrary bytes as a table's data file that
// another engine rewrote: envelopeRanges must return ranges or an error,
// never panic, and the ranges it returns must be what replay relies on:
// runs of rows in order that do not overlap, within the file, each with
// first <= last.
func FuzzEnvelopeRanges(f *testing.F) {
	dir := f.TempDir()
	gen := events.New(5, time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	var recs []srcRecord
	for p := range int32(2) {
		for o := range int64(30) {
			if o%7 != 3 {
				recs = append(recs, recordOf(gen, "events", p, o, int(o)))
			}
		}
	}
	writeRecords(f, dir, "a.parquet", events.Schema, recs, 16, false)
	writeRecords(f, dir, "b.parquet", events.Schema, recs[:5], 2, true)
	for _, name := range []string{"a.parquet", "b.parquet"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := reader.Open(bytes.NewReader(data), int64(len(data)), reader.MaxMemory(16<<20))
		if err != nil {
			return
		}
		parts, err := envelopeRanges(context.Background(), file)
		if err != nil {
			return
		}
		var row int64
		for _, p := range parts {
			if p.rowLo < row || p.rowHi <= p.rowLo || p.rowHi > file.NumRows() || p.first > p.last {
				t.Fatalf("ranges %+v of a file of %d rows", parts, file.NumRows())
			}
			row = p.rowHi
		}
	})
}
